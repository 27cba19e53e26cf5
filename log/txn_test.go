package log

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLastStableOffsetInterleaved runs transactions of several producers
// interleaved with idempotent writes, and checks the last stable offset,
// the transaction index entries (with the LSO each abort left) and what a
// read_committed read returns, at every step.
func TestLastStableOffsetInterleaved(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	a := &producerCursor{pid: 10} // idempotent
	b := &producerCursor{pid: 20}
	c := &producerCursor{pid: 30}
	d := &producerCursor{pid: 40}
	e := &producerCursor{pid: 50}
	lso := func(want int64) {
		t.Helper()
		if got := l.LastStableOffset(); got != want {
			t.Fatalf("LSO %d, want %d (hw %d)", got, want, l.HighWatermark())
		}
		snap, err := l.FetchOffsetSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if snap.LastStableOffset.MessageOffset != want || snap.LastStableOffset.MessageOffset > snap.HighWatermark.MessageOffset {
			t.Fatalf("snapshot LSO %v, want %d", snap.LastStableOffset, want)
		}
	}
	step := func(info AppendInfo, first int64) {
		t.Helper()
		if info.FirstOffset != first {
			t.Fatalf("appended at %d, want %d", info.FirstOffset, first)
		}
		hwToEnd(l)
	}
	step(a.send(t, l, ts, 1, false), 0)
	lso(1)
	step(b.send(t, l, ts, 2, true), 1) // B's transaction: 1-2
	lso(1)
	step(c.send(t, l, ts, 1, true), 3) // C's: 3
	step(a.send(t, l, ts, 1, false), 4)
	step(b.send(t, l, ts, 1, true), 5)
	lso(1)
	step(marker(t, l, ts, 30, 0, ControlAbort, 0), 6) // C aborted; B still open at 1
	lso(1)
	if got := allAborted(t, l); !slices.Equal(got, []AbortedTxn{{30, 3, 6, 1}}) {
		t.Fatalf("aborted %+v", got)
	}
	// B's COMMIT: stable only once the high watermark passes its marker
	// (Kafka's unreplicatedTxns).
	marker(t, l, ts, 20, 0, ControlCommit, 0)
	lso(1)
	hwToEnd(l)
	lso(8)
	step(d.send(t, l, ts, 1, true), 8)
	step(e.send(t, l, ts, 1, true), 9)
	lso(8)
	step(marker(t, l, ts, 40, 0, ControlAbort, 0), 10)
	lso(9)
	step(marker(t, l, ts, 50, 0, ControlAbort, 0), 11)
	lso(12)
	want := []AbortedTxn{{30, 3, 6, 1}, {40, 8, 10, 9}, {50, 9, 11, 12}}
	if got := allAborted(t, l); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	// A read_committed read of everything gets every abort it overlaps.
	fd, err := l.ReadCommitted(0, 1<<20, l.LastStableOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if fd.NextOffset != 12 || !slices.Equal(fd.AbortedTransactions, want) {
		t.Fatalf("read committed: next %d aborted %+v", fd.NextOffset, fd.AbortedTransactions)
	}
	// From 7 on only D's and E's overlap; from 12, none.
	if fd, _ := l.ReadCommitted(7, 1<<20, l.LastStableOffset(), true); !slices.Equal(fd.AbortedTransactions, want[1:]) {
		t.Fatalf("from 7: %+v", fd.AbortedTransactions)
	}
	if fd, _ := l.ReadCommitted(12, 1<<20, l.LastStableOffset(), true); fd.AbortedTransactions == nil || len(fd.AbortedTransactions) != 0 {
		t.Fatalf("from 12: %#v, want an empty list", fd.AbortedTransactions)
	}
	// An open transaction holds a read_committed read at its first offset.
	f := &producerCursor{pid: 60}
	step(f.send(t, l, ts, 1, true), 12)
	step(a.send(t, l, ts, 1, false), 13)
	lso(12)
	fd, _ = l.ReadCommitted(0, 1<<20, l.LastStableOffset(), true)
	if fd.NextOffset != 12 {
		t.Fatalf("read committed stops at %d, want 12", fd.NextOffset)
	}
	if got := l.LastStableOffsetLag(); got != 2 {
		t.Fatalf("LSO lag %d, want 2", got)
	}
}

// TestTxnIndexAcrossSegments: a transaction that starts in one segment
// and is aborted in a later one is recorded in the later segment's
// .txnindex; a fetch from the first segment still finds it.
func TestTxnIndexAcrossSegments(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	p := &producerCursor{pid: 5}
	p.send(t, l, ts, 1, true) // offset 0
	q := &producerCursor{pid: 6}
	for l.NumSegments() < 3 {
		q.send(t, l, ts, 20, false)
	}
	hwToEnd(l)
	m := marker(t, l, ts, 5, 0, ControlAbort, 0)
	hwToEnd(l)
	bases := l.SegmentBaseOffsets()
	last := bases[len(bases)-1]
	for _, base := range bases {
		_, err := os.Stat(filepath.Join(dir, FilenamePrefixFromOffset(base)+TxnIndexFileSuffix))
		if (base == last) != (err == nil) {
			t.Fatalf("segment %d: txnindex stat %v (abort is in segment %d)", base, err, last)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, FilenamePrefixFromOffset(last)+TxnIndexFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	want := AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: m.FirstOffset, LastStableOffset: m.FirstOffset + 1}
	if !bytes.Equal(b, AppendAbortedTxn(nil, want)) {
		t.Fatalf("txnindex %x", b)
	}
	fd, err := l.ReadCommitted(0, 100, l.LastStableOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fd.AbortedTransactions, []AbortedTxn{want}) {
		t.Fatalf("aborted %+v", fd.AbortedTransactions)
	}
	// The cleaner's view: everything from the log start.
	if got, _ := l.AbortedTransactions(bases[1], l.LogEndOffset()); !slices.Equal(got, []AbortedTxn{want}) {
		t.Fatalf("AbortedTransactions %+v", got)
	}
}

// goldenLog builds the log the golden files describe: an idempotent
// producer, a committed, an aborted and an open transaction, markers of
// coordinator epochs 3 and 4, on a fixed clock.
func goldenLog(t *testing.T, dir string) *Log {
	clock := newLtClock()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	ts := clock.Now().UnixMilli()
	idem := &producerCursor{pid: 1000, epoch: 2}
	committed := &producerCursor{pid: 2000, epoch: 5}
	aborted := &producerCursor{pid: 3000, epoch: 0}
	open := &producerCursor{pid: 4000, epoch: 7}
	idem.send(t, l, ts, 3, false)
	committed.send(t, l, ts+1, 2, true)
	aborted.send(t, l, ts+2, 1, true)
	open.send(t, l, ts+3, 4, true)
	idem.send(t, l, ts+4, 2, false)
	marker(t, l, ts+5, 3000, 0, ControlAbort, 3)
	committed.send(t, l, ts+6, 1, true)
	marker(t, l, ts+7, 2000, 5, ControlCommit, 4)
	hwToEnd(l)
	return l
}

// TestProducerSnapshotAndTxnIndexGolden pins the bytes of the producer
// snapshot and transaction index files a log writes. Regenerate with
// UPDATE_TXN_GOLDEN=1 after a deliberate change; the layout is checked
// against an independent encoder of Kafka's format below.
func TestProducerSnapshotAndTxnIndexGolden(t *testing.T) {
	dir := t.TempDir()
	l := goldenLog(t, dir)
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snapName := FilenamePrefixFromOffset(leo) + SnapshotFileSuffix
	idxName := FilenamePrefixFromOffset(0) + TxnIndexFileSuffix
	for _, name := range []string{snapName, idxName} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "txn", name)
		if os.Getenv("UPDATE_TXN_GOLDEN") != "" {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (set UPDATE_TXN_GOLDEN=1 to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s differs from %s:\n got %x\nwant %x", name, golden, got, want)
		}
	}

	// Kafka's ProducerSnapshot v1 written field by field, independently.
	ts := newLtClock().Now().UnixMilli()
	type entry struct {
		ProducerID            int64
		Epoch                 int16
		LastSequence          int32
		LastOffset            int64
		OffsetDelta           int32
		Timestamp             int64
		CoordinatorEpoch      int32
		CurrentTxnFirstOffset int64
	}
	entries := []entry{
		{1000, 2, 4, 11, 1, ts + 4 + 1, -1, -1}, // idempotent: last batch seq 3-4 at offsets 10-11
		{2000, 5, 2, 13, 0, ts + 7, 4, -1},      // committed: marker at 14 stamped ts+7
		{3000, 0, 0, 5, 0, ts + 5, 3, -1},       // aborted by the marker at 12, stamped ts+5
		{4000, 7, 3, 9, 3, ts + 3 + 3, -1, 6},   // open since 6
	}
	var body bytes.Buffer
	binary.Write(&body, binary.BigEndian, int32(len(entries)))
	for _, e := range entries {
		binary.Write(&body, binary.BigEndian, e)
	}
	var want bytes.Buffer
	binary.Write(&want, binary.BigEndian, int16(1))
	binary.Write(&want, binary.BigEndian, crc32.Checksum(body.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	want.Write(body.Bytes())
	got, _ := os.ReadFile(filepath.Join(dir, snapName))
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("snapshot is not Kafka's layout:\n got %x\nwant %x", got, want.Bytes())
	}
	var idx bytes.Buffer
	binary.Write(&idx, binary.BigEndian, struct {
		Version                                               int16
		ProducerID, FirstOffset, LastOffset, LastStableOffset int64
	}{0, 3000, 5, 12, 3}) // LSO 3: producer 2000's transaction was open
	got, _ = os.ReadFile(filepath.Join(dir, idxName))
	if !bytes.Equal(got, idx.Bytes()) {
		t.Fatalf("txnindex is not Kafka's layout:\n got %x\nwant %x", got, idx.Bytes())
	}
	dec, err := DecodeProducerSnapshot(got[:0:0])
	if err == nil || dec != nil {
		t.Fatal("an empty snapshot decodes")
	}
}
