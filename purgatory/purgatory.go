package purgatory

import (
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// numShards is the number of watcher-list shards (Kafka's DelayedOperationPurgatory.Shards).
const numShards = 512

// Options configures a Purgatory. The zero value is Kafka's configuration.
type Options struct {
	// Now is the clock; see TimerOptions.Now. Default time.Now.
	Now func() time.Time
	// Tick and WheelSize shape the timing wheel. Defaults 1ms and 20.
	Tick      time.Duration
	WheelSize int
	// PurgeInterval is how many completed operations may stay on watcher lists before the
	// reaper purges them (Kafka's purgeInterval, e.g. fetch.purgatory.purge.interval.requests).
	// Default 1000.
	PurgeInterval int
	// ExpirationWorkers is the number of goroutines running OnExpiration and OnComplete of
	// expired operations. Default 1, as Kafka.
	ExpirationWorkers int
	// Logger. Default: discard.
	Logger *slog.Logger
	// Registerer, if set, receives the gauges
	// kafka_server_delayedoperationpurgatory_purgatorysize and
	// kafka_server_delayedoperationpurgatory_numdelayedoperations, labelled
	// delayedOperation=<name>. They are unregistered by Close.
	Registerer prometheus.Registerer
}

// Purgatory holds delayed operations until they complete or expire (Kafka's
// DelayedOperationPurgatory). Operations are watched on keys of type K, e.g. a topic-partition
// or a group ID. All methods are safe for concurrent use.
type Purgatory[K comparable] struct {
	name          string
	logger        *slog.Logger
	purgeInterval int64
	seed          maphash.Seed
	shards        []shard[K]
	timer         *SystemTimer

	// estimated counts watched operations, completed or not, since the last purge (Kafka's
	// estimatedTotalOperations). estimated - Delayed() estimates completed operations still
	// on watcher lists.
	estimated atomic.Int64

	registerer prometheus.Registerer
	collectors []prometheus.Collector
	closeOnce  sync.Once
}

// shard is one of the numShards watcher lists (Kafka's WatcherList).
type shard[K comparable] struct {
	mu       sync.Mutex
	watchers map[K]*watchers // guarded by mu
	watched  atomic.Int64    // entries in all watchers; written under mu
	_        [64]byte        // keep shards on separate cache lines
}

// watchers are the operations watched on one key (Kafka's Watchers). Guarded by the shard's
// lock. An operation watched on n keys has one entry in each of n lists.
type watchers struct {
	ops []DelayedOperation
}

// New starts a purgatory named name (Kafka's purgatory names: "Produce", "Fetch",
// "DeleteRecords", "Rebalance", "Heartbeat", ...). The name labels its gauges, so purgatories
// sharing a Registerer need distinct names. New panics if the gauges cannot be registered,
// as prometheus.MustRegister does. Close stops it.
func New[K comparable](name string, opts Options) *Purgatory[K] {
	p := &Purgatory[K]{
		name:          name,
		logger:        opts.Logger,
		purgeInterval: int64(opts.PurgeInterval),
		seed:          maphash.MakeSeed(),
		shards:        make([]shard[K], numShards),
		registerer:    opts.Registerer,
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	p.logger = p.logger.With("purgatory", name)
	if p.purgeInterval <= 0 {
		p.purgeInterval = 1000
	}
	for i := range p.shards {
		p.shards[i].watchers = make(map[K]*watchers)
	}
	if p.registerer != nil {
		p.register()
	}
	p.timer = newSystemTimer(TimerOptions{
		Now:       opts.Now,
		Tick:      opts.Tick,
		WheelSize: opts.WheelSize,
		Workers:   opts.ExpirationWorkers,
		Logger:    p.logger,
	}, p.maybePurge)
	p.timer.startReaper()
	return p
}

func (p *Purgatory[K]) register() {
	labels := prometheus.Labels{"delayedOperation": p.name}
	p.collectors = []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace:   "kafka",
			Subsystem:   "server",
			Name:        "delayedoperationpurgatory_purgatorysize",
			Help:        "Operations watched in the purgatory, counted once per watch key, including completed ones not yet purged.",
			ConstLabels: labels,
		}, func() float64 { return float64(p.Watched()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace:   "kafka",
			Subsystem:   "server",
			Name:        "delayedoperationpurgatory_numdelayedoperations",
			Help:        "Operations in the purgatory waiting for their deadline.",
			ConstLabels: labels,
		}, func() float64 { return float64(p.Delayed()) }),
	}
	for i, c := range p.collectors {
		if err := p.registerer.Register(c); err != nil {
			for _, r := range p.collectors[:i] {
				p.registerer.Unregister(r)
			}
			panic(fmt.Sprintf("purgatory %q: registering gauges: %v", p.name, err))
		}
	}
}

// Name is the purgatory's name.
func (p *Purgatory[K]) Name() string { return p.name }

func (p *Purgatory[K]) shard(key K) *shard[K] {
	return &p.shards[maphash.Comparable(p.seed, key)%numShards]
}

// TryCompleteElseWatch tries to complete op; if it cannot yet, it watches op on every key and
// tries again (an event on a key between the first try and the watch would otherwise be
// missed), then schedules op's timeout. It reports whether op was completed by this call.
//
// The tries and the watching happen under op's lock, so a concurrent CheckAndComplete on one
// of the keys waits for them instead of trying op half-registered. keys must not be empty.
// The caller must not hold a lock that TryComplete or OnComplete takes (nor op's shared lock).
func (p *Purgatory[K]) TryCompleteElseWatch(op DelayedOperation, keys []K) bool {
	if len(keys) == 0 {
		panic("purgatory: TryCompleteElseWatch needs at least one key")
	}
	o := op.operation()
	o.mustBeInitialized()
	if p.tryElseWatch(o, op, keys) {
		return true
	}
	// Not completed by now and watched: add to the timer too, unless someone completed it
	// meanwhile. Completion concurrent with Add is covered by the second check.
	if !o.IsCompleted() {
		p.timer.Add(&o.task)
		if o.IsCompleted() {
			o.task.Cancel()
		}
	}
	return false
}

func (p *Purgatory[K]) tryElseWatch(o *Operation, op DelayedOperation, keys []K) bool {
	o.lock.Lock()
	defer o.lock.Unlock()
	if o.completed.Load() {
		return false
	}
	if op.TryComplete() {
		return true
	}
	for _, k := range keys {
		p.watch(k, op)
	}
	p.estimated.Add(1)
	if o.completed.Load() { // forced meanwhile: do not run TryComplete on a completed op
		return false
	}
	return op.TryComplete()
}

func (p *Purgatory[K]) watch(key K, op DelayedOperation) {
	s := p.shard(key)
	s.mu.Lock()
	w := s.watchers[key]
	if w == nil {
		w = &watchers{}
		s.watchers[key] = w
	}
	w.ops = append(w.ops, op)
	s.watched.Add(1)
	s.mu.Unlock()
}

// CheckAndComplete tries to complete the operations watched on key, for example after an
// append to the partition key names, and returns how many it completed. Completed operations
// are dropped from key's watcher list.
//
// It takes each operation's lock in turn and may run OnComplete on the calling goroutine, so
// the caller must not hold a partition (or any) lock that TryComplete or OnComplete takes.
func (p *Purgatory[K]) CheckAndComplete(key K) int {
	s := p.shard(key)
	s.mu.Lock()
	w := s.watchers[key]
	if w == nil {
		s.mu.Unlock()
		return 0
	}
	// Snapshot, then try without the shard lock: the lock order is op lock → shard lock.
	var buf [32]DelayedOperation
	snap := append(buf[:0], w.ops...)
	s.mu.Unlock()

	completed, sawDone := 0, false
	for _, op := range snap {
		o := op.operation()
		if o.IsCompleted() {
			sawDone = true
			continue
		}
		if o.safeTryComplete() {
			completed++
			sawDone = true
		}
	}
	if sawDone {
		s.mu.Lock()
		s.removeCompleted(key, w)
		s.mu.Unlock()
	}
	return completed
}

// CheckAndCompleteAll is CheckAndComplete on every watched key: it tries
// every operation still waiting and returns how many it completed. The
// replica manager uses it at shutdown, after setting a flag that makes its
// operations' TryComplete answer. The same rules as CheckAndComplete apply
// to the caller's locks.
func (p *Purgatory[K]) CheckAndCompleteAll() int {
	var keys []K
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		for k := range s.watchers {
			keys = append(keys, k)
		}
		s.mu.Unlock()
	}
	completed := 0
	for _, k := range keys {
		completed += p.CheckAndComplete(k)
	}
	return completed
}

// removeCompleted drops completed operations from w and w from the shard if it is empty and
// still the key's list. Called with s.mu held.
func (s *shard[K]) removeCompleted(key K, w *watchers) int {
	kept := w.ops[:0]
	for _, op := range w.ops {
		if !op.operation().IsCompleted() {
			kept = append(kept, op)
		}
	}
	removed := len(w.ops) - len(kept)
	clear(w.ops[len(kept):])
	w.ops = kept
	if cap(w.ops) > 64 && len(w.ops) < cap(w.ops)/4 {
		w.ops = append([]DelayedOperation(nil), w.ops...) // give memory back after a burst
	}
	if len(w.ops) == 0 && s.watchers[key] == w {
		delete(s.watchers, key)
	}
	s.watched.Add(int64(-removed))
	return removed
}

// CancelForKey stops watching key and cancels the timeouts of the operations watched on it,
// without completing them, and returns those not completed (Kafka's cancelForKey). The
// operations stay on the lists of their other keys until purged.
func (p *Purgatory[K]) CancelForKey(key K) []DelayedOperation {
	s := p.shard(key)
	s.mu.Lock()
	w := s.watchers[key]
	if w == nil {
		s.mu.Unlock()
		return nil
	}
	delete(s.watchers, key)
	ops := w.ops
	w.ops = nil
	s.watched.Add(int64(-len(ops)))
	s.mu.Unlock()

	var cancelled []DelayedOperation
	for _, op := range ops {
		if o := op.operation(); !o.IsCompleted() {
			o.task.Cancel()
			cancelled = append(cancelled, op)
		}
	}
	return cancelled
}

// Watched is the number of watcher-list entries: an operation counts once per key, and
// completed operations count until purged (Kafka's PurgatorySize gauge).
func (p *Purgatory[K]) Watched() int {
	n := int64(0)
	for i := range p.shards {
		n += p.shards[i].watched.Load()
	}
	return int(n)
}

// Delayed is the number of operations waiting for their deadline (Kafka's
// NumDelayedOperations gauge).
func (p *Purgatory[K]) Delayed() int { return p.timer.Size() }

// maybePurge runs on the reaper after each clock advance (at least every 200ms): when more
// than PurgeInterval completed operations may remain on watcher lists, it purges them all.
func (p *Purgatory[K]) maybePurge() {
	delayed := int64(p.Delayed())
	if p.estimated.Load()-delayed <= p.purgeInterval {
		return
	}
	// Reset the estimate first: operations completing during the purge are counted again
	// (an overestimate, as in Kafka).
	p.estimated.Store(delayed)
	purged := p.purge()
	p.logger.Debug("purged completed operations from watcher lists", "purged", purged)
}

// purge drops completed operations from every watcher list and returns how many it dropped.
func (p *Purgatory[K]) purge() int {
	purged := 0
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		for k, w := range s.watchers {
			purged += s.removeCompleted(k, w)
		}
		s.mu.Unlock()
	}
	return purged
}

// Close stops the reaper and the expiration workers and unregisters the gauges. As Kafka's
// shutdown, it neither completes nor expires the operations still waiting: their OnComplete
// never runs unless a caller completes them (CheckAndComplete and ForceComplete keep working).
// Operations already expired when Close starts do complete before Close returns. Operations
// passed to TryCompleteElseWatch after Close are tried and watched but never expire.
// Idempotent.
func (p *Purgatory[K]) Close() {
	p.closeOnce.Do(func() {
		p.timer.Close()
		for _, c := range p.collectors {
			p.registerer.Unregister(c)
		}
	})
}
