package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/log"
)

// A coordinator appends to its internal topic, which clients may not, and
// reads it back for loading.
func TestAppendAsCoordinator(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic(metadata.ConsumerOffsetsTopic, 1)
	tp := TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: 0}
	keyed := func(k string) []byte {
		b := log.NewBatchBuilder(0)
		b.Add(time.Now().UnixMilli(), []byte(k), []byte("v"))
		raw, _ := b.Build(nil)
		return raw
	}

	got := make(chan []ProduceResult, 1)
	m.AppendRecords(time.Second, -1, []ProduceEntry{{TopicPartition: tp, Records: keyed("a")}}, func(r []ProduceResult) { got <- r })
	if r := <-got; !errors.Is(r[0].Err, kerr.InvalidTopicException) {
		t.Fatalf("client append to an internal topic: %v", r[0].Err)
	}

	type res struct {
		base int64
		err  error
	}
	done := make(chan res, 2)
	for _, k := range []string{"a", "b"} {
		m.AppendAsCoordinator(tp, keyed(k), time.Second, func(base int64, err error) { done <- res{base, err} })
		if r := <-done; r.err != nil {
			t.Fatalf("coordinator append: %v", r.err)
		}
	}
	data, start, end, err := m.ReadForCoordinator(tp, -5, 1)
	if err != nil || start != 0 || end != 2 {
		t.Fatalf("read: start %d end %d err %v", start, end, err)
	}
	h, err := log.CheckBatch(data)
	if err != nil || h.BaseOffset != 0 || h.TotalSize() != len(data) {
		t.Fatalf("read %d bytes: first batch %+v, %v (want exactly one batch at maxBytes 1)", len(data), h, err)
	}
	data, _, _, err = m.ReadForCoordinator(tp, 1, 1<<20)
	if h, _ := log.CheckBatch(data); err != nil || h.BaseOffset != 1 {
		t.Fatalf("read from 1: %+v, %v", h, err)
	}
	if data, _, _, err := m.ReadForCoordinator(tp, 2, 1<<20); err != nil || len(data) != 0 {
		t.Fatalf("read at the log end: %d bytes, %v", len(data), err)
	}
}
