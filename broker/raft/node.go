package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/moldau/moldau/broker/routine"
)

// ErrClosed is returned once the node was closed.
var ErrClosed = errors.New("raft: node is closed")

// ErrNotLeader matches (errors.Is) every *NotLeaderError.
var ErrNotLeader = errors.New("raft: not the leader")

// NotLeaderError says this node is not the leader of the epoch asked for
// (Kafka's NotLeaderException), with the leader and epoch it knows. It
// unwraps to kerr.NotController: the metadata quorum's leader is the
// active controller.
type NotLeaderError struct {
	LeaderID int32 // -1 if unknown
	Epoch    int32 // the current epoch
	Asked    int32 // the epoch the caller asked for
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("raft: not the leader of epoch %d (epoch %d, leader %d)", e.Asked, e.Epoch, e.LeaderID)
}

// Unwrap returns kerr.NotController.
func (e *NotLeaderError) Unwrap() error { return kerr.NotController }

// Is matches ErrNotLeader.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// LeaderAndEpoch is Kafka's LeaderAndEpoch: the leader's node id (-1 if
// none is known) and the epoch.
type LeaderAndEpoch struct {
	LeaderID int32
	Epoch    int32
}

// Node is one voter of the metadata quorum (Kafka's KafkaRaftClient): an
// etcd raft RawNode driven by one goroutine, its storage on
// __cluster_metadata-0, a transport to the other voters and a goroutine
// that hands committed batches to the state machine. See doc.go.
type Node struct {
	cfg     Config
	logger  *slog.Logger
	id      uint64 // raft id (node id + 1)
	ml      *metadataLog
	rn      *raft.RawNode // raft goroutine only
	app     *applier
	tr      *transport
	metrics *raftMetrics
	g       routine.Group
	ctx     context.Context // cancelled when the node stops
	cancel  context.CancelFunc

	inbox     chan []*pb.Message
	proposals chan *proposal
	wake      chan struct{}
	notes     notes

	// Raft goroutine only.
	pending    []*proposal      // proposed, waiting for their offsets
	inflight   []inflightAppend // appended as leader, not yet committed
	lastLead   uint64
	lastTerm   uint64
	written    quorumState // last quorum-state written
	epochStart int64       // offset of this leader's LeaderChange batch
	contact    map[uint64]time.Time
	caughtUp   map[uint64]time.Time
	// conf is the voter set etcd's tracker has (applied when its
	// VotersRecord committed), confIndex the index of that record;
	// committed the last committed index; confWait the voter change
	// proposed and not yet in the log (see voter_change.go).
	conf      VoterSet
	confIndex uint64
	committed uint64
	confWait  *voterChange
	confReqs  chan *voterChange
	// voter is the scope of the voter goroutines (voter_removal.go),
	// replaced at each start as a voter; leaderContact is when a leader
	// was last heard from (or this node last led).
	voter         *voterScope
	leaderContact time.Time
	// voterGoroutines counts the voter goroutines running.
	voterGoroutines atomic.Int32
	// trShared is tr for other goroutines (the metrics): tr is the raft
	// goroutine's, replaced when an observer becomes a voter.
	trShared atomic.Pointer[transport]

	mu      sync.Mutex
	st      status
	waiters []*commitWaiter
	err     error
	// fetchWaiters answer the observers' fetches waiting for the high
	// watermark to move (observer_serve.go).
	fetchWaiters []func()
	// served caches the snapshot observers fetch.
	served snapshotCache
	// obsMode: this node is a metadata observer (OpenObserver, Open of a
	// node not in the voter set, or a voter removed while it ran), not a
	// voter; obs runs instead of run. promote: it becomes a voter once a
	// committed VotersRecord names it (not with OpenObserver).
	obsMode atomic.Bool
	promote bool
	obs     atomic.Pointer[observer]

	closeOnce sync.Once
	closeErr  error
}

// status is what other goroutines read (under Node.mu).
type status struct {
	leader int32
	epoch  int32
	vote   int32
	role   raft.StateType
	hw     int64 // offset after the last committed batch
	// hwKnown: a commit was learned since the node opened (as leader of
	// its term, or from the leader); until then hw is only the snapshot's.
	hwKnown   bool
	leo       int64
	logStart  int64
	voters    []ReplicaState // leader only
	sinceLead time.Time      // when the leader was last lost (election latency)
	heard     map[int32]time.Time
	snap      OffsetAndEpoch // the newest snapshot (zero: none)
	conf      VoterSet       // the voter set in force here
	// kraftVersion is 1 once the log or snapshot has a VotersRecord.
	kraftVersion int16
	// observers are the observers that fetched from this leader, by node id.
	observers map[int32]observerProgress
}

// notes are what other goroutines leave for the raft goroutine.
type notes struct {
	mu          sync.Mutex
	unreachable map[uint64]bool
	snapStatus  map[uint64]raft.SnapshotStatus
	created     []createdSnapshot
}

type createdSnapshot struct {
	id    OffsetAndEpoch
	index uint64
}

type proposal struct {
	epoch   int32
	data    []byte
	records int
	start   time.Time
	done    chan proposalResult // buffered 1
}

type proposalResult struct {
	offset int64
	err    error
}

type inflightAppend struct {
	lastOffset int64
	start      time.Time
}

// Open opens the metadata log in cfg.Dir, replays its newest snapshot and
// log to sm (from a goroutine of the node, see Listener), and joins the
// quorum. A quorum of one elects itself at once. A node that is not in the
// newest voter set (the log's, else cfg.Voters) starts as an observer, as
// Kafka's controllers do, and becomes a voter once a committed
// VotersRecord names it (AddVoter, KIP-853).
func Open(cfg Config, sm StateMachine) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("component", "raft", "node_id", cfg.NodeID)
	ml, snap, err := openMetadataLog(cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("raft: opening %s: %w", filepath.Join(cfg.Dir, MetadataTopicPartition.String()), err)
	}
	set, _ := ml.latestVoters()
	if _, ok := set.Get(cfg.NodeID); !ok {
		if len(cfg.Bootstrap) == 0 && len(set) == 0 {
			ml.l.Close()
			return nil, fmt.Errorf("raft: node.id %d is not a voter and there are no voters or bootstrap servers to follow", cfg.NodeID)
		}
		logger.Info("not in the voter set; starting as an observer until added", "voters", set.IDs())
		return openObserver(cfg, logger, ml, snap, sm, true)
	}
	n := newNode(cfg, logger, ml)
	n.st = status{leader: -1, epoch: int32(ml.hs.GetTerm()), vote: nodeID(ml.hs.GetVote()), hw: ml.offsetOf(ml.hs.GetCommit() + 1),
		leo: ml.l.LogEndOffset(), logStart: ml.l.LogStartOffset(), sinceLead: cfg.Now(), heard: map[int32]time.Time{},
		snap: ml.snap, observers: map[int32]observerProgress{}}
	if ml.snap.Offset == 0 {
		n.st.hw = 0
	}
	n.app = newApplier(n, sm, snap)
	if cfg.Registerer != nil {
		n.metrics = newRaftMetrics(n)
		if err := cfg.Registerer.Register(n.metrics); err != nil {
			ml.l.Close()
			return nil, fmt.Errorf("raft: registering metrics: %w", err)
		}
	}
	if err := n.startVoter(ml.hs.GetCommit()); err != nil {
		n.closeLog()
		return nil, err
	}
	n.g.Go(n.app.run)
	return n, nil
}

// newNode is the part of a node voters and observers share.
func newNode(cfg Config, logger *slog.Logger, ml *metadataLog) *Node {
	n := &Node{
		cfg: cfg, logger: logger, id: raftID(cfg.NodeID), ml: ml,
		inbox: make(chan []*pb.Message, 256), proposals: make(chan *proposal, 256),
		confReqs: make(chan *voterChange, 16),
		wake:     make(chan struct{}, 1), epochStart: -1,
		contact: map[uint64]time.Time{}, caughtUp: map[uint64]time.Time{},
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.conf, n.confIndex = ml.latestVoters()
	n.st.conf = n.conf
	return n
}

// startVoter creates the RawNode on the log (applied: the index the
// state machine has been handed up to) and starts the raft goroutine and
// the transport: at Open, or when an observer is added to the voters.
func (n *Node) startVoter(applied uint64) error {
	ml, cfg := n.ml, n.cfg
	n.conf, n.confIndex = ml.latestVoters()
	n.written = newQuorumState(int32(ml.hs.GetTerm()), nodeID(ml.hs.GetVote()), -1, ml.voterIDs())
	rn, err := raft.NewRawNode(&raft.Config{
		ID: n.id, ElectionTick: int(cfg.ElectionTimeout / cfg.TickInterval), HeartbeatTick: 1,
		Storage: ml, Applied: applied,
		MaxSizePerMsg: 1 << 20, MaxCommittedSizePerReady: 64 << 20, MaxUncommittedEntriesSize: 256 << 20,
		MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true, DisableProposalForwarding: true,
		StepDownOnRemoval: true, Logger: raftLogger{n.logger},
	})
	if err != nil {
		return fmt.Errorf("raft: %w", err)
	}
	n.rn = rn
	n.committed = applied
	n.voter = &voterScope{}
	n.voter.ctx, n.voter.cancel = context.WithCancel(n.ctx)
	n.leaderContact = cfg.Now()
	n.tr = newTransport(n, n.voter.ctx)
	n.trShared.Store(n.tr)
	n.mu.Lock()
	n.st.conf, n.st.kraftVersion = n.conf, ml.kraftVersion()
	n.mu.Unlock()
	if len(n.conf) == 1 && n.conf[0].ID == cfg.NodeID {
		if err := n.campaign(); err != nil {
			return fmt.Errorf("raft: campaigning: %w", err)
		}
	}
	n.logger.Info("metadata quorum node starting", "voters", n.conf.IDs(), "epoch", ml.hs.GetTerm(),
		"log_start_offset", ml.l.LogStartOffset(), "log_end_offset", ml.l.LogEndOffset(), "snapshot", ml.snap.String())
	n.goVoter(n.run)
	scope := n.voter.ctx
	n.goVoter(func(<-chan struct{}) { n.runVoterUpdater(scope) })
	n.tr.start()
	return nil
}

// voterScope is the lifetime of the goroutines that run only while the
// node is a voter: the raft goroutine, the transport's senders and the
// voter updater. ctx ends when the node stops or turns observer.
type voterScope struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// goVoter starts fn on the node's group as a voter goroutine (counted in
// voterGoroutines, which tests read to see them gone).
func (n *Node) goVoter(fn func(done <-chan struct{})) {
	n.voterGoroutines.Add(1)
	if !n.g.Go(func(done <-chan struct{}) {
		defer n.voterGoroutines.Add(-1)
		fn(done)
	}) {
		n.voterGoroutines.Add(-1)
	}
}

// Close stops every goroutine of the node and closes its log. Idempotent.
// Pending appends and waits fail with ErrClosed.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		if n.err == nil {
			n.err = ErrClosed
		}
		n.notifyHighWatermark()
		n.mu.Unlock()
		n.cancel()
		n.g.StopAndWait()
		n.failWaiters(n.Err())
		n.closeLog()
	})
	return n.closeErr
}

func (n *Node) closeLog() {
	if n.metrics != nil {
		n.cfg.Registerer.Unregister(n.metrics)
	}
	n.closeErr = n.ml.l.Close()
	n.logger.Info("metadata quorum node closed")
}

// Err returns why the node stopped: ErrClosed after Close, the I/O (or
// other) error that stopped it, or nil while it runs.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Done is closed once the node stops (Close, or an error: see Err).
func (n *Node) Done() <-chan struct{} { return n.g.Stopping() }

// fail stops the node with err (the first error wins).
func (n *Node) fail(err error) {
	n.mu.Lock()
	first := n.err == nil
	if first {
		n.err = err
	}
	n.notifyHighWatermark()
	n.mu.Unlock()
	if first {
		n.logger.Error("metadata quorum node stopped on an error", "err", err)
	}
	n.cancel()
	n.g.Stop()
	n.failWaiters(n.Err())
}

// stoppedErr is the error returned to callers once the node stopped.
func (n *Node) stoppedErr() error {
	if err := n.Err(); err != nil {
		return err
	}
	return ErrClosed
}

// LeaderAndEpoch returns the leader and epoch this node knows.
func (n *Node) LeaderAndEpoch() LeaderAndEpoch {
	n.mu.Lock()
	defer n.mu.Unlock()
	return LeaderAndEpoch{LeaderID: n.st.leader, Epoch: n.st.epoch}
}

// HighWatermark returns the offset after the last batch known committed.
func (n *Node) HighWatermark() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.st.hw
}

// KnownHighWatermark is HighWatermark once it is known: false until this
// node has learned a commit since it opened (the commit index is not
// persisted, so at start-up only the snapshot's is certain), as Kafka's
// RaftClient.highWatermark is empty until the leader has told it.
func (n *Node) KnownHighWatermark() (int64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.st.hw, n.st.hwKnown
}

// NodeID is this node's id.
func (n *Node) NodeID() int32 { return n.cfg.NodeID }

// ScheduleAppend appends records as one batch at epoch, which must be the
// epoch this node leads (Kafka's scheduleAtomicAppend), and returns the
// offset of its last record. It returns once the batch is in this node's
// log and fsynced, not committed: see WaitForCommit and
// Listener.HandleCommit. The batch is appended whole or not at all; it
// fails at once with a *NotLeaderError if this node is not the leader of
// epoch.
func (n *Node) ScheduleAppend(epoch int32, records [][]byte) (int64, error) {
	if n.isObserver() {
		le := n.LeaderAndEpoch()
		return 0, &NotLeaderError{LeaderID: le.LeaderID, Epoch: le.Epoch, Asked: epoch}
	}
	if len(records) == 0 {
		return 0, errors.New("raft: no records to append")
	}
	data, err := buildDataBatch(epoch, n.cfg.Now().UnixMilli(), records)
	if err != nil {
		return 0, err
	}
	if len(data) > n.cfg.MaxBatchSizeBytes {
		return 0, fmt.Errorf("%w: a batch of %d bytes exceeds the %d bytes a metadata batch may have", kerr.RecordListTooLarge, len(data), n.cfg.MaxBatchSizeBytes)
	}
	p := &proposal{epoch: epoch, data: data, records: len(records), start: time.Now(), done: make(chan proposalResult, 1)}
	stop := n.g.Stopping()
	select {
	case n.proposals <- p:
	case <-stop:
		return 0, n.stoppedErr()
	}
	select {
	case r := <-p.done:
		return r.offset, r.err
	case <-stop:
		return 0, n.stoppedErr()
	}
}

// run is the raft goroutine: it ticks, steps messages and proposals into
// the RawNode, and handles each Ready: persist, then send, then hand
// commits to the applier (etcd's rule).
func (n *Node) run(done <-chan struct{}) {
	defer func() {
		if r := recover(); r != nil {
			n.fail(n.panicErr(r))
		}
	}()
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	for {
		if err := n.handleReady(); err != nil {
			n.fail(err)
			return
		}
		select {
		case <-done:
			return
		case <-ticker.C:
			if reason, removed := n.removedFromVoters(n.cfg.Now()); removed {
				if err := n.becomeObserver(reason); err != nil {
					n.fail(err)
				}
				return
			}
			n.rn.Tick()
			n.onTick()
		case msgs := <-n.inbox:
			n.step(msgs)
			for range 64 {
				select {
				case msgs := <-n.inbox:
					n.step(msgs)
					continue
				default:
				}
				break
			}
		case vc := <-n.confReqs:
			n.proposeVoterChange(vc)
		case p := <-n.proposals:
			n.propose(p)
			for range 1024 {
				select {
				case p := <-n.proposals:
					n.propose(p)
					continue
				default:
				}
				break
			}
		case <-n.wake:
			if err := n.handleNotes(); err != nil {
				n.fail(err)
				return
			}
		}
	}
}

// campaign starts an election (a single voter's, at Open), with a panic
// of etcd raft turned into an error as run does.
func (n *Node) campaign() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = n.panicErr(r)
		}
	}()
	return n.rn.Campaign()
}

// panicErr turns a panic of etcd raft (which panics on storage errors and
// broken invariants) into the node's error.
func (n *Node) panicErr(r any) error {
	if err := n.ml.storageErr; err != nil {
		return fmt.Errorf("raft: storage failed: %w", err)
	}
	n.logger.Error("raft panicked", "panic", r, "stack", string(debug.Stack()))
	return fmt.Errorf("raft: internal error: %v", r)
}

func (n *Node) step(msgs []*pb.Message) {
	now := n.cfg.Now()
	var from uint64
	for _, m := range msgs {
		switch m.GetType() {
		case pb.MsgAppResp, pb.MsgHeartbeatResp:
			n.contact[m.GetFrom()] = now
		}
		if fromLeader(m.GetType()) {
			n.leaderContact = now
		}
		if m.GetFrom() != from {
			from = m.GetFrom()
			n.mu.Lock()
			n.st.heard[nodeID(from)] = now
			n.mu.Unlock()
		}
		if err := n.rn.Step(m); err != nil {
			n.logger.Debug("dropped a raft message", "type", m.GetType().String(), "from", nodeID(m.GetFrom()), "err", err)
		}
	}
}

// LastHeard is when this node last received a message from another voter
// (false: never since it opened). A follower hears from its leader at every
// heartbeat, so after an election it tells how long the old leader has been
// silent.
func (n *Node) LastHeard(id int32) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.st.heard[id]
	return t, ok
}

func (n *Node) propose(p *proposal) {
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader || st.GetTerm() != uint64(p.epoch) {
		p.done <- proposalResult{err: &NotLeaderError{LeaderID: nodeID(st.Lead), Epoch: int32(st.GetTerm()), Asked: p.epoch}}
		return
	}
	if err := n.rn.Propose(p.data); err != nil {
		p.done <- proposalResult{err: fmt.Errorf("raft: append at epoch %d dropped: %w", p.epoch, err)}
		return
	}
	n.pending = append(n.pending, p)
}

// handleReady handles every Ready the RawNode has. A storage error that
// a raft.Storage method could only report as one of raft's sentinel errors
// (and that raft did not panic on) stops the node here.
func (n *Node) handleReady() error {
	if err := n.ml.storageErr; err != nil {
		return fmt.Errorf("raft: storage failed: %w", err)
	}
	for n.rn.HasReady() {
		rd := n.rn.Ready()
		if err := n.persist(&rd); err != nil {
			for _, p := range n.pending {
				p.done <- proposalResult{err: err}
			}
			n.pending = nil
			return err
		}
		n.tr.send(rd.Messages)
		n.afterReady(&rd)
		n.rn.Advance(rd)
	}
	n.voterChangeAppended()
	return nil
}

// persist writes what a Ready asks to be durable before messages go out:
// a snapshot, then quorum-state (term, vote), then entries, fsynced.
func (n *Node) persist(rd *raft.Ready) error {
	if !raft.IsEmptySnap(rd.Snapshot) {
		id, hdr, err := n.ml.installSnapshot(rd.Snapshot, n.app.loadSnapshot)
		if err != nil {
			return fmt.Errorf("raft: installing the leader's snapshot: %w", err)
		}
		n.logger.Info("installed snapshot from the leader", "snapshot", id.String(), "index", hdr.LastContainedRaftIndex)
		// etcd took the snapshot's configuration.
		n.setConf(n.ml.latestVoters())
	}
	lead := n.lastLead
	if rd.SoftState != nil {
		lead = rd.SoftState.Lead
	}
	hs := rd.HardState
	if hs == nil {
		hs = n.ml.hs
	}
	qs := newQuorumState(int32(hs.GetTerm()), nodeID(hs.GetVote()), nodeID(lead), n.ml.voterIDs())
	if qs.LeaderEpoch != n.written.LeaderEpoch || qs.VotedID != n.written.VotedID || qs.LeaderID != n.written.LeaderID {
		if err := writeQuorumState(n.cfg.FS, filepath.Join(n.ml.dir, quorumStateFile), qs); err != nil {
			return fmt.Errorf("raft: writing quorum-state: %w", err)
		}
		n.written = qs
	}
	if rd.HardState != nil {
		n.ml.hs = rd.HardState
	}
	if len(rd.Entries) == 0 {
		return nil
	}
	startLeo := n.ml.l.LogEndOffset()
	if err := n.ml.append(rd.Entries, nodeID(lead), n.cfg.Now().UnixMilli()); err != nil {
		return fmt.Errorf("raft: appending to the metadata log: %w", err)
	}
	if rd.MustSync {
		if err := n.ml.sync(); err != nil {
			return fmt.Errorf("raft: fsyncing the metadata log: %w", err)
		}
	}
	if lead == n.id {
		for _, e := range rd.Entries {
			if h, err := parseHeader(e.Data); err == nil && h.IsControl() && e.GetTerm() == hs.GetTerm() && n.epochStart < h.BaseOffset {
				n.epochStart = h.BaseOffset
			}
		}
	}
	n.assignOffsets(rd.Entries)
	n.confAppended(lead == n.id, int32(hs.GetTerm()))
	// The configuration in force came from a VotersRecord the leader's
	// log has just truncated (an uncommitted change in the log at
	// start-up): go back to the newest set left.
	if set, idx := n.ml.latestVoters(); idx < n.confIndex {
		n.logger.Warn("the voter set in force was truncated from the log; reverting", "voters", set.IDs(), "index", idx)
		n.applyVoters(set, idx)
	}
	if n.metrics != nil {
		n.metrics.appended(lead == n.id, rd.Entries, n.ml.l.LogEndOffset()-startLeo)
	}
	return nil
}

// assignOffsets answers the proposals of this Ready: they are its last
// entries, in order (nothing else appends between a proposal and the
// Ready that carries it).
func (n *Node) assignOffsets(ents []*pb.Entry) {
	if len(n.pending) == 0 {
		return
	}
	if len(n.pending) > len(ents) {
		for _, p := range n.pending {
			p.done <- proposalResult{err: errors.New("raft: proposal missing from the log")}
		}
		n.pending = nil
		return
	}
	tail := ents[len(ents)-len(n.pending):]
	for i, p := range n.pending {
		h, err := parseHeader(tail[i].Data)
		if err != nil || tail[i].GetTerm() != uint64(p.epoch) || int(h.NumRecords) != p.records {
			p.done <- proposalResult{err: fmt.Errorf("raft: proposal at epoch %d not found in the log", p.epoch)}
			continue
		}
		n.inflight = append(n.inflight, inflightAppend{lastOffset: h.LastOffset(), start: p.start})
		p.done <- proposalResult{offset: h.LastOffset()}
	}
	n.pending = nil
}

// afterReady publishes the new state: commits to the applier, status,
// leader changes, commit waiters.
func (n *Node) afterReady(rd *raft.Ready) {
	n.applyConfEntries(rd.CommittedEntries)
	st := n.rn.BasicStatus()
	if k := len(rd.CommittedEntries); k > 0 {
		ci := rd.CommittedEntries[k-1].GetIndex()
		n.committed = ci
		hw := n.ml.offsetOf(ci + 1)
		n.ml.l.UpdateHighWatermark(hw)
		// Known before the applier can deliver up to it, so that its
		// listener, asking after the last batch, finds it caught up.
		n.mu.Lock()
		n.st.hw, n.st.hwKnown = hw, true
		n.notifyHighWatermark()
		n.mu.Unlock()
		n.app.commitTo(hw, ci)
		n.completeInflight(hw)
	}
	lead, term := st.Lead, st.GetTerm()
	changed := lead != n.lastLead || term != n.lastTerm
	if changed {
		if lead == n.id || n.lastLead == n.id {
			n.leaderContact = n.cfg.Now() // leading counts as hearing a leader
		}
		after := int64(-1)
		if lead == n.id {
			after = n.epochStart
		} else if n.lastLead == n.id {
			n.inflight = nil
		}
		le := LeaderAndEpoch{LeaderID: nodeID(lead), Epoch: int32(term)}
		n.app.leaderChange(le, after)
		n.logger.Info("leader changed", "leader", le.LeaderID, "epoch", le.Epoch)
		n.lastLead, n.lastTerm = lead, term
	}
	n.mu.Lock()
	if changed {
		if n.st.leader >= 0 && lead == raft.None {
			n.st.sinceLead = n.cfg.Now()
		} else if n.st.leader < 0 && lead != raft.None && n.metrics != nil {
			n.metrics.elected(n.cfg.Now().Sub(n.st.sinceLead))
		}
		if lead != n.id {
			n.st.voters = nil
			clear(n.st.observers)
		}
		n.notifyHighWatermark() // observers waiting on this node learn the new leader
	}
	n.st.snap = n.ml.snap
	n.st.leader, n.st.epoch, n.st.vote = nodeID(lead), int32(term), nodeID(st.GetVote())
	n.st.role = st.RaftState
	n.st.leo, n.st.logStart = n.ml.l.LogEndOffset(), n.ml.l.LogStartOffset()
	hw, epoch, isLeader := n.st.hw, n.st.epoch, lead == n.id
	n.mu.Unlock()
	if changed && isLeader {
		n.onTick()
	}
	n.resolveWaiters(hw, epoch, isLeader)
}

// completeInflight records the commit latency of appends now committed.
func (n *Node) completeInflight(hw int64) {
	k := 0
	now := time.Now()
	for k < len(n.inflight) && n.inflight[k].lastOffset < hw {
		if n.metrics != nil {
			n.metrics.committed(now.Sub(n.inflight[k].start))
		}
		k++
	}
	n.inflight = n.inflight[k:]
}

// onTick refreshes what DescribeQuorum reports (leader only).
func (n *Node) onTick() {
	if n.rn == nil || n.rn.BasicStatus().RaftState != raft.StateLeader {
		return
	}
	now := n.cfg.Now()
	n.contact[n.id] = now
	st := n.rn.Status()
	voters := make([]ReplicaState, 0, len(n.conf))
	for _, v := range n.conf {
		rid := raftID(v.ID)
		rs := ReplicaState{ReplicaID: v.ID, DirectoryID: v.DirectoryID, LogEndOffset: -1, LastFetchTimestamp: -1, LastCaughtUpTimestamp: -1}
		if pr, ok := st.Progress[rid]; ok {
			if pr.Match >= n.ml.base {
				rs.LogEndOffset = n.ml.offsetOf(pr.Match + 1)
			}
			if pr.Match >= n.ml.last {
				n.caughtUp[rid] = n.contact[rid]
			}
		}
		if t, ok := n.contact[rid]; ok {
			rs.LastFetchTimestamp = t.UnixMilli()
		}
		if t, ok := n.caughtUp[rid]; ok && !t.IsZero() {
			rs.LastCaughtUpTimestamp = t.UnixMilli()
		}
		voters = append(voters, rs)
	}
	n.mu.Lock()
	n.st.voters = voters
	n.mu.Unlock()
}

// handleNotes passes on what the transport and the applier left.
func (n *Node) handleNotes() error {
	n.notes.mu.Lock()
	unreachable, snaps, created := n.notes.unreachable, n.notes.snapStatus, n.notes.created
	n.notes.unreachable, n.notes.snapStatus, n.notes.created = nil, nil, nil
	n.notes.mu.Unlock()
	if n.rn != nil {
		for id := range unreachable {
			n.rn.ReportUnreachable(id)
		}
		for id, s := range snaps {
			n.rn.ReportSnapshot(id, s)
		}
	}
	for _, c := range created {
		if err := n.ml.snapshotCreated(c.id, c.index, n.cfg.MaxRetentionBytes); err != nil {
			return fmt.Errorf("raft: cleaning the metadata log after snapshot %s: %w", c.id, err)
		}
	}
	n.mu.Lock()
	n.st.snap = n.ml.snap
	n.mu.Unlock()
	return nil
}

// note queues something for the raft goroutine and wakes it.
func (n *Node) note(fn func(*notes)) {
	n.notes.mu.Lock()
	fn(&n.notes)
	n.notes.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *Node) reportUnreachable(id uint64) {
	n.note(func(ns *notes) {
		if ns.unreachable == nil {
			ns.unreachable = map[uint64]bool{}
		}
		ns.unreachable[id] = true
	})
}

func (n *Node) reportSnapshot(id uint64, s raft.SnapshotStatus) {
	n.note(func(ns *notes) {
		if ns.snapStatus == nil {
			ns.snapStatus = map[uint64]raft.SnapshotStatus{}
		}
		ns.snapStatus[id] = s
	})
}

func (n *Node) snapshotCreated(id OffsetAndEpoch, index uint64) {
	n.note(func(ns *notes) { ns.created = append(ns.created, createdSnapshot{id: id, index: index}) })
}
