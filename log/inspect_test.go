package log

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func TestDecodeOffsetIndex(t *testing.T) {
	var b []byte
	for _, e := range [][2]uint32{{3, 100}, {9, 250}, {0, 0}, {0, 0}} { // zero tail: preallocated
		b = binary.BigEndian.AppendUint32(b, e[0])
		b = binary.BigEndian.AppendUint32(b, e[1])
	}
	entries, err := DecodeOffsetIndex(b, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []OffsetPosition{{1003, 100}, {1009, 250}}
	if len(entries) != 2 || entries[0] != want[0] || entries[1] != want[1] {
		t.Errorf("entries %v, want %v", entries, want)
	}
	// Entries that go back are read as they are, and the broker's
	// verdict says the index is corrupt.
	bad := append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 9), 250), b[:8]...)
	entries, err = DecodeOffsetIndex(bad, 0)
	if err == nil || len(entries) != 2 {
		t.Errorf("decreasing entries: %v, %v", entries, err)
	}
	// A torn last entry: the whole ones, and an error.
	entries, err = DecodeOffsetIndex(b[:12], 0)
	if err == nil || len(entries) != 1 {
		t.Errorf("torn entry: %v, %v", entries, err)
	}
}

func TestDecodeTimeIndex(t *testing.T) {
	var b []byte
	for _, e := range []struct {
		ts  int64
		rel uint32
	}{{1700000000000, 4}, {1700000000500, 9}, {0, 0}} {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
		b = binary.BigEndian.AppendUint32(b, e.rel)
	}
	entries, err := DecodeTimeIndex(b, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[1] != (TimestampOffsetEntry{Timestamp: 1700000000500, Offset: 19}) {
		t.Errorf("entries %v", entries)
	}
	binary.BigEndian.PutUint64(b[12:], 1600000000000) // goes back in time
	if _, err := DecodeTimeIndex(b, 10); err == nil {
		t.Error("a timestamp going back is not reported")
	}
}

func TestReadPartitionFiles(t *testing.T) {
	dir := t.TempDir()
	if es, err := ReadLeaderEpochCheckpoint(OSFS{}, dir); err != nil || len(es) != 0 {
		t.Errorf("missing checkpoint: %v, %v", es, err)
	}
	if err := os.WriteFile(filepath.Join(dir, LeaderEpochCheckpointFile), []byte("0\n2\n0 0\n3 17\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := ReadLeaderEpochCheckpoint(OSFS{}, dir)
	if err != nil || len(es) != 2 || es[1] != (EpochEntry{Epoch: 3, StartOffset: 17}) {
		t.Errorf("epochs %v, %v", es, err)
	}
	id := [16]byte{1, 2, 3}
	if err := writePartitionMetadata(OSFS{}, dir, id); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadPartitionMetadata(OSFS{}, dir)
	if err != nil || !ok || got != id {
		t.Errorf("partition.metadata: %v %v %v", got, ok, err)
	}
}
