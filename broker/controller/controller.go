package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/routine"
)

// RaftClient is what the controller needs of the metadata quorum.
type RaftClient interface {
	// ScheduleAppend appends one batch of encoded records at epoch and
	// returns the offset of its last record. It fails at once if this
	// node is not the leader of that epoch.
	ScheduleAppend(epoch int32, records [][]byte) (lastOffset int64, err error)
}

// Batch is one committed batch of the metadata log, as the quorum hands it
// to its listeners.
type Batch struct {
	BaseOffset, LastOffset int64
	Epoch                  int32
	AppendTimeMs           int64
	Records                [][]byte // record values: framed metadata records
}

// Config wires a QuorumController.
type Config struct {
	NodeID    int32
	ClusterID string
	// Broker holds the cluster's defaults and validators (num.partitions,
	// default.replication.factor, delete.topic.enable, topic and broker
	// config definitions).
	Broker *config.KafkaConfig
	Raft   RaftClient
	Logger *slog.Logger
	Now    func() time.Time // nil: time.Now
	// SessionTimeout is broker.session.timeout.ms: a broker that sends no
	// heartbeat for this long is fenced.
	SessionTimeout time.Duration
	// Bootstrap returns the records a brand-new cluster starts with
	// after the feature levels (the JSON-store migration); nil: none.
	Bootstrap func() ([]metadata.Record, error)
	// MaxReplicationFactor caps the replication factor a topic may have
	// (1 until partitions are replicated between brokers); 0: no cap.
	MaxReplicationFactor int
	// Registerer receives the controller's gauges; nil: none.
	Registerer prometheus.Registerer
}

// QuorumController makes every cluster decision: it validates requests
// against the latest metadata, answers with records, appends them to the
// metadata log through the quorum and answers the request once they are
// committed (Kafka's QuorumController). Only the active controller, the
// leader of the quorum, accepts writes; every other node answers
// NOT_CONTROLLER. See doc.go.
type QuorumController struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	queue eventQueue
	g     routine.Group

	// Everything below is owned by the event loop goroutine.
	committed *metadata.Image // replay of the committed log
	latest    *metadata.Image // committed plus this controller's uncommitted writes
	active    bool
	// prevLeader is the last other node seen leading the quorum (-1:
	// none).
	prevLeader int32
	epoch      int32 // epoch we lead (or claim)
	claiming   bool
	claimAt    int64 // offset of the claim record; active once committed
	pending    []pendingWrite
	sessions   map[int32]*brokerSession
	lastErr    error // a replay error: the log does not fit; stop writing
	rnd        *rand.Rand
	metrics    *controllerMetrics
	// metricsDirty: the images changed since the gauges were recounted.
	metricsDirty bool
	balance      leaderBalance // leader_balance.go
}

type pendingWrite struct {
	offset int64
	done   func(error)
}

// New creates a controller; Start runs it.
func New(cfg Config) *QuorumController {
	c := &QuorumController{cfg: cfg, log: cfg.Logger, now: cfg.Now, committed: metadata.Empty, latest: metadata.Empty,
		sessions: map[int32]*brokerSession{}, rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), prevLeader: -1}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("component", "controller")
	if c.now == nil {
		c.now = time.Now
	}
	if c.cfg.SessionTimeout <= 0 {
		c.cfg.SessionTimeout = 9 * time.Second
	}
	c.queue.init()
	c.metrics = newControllerMetrics(cfg.Registerer)
	return c
}

// SetRaft sets the quorum the controller appends to, when it could not be
// given to New (the quorum needs the controller as its listener). Call it
// before Start.
func (c *QuorumController) SetRaft(r RaftClient) { c.cfg.Raft = r }

// Start runs the event loop and the timers.
func (c *QuorumController) Start() {
	c.startLeaderBalance() // before the loop, which reads its schedule
	c.startTokenSweep()
	c.g.Go(c.run)
	c.g.Every(c.cfg.SessionTimeout/8+time.Millisecond, func() {
		c.queue.push(event{"fenceStaleBrokers", c.fenceStaleBrokers})
	})
}

// Close stops the controller; writes waiting for their commit fail with
// NOT_CONTROLLER. Idempotent.
func (c *QuorumController) Close() {
	c.g.Stop()
	c.queue.close()
	c.g.Wait()
	for _, p := range c.pending {
		p.done(errNotController(-1))
	}
	c.pending = nil
	c.metrics.unregister()
}

type event struct {
	name string
	run  func()
}

func (c *QuorumController) run(done <-chan struct{}) {
	for {
		evs, ok := c.queue.popAll(done)
		if !ok {
			return
		}
		for _, ev := range evs {
			ev.run()
		}
		// Recount the gauges once per round of events, not per event:
		// a count walks every partition.
		if c.metricsDirty {
			c.metrics.update(c.latest, c.active)
			c.metricsDirty = false
			c.maybeScheduleBalance(c.metrics.imbalanced.Load())
		}
	}
}

// --- The quorum's listener: called from the quorum's goroutine. ---

// HandleCommit takes a batch the quorum committed.
func (c *QuorumController) HandleCommit(b Batch) {
	c.queue.push(event{"handleCommit", func() { c.handleCommit(b) }})
}

// HandleSnapshot replaces the committed state with a snapshot's records
// (a follower that fell behind the leader's log start, or start-up).
func (c *QuorumController) HandleSnapshot(offset int64, epoch int32, records [][]byte) {
	c.queue.push(event{"handleSnapshot", func() {
		d := metadata.NewDelta(metadata.Empty)
		for _, raw := range records {
			rec, err := metadata.Decode(raw)
			if err == nil {
				err = d.Replay(rec)
			}
			if err != nil {
				c.fail(fmt.Errorf("snapshot at %d: %w", offset, err))
				return
			}
		}
		d.SetProvenance(offset, epoch)
		c.committed = d.Apply()
		if !c.active {
			c.latest = c.committed
		}
	}})
}

// HandleLeaderChange tells the controller who leads the quorum now.
func (c *QuorumController) HandleLeaderChange(leader int32, epoch int32) {
	c.queue.push(event{"handleLeaderChange", func() { c.handleLeaderChange(leader, epoch) }})
}

func (c *QuorumController) handleCommit(b Batch) {
	if c.lastErr != nil {
		return
	}
	d := metadata.NewDelta(c.committed)
	for _, raw := range b.Records {
		rec, err := metadata.Decode(raw)
		if err == nil {
			err = d.Replay(rec)
		}
		if err != nil {
			c.fail(fmt.Errorf("batch at offset %d: %w", b.BaseOffset, err))
			return
		}
	}
	d.SetProvenance(b.LastOffset, b.Epoch)
	c.committed = d.Apply()
	c.metricsDirty = true
	if !c.active {
		c.latest = c.committed
	}
	if c.claiming && c.committed.Offset >= c.claimAt {
		c.activate()
	}
	n := 0
	for _, p := range c.pending {
		if p.offset > c.committed.Offset {
			break
		}
		p.done(nil)
		n++
	}
	c.pending = c.pending[n:]
}

// fail stops the controller from writing after a record that does not fit
// the metadata: the log is corrupt or a controller has a bug. Replaying
// further could only make it worse.
func (c *QuorumController) fail(err error) {
	c.lastErr = err
	c.log.Error("metadata log cannot be replayed; the controller stops writing", "err", err)
	c.resign()
}

func (c *QuorumController) handleLeaderChange(leader, epoch int32) {
	if leader >= 0 && leader != c.cfg.NodeID {
		c.prevLeader = leader
	}
	if leader != c.cfg.NodeID || epoch != c.epoch {
		if c.active || c.claiming {
			c.log.Info("no longer the active controller", "new_leader", leader, "epoch", epoch)
		}
		c.resign()
	}
	if leader != c.cfg.NodeID || c.lastErr != nil || c.active || c.claiming {
		return
	}
	// Claim leadership: append a record at our epoch; once it is
	// committed, everything before it is committed and replayed, and
	// the controller can decide on the whole log (Kafka's
	// QuorumController.claim).
	off, err := c.cfg.Raft.ScheduleAppend(epoch, [][]byte{metadata.Encode(&metadata.NoOpRecord{})})
	if err != nil {
		c.log.Info("could not claim controller leadership", "epoch", epoch, "err", err)
		return
	}
	c.epoch, c.claiming, c.claimAt = epoch, true, off
	if c.committed.Offset >= off {
		c.activate()
	}
}

func (c *QuorumController) activate() {
	c.claiming, c.active, c.metricsDirty = false, true, true
	c.latest = c.committed
	now := c.now()
	// Every registered broker gets a full session to heartbeat to the
	// new controller (Kafka's BrokerHeartbeatManager starts afresh), but
	// the previous active controller's: in combined mode it is the same
	// process as the broker of that id (node ids are unique over brokers
	// and controllers), and this node knows when it last heard from it.
	// Its session counts from then, so that a combined node killed while
	// it was the active controller is fenced a session after it died, not
	// a session after the election (Kafka waits the longer time).
	c.sessions = map[int32]*brokerSession{}
	for id, b := range c.latest.Brokers {
		c.sessions[id] = &brokerSession{lastContact: now, fenced: b.Fenced}
	}
	if s := c.sessions[c.prevLeader]; s != nil && c.prevLeader != c.cfg.NodeID {
		if h, ok := c.cfg.Raft.(interface {
			LastHeard(int32) (time.Time, bool)
		}); ok {
			if t, ok := h.LastHeard(c.prevLeader); ok && t.Before(now) {
				s.lastContact = t
				c.log.Info("the previous active controller's broker session counts from when it was last heard of", "broker", c.prevLeader, "last_heard", t.Format(time.RFC3339Nano))
			}
		}
	}
	c.prevLeader = -1
	c.log.Info("became the active controller", "epoch", c.epoch, "committed_offset", c.committed.Offset)
	c.bootstrap()
}

func (c *QuorumController) resign() {
	c.active, c.claiming, c.metricsDirty = false, false, true
	c.latest = c.committed
	for _, p := range c.pending {
		p.done(errNotController(-1))
	}
	c.pending = nil
}

// random is the controller's random source (placement); loop only.
func (c *QuorumController) random() *rand.Rand { return c.rnd }

// --- Writes ---

// writeResult is what an operation decides: the records to append and the
// response to give once they are committed.
type writeResult[T any] struct {
	records []metadata.Record
	resp    T
}

// write runs op on the event loop against the latest metadata, appends
// its records and waits until they are committed, then returns op's
// response and the offset of its last record (-1 when op wrote nothing).
// An error from op is returned without appending anything.
func write[T any](ctx context.Context, c *QuorumController, name string, op func(im *metadata.Image) (writeResult[T], error)) (T, int64, error) {
	type outcome struct {
		resp   T
		offset int64
		err    error
	}
	ch := make(chan outcome, 1)
	pushed := c.queue.push(event{name, func() {
		if !c.active {
			ch <- outcome{offset: -1, err: errNotController(-1)}
			return
		}
		res, err := op(c.latest)
		if err != nil || len(res.records) == 0 {
			ch <- outcome{res.resp, -1, err}
			return
		}
		off, err := c.appendRecords(res.records, func(off int64, err error) { ch <- outcome{res.resp, off, err} })
		if err != nil {
			ch <- outcome{offset: off, err: err}
		}
	}})
	var zero T
	if !pushed {
		return zero, -1, errNotController(-1)
	}
	select {
	case o := <-ch:
		return o.resp, o.offset, o.err
	case <-ctx.Done():
		return zero, -1, apierr.Errorf(kerr.RequestTimedOut, "%s: %v", name, ctx.Err())
	}
}

// appendRecords replays records into the latest image, appends them to the
// log and calls done once they are committed (or failed). On the loop.
func (c *QuorumController) appendRecords(records []metadata.Record, done func(offset int64, err error)) (int64, error) {
	base := c.latest
	d := metadata.NewDelta(base)
	raw := make([][]byte, len(records))
	for i, r := range records {
		if err := d.Replay(r); err != nil {
			// A decision that does not fit the metadata is a bug
			// here, never the client's fault.
			return -1, fmt.Errorf("controller produced a record that does not apply: %w", err)
		}
		raw[i] = metadata.Encode(r)
	}
	off, err := c.cfg.Raft.ScheduleAppend(c.epoch, raw)
	if err != nil {
		c.log.Info("append failed; resigning", "epoch", c.epoch, "err", err)
		c.resign()
		return -1, errNotController(-1)
	}
	d.SetProvenance(off, c.epoch)
	c.latest = d.Apply()
	if n := uncleanElections(base, records); n > 0 {
		c.metrics.unclean.Add(float64(n))
	}
	c.metricsDirty = true
	c.pending = append(c.pending, pendingWrite{offset: off, done: func(err error) { done(off, err) }})
	return off, nil
}

// read runs fn on the event loop against the latest metadata of the active
// controller.
func read[T any](ctx context.Context, c *QuorumController, name string, fn func(im *metadata.Image) (T, error)) (T, error) {
	type outcome struct {
		v   T
		err error
	}
	ch := make(chan outcome, 1)
	var zero T
	if !c.queue.push(event{name, func() {
		if !c.active {
			ch <- outcome{err: errNotController(-1)}
			return
		}
		v, err := fn(c.latest)
		ch <- outcome{v, err}
	}}) {
		return zero, errNotController(-1)
	}
	select {
	case o := <-ch:
		return o.v, o.err
	case <-ctx.Done():
		return zero, apierr.Errorf(kerr.RequestTimedOut, "%s: %v", name, ctx.Err())
	}
}

// IsActive reports whether this controller is the active one (for
// metrics and tests; the answer may be stale by the time it is used).
func (c *QuorumController) IsActive() bool {
	v, err := read(context.Background(), c, "isActive", func(*metadata.Image) (bool, error) { return true, nil })
	return err == nil && v
}

// errNotController is NOT_CONTROLLER, which clients and brokers answer by
// finding the active controller again.
func errNotController(leader int32) error {
	if leader >= 0 {
		return apierr.Errorf(kerr.NotController, "This node is not the active controller; the active controller is %d.", leader)
	}
	return apierr.Errorf(kerr.NotController, "This node is not the active controller.")
}

// IsNotController reports whether err is NOT_CONTROLLER.
func IsNotController(err error) bool { return errors.Is(err, kerr.NotController) }

// eventQueue is the controller's unbounded FIFO of events: the quorum's
// goroutine must never block on the controller, and request goroutines
// wait on their own channels, so the queue only grows with the requests
// and commits in flight.
type eventQueue struct {
	mu     sync.Mutex
	events []event
	closed bool
	wake   chan struct{}
}

func (q *eventQueue) init() { q.wake = make(chan struct{}, 1) }

func (q *eventQueue) push(e event) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.events = append(q.events, e)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

func (q *eventQueue) popAll(done <-chan struct{}) ([]event, bool) {
	for {
		q.mu.Lock()
		evs := q.events
		q.events = nil
		closed := q.closed
		q.mu.Unlock()
		if len(evs) > 0 {
			return evs, true
		}
		if closed {
			return nil, false
		}
		select {
		case <-q.wake:
		case <-done:
			return nil, false
		}
	}
}

func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
