package runtime

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/purgatory"
)

// PartitionLog is what the runtime needs from the replica manager: append a
// batch to a partition of the coordinator's internal topic as its leader and
// learn when the batch is committed, and read the partition to load a
// shard. replica.Manager implements it (AppendAsCoordinator,
// ReadForCoordinator).
type PartitionLog interface {
	// AppendAsCoordinator appends batch, one record batch built by the
	// runtime, to tp as its leader with the coordinator origin (which may
	// write internal topics), and calls done exactly once: with the
	// batch's base offset once the high watermark has passed the batch,
	// or with an error if the append fails or is not committed within
	// timeout. done may run before AppendAsCoordinator returns.
	AppendAsCoordinator(tp log.TopicPartition, batch []byte, timeout time.Duration, done func(baseOffset int64, err error))
	// ReadForCoordinator returns whole batches of tp starting at the
	// batch holding offset (or at the log start if offset is below it),
	// at most maxBytes but at least one batch, and the log start and end
	// offsets.
	ReadForCoordinator(tp log.TopicPartition, offset int64, maxBytes int32) (batches []byte, logStart, logEnd int64, err error)
}

// Config configures a Runtime.
type Config[S Shard] struct {
	// Topic is the coordinator's internal topic (__consumer_offsets).
	Topic string
	// Log appends and reads the topic's partitions.
	Log PartitionLog
	// NewShard builds an empty shard; the runtime replays the partition
	// into it.
	NewShard func(ShardContext) S
	// CommitTimeout bounds how long a write waits for its batch to be
	// committed (offsets.commit.timeout.ms). Default 5s.
	CommitTimeout time.Duration
	// MaxBatchBytes bounds a batch (Kafka: the topic's max.message.bytes,
	// 1 MiB by default). Default 1048588.
	MaxBatchBytes int
	// LoadBufferBytes is how much is read at a time when loading
	// (offsets.load.buffer.size). Default 5 MiB.
	LoadBufferBytes int32
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Metrics, if set, receives the runtime's measurements.
	Metrics Metrics
}

// Metrics receives a runtime's measurements (Kafka's
// CoordinatorRuntimeMetrics). Implementations must be safe for concurrent
// use.
type Metrics interface {
	// PartitionState reports a shard moving from one state to another
	// (from is StateNone for a new shard, to StateNone when it is gone).
	PartitionState(from, to State)
	// PartitionLoaded reports how long a load took.
	PartitionLoaded(d time.Duration)
	// EventQueued reports an event queued (+1) or taken (-1).
	EventQueued(delta int)
	// BatchFlushed reports a batch appended to the log.
	BatchFlushed(records int, bytes int)
}

// Runtime is Kafka's CoordinatorRuntime: a coordinator as a set of shards,
// one per partition of its internal topic led by this broker. See the
// package documentation.
type Runtime[S Shard] struct {
	cfg   Config[S]
	log   *slog.Logger
	now   func() time.Time
	timer *purgatory.SystemTimer

	mu     sync.Mutex
	shards map[int32]*shardContext[S]
	closed bool

	routines routine.Group
}

// New starts a runtime with no shards; OnElection adds them.
func New[S Shard](cfg Config[S]) *Runtime[S] {
	if cfg.CommitTimeout <= 0 {
		cfg.CommitTimeout = 5 * time.Second
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 1048588
	}
	if cfg.LoadBufferBytes <= 0 {
		cfg.LoadBufferBytes = 5 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rt := &Runtime[S]{
		cfg:    cfg,
		log:    cfg.Logger.With("coordinator", cfg.Topic),
		now:    cfg.Now,
		shards: make(map[int32]*shardContext[S]),
	}
	rt.timer = purgatory.NewSystemTimer(purgatory.TimerOptions{Now: cfg.Now, Logger: rt.log})
	return rt
}

// Close unloads every shard (pending operations fail with NOT_COORDINATOR),
// stops the runtime's goroutines and returns once they have exited.
// Idempotent.
func (rt *Runtime[S]) Close() {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return
	}
	rt.closed = true
	shards := make([]*shardContext[S], 0, len(rt.shards))
	for _, c := range rt.shards {
		shards = append(shards, c)
	}
	rt.shards = map[int32]*shardContext[S]{}
	rt.mu.Unlock()
	for _, c := range shards {
		c.enqueue(func() { c.close() })
	}
	rt.routines.StopAndWait()
	rt.timer.Close()
}

// OnElection makes this broker the coordinator of partition at the given
// leader epoch: the shard is loaded by replaying the partition from its
// start; meanwhile its operations fail with COORDINATOR_LOAD_IN_PROGRESS.
// An election at an epoch not newer than the shard's current one is
// ignored.
//
// An election is never lost to an unload in progress: a context that is
// being unloaded for good (a resignation queued before this election) is
// no longer in the map, or refuses the event, or, if the event got in
// before it stopped, hands it on to a new context (elect).
func (rt *Runtime[S]) OnElection(partition, epoch int32) {
	for {
		c := rt.contextOrNew(partition)
		if c == nil || c.enqueue(func() { c.elect(epoch) }) {
			return
		}
		// c stopped between the lookup and the enqueue, and has left
		// the map: the next round makes a new one.
	}
}

// contextOrNew returns partition's context, starting one if there is
// none; nil once the runtime is closed.
func (rt *Runtime[S]) contextOrNew(partition int32) *shardContext[S] {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return nil
	}
	c := rt.shards[partition]
	if c == nil {
		c = newShardContext(rt, partition)
		if !rt.routines.Go(c.loop) {
			return nil
		}
		rt.shards[partition] = c
		if rt.cfg.Metrics != nil {
			rt.cfg.Metrics.PartitionState(StateNone, StateInitial)
		}
	}
	return c
}

// OnResignation unloads partition's shard: it is no longer coordinated
// here, and its operations fail with NOT_COORDINATOR. A resignation at an
// epoch older than the shard's is ignored; epoch -1 always unloads.
func (rt *Runtime[S]) OnResignation(partition, epoch int32) {
	rt.mu.Lock()
	c := rt.shards[partition]
	rt.mu.Unlock()
	if c == nil {
		return
	}
	c.enqueue(func() { c.resign(epoch) })
}

// Partitions returns the partitions with a shard here (loading or active),
// in order.
func (rt *Runtime[S]) Partitions() []int32 {
	rt.mu.Lock()
	ps := make([]int32, 0, len(rt.shards))
	for p := range rt.shards {
		ps = append(ps, p)
	}
	rt.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func (rt *Runtime[S]) context(partition int32) *shardContext[S] {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.shards[partition]
}

// removeContext forgets c if it is still the partition's context.
func (rt *Runtime[S]) removeContext(c *shardContext[S]) {
	rt.mu.Lock()
	if rt.shards[c.partition] == c {
		delete(rt.shards, c.partition)
	}
	rt.mu.Unlock()
}

func (rt *Runtime[S]) tp(partition int32) log.TopicPartition {
	return log.TopicPartition{Topic: rt.cfg.Topic, Partition: partition}
}

func notCoordinator(tp log.TopicPartition) error {
	return apierr.Errorf(kerr.NotCoordinator, "This is not the correct coordinator for %s.", tp)
}

func loadInProgress(tp log.TopicPartition) error {
	return apierr.Errorf(kerr.CoordinatorLoadInProgress, "The coordinator is loading %s.", tp)
}
