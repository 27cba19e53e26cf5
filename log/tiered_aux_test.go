package log

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A follower's tiered log started over past the leader's local log start
// gets the leader epochs and the producer state below it from a remote
// segment's LEADER_EPOCH and PRODUCER_SNAPSHOT indexes (what
// CopyableSegments uploads), keeps them across a restart, and so answers
// OffsetForLeaderEpoch and checks a producer's sequence as the leader
// does.
func TestRestoreRemoteLogAuxState(t *testing.T) {
	clock := newLtClock()
	cfg := ltConfig()
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	cfg.SegmentBytes = 2 << 10
	leader, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
	early := &producerCursor{pid: 7}  // writes only in epoch 0
	always := &producerCursor{pid: 9} // writes throughout
	for _, step := range []struct {
		epoch int32
		n     int
	}{{0, 30}, {3, 30}, {5, 60}} {
		for i := 0; i < step.n; i++ {
			p := always
			if step.epoch == 0 && i%2 == 0 {
				p = early
			}
			if _, err := leader.Append(txnBatch(t, clock.Now().UnixMilli(), p.pid, p.epoch, p.seq, 4, false), step.epoch); err != nil {
				t.Fatal(err)
			}
			p.seq += 4
		}
	}
	hwToEnd(leader)
	cands := leader.CopyableSegments()
	// The segment holding the first offsets of epoch 5.
	_, epoch5 := leader.EndOffsetForEpoch(3)
	i := slices.IndexFunc(cands, func(c CopyableSegment) bool { return c.NextOffset > epoch5 })
	if i < 0 || cands[i].ProducerSnapshot == "" {
		t.Fatalf("no copyable segment past offset %d with a producer snapshot: %+v", epoch5, cands)
	}
	seg := cands[i]
	snap, err := ReadFile(OSFS{}, seg.ProducerSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	epochs, err := ParseLeaderEpochCheckpoint(seg.LeaderEpochCheckpoint)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	f, _ := ltOpen(t, dir, cfg, clock, false, nil)
	ltAppend(t, f, ltBatch(t, ltBatchSpec{n: 3, valueSize: 10, ts: clock.Now().UnixMilli()}))
	// A corrupt snapshot is refused before anything changes.
	if err := f.RestoreRemoteLogAuxState(seg.NextOffset, 0, epochs, snap[:len(snap)-1]); !errors.Is(err, errCorruptSnapshot) || f.LogEndOffset() != 3 {
		t.Fatalf("corrupt snapshot: %v, log end %d", err, f.LogEndOffset())
	}
	if err := f.RestoreRemoteLogAuxState(seg.NextOffset, 0, epochs, snap); err != nil {
		t.Fatal(err)
	}
	check := func(f *Log, when string) {
		t.Helper()
		if f.LogStartOffset() != 0 || f.LocalLogStartOffset() != seg.NextOffset || f.LogEndOffset() != seg.NextOffset {
			t.Fatalf("%s: log start %d, local %d, end %d; want 0, %d, %d", when, f.LogStartOffset(), f.LocalLogStartOffset(), f.LogEndOffset(), seg.NextOffset, seg.NextOffset)
		}
		want := []EpochEntry{{0, 0}, {3, 120}, {5, epoch5}}
		if got := f.LeaderEpochEntries(); !slices.Equal(got, want) {
			t.Fatalf("%s: epochs %v, want %v", when, got, want)
		}
		for _, e := range []int32{0, 1, 3, 4} {
			le, lo := leader.EndOffsetForEpoch(e)
			if fe, fo := f.EndOffsetForEpoch(e); fe != le || fo != lo {
				t.Fatalf("%s: end of epoch %d: %d at %d, the leader says %d at %d", when, e, fe, fo, le, lo)
			}
		}
		ps := f.ActiveProducers()
		if len(ps) != 2 || ps[0].ProducerID != early.pid || ps[0].LastSequence != early.seq-1 || ps[1].ProducerID != always.pid {
			t.Fatalf("%s: producers %+v", when, ps)
		}
	}
	check(f, "restored")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened with its log-start-offset-checkpoint, as the log manager
	// keeps it.
	f, _, err = loadLog(logParams{
		dir: dir, tp: TopicPartition{"t", 0}, cfg: cfg, fsys: OSFS{}, logger: ltLogger(t), now: clock.Now,
		hadCleanShutdown: true, logStartOffset: 0, highWatermark: seg.NextOffset, recoveryPoint: seg.NextOffset,
	})
	if err != nil {
		t.Fatal(err)
	}
	check(f, "reopened")
	// The early producer's state is known: a gap in its sequence is
	// refused (unknown, any sequence would do), the next one accepted.
	if _, err := f.Append(txnBatch(t, clock.Now().UnixMilli(), early.pid, 0, early.seq+1, 1, false), 5); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("a gap in a restored producer's sequence: %v", err)
	}
	if _, err := f.Append(txnBatch(t, clock.Now().UnixMilli(), early.pid, 0, early.seq, 1, false), 5); err != nil {
		t.Fatalf("the restored producer's next batch: %v", err)
	}
}

// Without a producer snapshot the producer state starts empty and the
// epochs still come back; epochs at or past the new start are dropped.
func TestRestoreRemoteLogAuxStateWithoutSnapshot(t *testing.T) {
	clock := newLtClock()
	cfg := ltConfig()
	cfg.RemoteStorageEnable = true
	f, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
	epochs := []EpochEntry{{1, 0}, {2, 10}, {4, 50}, {6, 100}}
	if err := f.RestoreRemoteLogAuxState(100, 20, epochs, nil); err != nil {
		t.Fatal(err)
	}
	if f.LogStartOffset() != 20 || f.LocalLogStartOffset() != 100 || len(f.ActiveProducers()) != 0 {
		t.Fatalf("log start %d, local %d, producers %v", f.LogStartOffset(), f.LocalLogStartOffset(), f.ActiveProducers())
	}
	want := []EpochEntry{{2, 20}, {4, 50}}
	if got := f.LeaderEpochEntries(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if got, err := ReadLeaderEpochCheckpoint(OSFS{}, f.dir); err != nil || !slices.Equal(got, want) {
		t.Fatalf("leader-epoch-checkpoint %v, %v; want %v", got, err, want)
	}
}

// assignAll keeps entries as Kafka's LeaderEpochFileCache.assign does.
func TestLeaderEpochCacheAssignAll(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []EpochEntry
		end  int64
		want []EpochEntry
	}{
		{"in order", []EpochEntry{{0, 0}, {2, 5}, {3, 9}}, 100, []EpochEntry{{0, 0}, {2, 5}, {3, 9}}},
		{"below end", []EpochEntry{{0, 0}, {2, 5}, {3, 9}}, 9, []EpochEntry{{0, 0}, {2, 5}}},
		{"negative", []EpochEntry{{-1, 0}, {1, -1}, {2, 5}}, 100, []EpochEntry{{2, 5}}},
		{"same epoch later", []EpochEntry{{1, 0}, {1, 4}}, 100, []EpochEntry{{1, 0}}},
		{"same epoch earlier", []EpochEntry{{0, 0}, {1, 4}, {1, 2}}, 100, []EpochEntry{{0, 0}, {1, 2}}},
		{"lower epoch", []EpochEntry{{0, 0}, {3, 4}, {2, 6}}, 100, []EpochEntry{{0, 0}, {2, 6}}},
		{"offset not above", []EpochEntry{{0, 0}, {1, 5}, {2, 5}}, 100, []EpochEntry{{0, 0}, {2, 5}}},
	} {
		c := &leaderEpochCache{}
		c.assignAll(tc.in, tc.end)
		if !slices.Equal(c.entries, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, c.entries, tc.want)
		}
	}
}

// A transaction open at the end of the remote segment (its snapshot says
// so) is open on the restored follower, holding its last stable offset at
// the local start (as for any transaction begun below it), until the
// marker it fetches next completes it.
func TestRestoreRemoteLogAuxStateOpenTransaction(t *testing.T) {
	clock := newLtClock()
	cfg := ltConfig()
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	leader, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
	p := &producerCursor{pid: 5}
	first := p.send(t, leader, clock.Now().UnixMilli(), 3, true).FirstOffset
	if err := leader.Roll(); err != nil {
		t.Fatal(err)
	}
	ltAppend(t, leader, ltBatch(t, ltBatchSpec{n: 2, valueSize: 10, ts: clock.Now().UnixMilli()}))
	marker(t, leader, clock.Now().UnixMilli(), p.pid, p.epoch, ControlCommit, 0)
	if err := leader.Roll(); err != nil {
		t.Fatal(err)
	}
	hwToEnd(leader)
	cands := leader.CopyableSegments()
	if len(cands) != 2 || cands[0].ProducerSnapshot == "" {
		t.Fatalf("copyable segments %+v", cands)
	}
	snap, err := ReadFile(OSFS{}, cands[0].ProducerSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	epochs, err := ParseLeaderEpochCheckpoint(cands[0].LeaderEpochCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
	if err := f.RestoreRemoteLogAuxState(cands[0].NextOffset, 0, epochs, snap); err != nil {
		t.Fatal(err)
	}
	if ps := f.ActiveProducers(); len(ps) != 1 || ps[0].CurrentTxnStartOffset != first {
		t.Fatalf("restored producers %+v, want producer %d's transaction open at %d", ps, p.pid, first)
	}
	// The leader's next segment: a batch of no transaction, then the
	// marker.
	next, err := ReadFile(OSFS{}, cands[1].LogPath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseBatchHeader(next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendAsFollower(next[:h.TotalSize()]); err != nil {
		t.Fatal(err)
	}
	hwToEnd(f)
	if lso := f.LastStableOffset(); lso != cands[0].NextOffset {
		t.Fatalf("open transaction: last stable offset %d (log end %d), want the local start %d", lso, f.LogEndOffset(), cands[0].NextOffset)
	}
	if _, err := f.AppendAsFollower(next[h.TotalSize():]); err != nil {
		t.Fatal(err)
	}
	hwToEnd(f)
	if lso, ps := f.LastStableOffset(), f.ActiveProducers(); lso != f.LogEndOffset() || len(ps) != 1 || ps[0].CurrentTxnStartOffset != -1 {
		t.Fatalf("after the marker: last stable offset %d (log end %d), producers %+v", lso, f.LogEndOffset(), ps)
	}
}
