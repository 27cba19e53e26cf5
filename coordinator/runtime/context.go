package runtime

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/purgatory"
)

// shardContext is one partition's shard and its goroutine (Kafka's
// CoordinatorContext plus the event processor thread that owns it).
//
// Every operation on the shard is a closure queued with enqueue and run by
// loop, one at a time, so the shard and every field below the queue are
// owned by that goroutine and need no lock. After each drain of the queue,
// the records of the operations just run are appended as one batch (flush).
type shardContext[S Shard] struct {
	rt        *Runtime[S]
	partition int32
	tp        log.TopicPartition

	mu      sync.Mutex
	queue   []func() // guarded by mu
	spare   []func() // the other buffer, swapped with queue by loop
	stopped bool     // guarded by mu: no more events are accepted
	wake    chan struct{}

	// Owned by the loop goroutine.
	state      State
	epoch      int32
	shard      S
	timer      *shardTimer[S]
	loadGen    uint64       // bumped by every load, so a stale load is dropped
	cancelLoad *atomic.Bool // set to stop the running loader early
	loadFails  int          // loads failed in a row, for the retry's back-off
	afterLoad  []func()     // operations waiting for the shard to be active (WriteAllWhenLoaded)
	nextOffset int64        // offset of the next record written (the log end)
	batch      *openBatch   // records of the operations run since the last flush
	seq        uint64       // batches flushed so far
	inflight   []*sentBatch // flushed, not yet committed, in order
}

// waiter is an operation waiting for its records (or those before it) to
// be committed.
type waiter struct {
	onWritten func(error) // Result.OnWritten, may be nil
	complete  func(error)
}

func (w waiter) finish(err error) {
	if w.onWritten != nil {
		w.onWritten(err)
	}
	w.complete(err)
}

// openBatch collects the records of the operations run in one drain of the
// queue.
type openBatch struct {
	builder *log.BatchBuilder
	// producerID is the producer of a transactional batch (-1: none);
	// such a batch holds one operation's records and is sent at once.
	producerID int64
	base       int64
	size       int
	waiters    []waiter
	nrecords   int
	lastWrite  string // name of the last operation, for logs
}

// sentBatch is a batch handed to the log, waiting for its commit.
type sentBatch struct {
	seq     uint64
	base    int64
	waiters []waiter
}

func newShardContext[S Shard](rt *Runtime[S], partition int32) *shardContext[S] {
	return &shardContext[S]{
		rt:        rt,
		partition: partition,
		tp:        rt.tp(partition),
		wake:      make(chan struct{}, 1),
		state:     StateInitial,
		epoch:     -1,
	}
}

// enqueue queues fn to run on the shard's goroutine and reports whether it
// was accepted (false once the shard is unloaded for good). The queue is
// bounded by what feeds it: one request in flight per connection, and the
// shard's own timers.
func (c *shardContext[S]) enqueue(fn func()) bool {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, fn)
	c.mu.Unlock()
	if m := c.rt.cfg.Metrics; m != nil {
		m.EventQueued(1)
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// loop runs the shard's events until it is unloaded or the runtime stops.
func (c *shardContext[S]) loop(done <-chan struct{}) {
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.stopped {
			c.mu.Unlock()
			select {
			case <-c.wake:
			case <-done:
				c.close()
			}
			c.mu.Lock()
		}
		events := c.queue
		c.queue = c.spare[:0]
		stopped := c.stopped
		c.mu.Unlock()
		if m := c.rt.cfg.Metrics; m != nil && len(events) > 0 {
			m.EventQueued(-len(events))
		}
		for i, ev := range events {
			ev()
			events[i] = nil
		}
		c.spare = events
		if c.batch != nil {
			c.flush()
		}
		if stopped {
			c.mu.Lock()
			empty := len(c.queue) == 0
			c.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

func (c *shardContext[S]) setState(s State) {
	if m := c.rt.cfg.Metrics; m != nil && s != c.state {
		m.PartitionState(c.state, s)
	}
	c.state = s
}

// activeErr is the error operations get unless the shard is active.
func (c *shardContext[S]) activeErr() error {
	switch c.state {
	case StateActive:
		return nil
	case StateLoading, StateFailed: // a failed load is retried
		return loadInProgress(c.tp)
	}
	return notCoordinator(c.tp)
}

// elect loads the shard at epoch unless it already is at that epoch or a
// newer one.
func (c *shardContext[S]) elect(epoch int32) {
	if c.state == StateClosed {
		// Unloaded for good by a resignation queued before this
		// election: the election is for a new context.
		c.rt.OnElection(c.partition, epoch)
		return
	}
	if epoch <= c.epoch && (c.state == StateLoading || c.state == StateActive) {
		return
	}
	c.epoch = epoch
	c.unloadShard(notCoordinator(c.tp))
	c.startLoad()
}

// resign unloads the shard for good unless epoch is older than its own.
func (c *shardContext[S]) resign(epoch int32) {
	if epoch >= 0 && epoch < c.epoch {
		return
	}
	c.close()
}

// close unloads the shard, refuses further events and forgets the context.
func (c *shardContext[S]) close() {
	if c.state == StateClosed {
		return
	}
	c.unloadShard(notCoordinator(c.tp))
	c.failInflight(notCoordinator(c.tp))
	c.setState(StateClosed)
	c.runAfterLoad() // they fail: not the coordinator any more
	if m := c.rt.cfg.Metrics; m != nil {
		m.PartitionState(StateClosed, StateNone)
	}
	// Out of the map first, so that an election from now on makes a new
	// context; one that found this context before is handed on by elect.
	c.rt.removeContext(c)
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

// unloadShard drops the shard's memory: its timers stop, the operations in
// the open batch fail with err, and OnUnloaded answers what the shard
// holds. Batches already handed to the log still wait for their commit.
func (c *shardContext[S]) unloadShard(err error) {
	if c.cancelLoad != nil {
		c.cancelLoad.Store(true)
		c.cancelLoad = nil
	}
	c.loadGen++
	if c.batch != nil {
		b := c.batch
		c.batch = nil
		for _, w := range b.waiters {
			w.finish(err)
		}
	}
	if c.timer != nil {
		c.timer.cancelAll()
		c.timer = nil
	}
	if c.state == StateActive {
		var zero S
		s := c.shard
		c.shard = zero
		s.OnUnloaded()
	}
}

func (c *shardContext[S]) failInflight(err error) {
	in := c.inflight
	c.inflight = nil
	for _, b := range in {
		for _, w := range b.waiters {
			w.finish(err)
		}
	}
}

// reload rebuilds the shard from the log after its memory may have
// diverged from it (a failed write, a failed replay, a panic).
func (c *shardContext[S]) reload(reason string) {
	if c.state != StateActive && c.state != StateLoading {
		return
	}
	c.rt.log.Warn("reloading coordinator shard", "partition", c.partition, "reason", reason)
	c.unloadShard(apierr.Errorf(kerr.NotCoordinator, "The coordinator of %s is reloading: %s.", c.tp, reason))
	c.startLoad()
}

// startLoad builds an empty shard and replays the partition into it on a
// loader goroutine; loaded installs it.
func (c *shardContext[S]) startLoad() {
	c.setState(StateLoading)
	c.loadGen++
	gen := c.loadGen
	cancel := &atomic.Bool{}
	c.cancelLoad = cancel
	timer := newShardTimer(c)
	shard := c.rt.cfg.NewShard(ShardContext{
		TopicPartition: c.tp,
		Epoch:          c.epoch,
		Timer:          timer,
		Now:            c.rt.now,
		Logger:         c.rt.log.With("partition", c.partition),
	})
	start := c.rt.now()
	ok := c.rt.routines.Go(func(done <-chan struct{}) {
		end, n, err := load(c.rt.cfg.Log, c.tp, shard, c.rt.cfg.LoadBufferBytes, func() bool {
			select {
			case <-done:
				return true
			default:
				return cancel.Load()
			}
		})
		c.enqueue(func() { c.loaded(gen, shard, timer, end, n, err, start) })
	})
	if !ok {
		timer.cancelAll()
	}
}

// loaded makes a freshly loaded shard active, unless another load or an
// unload came in between.
func (c *shardContext[S]) loaded(gen uint64, shard S, timer *shardTimer[S], end, records int64, err error, start time.Time) {
	if gen != c.loadGen || c.state != StateLoading {
		timer.cancelAll()
		return
	}
	c.cancelLoad = nil
	if err != nil {
		timer.cancelAll()
		c.setState(StateFailed)
		c.retryLoad(gen, err)
		return
	}
	c.loadFails = 0
	c.shard = shard
	c.timer = timer
	c.nextOffset = end
	c.setState(StateActive)
	took := c.rt.now().Sub(start)
	if m := c.rt.cfg.Metrics; m != nil {
		m.PartitionLoaded(took)
	}
	c.rt.log.Info("loaded coordinator shard", "partition", c.partition, "epoch", c.epoch, "records", records, "end_offset", end, "took", took)
	c.shard.OnLoaded()
	c.runAfterLoad()
}

// Load retry back-off: the first retry after loadRetryMin, doubling up to
// loadRetryMax.
const (
	loadRetryMin = 100 * time.Millisecond
	loadRetryMax = 5 * time.Second
)

// retryLoad schedules another load after a failed one, for as long as this
// broker stays the partition's coordinator at this epoch: a load is never
// dropped (a read that failed because the partition's leadership was not
// applied yet, a transient I/O error). An election or resignation in
// between supersedes it (loadGen).
func (c *shardContext[S]) retryLoad(gen uint64, err error) {
	c.loadFails++
	delay := min(loadRetryMin<<min(c.loadFails-1, 10), loadRetryMax)
	if c.loadFails == 1 {
		c.rt.log.Warn("loading coordinator shard failed; retrying", "partition", c.partition, "epoch", c.epoch, "retry_in", delay, "err", err)
	} else {
		c.rt.log.Debug("loading coordinator shard failed again; retrying", "partition", c.partition, "epoch", c.epoch, "failures", c.loadFails, "retry_in", delay, "err", err)
	}
	c.rt.timer.Add(purgatory.NewTimerTask(delay, func() {
		c.enqueue(func() {
			if c.state == StateFailed && c.loadGen == gen {
				c.startLoad()
			}
		})
	}))
}

// whenLoaded runs op now if the shard is active or unloaded, or once the
// load in progress (or its retry) has finished.
func (c *shardContext[S]) whenLoaded(op func()) {
	if c.state == StateLoading || c.state == StateFailed {
		c.afterLoad = append(c.afterLoad, op)
		return
	}
	op()
}

// runAfterLoad runs the operations whenLoaded held back, once the shard is
// active or unloaded for good.
func (c *shardContext[S]) runAfterLoad() {
	waiting := c.afterLoad
	c.afterLoad = nil
	for _, op := range waiting {
		op()
	}
}

// write replays records into the shard (if replay) and adds them to the
// open batch; w completes once the batch is committed. Records that cannot
// fit in one batch fail the operation before anything is replayed.
func (c *shardContext[S]) write(name string, records []Record, replay bool, w waiter) {
	c.writeAs(name, -1, -1, records, replay, w)
}

// writeAs is write for a producer: producerID -1 adds the records to the
// open batch; a producer's records (a transactional write, Kafka's
// scheduleTransactionalWriteOperation) go in a batch of their own, with
// the producer's id and epoch and the transactional attribute, appended
// at once after the batch open before it, so that they are atomic.
func (c *shardContext[S]) writeAs(name string, producerID int64, producerEpoch int16, records []Record, replay bool, w waiter) {
	if len(records) == 0 {
		c.deferUntilCommitted(w)
		return
	}
	size := 0
	for _, r := range records {
		size += recordSizeBound(r)
	}
	if size > c.rt.cfg.MaxBatchBytes {
		w.finish(apierr.Errorf(kerr.RecordListTooLarge, "%d records of about %d bytes in operation %s exceed the batch limit of %d bytes for %s.",
			len(records), size, name, c.rt.cfg.MaxBatchBytes, c.tp))
		return
	}
	if c.batch != nil && (c.batch.size+size > c.rt.cfg.MaxBatchBytes || producerID >= 0 || c.batch.producerID >= 0) {
		c.flush()
	}
	if c.batch == nil {
		b := log.NewBatchBuilder(0)
		if producerID >= 0 {
			// Kafka's coordinators write base sequence 0; the log
			// checks sequences only for clients' batches.
			b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = producerID, producerEpoch, 0, true
		}
		c.batch = &openBatch{builder: b, base: c.nextOffset, producerID: producerID}
	}
	b := c.batch
	now := c.rt.now().UnixMilli()
	for _, r := range records {
		if replay {
			if err := c.replayOne(c.nextOffset, producerID, producerEpoch, r); err != nil {
				// The shard may hold part of the operation: rebuild
				// it from the log (a panic already did), which fails
				// the open batch too.
				c.rt.log.Error("replaying a record of a write failed", "op", name, "partition", c.partition, "err", err)
				if c.state == StateActive {
					c.reload(fmt.Sprintf("replaying a record of %s failed: %v", name, err))
				}
				w.finish(err)
				return
			}
		}
		b.builder.Add(now, r.Key, r.Value)
		c.nextOffset++
	}
	b.size += size
	b.nrecords += len(records)
	b.lastWrite = name
	b.waiters = append(b.waiters, w)
	if producerID >= 0 {
		c.flush()
	}
}

func (c *shardContext[S]) replayOne(offset, producerID int64, producerEpoch int16, r Record) error {
	return c.guard("replay", func() error {
		return c.shard.Replay(offset, producerID, producerEpoch, r.Key, r.Value)
	})
}

// completeTransaction replays a producer's COMMIT or ABORT marker into the
// shard and appends it as a control batch of its own, after the batch open
// before it (Kafka's CoordinatorRuntime.completeTransaction); w completes
// once the marker is committed. A marker the log refuses (a stale producer
// or coordinator epoch) fails w and, since the shard applied it, reloads
// the shard from the log.
func (c *shardContext[S]) completeTransaction(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, w waiter) {
	if c.batch != nil {
		c.flush()
	}
	err := c.guard("replay-end-transaction-marker", func() error {
		return c.shard.ReplayEndTransactionMarker(producerID, producerEpoch, commit)
	})
	if err != nil {
		if c.state == StateActive {
			c.reload(fmt.Sprintf("replaying the transaction marker of producer %d failed: %v", producerID, err))
		}
		w.finish(err)
		return
	}
	typ := log.ControlAbort
	if commit {
		typ = log.ControlCommit
	}
	buf := log.BuildControlBatch(0, c.rt.now().UnixMilli(), producerID, producerEpoch, c.epoch, typ, coordinatorEpoch)
	base := c.nextOffset
	c.nextOffset++
	c.send(buf, base, 1, []waiter{w})
}

// deferUntilCommitted completes w once every record written before it is
// committed: now if nothing is pending.
func (c *shardContext[S]) deferUntilCommitted(w waiter) {
	switch {
	case c.batch != nil:
		c.batch.waiters = append(c.batch.waiters, w)
	case len(c.inflight) > 0:
		last := c.inflight[len(c.inflight)-1]
		last.waiters = append(last.waiters, w)
	default:
		w.finish(nil)
	}
}

// flush appends the open batch to the log. Its waiters complete when the
// log reports the commit (committed, on this goroutine).
func (c *shardContext[S]) flush() {
	b := c.batch
	c.batch = nil
	if b.nrecords == 0 {
		// Only reads and record-less writes: nothing to append.
		c.deferAll(b.waiters)
		return
	}
	// Base offset 0, as a producer sends it: the log assigns the
	// offsets, and committed checks they are the ones predicted.
	b.builder.PartitionLeaderEpoch = c.epoch
	buf, err := b.builder.Build(nil)
	if err != nil { // uncompressed: cannot happen
		for _, w := range b.waiters {
			w.finish(err)
		}
		c.reload("building a batch failed")
		return
	}
	c.send(buf, b.base, b.nrecords, b.waiters)
}

// send hands one built batch of nrecords records, predicted to land at
// base, to the log; its waiters complete when the log reports the commit.
func (c *shardContext[S]) send(buf []byte, base int64, nrecords int, waiters []waiter) {
	c.seq++
	sent := &sentBatch{seq: c.seq, base: base, waiters: waiters}
	c.inflight = append(c.inflight, sent)
	if m := c.rt.cfg.Metrics; m != nil {
		m.BatchFlushed(nrecords, len(buf))
	}
	seq := c.seq
	c.rt.cfg.Log.AppendAsCoordinator(c.tp, buf, c.rt.cfg.CommitTimeout, func(base int64, err error) {
		// Possibly on this goroutine, before AppendAsCoordinator
		// returns: always go through the queue.
		c.enqueue(func() { c.committed(seq, base, err) })
	})
}

func (c *shardContext[S]) deferAll(ws []waiter) {
	for _, w := range ws {
		c.deferUntilCommitted(w)
	}
}

// committed completes the batches up to seq once the log committed batch
// seq; a failed batch fails its waiters and reloads the shard, whose memory
// holds records the log may not.
func (c *shardContext[S]) committed(seq uint64, base int64, err error) {
	i := 0
	for i < len(c.inflight) && c.inflight[i].seq != seq {
		i++
	}
	if i == len(c.inflight) {
		return // failed earlier by an unload
	}
	b := c.inflight[i]
	if err == nil && base != b.base {
		err = apierr.Errorf(kerr.NotCoordinator, "batch for %s landed at offset %d, expected %d: another writer appended to the partition", c.tp, base, b.base)
	}
	if err != nil {
		c.inflight = append(c.inflight[:i:i], c.inflight[i+1:]...)
		for _, w := range b.waiters {
			w.finish(err)
		}
		c.rt.log.Warn("coordinator write failed", "partition", c.partition, "offset", b.base, "err", err)
		c.reload(fmt.Sprintf("a write at offset %d failed: %v", b.base, err))
		return
	}
	// The high watermark passed batch seq, so every earlier batch too.
	done := c.inflight[:i+1]
	c.inflight = append([]*sentBatch(nil), c.inflight[i+1:]...)
	for _, d := range done {
		for _, w := range d.waiters {
			w.finish(nil)
		}
	}
}

// recordSizeBound is an upper bound of a record's encoded size in a batch.
func recordSizeBound(r Record) int {
	return 5 + 1 + 10 + 5 + 5 + len(r.Key) + 5 + len(r.Value) + 5
}
