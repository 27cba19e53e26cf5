package log

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ftBatch builds a batch of n records at baseOffset with a leader epoch,
// as a leader would have written it, with BatchBuilder.
func ftBatch(tb testing.TB, baseOffset int64, epoch int32, n int) []byte {
	tb.Helper()
	b := NewBatchBuilder(baseOffset)
	b.PartitionLeaderEpoch = epoch
	for i := range n {
		b.Add(1_700_000_000_000+baseOffset+int64(i), nil, []byte("value-of-some-length"))
	}
	out, err := b.Build(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func ftOpen(tb testing.TB, dir string, start int64, fsys FS) *Log {
	tb.Helper()
	l, _, err := OpenLog(OpenLogParams{Dir: dir, Config: ltConfig(), FS: fsys, Logger: ltLogger(tb), LogStartOffset: start})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// ftFill appends batches of n records each with the given epochs, starting
// at the log end, and returns the base offsets.
func ftFill(tb testing.TB, l *Log, n int, epochs ...int32) []int64 {
	tb.Helper()
	var bases []int64
	for _, e := range epochs {
		base := l.LogEndOffset()
		if _, err := l.AppendAsFollower(ftBatch(tb, base, e, n)); err != nil {
			tb.Fatalf("append at %d: %v", base, err)
		}
		bases = append(bases, base)
	}
	return bases
}

func TestOpenLogStartsAtLogStartOffset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	l := ftOpen(t, dir, 1, nil)
	if l.TopicPartition() != (TopicPartition{"__cluster_metadata", 0}) {
		t.Fatalf("partition %v", l.TopicPartition())
	}
	if l.LogStartOffset() != 1 || l.LogEndOffset() != 1 {
		t.Fatalf("start %d end %d, want 1 1", l.LogStartOffset(), l.LogEndOffset())
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000001.log")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenLog(OpenLogParams{Dir: filepath.Join(t.TempDir(), "nopartition")}); err == nil {
		t.Fatal("a dir without -<partition> opened")
	}
}

func TestAppendAsFollower(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-0")
	l := ftOpen(t, dir, 1, nil)
	ftFill(t, l, 3, 1, 1, 2)
	if l.LogEndOffset() != 10 {
		t.Fatalf("end %d, want 10", l.LogEndOffset())
	}
	if got := l.LatestEpoch(); got != 2 {
		t.Fatalf("latest epoch %d", got)
	}
	// Below the log end: refused.
	if _, err := l.AppendAsFollower(ftBatch(t, 5, 2, 1)); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("append below the end: %v", err)
	}
	// A corrupt batch: refused.
	bad := ftBatch(t, 10, 2, 1)
	bad[len(bad)-1] ^= 0xff
	if _, err := l.AppendAsFollower(bad); err == nil {
		t.Fatal("corrupt batch appended")
	}
	// Several batches at once, offsets kept as given.
	two := append(ftBatch(t, 10, 3, 2), ftBatch(t, 12, 3, 1)...)
	info, err := l.AppendAsFollower(two)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 10 || info.LastOffset != 12 || info.NumRecords != 3 {
		t.Fatalf("info %+v", info)
	}
	hs := ltReadAll(t, l, 1)
	if len(hs) != 5 || hs[3].BaseOffset != 10 || hs[3].PartitionLeaderEpoch != 3 {
		t.Fatalf("read back %+v", hs)
	}
	ltCheckIndexes(t, l)
}

func TestTruncateTo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-0")
	l := ftOpen(t, dir, 1, nil)
	// Enough batches for several segments (16 KiB each).
	var epochs []int32
	for i := range 300 {
		epochs = append(epochs, int32(1+i/100))
	}
	bases := ftFill(t, l, 2, epochs...)
	if l.NumSegments() < 3 {
		t.Fatalf("only %d segments", l.NumSegments())
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	// Inside a batch: the whole batch goes.
	target := bases[250] + 1
	changed, err := l.TruncateTo(target)
	if err != nil || !changed {
		t.Fatalf("truncate: %v %v", changed, err)
	}
	if l.LogEndOffset() != bases[250] || l.HighWatermark() != bases[250] {
		t.Fatalf("end %d hw %d, want %d", l.LogEndOffset(), l.HighWatermark(), bases[250])
	}
	if changed, _ := l.TruncateTo(l.LogEndOffset() + 5); changed {
		t.Fatal("truncating past the end changed the log")
	}
	// Into an earlier segment: later segments go, epochs are cut.
	changed, err = l.TruncateTo(bases[150])
	if err != nil || !changed || l.LogEndOffset() != bases[150] {
		t.Fatalf("truncate to %d: %v %v end %d", bases[150], changed, err, l.LogEndOffset())
	}
	if l.LatestEpoch() != 2 {
		t.Fatalf("latest epoch %d after truncation, want 2", l.LatestEpoch())
	}
	ltCheckIndexes(t, l)
	// Appending continues at the new end, and everything survives a reopen
	// with full recovery.
	ftFill(t, l, 2, 7, 7)
	end := l.LogEndOffset()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := ftOpen(t, dir, 1, nil)
	if l2.LogEndOffset() != end || l2.LatestEpoch() != 7 {
		t.Fatalf("reopened: end %d (want %d) epoch %d", l2.LogEndOffset(), end, l2.LatestEpoch())
	}
	hs := ltReadAll(t, l2, 1)
	if len(hs) != 152 || hs[151].PartitionLeaderEpoch != 7 {
		t.Fatalf("reopened: %d batches", len(hs))
	}
	ltCheckIndexes(t, l2)
	// No leftover files of the deleted segments.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == DeletedFileSuffix {
			t.Fatalf("leftover %s", e.Name())
		}
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-0")
	l := ftOpen(t, dir, 1, nil)
	ftFill(t, l, 5, 1, 1, 2)
	// Restart at an offset equal to an existing segment's base.
	if err := l.TruncateFullyAndStartAt(1); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1 || l.LogEndOffset() != 1 || l.LatestEpoch() != -1 {
		t.Fatalf("start %d end %d epoch %d", l.LogStartOffset(), l.LogEndOffset(), l.LatestEpoch())
	}
	ftFill(t, l, 1, 4)
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	ftFill(t, l, 1, 5)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2 := ftOpen(t, dir, 1, nil)
	if l2.LogStartOffset() != 1000 || l2.LogEndOffset() != 1001 || l2.LatestEpoch() != 5 {
		t.Fatalf("reopened: start %d end %d epoch %d", l2.LogStartOffset(), l2.LogEndOffset(), l2.LatestEpoch())
	}
	// TruncateTo below the log start empties the log too.
	if changed, err := l2.TruncateTo(10); err != nil || !changed || l2.LogStartOffset() != 10 || l2.LogEndOffset() != 10 {
		t.Fatalf("truncate below start: %v %v start %d end %d", changed, err, l2.LogStartOffset(), l2.LogEndOffset())
	}
}

func TestFollowerWriteErrorsAreReturned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-0")
	ffs := NewFaultFS(nil)
	l := ftOpen(t, dir, 1, ffs)
	ftFill(t, l, 1, 1)
	ffs.Inject(Fault{Op: OpWrite, PathContains: ".log", Short: true})
	if _, err := l.AppendAsFollower(ftBatch(t, 2, 1, 3)); err == nil {
		t.Fatal("append with a failing write succeeded")
	}
	if l.LogEndOffset() != 2 {
		t.Fatalf("end %d after a failed append", l.LogEndOffset())
	}
	// The torn bytes were truncated: the next append lands cleanly.
	ftFill(t, l, 1, 1)
	ffs.Inject(Fault{Op: OpTruncate, PathContains: ".log"})
	if _, err := l.TruncateTo(2); err == nil {
		t.Fatal("truncate with a failing truncate succeeded")
	}
	if _, err := l.AppendAsFollower(ftBatch(t, l.LogEndOffset(), 1, 1)); err == nil {
		t.Fatal("a log that failed to truncate still takes appends")
	}
}
