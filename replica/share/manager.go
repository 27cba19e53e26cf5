package share

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
)

// GroupConfig is what a share partition reads of its group's configs
// (the GROUP config resource, falling back to the broker's).
type GroupConfig struct {
	// AutoOffsetReset is share.auto.offset.reset: "latest", "earliest"
	// or "by_duration" (records since ResetByDuration ago).
	AutoOffsetReset    string
	ResetByDuration    time.Duration
	RecordLockDuration time.Duration
	DeliveryCountLimit int16
	ReadCommitted      bool // share.isolation.level=read_committed
}

// ManagerConfig holds the broker's share-group settings.
type ManagerConfig struct {
	MaxInFlightRecords int // group.share.partition.max.record.locks
	MaxShareSessions   int // group.share.max.share.sessions
	// SessionIdleTimeout is how long a share session must have been
	// idle to be evicted for a new one when the cache is full (the
	// broker's group.share.max.session.timeout.ms: longer than any
	// member stays in its group without a heartbeat).
	SessionIdleTimeout time.Duration
	WriteTimeout       time.Duration // how long a state write may take
}

// Options wires a Manager.
type Options struct {
	Config    ManagerConfig
	Log       Log
	Persister Persister
	// GroupConfig is the effective config of a share group.
	GroupConfig func(group string) GroupConfig
	Logger      *slog.Logger
	Now         func() time.Time
	// Registerer takes the share-group metrics; nil: none.
	Registerer prometheus.Registerer
}

// Manager is Kafka's SharePartitionManager: the share partitions this
// broker leads, the share sessions of the members fetching from it, and
// the persistence of every change through the share coordinator.
type Manager struct {
	opts     Options
	sessions *SessionCache
	g        routine.Group
	metrics  *metrics

	mu    sync.Mutex
	parts map[Key]*partitionEntry
	// wakeC is closed when records become available again (released,
	// timed out), waking the share fetches waiting for them.
	wakeC chan struct{}
	// shuttingDown: share fetches answer what they have without waiting.
	shuttingDown atomic.Bool
}

// BeginShutdown answers the share fetches waiting with what they have and
// makes later ones answer without waiting, as the ReplicaManager's
// BeginShutdown does for fetches: a long poll does not hold the broker's
// shutdown up. Close implies it.
func (m *Manager) BeginShutdown() {
	m.shuttingDown.Store(true)
	m.wake()
}

// NewManager makes a Manager; Close stops it.
func NewManager(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Config.MaxShareSessions <= 0 {
		o.Config.MaxShareSessions = 2000
	}
	if o.Config.SessionIdleTimeout <= 0 {
		o.Config.SessionIdleTimeout = time.Minute
	}
	if o.Config.WriteTimeout <= 0 {
		o.Config.WriteTimeout = 5 * time.Second
	}
	m := &Manager{opts: o, sessions: NewSessionCache(o.Config.MaxShareSessions, o.Config.SessionIdleTimeout, o.Now), parts: map[Key]*partitionEntry{}}
	m.sessions.onGroupEmpty = m.dropGroup
	m.sessions.onMemberLeave = m.memberLeft
	m.metrics = newMetrics(o.Registerer, m.inFlight, func() float64 { return float64(m.sessions.Len()) })
	m.sessions.evicted = m.metrics.sessionEvictions.Inc
	return m
}

// inFlight is the records in flight, not yet acknowledged or archived,
// over the share partitions loaded here.
func (m *Manager) inFlight() float64 {
	m.mu.Lock()
	entries := make([]*partitionEntry, 0, len(m.parts))
	for _, e := range m.parts {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	n := int64(0)
	for _, e := range entries {
		select {
		case <-e.loaded:
			if e.sp != nil {
				n += e.sp.Summary().InFlight
			}
		default:
		}
	}
	return float64(n)
}

// Sessions is the share session cache.
func (m *Manager) Sessions() *SessionCache { return m.sessions }

// Close stops the lock timers and waits for state writes in flight.
func (m *Manager) Close() {
	m.BeginShutdown()
	m.mu.Lock()
	parts := m.parts
	m.parts = map[Key]*partitionEntry{}
	m.mu.Unlock()
	for _, e := range parts {
		e.stopTimer()
	}
	m.g.StopAndWait()
	m.metrics.unregister()
}

// partitionEntry is one share partition hosted here with what serves it:
// its load, its serialized state writes and its lock timer.
type partitionEntry struct {
	key         Key
	tp          log.TopicPartition
	leaderEpoch int32

	loaded  chan struct{} // closed once sp or loadErr is set
	sp      *SharePartition
	loadErr error

	// fetching is Kafka's fetch lock: one share fetch reads the
	// partition at a time.
	fetching sync.Mutex

	wmu     sync.Mutex
	pending []StateBatch
	waiters []func(error)
	writing bool

	tmu   sync.Mutex
	timer *time.Timer
}

func (e *partitionEntry) stopTimer() {
	e.tmu.Lock()
	defer e.tmu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
}

// entry returns the share partition of k on tp, loading it if need be.
// Only the partition's leader hosts it; a new leader epoch loads it anew
// from the persisted state (what the previous leader had acquired is
// available again).
func (m *Manager) entry(k Key, tp log.TopicPartition) (*partitionEntry, error) {
	epoch, err := m.opts.Log.LeaderEpoch(tp)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	e := m.parts[k]
	if e != nil && e.leaderEpoch == epoch && e.tp == tp {
		m.mu.Unlock()
		return e, nil
	}
	if e != nil {
		e.stopTimer()
	}
	e = &partitionEntry{key: k, tp: tp, leaderEpoch: epoch, loaded: make(chan struct{})}
	m.parts[k] = e
	m.mu.Unlock()
	if !m.g.Go(func(done <-chan struct{}) { m.load(done, e) }) {
		e.loadErr = kerr.NotLeaderForPartition
		close(e.loaded)
	}
	return e, nil
}

// load reads the persisted state and builds the share partition.
func (m *Manager) load(done <-chan struct{}, e *partitionEntry) {
	defer close(e.loaded)
	ctx, cancel := routine.Context(done)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, m.opts.Config.WriteTimeout)
	defer cancelT()
	started := time.Now()
	st, err := m.opts.Persister.ReadState(ctx, e.key, e.leaderEpoch)
	m.metrics.loadTime.Observe(float64(time.Since(started).Microseconds()) / 1000)
	if err != nil {
		e.loadErr = fmt.Errorf("reading the state of share partition %s of group %s: %w", e.tp, e.key.GroupID, err)
		m.forget(e)
		return
	}
	gc := m.opts.GroupConfig(e.key.GroupID)
	start := st.StartOffset
	if start < 0 {
		if start, err = m.resetOffset(e.tp, gc); err != nil {
			e.loadErr = err
			m.forget(e)
			return
		}
	}
	sp, err := NewSharePartition(m.partitionConfig(gc), LoadedState{StateEpoch: st.StateEpoch, StartOffset: start, Batches: st.Batches})
	if err != nil {
		e.loadErr = fmt.Errorf("%w: %w", kerr.UnknownServerError, err)
		m.forget(e)
		return
	}
	e.sp = sp
	m.opts.Logger.Debug("loaded share partition", "group", e.key.GroupID, "partition", e.tp.String(),
		"start_offset", sp.StartOffset(), "end_offset", sp.EndOffset(), "state_epoch", st.StateEpoch)
}

// dropGroup drops the share partitions of a group that has no share
// session here any more (Kafka's onGroupEmpty): the next fetch loads them
// again from the share coordinator, so an AlterShareGroupOffsets or
// DeleteShareGroupOffsets of the empty group takes effect.
func (m *Manager) dropGroup(group string) {
	m.mu.Lock()
	var dropped []*partitionEntry
	for k, e := range m.parts {
		if k.GroupID == group {
			delete(m.parts, k)
			dropped = append(dropped, e)
		}
	}
	m.mu.Unlock()
	for _, e := range dropped {
		e.stopTimer()
	}
}

// memberLeft gives back what a member acquired in the session its closed
// connection took away (Kafka's ShareGroupListener.onMemberLeave, which
// releases the member's session): the same as a session closed with the
// final epoch, on a goroutine of the manager's, since the caller is the
// closing connection's.
func (m *Manager) memberLeft(group, member string, parts []TopicIDPartition) {
	m.opts.Logger.Debug("share session ended with its connection", "group", group, "member", member, "partitions", len(parts))
	m.g.Go(func(stop <-chan struct{}) {
		ctx, cancel := routine.Context(stop)
		defer cancel()
		m.closeSession(ctx, group, member, parts, nil)
	})
}

// forget drops a failed entry so the next request loads it again.
func (m *Manager) forget(e *partitionEntry) {
	m.mu.Lock()
	if m.parts[e.key] == e {
		delete(m.parts, e.key)
	}
	m.mu.Unlock()
}

func (m *Manager) partitionConfig(gc GroupConfig) Config {
	return Config{MaxInFlightRecords: m.opts.Config.MaxInFlightRecords, MaxDeliveryCount: gc.DeliveryCountLimit, RecordLockDuration: gc.RecordLockDuration}
}

// resetOffset is where a share partition never initialized starts, by
// share.auto.offset.reset.
func (m *Manager) resetOffset(tp log.TopicPartition, gc GroupConfig) (int64, error) {
	switch gc.AutoOffsetReset {
	case "earliest":
		return m.opts.Log.OffsetForTimestamp(tp, -2)
	case "by_duration":
		o, err := m.opts.Log.OffsetForTimestamp(tp, m.opts.Now().Add(-gc.ResetByDuration).UnixMilli())
		if err == nil && o < 0 {
			// Nothing that recent: start at the end, as Kafka does.
			return m.opts.Log.OffsetForTimestamp(tp, -1)
		}
		return o, err
	default: // latest
		return m.opts.Log.OffsetForTimestamp(tp, -1)
	}
}

// ready waits for e's load and returns its share partition.
func (e *partitionEntry) ready(ctx context.Context) (*SharePartition, error) {
	select {
	case <-e.loaded:
		return e.sp, e.loadErr
	case <-ctx.Done():
		return nil, kerr.RequestTimedOut
	}
}

// persist writes changes through the persister, after every write queued
// before it (a share partition's writes never overtake each other, so the
// coordinator's state only moves forward), and calls done once the write
// that carries them is answered. Changes queued while a write is in flight
// go together in the next one, and so do those of a write that failed
// (the share partition serves them already; the failure is the waiters'
// answer). With no changes, done still waits for a write: a barrier
// behind the writes in flight.
func (m *Manager) persist(e *partitionEntry, changes []StateBatch, done func(error)) {
	e.wmu.Lock()
	e.pending = overlay(e.pending, changes)
	e.waiters = append(e.waiters, done)
	if e.writing {
		e.wmu.Unlock()
		return
	}
	e.writing = true
	e.wmu.Unlock()
	if !m.g.Go(func(stop <-chan struct{}) { m.writeLoop(stop, e) }) {
		e.wmu.Lock()
		ws := e.waiters
		e.waiters, e.pending, e.writing = nil, nil, false
		e.wmu.Unlock()
		for _, w := range ws {
			w(kerr.NotLeaderForPartition)
		}
	}
}

func (m *Manager) writeLoop(stop <-chan struct{}, e *partitionEntry) {
	ctx, cancel := routine.Context(stop)
	defer cancel()
	for {
		e.wmu.Lock()
		if len(e.waiters) == 0 {
			e.writing = false
			e.wmu.Unlock()
			return
		}
		batches, waiters := e.pending, e.waiters
		e.pending, e.waiters = nil, nil
		e.wmu.Unlock()
		sum := e.sp.Summary()
		st := PersistedState{StateEpoch: e.sp.StateEpoch(), LeaderEpoch: e.leaderEpoch, StartOffset: sum.StartOffset,
			DeliveryCompleteCount: int32(sum.EndOffset - sum.StartOffset - sum.InFlight), Batches: batches}
		wctx, wcancel := context.WithTimeout(ctx, m.opts.Config.WriteTimeout)
		err := m.opts.Persister.WriteState(wctx, e.key, st)
		wcancel()
		if err != nil {
			m.opts.Logger.Warn("writing share partition state failed", "group", e.key.GroupID, "partition", e.tp.String(), "err", err)
			if errors.Is(err, kerr.FencedStateEpoch) {
				// The state was initialized anew (its start offset
				// altered or deleted): load it again.
				m.forget(e)
				e.stopTimer()
			} else {
				// The changes hold in memory all the same: they go
				// again with the next write, under whatever changed
				// since, so that the durable state catches up with
				// the one served.
				e.wmu.Lock()
				e.pending = overlay(batches, e.pending)
				e.wmu.Unlock()
			}
		}
		for _, w := range waiters {
			w(err)
		}
	}
}

// changed persists changes made outside a request (lock expiry) and
// re-arms the lock timer.
func (m *Manager) changed(e *partitionEntry, changes []StateBatch) {
	if len(changes) > 0 {
		m.persist(e, changes, func(error) {})
	}
	m.armTimer(e)
}

// armTimer sets e's timer to its earliest acquisition lock deadline.
func (m *Manager) armTimer(e *partitionEntry) {
	deadline, ok := e.sp.NextLockDeadline()
	e.tmu.Lock()
	defer e.tmu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if !ok {
		return
	}
	e.timer = time.AfterFunc(max(deadline.Sub(m.opts.Now()), 0), func() {
		changes := e.sp.ExpireLocks(m.opts.Now())
		m.changed(e, changes)
		if len(changes) > 0 {
			m.wake()
		}
	})
}
