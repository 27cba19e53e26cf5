package replica

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/log"
)

// txnRecords is a producer's batch of n records, transactional or not.
func txnRecords(t *testing.T, pid int64, epoch int16, seq int32, n int, transactional bool) []byte {
	t.Helper()
	b := log.NewBatchBuilder(0)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, epoch, seq, transactional
	for i := 0; i < n; i++ {
		b.Add(time.Now().UnixMilli(), nil, make([]byte, 100))
	}
	raw, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func produceSync(t *testing.T, m *Manager, tp TopicPartition, records []byte) ProduceResult {
	t.Helper()
	done := make(chan []ProduceResult, 1)
	m.AppendRecords(time.Second, -1, []ProduceEntry{{TopicPartition: tp, Records: records}}, func(r []ProduceResult) { done <- r })
	r := (<-done)[0]
	if r.Err != nil {
		t.Fatalf("produce: %v", r.Err)
	}
	return r
}

func writeMarker(m *Manager, mk TxnMarker) []TxnMarkerResult {
	done := make(chan []TxnMarkerResult, 1)
	m.WriteTxnMarkers(time.Second, mk, time.Now(), func(r []TxnMarkerResult) { done <- r })
	return <-done
}

func fetchNow(t *testing.T, m *Manager, tp TopicPartition, offset int64, readCommitted bool) FetchResult {
	t.Helper()
	got := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, ReadCommitted: readCommitted},
		[]FetchPartition{{TopicPartition: tp, FetchOffset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
		func(r []FetchResult) { got <- r })
	r := (<-got)[0]
	if r.Err != nil {
		t.Fatalf("fetch: %v", r.Err)
	}
	return r
}

// lastOffsetOf is the offset after the last batch of a fetch.
func lastOffsetOf(t *testing.T, r FetchResult) int64 {
	t.Helper()
	b, err := r.Records.ReadInto(nil)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(-1)
	for len(b) > 0 {
		h, err := log.ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		next = h.NextOffset()
		b = b[h.TotalSize():]
	}
	return next
}

func TestReadCommittedFetchStopsAtLSO(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	produceSync(t, m, tp, txnRecords(t, -1, -1, -1, 2, false)) // 0-1
	produceSync(t, m, tp, txnRecords(t, 7, 0, 0, 3, true))     // 2-4: producer 7's transaction
	produceSync(t, m, tp, txnRecords(t, 8, 0, 0, 1, false))    // 5: idempotent
	produceSync(t, m, tp, txnRecords(t, -1, -1, -1, 1, false)) // 6

	unc := fetchNow(t, m, tp, 0, false)
	com := fetchNow(t, m, tp, 0, true)
	if unc.HighWatermark != 7 || unc.LastStableOffset != 2 || com.LastStableOffset != 2 {
		t.Fatalf("hw %d, LSO %d / %d; want 7 and 2", unc.HighWatermark, unc.LastStableOffset, com.LastStableOffset)
	}
	if got := lastOffsetOf(t, unc); got != 7 {
		t.Fatalf("read_uncommitted reads to %d, want 7", got)
	}
	if got := lastOffsetOf(t, com); got != 2 {
		t.Fatalf("read_committed reads to %d, want the LSO 2", got)
	}
	if unc.AbortedTransactions != nil || com.AbortedTransactions == nil || len(com.AbortedTransactions) != 0 {
		t.Fatalf("aborted: uncommitted %#v, committed %#v", unc.AbortedTransactions, com.AbortedTransactions)
	}
	lo, err := m.ListOffset(tp, -1, -1, 1, -1)
	if err != nil || lo.Offset != 2 {
		t.Fatalf("ListOffsets latest read_committed: %+v %v, want 2", lo, err)
	}
	if lo, _ := m.ListOffset(tp, -1, -1, 0, -1); lo.Offset != 7 {
		t.Fatalf("ListOffsets latest read_uncommitted: %d, want 7", lo.Offset)
	}

	res := writeMarker(m, TxnMarker{ProducerID: 7, ProducerEpoch: 0, Commit: false, CoordinatorEpoch: 1, Partitions: []TopicPartition{tp}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	com = fetchNow(t, m, tp, 0, true)
	if com.LastStableOffset != 8 || com.HighWatermark != 8 || lastOffsetOf(t, com) != 8 {
		t.Fatalf("after ABORT: LSO %d, hw %d, read to %d", com.LastStableOffset, com.HighWatermark, lastOffsetOf(t, com))
	}
	want := []log.AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 7, LastStableOffset: 8}}
	if !slices.Equal(com.AbortedTransactions, want) {
		t.Fatalf("aborted %+v, want %+v", com.AbortedTransactions, want)
	}
	// A fetch after the aborted range gets none.
	if r := fetchNow(t, m, tp, 8, true); len(r.AbortedTransactions) != 0 {
		t.Fatalf("fetch at 8: aborted %+v", r.AbortedTransactions)
	}
	ps, err := m.ActiveProducers(tp)
	if err != nil || len(ps) != 2 || ps[0].ProducerID != 7 || ps[0].CoordinatorEpoch != 1 || ps[1].ProducerID != 8 {
		t.Fatalf("active producers %+v %v", ps, err)
	}
}

// TestReadCommittedFetchWakesOnMarker: a read_committed fetch waiting at
// the LSO (data is there, but in an open transaction) completes when the
// COMMIT marker moves the LSO.
func TestReadCommittedFetchWakesOnMarker(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	produceSync(t, m, tp, txnRecords(t, 9, 3, 0, 5, true))
	got := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxWait: time.Minute, MinBytes: 1, MaxBytes: 1 << 20, ReadCommitted: true},
		[]FetchPartition{{TopicPartition: tp, FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
		func(r []FetchResult) { got <- r })
	select {
	case r := <-got:
		t.Fatalf("read_committed fetch answered inside an open transaction: %d bytes", r[0].Records.Size)
	default:
	}
	// More data in the transaction does not wake it either.
	produceSync(t, m, tp, txnRecords(t, 9, 3, 5, 5, true))
	select {
	case r := <-got:
		t.Fatalf("read_committed fetch answered inside an open transaction: %d bytes", r[0].Records.Size)
	default:
	}
	if res := writeMarker(m, TxnMarker{ProducerID: 9, ProducerEpoch: 3, Commit: true, Partitions: []TopicPartition{tp}}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	select {
	case r := <-got:
		if r[0].Err != nil || r[0].LastStableOffset != 11 || lastOffsetOf(t, r[0]) != 11 {
			t.Fatalf("woken fetch: err %v, LSO %d, read to %d", r[0].Err, r[0].LastStableOffset, lastOffsetOf(t, r[0]))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read_committed fetch did not wake when the COMMIT moved the LSO")
	}
}

func TestWriteTxnMarkersErrors(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	// A partition hosted here but led by broker 2.
	store.apply(&metadata.TopicRecord{Name: "f", TopicID: [16]byte{9}}, &metadata.PartitionRecord{PartitionID: 0, TopicID: [16]byte{9}, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2})
	follower := TopicPartition{Topic: "f", Partition: 0}
	if m.Partition(follower) == nil {
		t.Fatal("follower partition not hosted")
	}
	produceSync(t, m, tp, txnRecords(t, 5, 2, 0, 1, true))
	if r := writeMarker(m, TxnMarker{ProducerID: 5, ProducerEpoch: 2, Commit: true, CoordinatorEpoch: 7, Partitions: []TopicPartition{tp}}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	tests := []struct {
		name string
		mk   TxnMarker
		want error
	}{
		{"unknown partition", TxnMarker{ProducerID: 5, ProducerEpoch: 2, Partitions: []TopicPartition{{Topic: "nope", Partition: 0}}}, kerr.UnknownTopicOrPartition},
		{"partition led elsewhere", TxnMarker{ProducerID: 5, ProducerEpoch: 2, Partitions: []TopicPartition{follower}}, kerr.NotLeaderForPartition},
		{"older producer epoch", TxnMarker{ProducerID: 5, ProducerEpoch: 1, CoordinatorEpoch: 7, Partitions: []TopicPartition{tp}}, kerr.InvalidProducerEpoch},
		{"older coordinator epoch", TxnMarker{ProducerID: 5, ProducerEpoch: 2, CoordinatorEpoch: 6, Partitions: []TopicPartition{tp}}, kerr.TransactionCoordinatorFenced},
		{"TV2 marker without the epoch bump", TxnMarker{ProducerID: 5, ProducerEpoch: 2, CoordinatorEpoch: 7, TransactionVersion: 2, Partitions: []TopicPartition{tp}}, kerr.InvalidProducerEpoch},
		{"retried marker", TxnMarker{ProducerID: 5, ProducerEpoch: 2, Commit: true, CoordinatorEpoch: 7, Partitions: []TopicPartition{tp}}, nil},
		{"internal topic", TxnMarker{ProducerID: 5, ProducerEpoch: 2, Partitions: []TopicPartition{{Topic: "__consumer_offsets", Partition: 0}}}, kerr.UnknownTopicOrPartition},
	}
	for _, tt := range tests {
		r := writeMarker(m, tt.mk)
		if tt.want == nil && r[0].Err != nil || tt.want != nil && !errors.Is(r[0].Err, tt.want) {
			t.Fatalf("%s: %v, want %v", tt.name, r[0].Err, tt.want)
		}
	}
	if _, err := m.ActiveProducers(TopicPartition{Topic: "nope"}); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("ActiveProducers of an unknown partition: %v", err)
	}
	if ps, err := m.ActiveProducers(follower); err != nil || len(ps) != 0 {
		t.Fatalf("ActiveProducers of a follower: %+v %v", ps, err)
	}
}
