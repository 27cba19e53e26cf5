package replica

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// testMetadata feeds a Manager metadata deltas, as the loader does.
type testMetadata struct {
	t     *testing.T
	m     *Manager
	image *metadata.Image
	ids   map[string]uuid.UUID
}

func (tm *testMetadata) apply(recs ...metadata.Record) {
	tm.t.Helper()
	d := metadata.NewDelta(tm.image)
	for _, r := range recs {
		if err := d.Replay(r); err != nil {
			tm.t.Fatal(err)
		}
	}
	d.SetProvenance(tm.image.Offset+int64(len(recs)), 1)
	tm.image = d.Apply()
	tm.m.OnMetadataUpdate(d, tm.image)
}

// CreateTopic creates a topic with partitions led by broker 1.
func (tm *testMetadata) CreateTopic(name string, partitions int32) {
	id := uuid.Random()
	tm.ids[name] = id
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicID: id}}
	for i := range partitions {
		recs = append(recs, &metadata.PartitionRecord{PartitionID: i, TopicID: id, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	}
	tm.apply(recs...)
}

func (tm *testMetadata) DeleteTopic(name string) {
	tm.apply(&metadata.RemoveTopicRecord{TopicID: tm.ids[name]})
}

func newTestManager(t *testing.T) (*Manager, *testMetadata) {
	t.Helper()
	dir := t.TempDir()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	tm := &testMetadata{t: t, image: metadata.Empty, ids: map[string]uuid.UUID{}}
	m, err := NewManager(Config{NodeID: 1, Logs: logs, Image: func() *metadata.Image { return tm.image }, ConfigFor: func(*metadata.Topic) log.Config { return log.DefaultConfig() }})
	if err != nil {
		t.Fatal(err)
	}
	tm.m = m
	t.Cleanup(m.Close)
	return m, tm
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
	store.CreateTopic("t", 1)
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
	store.CreateTopic("t", 1)
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
	store.CreateTopic("t", 1)
	got := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxWait: time.Minute, MinBytes: 1, MaxBytes: 1 << 20},
		[]FetchPartition{{TopicPartition: TopicPartition{Topic: "t"}, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}, func(r []FetchResult) { got <- r })
	store.DeleteTopic("t")
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
	store.CreateTopic("t", 1)
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

// TestFetchProduceRace is a ping-pong between a long-polling fetch and an
// append issued the instant the fetch starts, thousands of times: a
// producer goroutine spins until the fetch is about to be issued, waits a
// number of spins that sweeps over the iterations, and appends, so the
// append lands at every point of the fetch's first read. No fetch may wait
// out its max wait while the record it asked for is there (issue 12: a
// byte-counter snapshot taken after the read missed appends whose high
// watermark moved after it).
func TestFetchProduceRace(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	const maxWait = 3 * time.Second
	iterations := 20000
	if testing.Short() {
		iterations = 2000
	}
	params := FetchParams{ReplicaID: -1, MaxWait: maxWait, MinBytes: 1, MaxBytes: 1 << 20}

	var turn atomic.Int64 // the iteration the producer may append for
	turn.Store(-1)
	produced := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := int64(0); ; i++ {
			rec := batch(1, 10) // Append assigns offsets in place
			for turn.Load() != i {
				select {
				case <-stop:
					return
				default:
				}
				runtime.Gosched()
			}
			for n := i % 97; n > 0; n-- { // sweep the append over the fetch
				spin.Add(1)
			}
			m.AppendRecords(time.Second, 1, []ProduceEntry{{TopicPartition: tp, Records: rec}}, func(r []ProduceResult) { produced <- r[0].Err })
		}
	}()
	for i := 0; i < iterations; i++ {
		got := make(chan []FetchResult, 1)
		start := time.Now()
		turn.Store(int64(i))
		m.FetchMessages(params, []FetchPartition{{TopicPartition: tp, FetchOffset: int64(i), MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
			func(r []FetchResult) { got <- r })
		if err := <-produced; err != nil {
			t.Fatal(err)
		}
		r := <-got
		if took := time.Since(start); took >= maxWait/2 {
			t.Fatalf("round trip %d: the fetch at offset %d waited %v (max wait %v) though the record was appended at once; high watermark %d",
				i, i, took.Round(time.Millisecond), maxWait, r[0].HighWatermark)
		}
		if r[0].Err != nil || r[0].Records.Size == 0 {
			t.Fatalf("round trip %d: err %v, %d bytes", i, r[0].Err, r[0].Records.Size)
		}
	}
}

var spin atomic.Int64

// TestFetchBelowHighWatermarkLogEnd: a fetch at the high watermark while
// the log end is already past it (an append whose high watermark has not
// moved yet) must wake when the high watermark moves.
func TestFetchWakesWhenHighWatermarkMoves(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	p := m.Partition(tp)
	// Append behind the manager's back, without moving the high
	// watermark: the log end is 1, the high watermark 0.
	if _, err := p.Log.Append(batch(1, 100), p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	if hw, leo := p.Log.HighWatermark(), p.Log.LogEndOffset(); hw != 0 || leo != 1 {
		t.Fatalf("high watermark %d, log end %d", hw, leo)
	}
	got := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxWait: time.Minute, MinBytes: 1, MaxBytes: 1 << 20},
		[]FetchPartition{{TopicPartition: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}, func(r []FetchResult) { got <- r })
	select {
	case r := <-got:
		t.Fatalf("fetch answered before the high watermark moved: %d bytes", r[0].Records.Size)
	default:
	}
	p.Log.UpdateHighWatermark(1)
	m.fetchP.CheckAndComplete(tp)
	select {
	case r := <-got:
		if r[0].Records.Size == 0 || r[0].HighWatermark != 1 {
			t.Fatalf("fetch result: %d bytes, high watermark %d", r[0].Records.Size, r[0].HighWatermark)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch did not wake when the high watermark moved")
	}
}

// TestShutdownAnswersDelayedFetch: BeginShutdown answers a long poll at
// once, and a fetch arriving afterwards does not wait.
func TestShutdownAnswersDelayedFetch(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	params := FetchParams{ReplicaID: -1, MaxWait: 5 * time.Minute, MinBytes: 1, MaxBytes: 1 << 20}
	parts := []FetchPartition{{TopicPartition: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}
	got := make(chan []FetchResult, 2)
	m.FetchMessages(params, parts, func(r []FetchResult) { got <- r })
	if n := m.fetchP.Delayed(); n != 1 {
		t.Fatalf("%d delayed fetches, want 1", n)
	}
	m.BeginShutdown()
	for i := 0; i < 2; i++ {
		select {
		case r := <-got:
			if r[0].Err != nil || r[0].Records.Size != 0 {
				t.Fatalf("fetch %d at shutdown: err %v, %d bytes", i, r[0].Err, r[0].Records.Size)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("fetch %d still waiting after BeginShutdown", i)
		}
		if i == 0 {
			m.FetchMessages(params, parts, func(r []FetchResult) { got <- r })
		}
	}
}

// A topic deleted and created again while this broker was away leaves a
// log of the old topic ID: the new topic's partition replaces it.
func TestStrayLogOfOlderTopicIsReplaced(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	if _, err := m.Partition(tp).Log.Append(batch(3, 10), 0); err != nil {
		t.Fatal(err)
	}
	// The broker "missed" the delete: only the new topic arrives, over
	// an image without the old one.
	m.partitions.Delete(tp)
	store.image = metadata.Empty
	store.CreateTopic("t", 1)
	p := m.Partition(tp)
	if p == nil || !p.IsLeader() {
		t.Fatal("the new topic's partition is not hosted")
	}
	if p.TopicID != store.ids["t"] || p.Log.LogEndOffset() != 0 {
		t.Fatalf("partition has topic id %v and log end %d: the old log was kept", p.TopicID, p.Log.LogEndOffset())
	}
}
