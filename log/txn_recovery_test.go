package log

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// txnState is what must survive a restart.
type txnState struct {
	producers []ProducerState
	aborted   []AbortedTxn
	fu        int64 // first unstable offset, -1 if none
}

func stateOf(tb testing.TB, l *Log) txnState {
	tb.Helper()
	l.segMu.RLock()
	fu := l.firstUndecided
	l.segMu.RUnlock()
	return txnState{producers: l.ActiveProducers(), aborted: allAborted(tb, l), fu: fu}
}

func (s txnState) equal(o txnState) bool {
	return slices.Equal(s.producers, o.producers) && slices.Equal(s.aborted, o.aborted) && s.fu == o.fu
}

// String summarises the state (a failure prints two of them).
func (s txnState) String() string {
	first, last := AbortedTxn{}, AbortedTxn{}
	if n := len(s.aborted); n > 0 {
		first, last = s.aborted[0], s.aborted[n-1]
	}
	return fmt.Sprintf("producers %+v; %d aborted, first %+v, last %+v; first undecided %d", s.producers, len(s.aborted), first, last, s.fu)
}

// txnWorkload appends, across several segments, idempotent batches and
// transactions of several producers, committed, aborted and one left
// open; flushAt, if >= 0, flushes once the log end passes it.
func txnWorkload(tb testing.TB, l *Log, ts int64, rounds int, flushAt int64) {
	tb.Helper()
	idem := &producerCursor{pid: 1}
	txns := []*producerCursor{{pid: 2}, {pid: 3}, {pid: 4}}
	for r := 0; r < rounds; r++ {
		idem.send(tb, l, ts, 5, false)
		for i, p := range txns {
			p.send(tb, l, ts, 3, true)
			idem.send(tb, l, ts, 2, false)
			if r == rounds-1 && i == len(txns)-1 {
				continue // the last transaction stays open
			}
			typ := ControlCommit
			if (r+i)%2 == 0 {
				typ = ControlAbort
			}
			marker(tb, l, ts, p.pid, 0, typ, int32(r))
		}
		hwToEnd(l)
		if flushAt >= 0 && l.LogEndOffset() > flushAt {
			if err := l.Flush(); err != nil {
				tb.Fatal(err)
			}
			flushAt = -1
		}
	}
}

func TestRestartFromSnapshot(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	txnWorkload(t, l, clock.Now().UnixMilli(), 80, -1)
	if l.NumSegments() < 3 {
		t.Fatalf("only %d segments", l.NumSegments())
	}
	before, leo := stateOf(t, l), l.LogEndOffset()
	if len(before.aborted) == 0 || before.fu < 0 {
		t.Fatalf("workload: %+v", before)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l2, res := ltOpen(t, dir, ltConfig(), clock, clean, nil)
		if clean && (res.ProducerSnapshotOffset != leo || res.ReplayedBatches != 0) {
			t.Fatalf("clean restart loaded snapshot %d and replayed %d batches, want the one at %d and none", res.ProducerSnapshotOffset, res.ReplayedBatches, leo)
		}
		if !clean && res.ProducerSnapshotOffset >= 0 {
			t.Fatalf("recovery of every segment loaded snapshot %d, want none (it starts before the first)", res.ProducerSnapshotOffset)
		}
		if got := stateOf(t, l2); !got.equal(before) {
			t.Fatalf("clean=%v: state after restart\n%v\nwant\n%v", clean, got, before)
		}
		hwToEnd(l2)
		if l2.LastStableOffset() != before.fu {
			t.Fatalf("LSO %d, want %d", l2.LastStableOffset(), before.fu)
		}
		l2.Close()
	}
}

// openAt loads a log after a crash, with the recovery point checkpoint.
func openAt(tb testing.TB, dir string, clock *ltClock, recoveryPoint, logStart int64) (*Log, LoadResult) {
	tb.Helper()
	l, res, err := loadLog(logParams{
		dir: dir, tp: TopicPartition{"t", 0}, cfg: ltConfig(), fsys: OSFS{}, logger: ltLogger(tb), now: clock.Now,
		recoveryPoint: recoveryPoint, logStartOffset: logStart, highWatermark: -1,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return l, res
}

// TestCrashRecoveryRebuildsTxnIndex: a crash (FaultFS drops what was not
// fsynced) after a flush; recovery checks the segments from the recovery
// point, rebuilds their transaction indexes and the producer state from
// the newest snapshot before them, and the result equals the state of a
// log that appended exactly the surviving batches.
func TestCrashRecoveryRebuildsTxnIndex(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	ffs := NewFaultFS(nil)
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, ffs)
	txnWorkload(t, l, clock.Now().UnixMilli(), 120, 1500)
	rp := l.RecoveryPoint()
	if rp <= 0 || l.LogEndOffset() <= rp {
		t.Fatalf("recovery point %d, log end %d", rp, l.LogEndOffset())
	}
	if err := ffs.Crash(); err != nil {
		t.Fatal(err)
	}
	l2, res := openAt(t, dir, clock, rp, -1)
	defer l2.Close()
	if l2.LogEndOffset() < rp {
		t.Fatalf("lost fsynced data: end %d < %d", l2.LogEndOffset(), rp)
	}
	if res.ProducerSnapshotOffset < 0 || res.ProducerSnapshotOffset > rp {
		t.Fatalf("loaded producer snapshot %d; want one at or below the recovery point %d", res.ProducerSnapshotOffset, rp)
	}
	ltCheckIndexes(t, l2)

	// Replay the surviving batches into a fresh log: same state.
	ref, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer ref.Close()
	for off := int64(0); off < l2.LogEndOffset(); {
		fd, err := l2.Read(off, 1<<20, l2.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := fd.Records.ReadInto(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		off = fd.NextOffset
	}
	if got, want := stateOf(t, l2), stateOf(t, ref); !got.equal(want) {
		t.Fatalf("after recovery\n%v\nwant (replayed)\n%v", got, want)
	}
	t.Logf("recovery point %d, recovered end %d, snapshot %d, replayed %d batches, %d aborts",
		rp, l2.LogEndOffset(), res.ProducerSnapshotOffset, res.ReplayedBatches, len(allAborted(t, l2)))
}

// TestRestartAfterRetentionDeletedProducerSegments: an idempotent
// producer's batches are all in segments retention then deletes; after a
// crash its sequence state comes back from the snapshot taken when the
// active segment rolled, not from the log.
func TestRestartAfterRetentionDeletedProducerSegments(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	ffs := NewFaultFS(nil)
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, ffs)
	ts := clock.Now().UnixMilli()
	p := &producerCursor{pid: 77, epoch: 3}
	var last AppendInfo
	for i := 0; i < 5; i++ {
		last = p.send(t, l, ts, 4, false)
	}
	other := &producerCursor{pid: 1}
	for l.NumSegments() < 4 {
		other.send(t, l, ts, 20, false)
	}
	hwToEnd(l)
	bases := l.SegmentBaseOffsets()
	start, err := l.DeleteRecordsBefore(bases[len(bases)-1])
	if err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || last.LastOffset >= start {
		t.Fatalf("%d segments left, log start %d; producer 77 ends at %d", l.NumSegments(), start, last.LastOffset)
	}
	for _, off := range l.SnapshotOffsets() {
		if off < start {
			t.Fatalf("snapshot %d of a deleted segment left", off)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	other.send(t, l, ts, 1, false) // not fsynced
	if err := ffs.Crash(); err != nil {
		t.Fatal(err)
	}
	l2, res := openAt(t, dir, clock, l.RecoveryPoint(), start)
	defer l2.Close()
	if res.ProducerSnapshotOffset != start {
		t.Fatalf("loaded snapshot %d, want the one at the log start %d", res.ProducerSnapshotOffset, start)
	}
	// A retry of its last batch is a duplicate at the original offsets.
	info, err := l2.Append(txnBatch(t, ts, 77, 3, p.seq-4, 4, false), 0)
	if err != nil || !info.Duplicate || info.FirstOffset != last.FirstOffset {
		t.Fatalf("retry after restart: %+v %v; want duplicate at %d", info, err, last.FirstOffset)
	}
	_, err = l2.Append(txnBatch(t, ts, 77, 3, p.seq+1, 1, false), 0)
	wantErrIs(t, "gap after restart", err, kerr.OutOfOrderSequenceNumber)
	if _, err := l2.Append(txnBatch(t, ts, 77, 3, p.seq, 1, false), 0); err != nil {
		t.Fatalf("next sequence after restart: %v", err)
	}
}

func TestCorruptSnapshotFallsBack(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	txnWorkload(t, l, clock.Now().UnixMilli(), 30, -1)
	before, leo := stateOf(t, l), l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snaps := l.SnapshotOffsets()
	if len(snaps) < 2 || snaps[len(snaps)-1] != leo {
		t.Fatalf("snapshots %v, log end %d", snaps, leo)
	}
	// Flip a byte of the newest one: its CRC fails.
	path := snapshotPath(dir, leo)
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 0xff
	os.WriteFile(path, b, 0o644)
	l2, res := ltOpen(t, dir, ltConfig(), clock, true, nil)
	defer l2.Close()
	prev := snaps[len(snaps)-2]
	if res.ProducerSnapshotOffset != prev || res.ReplayedBatches == 0 {
		t.Fatalf("loaded %d replaying %d batches; want the older snapshot %d and a replay", res.ProducerSnapshotOffset, res.ReplayedBatches, prev)
	}
	if got := stateOf(t, l2); !got.equal(before) {
		t.Fatalf("state %v\nwant %v", got, before)
	}
	// A new, valid snapshot replaced the corrupt one.
	if b2, _ := os.ReadFile(path); len(b2) == 0 || string(b2) == string(b) {
		t.Fatal("corrupt snapshot not replaced")
	}
}

func TestStraySnapshotsRemoved(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	txnWorkload(t, l, clock.Now().UnixMilli(), 20, -1)
	bases := l.SegmentBaseOffsets()
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Strays: between segments, and an old one past the end.
	for _, off := range []int64{bases[0] + 1, bases[1] + 2, leo + 100} {
		os.WriteFile(snapshotPath(dir, off), EncodeProducerSnapshot(nil), 0o644)
	}
	l2, _ := ltOpen(t, dir, ltConfig(), clock, true, nil)
	defer l2.Close()
	for _, off := range l2.SnapshotOffsets() {
		if off != leo && !slices.Contains(bases, off) {
			t.Fatalf("stray snapshot %d kept (bases %v, end %d)", off, bases, leo)
		}
	}
	for _, off := range []int64{bases[0] + 1, bases[1] + 2, leo + 100} {
		if _, err := os.Stat(snapshotPath(dir, off)); !os.IsNotExist(err) {
			t.Fatalf("stray %d still on disk: %v", off, err)
		}
	}
	if _, err := os.Stat(snapshotPath(dir, leo)); err != nil {
		t.Fatalf("the clean shutdown snapshot went: %v", err)
	}
}

func TestTruncateToReloadsProducerState(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	p := &producerCursor{pid: 9}
	q := &producerCursor{pid: 8}
	p.send(t, l, ts, 2, true) // 0-1
	for l.NumSegments() < 3 {
		q.send(t, l, ts, 20, false)
	}
	mid := l.LogEndOffset()
	marker(t, l, ts, 9, 0, ControlAbort, 0) // at mid
	p.send(t, l, ts, 1, true)               // a new transaction at mid+1
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	q.send(t, l, ts, 1, false)
	hwToEnd(l)
	if got := allAborted(t, l); len(got) != 1 {
		t.Fatalf("aborted %+v", got)
	}
	if _, err := l.TruncateTo(mid); err != nil {
		t.Fatal(err)
	}
	for _, off := range l.SnapshotOffsets() {
		if off > mid {
			t.Fatalf("snapshot %d past the new end %d", off, mid)
		}
	}
	// The abort is gone: producer 9's transaction from 0 is open again.
	if got := allAborted(t, l); len(got) != 0 {
		t.Fatalf("aborted after truncation %+v", got)
	}
	hwToEnd(l)
	if l.LastStableOffset() != 0 || !l.HasOngoingTransaction(9, 0) {
		t.Fatalf("LSO %d, ongoing %v", l.LastStableOffset(), l.HasOngoingTransaction(9, 0))
	}
	ps := l.ActiveProducers()
	if i := slices.IndexFunc(ps, func(s ProducerState) bool { return s.ProducerID == 9 }); i < 0 || ps[i].LastSequence != 1 || ps[i].CurrentTxnStartOffset != 0 {
		t.Fatalf("producer 9 after truncation: %+v", ps)
	}
}

func TestRetentionDeletesSnapshotsWithSegments(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	cfg := ltConfig()
	cfg.RetentionBytes = int64(cfg.SegmentBytes)
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	defer l.Close()
	q := &producerCursor{pid: 1}
	a := &producerCursor{pid: 2}
	a.send(t, l, clock.Now().UnixMilli(), 1, true)
	marker(t, l, clock.Now().UnixMilli(), 2, 0, ControlAbort, 0) // a .txnindex in the first segment
	for l.NumSegments() < 6 {
		q.send(t, l, clock.Now().UnixMilli(), 20, false)
	}
	hwToEnd(l)
	idx := filepath.Join(dir, FilenamePrefixFromOffset(0)+TxnIndexFileSuffix)
	if _, err := os.Stat(idx); err != nil {
		t.Fatal(err)
	}
	n, err := l.DeleteOldSegments()
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	start := l.LogStartOffset()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if off, ok := offsetFromFileName(e.Name()); ok && filepath.Ext(e.Name()) == SnapshotFileSuffix && off < start {
			t.Fatalf("snapshot %s of a deleted segment left (log start %d)", e.Name(), start)
		}
	}
	if len(l.SnapshotOffsets()) == 0 {
		t.Fatal("no snapshot left")
	}
	if _, err := os.Stat(idx); !os.IsNotExist(err) {
		t.Fatalf("the deleted segment's .txnindex: %v", err)
	}
	if got := allAborted(t, l); len(got) != 0 {
		t.Fatalf("aborted transactions of deleted segments still reported: %+v", got)
	}
}

// TestFollowerAppendIndexesAborts: batches appended as a follower update
// the producer state and transaction index as the leader's did.
func TestFollowerAppendIndexesAborts(t *testing.T) {
	clock := newLtClock()
	leader, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer leader.Close()
	txnWorkload(t, leader, clock.Now().UnixMilli(), 10, -1)
	follower, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer follower.Close()
	for off := int64(0); off < leader.LogEndOffset(); {
		fd, err := leader.Read(off, 3000, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := fd.Records.ReadInto(nil)
		if _, err := follower.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		off = fd.NextOffset
	}
	if got, want := stateOf(t, follower), stateOf(t, leader); !got.equal(want) {
		t.Fatalf("follower %v\nleader %v", got, want)
	}
}
