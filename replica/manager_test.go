package replica

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/metadata"
)

func newTestManager(t *testing.T) (*Manager, *metadata.Store) {
	t.Helper()
	dir := t.TempDir()
	store, err := metadata.Open(metadata.Options{Dir: dir, NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m, err := NewManager(Config{NodeID: 1, Logs: logs, Metadata: store, ConfigFor: func(metadata.Topic) log.Config { return log.DefaultConfig() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, store
}

// batch encodes one magic-v2 batch of n records of size bytes each, as a
// producer would send it.
func batch(n, size int) []byte {
	now := time.Now().UnixMilli()
	b := log.NewBatchBuilder(0)
	for i := 0; i < n; i++ {
		b.Add(now, nil, make([]byte, size))
	}
	raw, _ := b.Build(nil)
	return raw
}

func TestFetchWaitsForMinBytes(t *testing.T) {
	m, store := newTestManager(t)
	if _, err := store.CreateTopic("t", 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	params := FetchParams{ReplicaID: -1, MaxWait: 10 * time.Second, MinBytes: 5000, MaxBytes: 1 << 20}
	parts := []FetchPartition{{TopicPartition: tp, FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}
	got := make(chan []FetchResult, 1)
	m.FetchMessages(params, parts, func(r []FetchResult) { got <- r })

	produce := func() {
		done := make(chan []ProduceResult, 1)
		m.AppendRecords(time.Second, 1, []ProduceEntry{{TopicPartition: tp, Records: batch(1, 1000)}}, func(r []ProduceResult) { done <- r })
		if r := <-done; r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
	}
	// Below fetch.min.bytes the fetch keeps waiting.
	produce()
	select {
	case <-got:
		t.Fatal("fetch answered with about 1 KB though fetch.min.bytes is 5000")
	case <-time.After(100 * time.Millisecond):
	}
	for i := 0; i < 5; i++ {
		produce()
	}
	select {
	case r := <-got:
		if r[0].Err != nil || r[0].Records.Size < 5000 || r[0].HighWatermark < 5 {
			t.Fatalf("fetch result: err %v, %d bytes, high watermark %d", r[0].Err, r[0].Records.Size, r[0].HighWatermark)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fetch did not complete once fetch.min.bytes arrived")
	}
}

func TestFetchExpiresAtMaxWait(t *testing.T) {
	m, store := newTestManager(t)
	if _, err := store.CreateTopic("t", 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "t", Partition: 0}
	start := time.Now()
	got := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxWait: 300 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20},
		[]FetchPartition{{TopicPartition: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}, func(r []FetchResult) { got <- r })
	r := <-got
	if took := time.Since(start); took < 290*time.Millisecond {
		t.Fatalf("empty fetch answered after %v, before fetch.max.wait.ms", took)
	}
	if r[0].Err != nil || r[0].Records.Size != 0 {
		t.Fatalf("result: err %v, %d bytes", r[0].Err, r[0].Records.Size)
	}
}

func TestFetchOfDeletedTopicAnswersNow(t *testing.T) {
	m, store := newTestManager(t)
	if _, err := store.CreateTopic("t", 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	got := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxWait: time.Minute, MinBytes: 1, MaxBytes: 1 << 20},
		[]FetchPartition{{TopicPartition: TopicPartition{Topic: "t"}, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}, func(r []FetchResult) { got <- r })
	if _, err := store.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r[0].Err == nil || kerr.UnknownTopicOrPartition.Code != errCode(r[0].Err) {
			t.Fatalf("fetch of a deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", r[0].Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fetch of a deleted topic kept waiting")
	}
}

func TestAppendErrors(t *testing.T) {
	m, store := newTestManager(t)
	if _, err := store.CreateTopic("t", 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	run := func(acks int16, tp TopicPartition) error {
		done := make(chan []ProduceResult, 1)
		m.AppendRecords(time.Second, acks, []ProduceEntry{{TopicPartition: tp, Records: batch(1, 10)}}, func(r []ProduceResult) { done <- r })
		return (<-done)[0].Err
	}
	for _, c := range []struct {
		acks int16
		tp   TopicPartition
		want *kerr.Error
	}{
		{2, TopicPartition{Topic: "t"}, kerr.InvalidRequiredAcks},
		{1, TopicPartition{Topic: "nope"}, kerr.UnknownTopicOrPartition},
		{1, TopicPartition{Topic: "t", Partition: 3}, kerr.UnknownTopicOrPartition},
		{-1, TopicPartition{Topic: "__consumer_offsets"}, kerr.InvalidTopicException},
		{-1, TopicPartition{Topic: "t"}, nil},
	} {
		err := run(c.acks, c.tp)
		if (c.want == nil) != (err == nil) || (c.want != nil && errCode(err) != c.want.Code) {
			t.Errorf("acks=%d %v: %v, want %v", c.acks, c.tp, err, c.want)
		}
	}
}

func errCode(err error) int16 {
	for err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Code
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return -1
		}
		err = u.Unwrap()
	}
	return 0
}
