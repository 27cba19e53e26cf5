package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// compactedRecord is what a consumer read of a compacted topic: its
// offset, key and value (nil: a tombstone).
type compactedRecord struct {
	Offset int64
	Key    string
	Value  []byte
}

// readAll consumes partition 0 of topic from the start to its high
// watermark with a fresh kgo consumer. The last record must be there
// (the tests end their topics with a record of a unique key).
func readAll(t testing.TB, ctx context.Context, seed, topic string) []compactedRecord {
	t.Helper()
	offs, err := newAdmin(t, seed).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := offs.Lookup(topic, 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []compactedRecord
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next {
				t.Fatalf("offset %d after %d", r.Offset, next-1)
			}
			out = append(out, compactedRecord{r.Offset, string(r.Key), r.Value})
			next = r.Offset + 1
		})
	}
	return out
}

// newestPerKey is the last record of each key among recs.
func newestPerKey(recs []compactedRecord) map[string]compactedRecord {
	out := make(map[string]compactedRecord)
	for _, r := range recs {
		out[r.Key] = r
	}
	return out
}

// Over TCP with stock clients: a kgo producer writes keyed records and
// tombstones to a topic created with cleanup.policy=compact and small
// segments; the cleaner compacts it, so a kgo consumer reads exactly the
// newest value of each live key (once delete.retention.ms has passed, no
// tombstone), at the offsets they were written at.
func TestCompactionOverTCP(t *testing.T) {
	b := startBroker(t, "", "log.cleaner.backoff.ms=20")
	ctx := ctxTimeout(t, 120*time.Second)
	adm := newAdmin(t, b.Seed())
	cfg := map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("1048576"),
		"segment.ms":                kadm.StringPtr("300"), // the next append rolls: everything written becomes cleanable
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"delete.retention.ms":       kadm.StringPtr("500"),
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, cfg, "changelog"); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, b.Seed(), kgo.DefaultProduceTopic("changelog"), kgo.ProducerLinger(5*time.Millisecond))
	var produced []compactedRecord
	produce := func(key string, value []byte) {
		rs := p.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: value})
		if err := rs.FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced = append(produced, compactedRecord{rs[0].Record.Offset, key, value})
	}
	v := make([]byte, 1000)
	for i := 0; i < 3000; i++ { // ~3 MiB over 300 keys: several segments
		rand.Read(v)
		produce(fmt.Sprintf("key-%03d", i%300), append([]byte(fmt.Sprintf("%d:", i)), v...))
	}
	for i := 0; i < 300; i += 10 {
		produce(fmt.Sprintf("key-%03d", i), nil) // tombstones
	}
	// A record without a key is refused on a compacted topic.
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}

	want := make(map[string]compactedRecord)
	for k, r := range newestPerKey(produced) {
		if r.Value != nil {
			want[k] = r
		}
	}
	// Fillers (unique keys, kept) roll segments until the cleaner has
	// cleaned everything and the tombstones' horizon passed.
	filler := 0
	var got []compactedRecord
	eventually(t, 90*time.Second, func() error {
		produce(fmt.Sprintf("filler-%d", filler), []byte("f"))
		want[fmt.Sprintf("filler-%d", filler)] = produced[len(produced)-1]
		filler++
		got = readAll(t, ctx, b.Seed(), "changelog")
		if len(got) != len(want) {
			return fmt.Errorf("%d records, want %d (one per live key)", len(got), len(want))
		}
		return nil
	})
	for _, r := range got {
		w, ok := want[r.Key]
		if !ok || w.Offset != r.Offset || !bytes.Equal(w.Value, r.Value) {
			t.Fatalf("read %s at %d, the newest is at %d (ok %v)", r.Key, r.Offset, w.Offset, ok)
		}
	}
	ckpt, err := os.ReadFile(filepath.Join(b.Dir, "cleaner-offset-checkpoint"))
	if err != nil || !strings.Contains(string(ckpt), "changelog 0 ") {
		t.Fatalf("cleaner-offset-checkpoint: %q %v", ckpt, err)
	}
	m := scrape(t, b.MetricsAddr().String())
	for _, name := range []string{
		"kafka_log_logcleanermanager_max_dirty_percent", "kafka_log_logcleaner_max_clean_time_secs",
		"kafka_log_logcleaner_cleaner_recopy_percent", "kafka_log_logcleaner_max_buffer_utilization_percent",
		"kafka_log_logcleanermanager_time_since_last_run_ms",
	} {
		if _, ok := metric(m, name); !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	if v, _ := metric(m, "kafka_log_logcleaner_cleaner_recopy_percent"); v <= 0 || v > 100 {
		t.Errorf("cleaner_recopy_percent %v", v)
	}
}

// cleanup.policy switches at run time with kadm's AlterTopicConfigs: a
// delete topic becomes compacted (and refuses keyless records), and back.
func TestCompactionPolicySwitch(t *testing.T) {
	b := startBroker(t, "", "log.cleaner.backoff.ms=20")
	ctx := ctxTimeout(t, 120*time.Second)
	adm := newAdmin(t, b.Seed())
	cfg := map[string]*string{
		"segment.ms":                kadm.StringPtr("300"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, cfg, "switch"); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, b.Seed(), kgo.DefaultProduceTopic("switch"))
	produce := func(key, value string) error {
		r := &kgo.Record{Value: []byte(value)}
		if key != "" {
			r.Key = []byte(key)
		}
		return p.ProduceSync(ctx, r).FirstErr()
	}
	for i := 0; i < 200; i++ {
		if err := produce(fmt.Sprint("k", i%10), strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := produce("", "keyless is fine with delete"); err != nil {
		t.Fatal(err)
	}
	alter := func(policy string) {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr(policy)}}, "switch")
		if err == nil {
			for _, r := range rs {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatalf("AlterTopicConfigs cleanup.policy=%s: %v", policy, err)
		}
	}
	alter("compact")
	if err := produce("", "keyless"); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record after switching to compact: %v, want INVALID_RECORD", err)
	}
	// The log is now cleaned: the overwrites go. The keyless record
	// written before the switch goes too, as Kafka's cleaner drops records
	// without a key.
	filler := 0
	eventually(t, 60*time.Second, func() error {
		if err := produce(fmt.Sprint("filler-", filler), "f"); err != nil {
			return err
		}
		filler++
		got := readAll(t, ctx, b.Seed(), "switch")
		if n := len(got) - filler; n != 10 {
			return fmt.Errorf("%d records besides the fillers, want 10", n)
		}
		return nil
	})
	alter("delete")
	if err := produce("", "keyless again"); err != nil {
		t.Fatalf("keyless record after switching back to delete: %v", err)
	}
	d, err := adm.DescribeTopicConfigs(ctx, "switch")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d[0].Configs {
		if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "delete") {
			t.Fatalf("cleanup.policy described as %v", c.Value)
		}
	}
}
