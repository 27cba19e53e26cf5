package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log"
)

// fakeLog is an in-memory partition log. By default an append is committed
// at once; with holdCommits, commits wait for release.
type fakeLog struct {
	mu          sync.Mutex
	batches     map[int32][][]byte
	end         map[int32]int64
	holdCommits bool
	held        []func()
	failAppends error
	appends     int
	readGate    chan struct{} // if set, ReadForCoordinator waits for it
	failReads   int           // so many reads fail first
}

func newFakeLog() *fakeLog {
	return &fakeLog{batches: map[int32][][]byte{}, end: map[int32]int64{}}
}

func (l *fakeLog) AppendAsCoordinator(tp log.TopicPartition, batch []byte, timeout time.Duration, done func(int64, error)) {
	l.mu.Lock()
	if l.failAppends != nil {
		err := l.failAppends
		l.mu.Unlock()
		done(-1, err)
		return
	}
	h, err := log.CheckBatch(batch)
	if err != nil {
		l.mu.Unlock()
		done(-1, err)
		return
	}
	base := l.end[tp.Partition]
	b := append([]byte(nil), batch...)
	log.SetBaseOffset(b, base)
	l.batches[tp.Partition] = append(l.batches[tp.Partition], b)
	l.end[tp.Partition] = base + int64(h.LastOffsetDelta) + 1
	l.appends++
	if l.holdCommits {
		l.held = append(l.held, func() { done(base, nil) })
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	done(base, nil)
}

func (l *fakeLog) release() {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.holdCommits = false
	l.mu.Unlock()
	for _, f := range held {
		f()
	}
}

func (l *fakeLog) ReadForCoordinator(tp log.TopicPartition, offset int64, maxBytes int32) ([]byte, int64, int64, error) {
	if l.readGate != nil {
		<-l.readGate
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failReads > 0 {
		l.failReads--
		return nil, 0, 0, fmt.Errorf("%w: broker 1 is not the leader of %s", kerr.NotLeaderForPartition, tp)
	}
	var out []byte
	for _, b := range l.batches[tp.Partition] {
		h, _ := log.ParseBatchHeader(b)
		if h.LastOffset() < offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > int(maxBytes) {
			break
		}
		out = append(out, b...)
	}
	return out, 0, l.end[tp.Partition], nil
}

// appendRaw adds a batch as if written before the shard was elected.
func (l *fakeLog) appendRaw(p int32, build func(b *log.BatchBuilder)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := log.NewBatchBuilder(l.end[p])
	build(b)
	buf, _ := b.Build(nil)
	h, _ := log.ParseBatchHeader(buf)
	l.batches[p] = append(l.batches[p], buf)
	l.end[p] = h.NextOffset()
}

// counterShard keeps a counter per key: a record's value is the new count
// (4 bytes), a tombstone deletes it.
type counterShard struct {
	ctx      ShardContext
	counts   map[string]int32
	offsets  map[string]int64
	pending  map[int64]map[string]int32 // producer -> counts
	loaded   bool
	unloaded bool
	failOn   string // Replay returns an error for this key
	panicOn  string
}

func newCounterShard(ctx ShardContext) *counterShard {
	return &counterShard{ctx: ctx, counts: map[string]int32{}, offsets: map[string]int64{}, pending: map[int64]map[string]int32{}}
}

func (s *counterShard) Replay(offset, producerID int64, _ int16, key, value []byte) error {
	k := string(key)
	if k == s.failOn {
		return errors.New("bad record")
	}
	if k == s.panicOn {
		panic("replay bug")
	}
	if producerID >= 0 {
		if s.pending[producerID] == nil {
			s.pending[producerID] = map[string]int32{}
		}
		s.pending[producerID][k] = int32(binary.BigEndian.Uint32(value))
		return nil
	}
	if value == nil {
		delete(s.counts, k)
		return nil
	}
	s.counts[k] = int32(binary.BigEndian.Uint32(value))
	s.offsets[k] = offset
	return nil
}

func (s *counterShard) ReplayEndTransactionMarker(pid int64, _ int16, commit bool) error {
	if commit {
		for k, v := range s.pending[pid] {
			s.counts[k] = v
		}
	}
	delete(s.pending, pid)
	return nil
}

func (s *counterShard) OnLoaded()   { s.loaded = true }
func (s *counterShard) OnUnloaded() { s.unloaded = true }

func incr(s *counterShard, key string) (Result[int32], error) {
	v := s.counts[key] + 1
	val := make([]byte, 4)
	binary.BigEndian.PutUint32(val, uint32(v))
	return Result[int32]{Records: []Record{{Key: []byte(key), Value: val}}, Response: v}, nil
}

type harness struct {
	t   *testing.T
	log *fakeLog
	rt  *Runtime[*counterShard]

	mu     sync.Mutex
	shards []*counterShard
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, log: newFakeLog()}
	h.rt = New(Config[*counterShard]{
		Topic: "__test",
		Log:   h.log,
		NewShard: func(ctx ShardContext) *counterShard {
			s := newCounterShard(ctx)
			h.mu.Lock()
			h.shards = append(h.shards, s)
			h.mu.Unlock()
			return s
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	t.Cleanup(h.rt.Close)
	return h
}

type outcome[T any] struct {
	v   T
	err error
}

func call[T any](f func(done func(T, error))) chan outcome[T] {
	ch := make(chan outcome[T], 1)
	f(func(v T, err error) { ch <- outcome[T]{v, err} })
	return ch
}

func wait[T any](t *testing.T, ch chan outcome[T]) (T, error) {
	t.Helper()
	select {
	case o := <-ch:
		return o.v, o.err
	case <-time.After(10 * time.Second):
		t.Fatal("operation did not complete")
	}
	panic("unreachable")
}

func (h *harness) incr(p int32, key string) chan outcome[int32] {
	return call(func(done func(int32, error)) {
		Write(h.rt, "incr", p, func(s *counterShard) (Result[int32], error) { return incr(s, key) }, done)
	})
}

func (h *harness) get(p int32, key string) chan outcome[int32] {
	return call(func(done func(int32, error)) {
		Read(h.rt, "get", p, func(s *counterShard) (int32, error) { return s.counts[key], nil }, done)
	})
}

// waitActive polls until partition p answers a read.
func (h *harness) waitActive(p int32) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := wait(h.t, h.get(p, "x"))
		if err == nil {
			return
		}
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) || time.Now().After(deadline) {
			h.t.Fatalf("partition %d not active: %v", p, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWriteReplaysAndWaitsForCommit(t *testing.T) {
	h := newHarness(t)
	if _, err := wait(t, h.incr(0, "a")); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("before election: %v, want NOT_COORDINATOR", err)
	}
	h.rt.OnElection(0, 1)
	h.waitActive(0)

	h.log.mu.Lock()
	h.log.holdCommits = true
	h.log.mu.Unlock()
	w := h.incr(0, "a")
	r := h.get(0, "a")
	select {
	case o := <-w:
		t.Fatalf("write answered before its commit: %+v", o)
	case o := <-r:
		t.Fatalf("read answered before the write before it committed: %+v", o)
	case <-time.After(50 * time.Millisecond):
	}
	h.log.release()
	if v, err := wait(t, w); err != nil || v != 1 {
		t.Fatalf("incr = %d, %v", v, err)
	}
	if v, err := wait(t, r); err != nil || v != 1 {
		t.Fatalf("get = %d, %v", v, err)
	}
	// The record is in the log, in one batch with Kafka's layout.
	h.log.mu.Lock()
	b := h.log.batches[0][0]
	h.log.mu.Unlock()
	hdr, err := log.CheckBatch(b)
	if err != nil || hdr.NumRecords != 1 || hdr.PartitionLeaderEpoch != 1 || hdr.ProducerID != -1 {
		t.Fatalf("batch header %+v, %v", hdr, err)
	}
}

func TestLoadReplaysThePartition(t *testing.T) {
	h := newHarness(t)
	val := func(v uint32) []byte { b := make([]byte, 4); binary.BigEndian.PutUint32(b, v); return b }
	h.log.appendRaw(3, func(b *log.BatchBuilder) {
		b.Add(1, []byte("a"), val(5))
		b.Add(1, []byte("b"), val(7))
	})
	h.log.appendRaw(3, func(b *log.BatchBuilder) { b.Add(1, []byte("b"), nil) }) // tombstone
	// A committed and an aborted transaction.
	h.log.appendRaw(3, func(b *log.BatchBuilder) {
		b.ProducerID, b.ProducerEpoch, b.Transactional = 9, 0, true
		b.Add(1, []byte("c"), val(3))
	})
	h.log.appendRaw(3, func(b *log.BatchBuilder) {
		b.ProducerID, b.ProducerEpoch, b.Transactional = 8, 0, true
		b.Add(1, []byte("d"), val(4))
	})
	h.log.mu.Lock()
	end := h.log.end[3]
	h.log.batches[3] = append(h.log.batches[3],
		log.BuildControlBatch(end, 1, 9, 0, 0, log.ControlCommit, 0),
		log.BuildControlBatch(end+1, 1, 8, 0, 0, log.ControlAbort, 0))
	h.log.end[3] = end + 2
	gate := make(chan struct{})
	h.log.readGate = gate
	h.log.mu.Unlock()

	h.rt.OnElection(3, 0)
	if _, err := wait(t, h.get(3, "a")); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("during load: %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	close(gate)
	h.waitActive(3)
	for key, want := range map[string]int32{"a": 5, "b": 0, "c": 3, "d": 0} {
		if v, err := wait(t, h.get(3, key)); err != nil || v != want {
			t.Errorf("%s = %d, %v; want %d", key, v, err, want)
		}
	}
	// The next write lands after the loaded records.
	if v, err := wait(t, h.incr(3, "a")); err != nil || v != 6 {
		t.Fatalf("incr = %d, %v", v, err)
	}
	h.mu.Lock()
	s := h.shards[len(h.shards)-1]
	h.mu.Unlock()
	var off int64
	wait(t, call(func(done func(int64, error)) {
		Read(h.rt, "off", 3, func(s *counterShard) (int64, error) { off = s.offsets["a"]; return 0, nil }, done)
	}))
	if off != end+2 || !s.loaded {
		t.Fatalf("offset of the new record %d, want %d (loaded %v)", off, end+2, s.loaded)
	}
}

func TestResignationAnswersNotCoordinator(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 4)
	h.waitActive(0)
	h.log.mu.Lock()
	h.log.holdCommits = true
	h.log.mu.Unlock()
	w := h.incr(0, "a")
	for { // wait until the batch is in the log, waiting for its commit
		h.log.mu.Lock()
		n := len(h.log.held)
		h.log.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.rt.OnResignation(0, 3) // older epoch: ignored
	h.rt.OnResignation(0, 4)
	if _, err := wait(t, w); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("pending write after resignation: %v", err)
	}
	if _, err := wait(t, h.get(0, "a")); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("after resignation: %v", err)
	}
	h.mu.Lock()
	s := h.shards[0]
	h.mu.Unlock()
	if !s.unloaded {
		t.Fatal("OnUnloaded not called")
	}
	h.log.release() // the late commit finds nobody
	// Elected again: the state comes back from the log.
	h.rt.OnElection(0, 5)
	h.waitActive(0)
	if v, _ := wait(t, h.get(0, "a")); v != 1 {
		t.Fatalf("after re-election a = %d, want 1", v)
	}
}

func TestFailedAppendReloadsFromTheLog(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 0)
	h.waitActive(0)
	wait(t, h.incr(0, "a"))
	h.log.mu.Lock()
	h.log.failAppends = fmt.Errorf("%w: disk", kerr.KafkaStorageError)
	h.log.mu.Unlock()
	if _, err := wait(t, h.incr(0, "a")); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("failed append: %v", err)
	}
	h.log.mu.Lock()
	h.log.failAppends = nil
	h.log.mu.Unlock()
	h.waitActive(0)
	// The replayed-but-unwritten increment is gone.
	if v, _ := wait(t, h.get(0, "a")); v != 1 {
		t.Fatalf("a = %d after the failed write, want 1", v)
	}
}

func TestBadReplayAndPanicFailTheOperationOnly(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 0)
	h.waitActive(0)
	wait(t, h.incr(0, "a"))
	h.mu.Lock()
	h.shards[0].failOn = "bad"
	h.mu.Unlock()
	if _, err := wait(t, h.incr(0, "bad")); err == nil {
		t.Fatal("a write whose replay fails succeeded")
	}
	h.waitActive(0)
	h.mu.Lock()
	h.shards[len(h.shards)-1].panicOn = "boom"
	h.mu.Unlock()
	if _, err := wait(t, h.incr(0, "boom")); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("panicking replay: %v", err)
	}
	h.waitActive(0)
	_, err := wait(t, call(func(done func(int32, error)) {
		Write(h.rt, "bug", 0, func(*counterShard) (Result[int32], error) { panic("op bug") }, done)
	}))
	if !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("panicking op: %v", err)
	}
	h.waitActive(0)
	if v, err := wait(t, h.incr(0, "a")); err != nil || v != 2 {
		t.Fatalf("after the failures a = %d, %v; want 2", v, err)
	}
}

func TestRecordsLargerThanABatchFail(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 0)
	h.waitActive(0)
	_, err := wait(t, call(func(done func(int32, error)) {
		Write(h.rt, "big", 0, func(*counterShard) (Result[int32], error) {
			return Result[int32]{Records: []Record{{Key: []byte("k"), Value: make([]byte, 2<<20)}}}, nil
		}, done)
	}))
	if !errors.Is(err, kerr.RecordListTooLarge) {
		t.Fatalf("oversized write: %v", err)
	}
}

func TestConcurrentWritesShareBatches(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 0)
	h.waitActive(0)
	h.log.mu.Lock()
	h.log.holdCommits = true
	h.log.mu.Unlock()
	const n = 200
	chans := make([]chan outcome[int32], n)
	for i := range chans {
		chans[i] = h.incr(0, "a")
	}
	h.log.release()
	seen := map[int32]bool{}
	for _, ch := range chans {
		v, err := wait(t, ch)
		if err != nil || seen[v] {
			t.Fatalf("incr = %d, %v (seen %v)", v, err, seen[v])
		}
		seen[v] = true
	}
	h.log.mu.Lock()
	appends := h.log.appends
	h.log.mu.Unlock()
	if appends >= n {
		t.Fatalf("%d writes took %d appends: no batching", n, appends)
	}
	t.Logf("%d writes in %d batches", n, appends)
}

func TestTimers(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 0)
	h.waitActive(0)
	fired := make(chan string, 10)
	schedule := func(key string, d time.Duration) {
		wait(t, call(func(done func(int32, error)) {
			Write(h.rt, "schedule", 0, func(s *counterShard) (Result[int32], error) {
				s.ctx.Timer.Schedule(key, d, func() (Result[Void], error) {
					fired <- key
					r, err := incr(s, key)
					return Result[Void]{Records: r.Records}, err
				})
				return Result[int32]{}, nil
			}, done)
		}))
	}
	schedule("t1", time.Hour)
	schedule("t1", 10*time.Millisecond) // replaces
	schedule("t2", 5*time.Millisecond)
	wait(t, call(func(done func(int32, error)) {
		Write(h.rt, "cancel", 0, func(s *counterShard) (Result[int32], error) {
			s.ctx.Timer.Cancel("t2")
			return Result[int32]{}, nil
		}, done)
	}))
	select {
	case k := <-fired:
		if k != "t1" {
			t.Fatalf("fired %s, want t1", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("timer did not fire")
	}
	// The timer's records were written and replayed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, _ := wait(t, h.get(0, "t1"))
		if v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("timer record not applied")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case k := <-fired:
		t.Fatalf("%s fired again or after cancel", k)
	case <-time.After(30 * time.Millisecond):
	}
}

func TestReadAllAndWriteAll(t *testing.T) {
	h := newHarness(t)
	for p := int32(0); p < 3; p++ {
		h.rt.OnElection(p, 0)
		h.waitActive(p)
	}
	res := make(chan []PartitionResult[int32], 1)
	WriteAll(h.rt, "incr-all", func(s *counterShard) (Result[int32], error) { return incr(s, "x") }, func(r []PartitionResult[int32]) { res <- r })
	got := <-res
	if len(got) != 3 {
		t.Fatalf("WriteAll: %+v", got)
	}
	ReadAll(h.rt, "get-all", func(s *counterShard) (int32, error) { return s.counts["x"], nil }, func(r []PartitionResult[int32]) { res <- r })
	for i, r := range <-res {
		if r.Partition != int32(i) || r.Response != 1 || r.Err != nil {
			t.Fatalf("ReadAll[%d] = %+v", i, r)
		}
	}
}

func TestMockTimer(t *testing.T) {
	start := time.Unix(1000, 0)
	m := NewMockTimer(start)
	var order []string
	m.Schedule("b", 2*time.Second, func() (Result[Void], error) { order = append(order, "b"); return Result[Void]{}, nil })
	m.Schedule("a", time.Second, func() (Result[Void], error) {
		order = append(order, "a")
		m.Schedule("c", 500*time.Millisecond, func() (Result[Void], error) { order = append(order, "c"); return Result[Void]{}, nil })
		return Result[Void]{}, nil
	})
	m.Advance(1700*time.Millisecond, nil)
	if fmt.Sprint(order) != "[a c]" || !m.IsScheduled("b") {
		t.Fatalf("order %v", order)
	}
	m.Advance(time.Second, nil)
	if fmt.Sprint(order) != "[a c b]" || m.Now() != start.Add(2700*time.Millisecond) {
		t.Fatalf("order %v now %v", order, m.Now())
	}
}

// TestElectionAfterQueuedResignationLoads: a resignation and a newer
// election queued together behind a busy shard goroutine (the metadata
// publisher replaying a step-down and step-up) leave the shard loaded at
// the newer epoch; the election used to be dropped by the context the
// resignation had closed, leaving the partition without a coordinator.
func TestElectionAfterQueuedResignationLoads(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 1)
	h.waitActive(0)
	gate := make(chan struct{})
	c := h.rt.context(0)
	if !c.enqueue(func() { <-gate }) {
		t.Fatal("enqueue refused")
	}
	h.rt.OnResignation(0, 2)
	h.rt.OnElection(0, 3)
	close(gate)
	deadline := time.Now().Add(10 * time.Second)
	for c2 := h.rt.context(0); c2 == nil || c2 == c; c2 = h.rt.context(0) {
		if time.Now().After(deadline) {
			t.Fatal("the election did not make a new context: it was dropped")
		}
		time.Sleep(time.Millisecond)
	}
	h.waitActive(0)
}

// TestFailedLoadIsRetried: a load whose read fails (the partition's
// leadership not applied yet) is retried until it succeeds, and
// operations meanwhile are told the load is in progress.
func TestFailedLoadIsRetried(t *testing.T) {
	h := newHarness(t)
	h.log.appendRaw(0, func(b *log.BatchBuilder) {
		v := make([]byte, 4)
		binary.BigEndian.PutUint32(v, 7)
		b.Add(0, []byte("x"), v)
	})
	h.log.failReads = 2
	h.rt.OnElection(0, 1)
	h.waitActive(0)
	if got, err := wait(t, h.get(0, "x")); err != nil || got != 7 {
		t.Fatalf("after the retried load x = %d, %v; want 7", got, err)
	}
}

// TestWriteAllWhenLoadedWaitsForTheLoad: the coordinator's own clean-up
// waits for a loading shard instead of failing with
// COORDINATOR_LOAD_IN_PROGRESS.
func TestWriteAllWhenLoadedWaitsForTheLoad(t *testing.T) {
	h := newHarness(t)
	h.log.readGate = make(chan struct{})
	h.rt.OnElection(0, 1)
	res := make(chan []PartitionResult[int32], 1)
	WriteAllWhenLoaded(h.rt, "incr-all", func(s *counterShard) (Result[int32], error) { return incr(s, "x") },
		func(r []PartitionResult[int32]) { res <- r })
	select {
	case r := <-res:
		t.Fatalf("answered while loading: %+v", r)
	default:
	}
	close(h.log.readGate)
	got := <-res
	if len(got) != 1 || got[0].Err != nil || got[0].Response != 1 {
		t.Fatalf("WriteAllWhenLoaded: %+v", got)
	}
}
