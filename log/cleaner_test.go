package log

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
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
