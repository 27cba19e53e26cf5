package log

import (
	"path/filepath"
	"testing"
)

// TestOffsetMetadata checks the positions Read and FetchOffsetSnapshot
// report: a DelayedFetch subtracts them to count readable bytes.
func TestOffsetMetadata(t *testing.T) {
	l, _ := ltOpen(t, filepath.Join(t.TempDir(), "t-0"), ltConfig(), newLtClock(), true, nil)
	defer l.Close()
	b1 := ltBatch(t, ltBatchSpec{n: 3, valueSize: 100})
	b2 := ltBatch(t, ltBatchSpec{n: 2, valueSize: 100})
	ltAppend(t, l, b1) // offsets 0-2
	l.UpdateHighWatermark(3)
	ltAppend(t, l, b2) // offsets 3-4; the high watermark stays at 3

	snap, err := l.FetchOffsetSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := LogOffsetMetadata{MessageOffset: 3, SegmentBaseOffset: 0, RelativePosition: int64(len(b1))}
	if snap.HighWatermark != want {
		t.Fatalf("high watermark %v, want %v", snap.HighWatermark, want)
	}
	if end := (LogOffsetMetadata{MessageOffset: 5, SegmentBaseOffset: 0, RelativePosition: int64(len(b1) + len(b2))}); snap.LogEndOffset != end {
		t.Fatalf("log end %v, want %v", snap.LogEndOffset, end)
	}
	// Cached and still right on a second call.
	if again, _ := l.FetchOffsetSnapshot(); again.HighWatermark != want {
		t.Fatalf("second snapshot %v, want %v", again.HighWatermark, want)
	}

	// A read at the high watermark, below the log end, returns nothing
	// but the high watermark's own position (not the log end's).
	fd, err := l.Read(3, 1<<20, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	if fd.Records.Size != 0 || fd.FetchOffsetMetadata != want {
		t.Fatalf("read at the high watermark: %d bytes at %v, want 0 at %v", fd.Records.Size, fd.FetchOffsetMetadata, want)
	}
	// A read mid-batch points at the batch.
	fd, err = l.Read(1, 1<<20, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	if m := fd.FetchOffsetMetadata; m.RelativePosition != 0 || m.MessageOffset != 1 || fd.Records.Size != int64(len(b1)) {
		t.Fatalf("read at 1: %d bytes at %v", fd.Records.Size, m)
	}
	// At the log end: the end of the active segment.
	fd, err = l.Read(5, 1<<20, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	if fd.FetchOffsetMetadata != snap.LogEndOffset {
		t.Fatalf("read at the log end: %v, want %v", fd.FetchOffsetMetadata, snap.LogEndOffset)
	}

	l.UpdateHighWatermark(5)
	snap, _ = l.FetchOffsetSnapshot()
	if d := snap.HighWatermark.PositionDiff(want); d != int64(len(b2)) || !want.OnSameSegment(snap.HighWatermark) {
		t.Fatalf("bytes between the old and the new high watermark: %d, want %d", d, len(b2))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 1, valueSize: 10}))
	l.UpdateHighWatermark(6)
	after, _ := l.FetchOffsetSnapshot()
	if !snap.HighWatermark.OnOlderSegment(after.HighWatermark) {
		t.Fatalf("after a roll %v is not on an older segment than %v", snap.HighWatermark, after.HighWatermark)
	}
}
