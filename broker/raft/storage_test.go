package raft

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/moldau/moldau/log"
)

func stOpen(t *testing.T, dir string) *metadataLog {
	t.Helper()
	return stOpenWith(t, Config{NodeID: 1, Voters: map[int32]string{1: "127.0.0.1:1"}, Dir: dir})
}

func stOpenWith(t *testing.T, c Config) *metadataLog {
	t.Helper()
	cfg, err := c.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = testLogger(t)
	s, _, err := openMetadataLog(cfg, cfg.Logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.l.Close() })
	return s
}

// stEntry is an entry as a leader proposes it: a batch of n records.
func stEntry(t *testing.T, index, term uint64, n int) *pb.Entry {
	t.Helper()
	var recs [][]byte
	for i := range n {
		recs = append(recs, fmt.Appendf(nil, "i%d-r%d", index, i))
	}
	data, err := buildDataBatch(int32(term), 1000, recs)
	if err != nil {
		t.Fatal(err)
	}
	return &pb.Entry{Index: new(index), Term: new(term), Type: pb.EntryNormal.Enum(), Data: data}
}

// Entries whose batches each fit a segment but not together (a follower
// of a leader with small segments) are appended, over several segments.
func TestMetadataLogAppendLargerThanSegment(t *testing.T) {
	dir := t.TempDir()
	s := stOpenWith(t, Config{NodeID: 1, Voters: map[int32]string{1: "127.0.0.1:1"}, Dir: dir, SegmentBytes: 512})
	var ents []*pb.Entry
	for i := uint64(1); i <= 8; i++ {
		ents = append(ents, stEntry(t, i, 1, 20)) // about 300 bytes each
	}
	if len(ents[0].Data) > 512 || len(ents[0].Data)*2 <= 512 {
		t.Fatalf("a batch of %d bytes: want more than half a segment", len(ents[0].Data))
	}
	if err := s.append(ents, 1, 1000); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.LastIndex(); l != 8 || s.l.LogEndOffset() != 160 {
		t.Fatalf("last index %d, log end %d", l, s.l.LogEndOffset())
	}
}

func TestMetadataLogIndexOffsetMap(t *testing.T) {
	dir := t.TempDir()
	s := stOpen(t, dir)
	if f, _ := s.FirstIndex(); f != 1 {
		t.Fatalf("first index %d", f)
	}
	if l, _ := s.LastIndex(); l != 0 {
		t.Fatalf("last index %d", l)
	}
	// Index 1: a new leader's empty entry; then batches of 1..5 records.
	ents := []*pb.Entry{{Index: new(uint64(1)), Term: new(uint64(1)), Type: pb.EntryNormal.Enum()}}
	for i := uint64(2); i <= 10; i++ {
		ents = append(ents, stEntry(t, i, 1+i/5, int(i%5)+1))
	}
	if err := s.append(ents, 1, 1000); err != nil {
		t.Fatal(err)
	}
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	wantOff := []int64{0, 1}
	for i := uint64(2); i < 10; i++ {
		wantOff = append(wantOff, wantOff[len(wantOff)-1]+int64(i%5)+1)
	}
	for i, want := range wantOff {
		if got := s.offsetOf(uint64(i + 1)); got != want {
			t.Fatalf("offset of index %d = %d, want %d", i+1, got, want)
		}
	}
	check := func(s *metadataLog) {
		t.Helper()
		for i := uint64(2); i <= 10; i++ {
			if term, err := s.Term(i); err != nil || term != 1+i/5 {
				t.Fatalf("term of %d: %d %v", i, term, err)
			}
		}
		// From disk (the cache is dropped), with a size limit.
		s.cache, s.cacheStart = nil, s.last+1
		got, err := s.Entries(3, 11, 1)
		if err != nil || len(got) != 1 || got[0].GetIndex() != 3 {
			t.Fatalf("entries with a tiny limit: %v %v", len(got), err)
		}
		got, err = s.Entries(3, 11, 1<<20)
		if err != nil || len(got) != 8 {
			t.Fatalf("entries: %d %v", len(got), err)
		}
		for k, e := range got {
			idx := uint64(3 + k)
			h, err := log.ParseBatchHeader(e.GetData())
			if err != nil || e.GetIndex() != idx || e.GetTerm() != 1+idx/5 || h.BaseOffset != s.offsetOf(idx) || int(h.NumRecords) != int(idx%5)+1 {
				t.Fatalf("entry %d: %+v %+v %v", idx, e, h, err)
			}
		}
		if _, err := s.Entries(0, 2, 100); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("entries below first: %v", err)
		}
		if _, err := s.Entries(5, 12, 100); !errors.Is(err, raft.ErrUnavailable) {
			t.Fatalf("entries past last: %v", err)
		}
	}
	check(s)
	// The map survives a restart (rebuilt from the batch headers).
	s.l.Close()
	s2 := stOpen(t, dir)
	if s2.last != 10 || s2.offsetOf(11) != s.offsetOf(11) {
		t.Fatalf("reopened: last %d end %d", s2.last, s2.offsetOf(11))
	}
	check(s2)
	// A conflict at index 7 truncates the log at its batch.
	repl := []*pb.Entry{stEntry(t, 7, 5, 2), stEntry(t, 8, 5, 1)}
	if err := s2.append(repl, 1, 1000); err != nil {
		t.Fatal(err)
	}
	if s2.last != 8 || s2.offsetOf(9) != s2.offsetOf(7)+3 {
		t.Fatalf("after conflict: last %d end %d", s2.last, s2.offsetOf(9))
	}
	if term, _ := s2.Term(8); term != 5 {
		t.Fatalf("term of 8 after conflict: %d", term)
	}
	// A batch the leader placed elsewhere is refused.
	bad := stEntry(t, 9, 5, 1)
	log.SetBaseOffset(bad.Data, 3)
	if err := s2.append([]*pb.Entry{bad}, 1, 1000); err == nil {
		t.Fatal("a batch at the wrong offset was appended")
	}
}
