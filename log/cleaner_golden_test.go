package log

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The bytes of a small cleaned segment and of its indexes are pinned in
// testdata/cleaned-segment.golden (hex, one batch a line): a batch copied
// as it was, one rebuilt without its overwritten records, a tombstone's
// batch with its delete horizon, an idempotent producer's last batch kept
// empty. Every batch parses as Kafka's RecordBatch with a valid CRC-32C.
// Run with -update to rewrite it after a deliberate change.
func TestCleanerGoldenSegment(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "golden-0")
	cfg := ctConfig()
	cfg.IndexIntervalBytes = 64
	cfg.DeleteRetentionMs = 86_400_000
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	ts := clock.Now().UnixMilli()
	ctAppend(t, l,
		ctBatch(t, ctBatchSpec{ts: ts, keys: []string{"apple", "banana", "cherry"}}),                                                        // 0-2: banana, cherry overwritten
		ctBatch(t, ctBatchSpec{ts: ts + 1, keys: []string{"date"}}),                                                                         // 3: kept as is
		ctBatch(t, ctBatchSpec{ts: ts + 2, pid: 42, epoch: 1, seq: 0, keys: []string{"elder", "banana"}}),                                   // 4-5: all overwritten, producer 42's last
		ctBatch(t, ctBatchSpec{ts: ts + 3, keys: []string{"banana", "cherry", "elder"}, values: [][]byte{[]byte("b2"), nil, []byte("e2")}}), // 6-8: tombstone for cherry
	)
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	l.Close()
	base := FilenamePrefixFromOffset(0)
	data, err := os.ReadFile(filepath.Join(dir, base+LogFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rest := data; len(rest) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(rest); err != nil {
			t.Fatalf("not a Kafka record batch: %v", err)
		}
		size := int(rb.Length) + LogOverhead
		if _, err := CheckBatch(rest[:size]); err != nil {
			t.Fatal(err)
		}
		b.WriteString("batch " + hex.EncodeToString(rest[:size]) + "\n")
		rest = rest[size:]
	}
	for _, suffix := range []string{IndexFileSuffix, TimeIndexFileSuffix} {
		idx, err := os.ReadFile(filepath.Join(dir, base+suffix))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.TrimPrefix(suffix, ".") + " " + hex.EncodeToString(idx) + "\n")
	}
	got := b.String()
	golden := filepath.Join("testdata", "cleaned-segment.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Fatalf("cleaned segment differs from %s:\n got\n%s\nwant\n%s", golden, got, want)
	}
	if n := strings.Count(got, "batch "); n != 4 {
		t.Fatalf("%d batches, want 4", n)
	}
}
