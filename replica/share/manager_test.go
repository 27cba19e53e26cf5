package share

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log"
)

// memPersister keeps states as the share coordinator merges them: the
// newest state of an offset wins, nothing before the start offset is kept.
type memPersister struct {
	mu     sync.Mutex
	states map[Key]PersistedState
	writes int
	fail   error
	// block, when set, holds every write until it is closed.
	block chan struct{}
}

func (p *memPersister) ReadState(_ context.Context, k Key, _ int32) (PersistedState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.states[k]
	if !ok {
		return PersistedState{StartOffset: -1}, nil
	}
	st.Batches = append([]StateBatch(nil), st.Batches...)
	return st, nil
}

func (p *memPersister) WriteState(_ context.Context, k Key, st PersistedState) error {
	p.mu.Lock()
	block := p.block
	p.mu.Unlock()
	if block != nil {
		<-block
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.writes++
	cur := p.states[k]
	merged := overlay(cur.Batches, st.Batches)
	var kept []StateBatch
	for _, b := range merged {
		if b.LastOffset < st.StartOffset {
			continue
		}
		b.FirstOffset = max(b.FirstOffset, st.StartOffset)
		kept = append(kept, b)
	}
	p.states[k] = PersistedState{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: st.StartOffset, Batches: kept}
	return nil
}

// testLog is the Log of one real partition log, led here at epoch 0.
type testLog struct {
	l  *log.Log
	tp log.TopicPartition
}

func (t testLog) LeaderEpoch(tp log.TopicPartition) (int32, error) {
	if tp != t.tp {
		return -1, kerr.UnknownTopicOrPartition
	}
	return 0, nil
}

func (t testLog) Read(_ log.TopicPartition, offset int64, maxBytes int32, _ bool) (ReadResult, error) {
	if offset < t.l.LogStartOffset() || offset > t.l.LogEndOffset() {
		return ReadResult{}, kerr.OffsetOutOfRange
	}
	d, err := t.l.Read(offset, maxBytes, t.l.LogEndOffset(), true)
	if err != nil {
		return ReadResult{}, err
	}
	bs, err := batchBounds(d.Records)
	return ReadResult{Batches: bs, Records: d.Records, LogStartOffset: t.l.LogStartOffset()}, err
}

func (t testLog) OffsetForTimestamp(_ log.TopicPartition, ts int64) (int64, error) {
	if ts == -2 {
		return t.l.LogStartOffset(), nil
	}
	return t.l.LogEndOffset(), nil
}

func (t testLog) WaitForData(_ []WaitPartition, maxWait time.Duration, done func()) {
	time.AfterFunc(maxWait, done)
}

type managerFixture struct {
	m     *Manager
	p     *memPersister
	l     *log.Log
	tip   TopicIDPartition
	names func([16]byte) (string, bool)
	// deliveryLimit is group.share.delivery.count.limit, 3 unless a
	// test raises it before its first fetch.
	deliveryLimit int16
}

func newManagerFixture(t *testing.T, batches, perBatch int) *managerFixture {
	t.Helper()
	l, _, err := log.OpenLog(log.OpenLogParams{Dir: t.TempDir() + "/orders-0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for range batches {
		b := log.NewBatchBuilder(0)
		for range perBatch {
			b.Add(time.Now().UnixMilli(), nil, []byte("v"))
		}
		raw, _ := b.Build(nil)
		if _, err := l.Append(raw, 0); err != nil {
			t.Fatal(err)
		}
	}
	id := [16]byte{1}
	f := &managerFixture{p: &memPersister{states: map[Key]PersistedState{}}, l: l, tip: TopicIDPartition{TopicID: id, Partition: 0}, deliveryLimit: 3}
	f.names = func(got [16]byte) (string, bool) { return "orders", got == id }
	f.m = NewManager(Options{
		Config:    ManagerConfig{MaxInFlightRecords: 1000},
		Log:       testLog{l: l, tp: log.TopicPartition{Topic: "orders", Partition: 0}},
		Persister: f.p,
		GroupConfig: func(string) GroupConfig {
			return GroupConfig{AutoOffsetReset: "earliest", RecordLockDuration: 30 * time.Second, DeliveryCountLimit: f.deliveryLimit}
		},
	})
	t.Cleanup(f.m.Close)
	return f
}

func (f *managerFixture) fetch(t *testing.T, member string, epoch int32, acks []AcknowledgementBatch, maxRecords int) FetchResponse {
	t.Helper()
	req := FetchRequest{Group: "g", Member: member, SessionEpoch: epoch, MaxBytes: 1 << 20, MaxRecords: maxRecords, TopicName: f.names}
	if epoch == InitialSessionEpoch {
		req.Add = []TopicIDPartition{f.tip}
	}
	if acks != nil {
		req.Acks = map[TopicIDPartition][]AcknowledgementBatch{f.tip: acks}
	}
	done := make(chan FetchResponse, 1)
	f.m.Fetch(req, func(r FetchResponse) { done <- r })
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("share fetch did not answer")
	}
	return FetchResponse{}
}

func acquiredOf(r FetchResponse) []AcquiredRecords {
	var out []AcquiredRecords
	for _, p := range r.Partitions {
		out = append(out, p.Acquired...)
	}
	return out
}

func TestManagerFetchAcknowledgeAndReload(t *testing.T) {
	f := newManagerFixture(t, 4, 5) // offsets 0-19 in batches of 5
	r := f.fetch(t, "m1", 0, nil, 8)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if got, want := acquiredOf(r), []AcquiredRecords{{0, 9, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	// The records are the two batches holding them, nothing more.
	if bs, _ := batchBounds(r.Partitions[0].Records); len(bs) != 2 || bs[0].BaseOffset != 0 || bs[1].LastOffset != 9 {
		t.Fatalf("records hold batches %v", bs)
	}
	// Another member gets the rest.
	if got, want := acquiredOf(f.fetch(t, "m2", 0, nil, 100)), []AcquiredRecords{{10, 19, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("m2 acquired %v, want %v", got, want)
	}
	// m1 accepts 0-4 and releases 5-9 in its next fetch, which gets the
	// released ones again.
	r = f.fetch(t, "m1", 1, []AcknowledgementBatch{accept(0, 4), release(5, 9)}, 100)
	if len(r.Partitions) != 1 || r.Partitions[0].AckErr != nil {
		t.Fatalf("acknowledgement: %+v", r.Partitions)
	}
	if got, want := acquiredOf(r), []AcquiredRecords{{5, 9, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("redelivered %v, want %v", got, want)
	}
	st, _ := f.p.ReadState(context.Background(), Key{GroupID: "g", TopicID: f.tip.TopicID}, 0)
	if st.StartOffset != 5 {
		t.Fatalf("persisted start offset %d, want 5", st.StartOffset)
	}
	// A wrong epoch is refused; the final one closes the session and
	// gives back what m1 holds.
	if r := f.fetch(t, "m1", 7, nil, 100); !errors.Is(r.Err, kerr.InvalidShareSessionEpoch) {
		t.Fatalf("wrong epoch: %v", r.Err)
	}
	if r := f.fetch(t, "m1", -1, nil, 100); r.Err != nil {
		t.Fatal(r.Err)
	}
	// A new leader (a new manager on the same persisted state) delivers
	// again what no one accepted: 5-9, released at close after two
	// deliveries, and 10-19 (m2's acquisition did not survive).
	m2 := NewManager(Options{Config: ManagerConfig{MaxInFlightRecords: 1000}, Log: f.m.opts.Log, Persister: f.p, GroupConfig: f.m.opts.GroupConfig})
	t.Cleanup(m2.Close)
	f.m = m2
	if got, want := acquiredOf(f.fetch(t, "m3", 0, nil, 100)), []AcquiredRecords{{5, 9, 3}, {10, 19, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after reload acquired %v, want %v", got, want)
	}
}

func TestManagerAcknowledgeFailsWhenStateCannotBeWritten(t *testing.T) {
	f := newManagerFixture(t, 1, 5)
	f.fetch(t, "m1", 0, nil, 100)
	f.p.mu.Lock()
	f.p.fail = kerr.CoordinatorNotAvailable
	f.p.mu.Unlock()
	r := f.fetch(t, "m1", 1, []AcknowledgementBatch{accept(0, 4)}, 100)
	if len(r.Partitions) == 0 || !errors.Is(r.Partitions[0].AckErr, kerr.CoordinatorNotAvailable) {
		t.Fatalf("acknowledgement with the coordinator down: %+v", r.Partitions)
	}
	// The coordinator is back and the member sends its acknowledgement
	// again. The records are done with in memory already, so it changes
	// nothing there; its answer still comes from a write, and that write
	// carries the failed one's changes.
	f.p.mu.Lock()
	f.p.fail = nil
	f.p.mu.Unlock()
	r = f.fetch(t, "m1", 2, []AcknowledgementBatch{accept(0, 4)}, 0)
	if len(r.Partitions) == 0 || r.Partitions[0].AckErr != nil {
		t.Fatalf("acknowledgement sent again: %+v", r.Partitions)
	}
	if st, _ := f.p.ReadState(context.Background(), f.key(), 0); st.StartOffset != 5 {
		t.Fatalf("persisted start offset %d after the acknowledgement was answered, want 5", st.StartOffset)
	}
}

// An acknowledgement of records done with already waits for the write in
// flight that makes them so: answering it at once would confirm a state
// that a crash could still lose.
func TestManagerAcknowledgementWaitsForTheWriteInFlight(t *testing.T) {
	f := newManagerFixture(t, 1, 5)
	f.fetch(t, "m1", 0, nil, 100)
	block := make(chan struct{})
	var release sync.Once
	unblock := func() {
		release.Do(func() {
			f.p.mu.Lock()
			f.p.block = nil
			f.p.mu.Unlock()
			close(block)
		})
	}
	t.Cleanup(unblock) // before the manager's Close, which waits for writes
	f.p.mu.Lock()
	f.p.block = block
	f.p.mu.Unlock()
	first := make(chan FetchResponse, 1)
	f.m.Fetch(FetchRequest{Group: "g", Member: "m1", SessionEpoch: 1, MaxBytes: 1 << 20, TopicName: f.names,
		Acks: map[TopicIDPartition][]AcknowledgementBatch{f.tip: {accept(0, 4)}}}, func(r FetchResponse) { first <- r })
	// The first acknowledgement is applied (the start offset moves) and
	// its write is held.
	eventually(t, func() bool { return f.startOffset() == 5 })
	second := make(chan FetchResponse, 1)
	f.m.Fetch(FetchRequest{Group: "g", Member: "m1", SessionEpoch: 2, MaxBytes: 1 << 20, TopicName: f.names,
		Acks: map[TopicIDPartition][]AcknowledgementBatch{f.tip: {accept(0, 4)}}}, func(r FetchResponse) { second <- r })
	select {
	case r := <-second:
		t.Fatalf("the acknowledgement sent again was answered before the write in flight: %+v", r.Partitions)
	case <-time.After(200 * time.Millisecond):
	}
	unblock()
	for _, ch := range []chan FetchResponse{first, second} {
		select {
		case r := <-ch:
			if len(r.Partitions) == 0 || r.Partitions[0].AckErr != nil {
				t.Fatalf("acknowledgement: %+v", r.Partitions)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("an acknowledgement was not answered")
		}
	}
	if st, _ := f.p.ReadState(context.Background(), f.key(), 0); st.StartOffset != 5 {
		t.Fatalf("persisted start offset %d, want 5", st.StartOffset)
	}
}

func TestManagerLongPollWakesOnRelease(t *testing.T) {
	f := newManagerFixture(t, 1, 5)
	f.fetch(t, "m1", 0, nil, 100) // m1 holds everything
	done := make(chan FetchResponse, 1)
	f.m.Fetch(FetchRequest{Group: "g", Member: "m2", SessionEpoch: 0, MaxWait: 20 * time.Second, MaxBytes: 1 << 20, MaxRecords: 100,
		Add: []TopicIDPartition{f.tip}, TopicName: f.names}, func(r FetchResponse) { done <- r })
	// m1 releases: m2's waiting fetch gets them long before its wait ends.
	f.fetch(t, "m1", 1, []AcknowledgementBatch{release(0, 4)}, 0)
	select {
	case r := <-done:
		if got, want := acquiredOf(r), []AcquiredRecords{{0, 4, 2}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("m2 acquired %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting share fetch was not woken by the release")
	}
}

func TestOverlay(t *testing.T) {
	base := []StateBatch{{0, 9, Available, 1}, {10, 19, Acknowledged, 1}}
	top := []StateBatch{{5, 12, Archived, 2}}
	want := []StateBatch{{0, 4, Available, 1}, {5, 12, Archived, 2}, {13, 19, Acknowledged, 1}}
	if got := overlay(base, top); !reflect.DeepEqual(got, want) {
		t.Fatalf("overlay %v, want %v", got, want)
	}
}

func TestAbortedOffsets(t *testing.T) {
	batches := []Batch{
		{BaseOffset: 0, LastOffset: 4, producerID: 1, transactional: true},   // aborted
		{BaseOffset: 5, LastOffset: 9, producerID: 2, transactional: true},   // committed
		{BaseOffset: 10, LastOffset: 10, producerID: 1, control: true},       // abort marker
		{BaseOffset: 11, LastOffset: 11, producerID: 2, control: true},       // commit marker
		{BaseOffset: 12, LastOffset: 14, producerID: 1, transactional: true}, // a new transaction, committed later
		{BaseOffset: 15, LastOffset: 19, producerID: -1},                     // not transactional
	}
	got := abortedOffsets(batches, []log.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 10}})
	if want := []AcquiredRecords{{FirstOffset: 0, LastOffset: 4}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %v, want %v", got, want)
	}
	acq := []AcquiredRecords{{0, 9, 1}, {12, 19, 2}}
	if got, want := subtract(acq, []AcquiredRecords{{3, 4, 0}, {14, 15, 0}}), []AcquiredRecords{{0, 2, 1}, {5, 9, 1}, {12, 13, 2}, {16, 19, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("subtract %v, want %v", got, want)
	}
}

// A full session cache evicts a session idle for longer than the idle
// timeout (its member is gone without closing it), and the group it was
// the last of loses its cached share partitions.
func TestSessionCacheEvictsIdleSessions(t *testing.T) {
	now := t0
	c := NewSessionCache(2, time.Minute, func() time.Time { return now })
	var emptied []string
	c.onGroupEmpty = func(g string) { emptied = append(emptied, g) }
	if _, err := c.Update(SessionUpdate{Group: "a", Member: "m1"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(30 * time.Second)
	if _, err := c.Update(SessionUpdate{Group: "b", Member: "m2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(SessionUpdate{Group: "b", Member: "m3"}); !errors.Is(err, kerr.ShareSessionLimitReached) {
		t.Fatalf("a third session with none idle: %v", err)
	}
	now = now.Add(45 * time.Second) // m1 idle 75s, m2 45s
	if _, err := c.Update(SessionUpdate{Group: "b", Member: "m3"}); err != nil {
		t.Fatalf("a third session with one idle: %v", err)
	}
	if c.Len() != 2 || c.GroupSessions("a") != 0 || c.GroupSessions("b") != 2 || !reflect.DeepEqual(emptied, []string{"a"}) {
		t.Fatalf("len %d, a %d, b %d, emptied %v", c.Len(), c.GroupSessions("a"), c.GroupSessions("b"), emptied)
	}
	if _, err := c.Update(SessionUpdate{Group: "a", Member: "m1", Epoch: 1}); !errors.Is(err, kerr.ShareSessionNotFound) {
		t.Fatalf("the evicted session: %v", err)
	}
}

func (f *managerFixture) key() Key {
	return Key{GroupID: "g", TopicID: f.tip.TopicID, Partition: f.tip.Partition}
}

// startOffset is the loaded share partition's start offset, -1 before it
// is loaded.
func (f *managerFixture) startOffset() int64 {
	f.m.mu.Lock()
	e := f.m.parts[f.key()]
	f.m.mu.Unlock()
	if e == nil {
		return -1
	}
	select {
	case <-e.loaded:
	default:
		return -1
	}
	if e.sp == nil {
		return -1
	}
	return e.sp.StartOffset()
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
