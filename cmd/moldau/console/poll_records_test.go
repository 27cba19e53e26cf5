package console

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/brokertest"
)

// A poller on a real broker draws the shape of the newest records: keyed
// records with their key's colour, a tombstone, a committed transaction
// with its C marker, an aborted one with its records marked aborted and
// its A marker, and the leader's log end. A second poll with nothing
// changed reads nothing.
func TestPollerRecordsShape(t *testing.T) {
	seed, _ := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.DefaultProduceTopic("cells"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "cells"); err != nil {
		t.Fatal(err)
	}
	produce := func(cl *kgo.Client, recs ...*kgo.Record) {
		t.Helper()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(key, value string) *kgo.Record {
		r := &kgo.Record{Key: []byte(key), Partition: 0}
		if value != "" {
			r.Value = []byte(value)
		}
		return r
	}
	produce(cl, rec("a", "1")) // 0
	produce(cl, rec("b", "2")) // 1
	produce(cl, rec("a", ""))  // 2: a tombstone

	txn, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.TransactionalID("cells-txn"),
		kgo.DefaultProduceTopic("cells"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	for _, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if end == kgo.TryCommit {
			produce(txn, rec("c", "3")) // 3, then the marker at 4
		} else {
			produce(txn, rec("d", "4"), rec("e", "5")) // 5 and 6, then the marker at 7
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	// EndTransaction returns once the coordinator has decided; the
	// markers are written after, so nothing is produced after them here.

	p := NewPoller(cl, 100*time.Millisecond, 5*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(p.internal.close)
	var got *Records
	pollUntil(t, p, "the records' shape up to the abort marker", func(s *Snapshot) bool {
		for _, tp := range s.Topics {
			if tp.Name == "cells" && tp.Partitions[0].HighWatermark == 8 {
				got = tp.Partitions[0].Records
				return got != nil && len(got.Shape) == 8
			}
		}
		return false
	})
	if got.From != 0 || got.Shape != "rrtrCaaA" || got.LogEnd != 8 {
		t.Fatalf("records: from %d, shape %q, log end %d; want 0, %q, 8", got.From, got.Shape, got.LogEnd, "rrtrCaaA")
	}
	k := got.Keys
	if len(k) != 8 || k[0] != k[2] || k[4] != '-' || k[7] != '-' || k[0] == '-' || k[1] == '-' || k[3] == '-' || k[5] == '-' {
		t.Fatalf("keys %q: want a's colour at 0 and 2, a colour on every record, none on the markers", k)
	}

	// Nothing changed: the next poll reads nothing.
	before := p.cells[tp{"cells", 0}]
	p.Poll(t.Context())
	if after := p.cells[tp{"cells", 0}]; after != before {
		t.Fatalf("an unchanged partition was read again: %+v, then %+v", before, after)
	}
}

// recordsShape tells the offsets a batch covers but holds no record for
// (compacted away) from those past the answer (not read), and draws only
// from the offset asked for.
func TestRecordsShapeGapsAndUnread(t *testing.T) {
	// One batch covering offsets 10 to 15 that keeps 10, 12 and 15 (as
	// the cleaner leaves them), read from 11 with the high watermark at 20.
	b := batch(10, 5, []int32{0, 2, 5}, []string{"k", "", "k"})
	rp := &kmsg.FetchResponseTopicPartition{Partition: 0, HighWatermark: 20, RecordBatches: b}
	got := recordsShape(11, 20, rp)
	if got == nil || got.From != 11 || got.Shape != "_r__r" {
		t.Fatalf("shape: %+v; want from 11, %q (offsets 16-19 not read)", got, "_r__r")
	}
	if got.Keys[1] != '-' || got.Keys[4] == '-' {
		t.Fatalf("keys %q: no key at 12, one at 15", got.Keys)
	}
	// A partial batch only: nothing read.
	if got := recordsShape(11, 20, &kmsg.FetchResponseTopicPartition{RecordBatches: b[:len(b)-1]}); got != nil {
		t.Fatalf("a partial batch read as %+v", got)
	}
	// Nothing due.
	if got := recordsShape(20, 20, rp); got == nil || got.Shape != "" {
		t.Fatalf("nothing due: %+v", got)
	}
}

// batch encodes a magic v2 record batch at base whose last offset delta
// is last, holding one record per delta (an empty key is no key).
func batch(base int64, last int32, deltas []int32, keys []string) []byte {
	var recs []byte
	for i, d := range deltas {
		r := kmsg.NewRecord()
		r.OffsetDelta = d
		if keys[i] != "" {
			r.Key = []byte(keys[i])
		}
		r.Value = []byte("v")
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the length of 0 took one byte
		recs = r.AppendTo(recs)
	}
	rb := kmsg.NewRecordBatch()
	rb.FirstOffset, rb.LastOffsetDelta, rb.Magic = base, last, 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	rb.NumRecords = int32(len(deltas))
	rb.Records = recs
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// A cluster of more partitions than maxCellPartitions gets no cells, says
// so in Truncated, and asks nothing (the poller here has no client).
func TestPollRecordsSkipsLargeClusters(t *testing.T) {
	parts := make([]Partition, maxCellPartitions+1)
	for i := range parts {
		parts[i] = Partition{Partition: int32(i), Leader: 1, LogStartOffset: 0, HighWatermark: 10}
	}
	s := &Snapshot{Topics: []Topic{{Name: "big", Partitions: parts}}, Truncated: map[string]int{}}
	p := &Poller{}
	if err := p.pollRecords(t.Context(), s, &Snapshot{}); err != nil {
		t.Fatal(err)
	}
	if s.Truncated["records"] != maxCellPartitions+1 || s.Topics[0].Partitions[0].Records != nil {
		t.Fatalf("truncated %v, records %+v", s.Truncated, s.Topics[0].Partitions[0].Records)
	}
}

// A compacted partition: the records the cleaner removed are gaps, the
// newest record of each key stays. The cleaner changes no offset, so each
// attempt is a new poller (an unchanged partition is read again only
// after cellsRefresh ticks).
func TestPollerRecordsCompactedGap(t *testing.T) {
	b := brokertest.Start(t, "log.dirs="+t.TempDir(), "log.cleaner.backoff.ms=50", "moldau.metrics.listener=")
	seed := b.Addr("").String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic("compacted"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := map[string]*string{}
	for k, v := range map[string]string{"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"} {
		cfg[k] = &v
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, cfg, "compacted"); err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"a", "a", "a", "b"} {
		if i == 3 {
			time.Sleep(200 * time.Millisecond) // past segment.ms: offset 3 starts a new segment
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte("v"), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	var last *Records
	for time.Now().Before(deadline) {
		p := NewPoller(cl, time.Second, 5*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		p.Poll(ctx)
		p.internal.close()
		s, _ := p.Current()
		for _, tp := range s.Topics {
			if tp.Name == "compacted" {
				last = tp.Partitions[0].Records
			}
		}
		if last != nil && last.Shape == "__rr" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the compacted partition's records: %+v; want offsets 0 and 1 gaps (%q)", last, "__rr")
}

// More partitions to read than maxCellReads: a tick reads at most that
// many, and the next tick reads the ones left (read longest ago first),
// though the first ones changed again meanwhile.
func TestPollerRecordsCapTakesTurns(t *testing.T) {
	seed, _ := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic("many"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const n = maxCellReads + 50
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, n, 1, nil, "many"); err != nil {
		t.Fatal(err)
	}
	produceAll := func() {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Key: []byte("k"), Value: []byte("v"), Partition: int32(i)}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produceAll()
	read := func(s *Snapshot) (int, []int32) {
		var got int
		var missing []int32
		for _, tp := range s.Topics {
			if tp.Name != "many" {
				continue
			}
			for _, pt := range tp.Partitions {
				if pt.Records != nil && pt.HighWatermark > 0 && len(pt.Records.Shape) == int(pt.HighWatermark) {
					got++
				} else {
					missing = append(missing, pt.Partition)
				}
			}
		}
		return got, missing
	}
	p := NewPoller(cl, time.Second, 10*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(p.internal.close)
	s := pollUntil(t, p, "the topic's partitions with their offsets", func(s *Snapshot) bool {
		got, _ := read(s)
		return got > 0
	})
	if got, _ := read(s); got > maxCellReads {
		t.Fatalf("one tick read %d partitions, want at most %d", got, maxCellReads)
	}
	produceAll() // every partition changes: those read first must wait their turn
	p.Poll(ctx)
	s, _ = p.Current()
	for _, tp := range s.Topics {
		if tp.Name != "many" {
			continue
		}
		for _, pt := range tp.Partitions {
			if pt.Records == nil {
				t.Fatalf("after two ticks partition %d has no cells", pt.Partition)
			}
		}
	}
}
