package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ctDescribe lists a log's batches: data records as offset:key=value,
// markers as offset:COMMIT or offset:ABORT (with "+h" when they carry a
// delete horizon), empty batches as offset:empty.
func ctDescribe(tb testing.TB, l *Log) string {
	tb.Helper()
	var parts []string
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		fd, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := fd.Records.ReadInto(nil)
		if err != nil || len(b) == 0 {
			tb.Fatalf("read %d: %d bytes, %v", off, len(b), err)
		}
		for len(b) > 0 {
			h, err := ParseBatchHeader(b)
			if err != nil {
				tb.Fatal(err)
			}
			batch := b[:h.TotalSize()]
			recs := ctBatchRecords(tb, batch)
			switch {
			case h.IsControl() && len(recs) > 0:
				typ, _ := controlRecordType([]byte(recs[0].key))
				name := map[int16]string{ControlAbort: "ABORT", ControlCommit: "COMMIT"}[typ]
				if h.Attributes&AttrDeleteHorizon != 0 {
					name += "+h"
				}
				parts = append(parts, fmt.Sprintf("%d:%s", recs[0].off, name))
			case len(recs) == 0:
				parts = append(parts, fmt.Sprintf("%d:empty", h.BaseOffset))
			default:
				for _, r := range recs {
					parts = append(parts, r.String())
				}
			}
			b = b[h.TotalSize():]
			off = h.NextOffset()
		}
	}
	return strings.Join(parts, " ")
}

// Kafka's transaction rules, with the aborted transactions fed directly
// (as the transaction index will give them): records of an aborted
// transaction go at once and do not hide older values of their keys; its
// ABORT marker stays while a batch of the transaction was seen in the
// pass, then gets a delete horizon, then goes after it (two passes); a
// COMMIT marker stays while batches of its transaction remain, and goes
// the same way once they are compacted away.
func TestCleanerTransactions(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	ts := clock.Now().UnixMilli()
	txn := func(pid int64, seq int32, keys ...string) []byte {
		return ctBatch(t, ctBatchSpec{ts: ts, pid: pid, seq: seq, txn: true, keys: keys})
	}
	plain := func(keys ...string) []byte { return ctBatch(t, ctBatchSpec{ts: ts, keys: keys}) }
	marker := func(pid int64, typ int16) []byte { return BuildControlBatch(0, ts, pid, 0, 0, typ, 0) }
	next := ctWriteSegment(t, dir, 0,
		txn(2, 0, "a", "b"), // 0-1 committed below
		txn(1, 0, "a", "c"), // 2-3 aborted below
		marker(2, ControlCommit),
		marker(1, ControlAbort),
		plain("d"), // 6
	)
	next = ctWriteSegment(t, dir, next,
		plain("b"),     // 7: b=v-b overwrites the committed b
		txn(1, 2, "e"), // 8
		marker(1, ControlCommit),
		txn(2, 2, "f"), // 10
		marker(2, ControlCommit),
		plain("g"), // 12
	)
	ctWriteSegment(t, dir, next)
	cfg := ctConfig()
	cfg.DeleteRetentionMs = 10_000
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	l.UpdateHighWatermark(l.LogEndOffset())

	abortedExists := true
	aborted := AbortedTxn{ProducerID: 1, FirstOffset: 2, LastOffset: 5, LastStableOffset: 2}
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	lc.abortedTxns = func(_ *Log, from, upper int64) ([]AbortedTxn, error) {
		if abortedExists && aborted.LastOffset >= from && aborted.FirstOffset < upper {
			return []AbortedTxn{aborted}, nil
		}
		return nil, nil
	}
	var kept [][]AbortedTxn
	lc.threads[0].cleaner.writeTxnIndex = func(_ *Segment, txns []AbortedTxn) error {
		kept = append(kept, append([]AbortedTxn(nil), txns...))
		return nil
	}
	pass := func(what string, want string, wantKept ...AbortedTxn) {
		t.Helper()
		kept = nil
		if !ctCleanOnce(t, lc) {
			t.Fatalf("%s: nothing cleaned", what)
		}
		if got := ctDescribe(t, l); got != want {
			t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
		}
		var all []AbortedTxn
		for _, k := range kept {
			all = append(all, k...)
		}
		if fmt.Sprint(all) != fmt.Sprint(wantKept) {
			t.Fatalf("%s: transaction index keeps %v, want %v", what, all, wantKept)
		}
		ltCheckIndexes(t, l)
	}

	pass("first pass",
		"0:a=v-a 4:COMMIT 5:ABORT 6:d=v-d 7:b=v-b 8:e=v-e 9:COMMIT 10:f=v-f 11:COMMIT 12:g=v-g",
		aborted)
	// The aborted transaction's data is gone: its marker gets a horizon.
	ctAppend(t, l, plain("h"))
	pass("second pass",
		"0:a=v-a 4:COMMIT 5:ABORT+h 6:d=v-d 7:b=v-b 8:e=v-e 9:COMMIT 10:f=v-f 11:COMMIT 12:g=v-g 13:h=v-h")
	abortedExists = false // no longer in the cleaned segment's index
	// Past the horizon the ABORT marker goes. The last record of the
	// committed transaction at 0 goes too, but its batch was still seen
	// in this pass, so its COMMIT stays.
	ctAppend(t, l, plain("a"))
	clock.Advance(10*time.Second + time.Millisecond)
	pass("third pass",
		"4:COMMIT 6:d=v-d 7:b=v-b 8:e=v-e 9:COMMIT 10:f=v-f 11:COMMIT 12:g=v-g 13:h=v-h 14:a=v-a")
	ctAppend(t, l, plain("i"))
	pass("fourth pass",
		"4:COMMIT+h 6:d=v-d 7:b=v-b 8:e=v-e 9:COMMIT 10:f=v-f 11:COMMIT 12:g=v-g 13:h=v-h 14:a=v-a 15:i=v-i")
	ctAppend(t, l, plain("j"))
	clock.Advance(10*time.Second + time.Millisecond)
	pass("fifth pass",
		"6:d=v-d 7:b=v-b 8:e=v-e 9:COMMIT 10:f=v-f 11:COMMIT 12:g=v-g 13:h=v-h 14:a=v-a 15:i=v-i 16:j=v-j")
}

// The cleaned transaction metadata on its own: a transaction reported by
// two overlapping lookups counts once, and a marker of an empty
// (already cleaned) control batch is discardable.
func TestCleanedTransactionMetadata(t *testing.T) {
	m := newCleanedTransactionMetadata()
	a := AbortedTxn{ProducerID: 1, FirstOffset: 10, LastOffset: 20}
	m.addAbortedTransactions([]AbortedTxn{a})
	m.addAbortedTransactions([]AbortedTxn{a})
	data := BatchHeader{BaseOffset: 10, ProducerID: 1, Attributes: AttrTransactional}
	if !m.onBatchRead(&data) {
		t.Fatal("batch of the aborted transaction not discardable")
	}
	other := BatchHeader{BaseOffset: 11, ProducerID: 2, Attributes: AttrTransactional}
	if m.onBatchRead(&other) {
		t.Fatal("batch of another producer discardable")
	}
	abort := BatchHeader{BaseOffset: 20, ProducerID: 1, Attributes: AttrTransactional | AttrControl}
	if m.onControlBatchRead(&abort, ControlAbort, true) {
		t.Fatal("ABORT marker discardable while its data was seen")
	}
	if len(m.retained) != 1 || m.retained[0] != a {
		t.Fatalf("retained %v", m.retained)
	}
	// The duplicate must not reopen the transaction.
	later := BatchHeader{BaseOffset: 30, ProducerID: 1, Attributes: AttrTransactional}
	if m.onBatchRead(&later) {
		t.Fatal("a later transaction of the producer was taken for the aborted one")
	}
	commit := BatchHeader{BaseOffset: 31, ProducerID: 2, Attributes: AttrTransactional | AttrControl}
	if m.onControlBatchRead(&commit, ControlCommit, true) {
		t.Fatal("COMMIT marker discardable while its data was seen")
	}
	if !m.onControlBatchRead(&commit, ControlCommit, false) {
		t.Fatal("an empty control batch is not discardable")
	}
}

// The cleaner on a log whose transactions were written by the real append
// path: aborted records go (their ABORT marker stays, with its entry in
// the cleaned segment's .txnindex), committed ones stay, and a restart
// reads the same log.
func TestCleanerWithRealTransactionIndex(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := ctConfig()
	cfg.DeleteRetentionMs = 10_000
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	ts := clock.Now().UnixMilli()
	coord := AppendOptions{Origin: AppendOriginCoordinator}
	client := AppendOptions{Origin: AppendOriginClient}
	app := func(b []byte, opts AppendOptions) {
		t.Helper()
		if _, err := l.AppendAsLeader(b, 0, opts); err != nil {
			t.Fatalf("append: %v", err)
		}
		l.UpdateHighWatermark(l.LogEndOffset())
	}
	app(ctBatch(t, ctBatchSpec{ts: ts, pid: 1, seq: 0, txn: true, keys: []string{"a", "b"}}), client) // 0-1, aborted
	app(ctBatch(t, ctBatchSpec{ts: ts, pid: 2, seq: 0, txn: true, keys: []string{"a", "c"}}), client) // 2-3, committed
	app(BuildControlBatch(0, ts, 1, 0, 0, ControlAbort, 0), coord)                                    // 4
	app(BuildControlBatch(0, ts, 2, 0, 0, ControlCommit, 0), coord)                                   // 5
	if got, _ := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 || got[0].ProducerID != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 4 {
		t.Fatalf("aborted transactions before cleaning: %+v", got)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	app(ctBatch(t, ctBatchSpec{ts: ts, keys: []string{"z"}}), client) // 6, in the active segment
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	// Data records only: the markers (4, 5) stay after one pass, by
	// Kafka's two-pass rule.
	data := func(l *Log) string {
		var out []ctRec
		for _, r := range ctRead(t, l) {
			if len(r.key) > 0 && r.key[0] >= 'a' {
				out = append(out, r)
			}
		}
		return fmt.Sprint(out)
	}
	got := data(l)
	want := "[2:a=v-a 3:c=v-c 6:z=v-z]"
	if got != want {
		t.Fatalf("after cleaning:\n got %s\nwant %s", got, want)
	}
	// The ABORT marker is kept (its transaction had data in this pass),
	// and so is its index entry, now in the cleaned segment's file.
	if txns, err := l.AbortedTransactions(0, l.LogEndOffset()); err != nil || len(txns) != 1 || txns[0].LastOffset != 4 {
		t.Fatalf("aborted transactions after cleaning: %+v %v", txns, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FilenamePrefixFromOffset(0)+TxnIndexFileSuffix))
	if err != nil || len(b) != AbortedTxnSize {
		t.Fatalf("cleaned segment's .txnindex: %d bytes, %v", len(b), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := ltOpen(t, dir, cfg, clock, true, nil)
	defer l2.Close()
	l2.UpdateHighWatermark(l2.LogEndOffset())
	if got := data(l2); got != want {
		t.Fatalf("after restart:\n got %s\nwant %s", got, want)
	}
}
