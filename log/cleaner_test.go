package log

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// The newest record of every key survives cleaning, at its offset; older
// ones go; the cleaned log reloads the same and its indexes agree with
// its data.
func TestCleanerKeepsNewestPerKey(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _ := ltOpen(t, dir, ctConfig(), clock, false, nil)
	var all []ctRec
	for round := 0; round < 40; round++ {
		var keys []string
		var values [][]byte
		for i := 0; i < 10; i++ {
			k := fmt.Sprintf("k%02d", (round*7+i)%25)
			keys = append(keys, k)
			values = append(values, bytes.Repeat([]byte{byte('a' + round%26)}, 100+round))
		}
		info := ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: keys, values: values}))
		for i := range keys {
			all = append(all, ctRec{off: info.FirstOffset + int64(i), key: keys[i], value: values[i]})
		}
	}
	ctAppend(t, l)
	before, sizeBefore := l.NumSegments(), l.Size()
	if before < 4 {
		t.Fatalf("only %d segments", before)
	}
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	got := ctRead(t, l)
	want := ctNewest(all)
	if len(got) != len(want) {
		t.Fatalf("%d records after cleaning, want %d: %v", len(got), len(want), got)
	}
	for _, r := range got {
		if w := want[r.key]; w.off != r.off || !bytes.Equal(w.value, r.value) {
			t.Fatalf("kept %v, newest is %v", r, w)
		}
	}
	ltCheckIndexes(t, l)
	if cp, ok := lc.mgr.allCleanerCheckpoints()[l.tp]; !ok || cp != l.active().baseOffset {
		t.Fatalf("cleaner checkpoint %d %v, want %d", cp, ok, l.active().baseOffset)
	}
	if l.Size() >= sizeBefore/2 {
		t.Fatalf("%d bytes after cleaning, %d before", l.Size(), sizeBefore)
	}
	// The next cleaning merges the segments that shrank (Kafka's
	// groupSegmentsBySize).
	info := ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: []string{"k00"}, values: [][]byte{[]byte("last")}}))
	all = append(all, ctRec{off: info.FirstOffset, key: "k00", value: []byte("last")})
	ctAppend(t, l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned the second time")
	}
	if l.NumSegments() != 2 {
		t.Fatalf("%d segments after the second cleaning, want the cleaned one and the active one", l.NumSegments())
	}
	got = ctRead(t, l)
	want = ctNewest(all)
	if len(got) != len(want) {
		t.Fatalf("%d records after cleaning twice, want %d: %v", len(got), len(want), got)
	}
	ltCheckIndexes(t, l)
	leo, size := l.LogEndOffset(), l.Size()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l2, _ := ltOpen(t, dir, ctConfig(), clock, clean, nil)
		if l2.LogEndOffset() != leo || l2.Size() != size {
			t.Fatalf("reloaded (clean %v): end %d size %d, want %d %d", clean, l2.LogEndOffset(), l2.Size(), leo, size)
		}
		l2.UpdateHighWatermark(leo)
		if got2 := ctRead(t, l2); fmt.Sprint(got2) != fmt.Sprint(got) {
			t.Fatalf("reloaded log differs:\n%v\n%v", got2, got)
		}
		ltCheckIndexes(t, l2)
		l2.Close()
	}
}

// A tombstone survives its first cleaning, which stamps its batch with the
// delete horizon (KIP-534: now + delete.retention.ms as the base
// timestamp, record timestamps kept), and goes at the first cleaning after
// the horizon; the value it deleted goes at once.
func TestCleanerTombstoneDeleteHorizon(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := ctConfig()
	cfg.DeleteRetentionMs = 60_000
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	ts := clock.Now().UnixMilli() - 5000
	ctAppend(t, l,
		ctBatch(t, ctBatchSpec{ts: ts, keys: []string{"a", "b", "c"}}),
		ctBatch(t, ctBatchSpec{ts: ts + 10, keys: []string{"b", "x"}, values: [][]byte{nil, []byte("keep")}}),
	)
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	want := "[0:a=v-a 2:c=v-c 3:b=<tombstone> 4:x=keep]"
	if got := fmt.Sprint(ctRead(t, l)); got != want {
		t.Fatalf("after the first cleaning: %s, want %s", got, want)
	}
	hs := ltReadAll(t, l, 0)
	horizon := clock.Now().UnixMilli() + cfg.DeleteRetentionMs
	tomb := hs[len(hs)-1]
	if tomb.Attributes&AttrDeleteHorizon == 0 || tomb.BaseTimestamp != horizon {
		t.Fatalf("tombstone batch %+v: want the delete horizon %d", tomb, horizon)
	}
	if first := hs[0]; first.Attributes&AttrDeleteHorizon != 0 {
		t.Fatalf("batch without tombstones got a delete horizon: %+v", first)
	}
	for _, r := range ctRead(t, l) {
		if r.key == "b" && r.ts != ts+10 {
			t.Fatalf("tombstone timestamp %d, want %d", r.ts, ts+10)
		}
	}

	// Before the horizon, more cleaning keeps it.
	ctAppend(t, l, ctBatch(t, ctBatchSpec{ts: ts + 20, keys: []string{"c"}, values: [][]byte{[]byte("c2")}}))
	clock.Advance(30_000 * time.Millisecond)
	ctCleanOnce(t, lc)
	if got := fmt.Sprint(ctRead(t, l)); got != "[0:a=v-a 3:b=<tombstone> 4:x=keep 5:c=c2]" {
		t.Fatalf("before the horizon: %s", got)
	}
	// After it, it goes.
	ctAppend(t, l, ctBatch(t, ctBatchSpec{ts: ts + 30, keys: []string{"a"}, values: [][]byte{[]byte("a2")}}))
	clock.Advance(30_001 * time.Millisecond)
	ctCleanOnce(t, lc)
	if got := fmt.Sprint(ctRead(t, l)); got != "[4:x=keep 5:c=c2 6:a=a2]" {
		t.Fatalf("after the horizon: %s", got)
	}
	ltCheckIndexes(t, l)
}

// An idempotent producer's batches keep base offset, producer id, epoch
// and base sequence; a batch whose records all go is kept, empty, if it is
// the producer's last, so the producer goes on (and retries are still
// recognised) after cleaning and after a restart.
func TestCleanerKeepsProducerState(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _ := ltOpen(t, dir, ctConfig(), clock, false, nil)
	ts := clock.Now().UnixMilli()
	p7 := func(seq int32, keys ...string) []byte {
		return ctBatch(t, ctBatchSpec{ts: ts, pid: 7, epoch: 3, seq: seq, keys: keys})
	}
	ctAppend(t, l,
		p7(0, "a", "b"), // offsets 0-1: overwritten
		p7(2, "c", "a"), // 2-3: c survives
		p7(4, "a", "b"), // 4-5: overwritten below, but the producer's last
		ctBatch(t, ctBatchSpec{ts: ts, keys: []string{"a", "b"}}), // 6-7
	)
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	hs := ltReadAll(t, l, 0)
	if len(hs) != 3 {
		t.Fatalf("%d batches after cleaning, want 3: %+v", len(hs), hs)
	}
	if h := hs[0]; h.BaseOffset != 2 || h.LastOffset() != 3 || h.NumRecords != 1 || h.ProducerID != 7 || h.ProducerEpoch != 3 || h.BaseSequence != 2 {
		t.Fatalf("rebuilt batch %+v", h)
	}
	if h := hs[1]; h.BaseOffset != 4 || h.LastOffset() != 5 || h.NumRecords != 0 || h.ProducerID != 7 || h.ProducerEpoch != 3 || h.BaseSequence != 4 || h.BaseTimestamp != -1 || h.MaxTimestamp != ts+1 {
		t.Fatalf("producer's last batch not kept empty: %+v", h)
	}
	if got := fmt.Sprint(ctRead(t, l)); got != "[2:c=v-c 6:a=v-a 7:b=v-b]" {
		t.Fatalf("records %s", got)
	}
	// A retry of the last batch is a duplicate; the next sequence follows.
	if info, err := l.Append(p7(4, "a", "b"), 0); err != nil || !info.Duplicate || info.FirstOffset != 4 {
		t.Fatalf("retry after cleaning: %+v %v", info, err)
	}
	ltAppend(t, l, p7(6, "d"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _ := ltOpen(t, dir, ctConfig(), clock, false, nil)
	defer l2.Close()
	ltAppend(t, l2, p7(7, "e"))
	if _, err := l2.Append(p7(9, "f"), 0); err == nil {
		t.Fatal("a sequence gap was accepted after reload")
	}
}
