package raft

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/moldau/moldau/log"
)

// The observer (Kafka's KafkaRaftClient in the observer state): a
// broker-only node follows the metadata log without voting. One goroutine
// fetches the committed batches from the quorum's leader over its
// controller listener (Fetch on __cluster_metadata-0, and FetchSnapshot
// when it is behind the leader's log start), appends them to its own
// __cluster_metadata-0 (the same storage, offsets and raft indices as a
// voter's: one batch per index) and hands them to the applier, so the
// state machine, snapshots and clean-up work as on a voter. Everything in
// an observer's log is committed: it never truncates (a voter turning
// observer truncates to its commit index first). It finds the leader
// through the voters' or bootstrap servers' addresses, and follows the
// leader each response names (NOT_LEADER_OR_FOLLOWER, or a new epoch).

const (
	observerFetchWait    = 500 * time.Millisecond
	maxObserverSnapshot  = 1 << 30
	maxObserverResponse  = 64 << 20
	observerFetchVersion = 17
)

type observer struct {
	n         *Node
	bootstrap []string // where to look for the leader
	next      int      // the bootstrap address tried next
	// lost: the last fetch failed; look for the leader through the
	// bootstrap addresses until a response names one.
	lost bool

	mu   sync.Mutex
	book map[int32]string // controller endpoints: the voters', and leaders learned from responses

	conn *observerConn
}

// OpenObserver opens the metadata log in cfg.Dir for a node that is not a
// voter (cfg.NodeID must not be among cfg.Voters): it replays its snapshot
// and log to sm, then follows the quorum's leader, found through
// cfg.Voters or cfg.Bootstrap. ScheduleAppend fails with a *NotLeaderError.
func OpenObserver(cfg Config, sm StateMachine) (*Node, error) {
	cfg.observer = true
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("component", "raft", "node_id", cfg.NodeID)
	ml, snap, err := openMetadataLog(cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("raft: opening %s: %w", filepath.Join(cfg.Dir, MetadataTopicPartition.String()), err)
	}
	return openObserver(cfg, logger, ml, snap, sm, false)
}

// openObserver starts an observer on an opened log; promote: it becomes a
// voter once a committed VotersRecord names it.
func openObserver(cfg Config, logger *slog.Logger, ml *metadataLog, snap *loadedSnapshot, sm StateMachine, promote bool) (*Node, error) {
	n := newNode(cfg, logger, ml)
	n.obsMode.Store(true)
	n.promote = promote
	// Everything in an observer's log is committed.
	leo := ml.l.LogEndOffset()
	ml.l.UpdateHighWatermark(leo)
	n.st = status{leader: -1, epoch: int32(ml.hs.GetTerm()), vote: -1, hw: leo, leo: leo, logStart: ml.l.LogStartOffset(),
		sinceLead: cfg.Now(), heard: map[int32]time.Time{}, snap: ml.snap, observers: map[int32]observerProgress{}, conf: n.conf}
	n.app = newApplier(n, sm, snap)
	n.app.commitTo(leo, ml.last)
	if cfg.Registerer != nil {
		n.metrics = newRaftMetrics(n)
		if err := cfg.Registerer.Register(n.metrics); err != nil {
			ml.l.Close()
			return nil, fmt.Errorf("raft: registering metrics: %w", err)
		}
	}
	o := newObserver(n)
	n.obs.Store(o)
	logger.Info("metadata observer starting", "voters", cfg.voterIDs(), "bootstrap", o.bootstrap,
		"log_start_offset", ml.l.LogStartOffset(), "log_end_offset", leo, "snapshot", ml.snap.String())
	n.g.Go(o.run)
	n.g.Go(n.app.run)
	return n, nil
}

// newObserver is the observer of n: it looks for the leader through the
// voters' addresses (but its own), else the bootstrap servers.
func newObserver(n *Node) *observer {
	o := &observer{n: n, book: map[int32]string{}}
	for _, v := range n.conf {
		if addr := v.Addr(n.cfg.ListenerName); addr != "" && v.ID != n.cfg.NodeID {
			o.bootstrap = append(o.bootstrap, addr)
		}
	}
	if len(o.bootstrap) == 0 {
		o.bootstrap = append(o.bootstrap, n.cfg.Bootstrap...)
	}
	return o
}

// ControllerAddress is the controller listener address of node id: a
// voter's from controller.quorum.voters, or the leader's as a fetch
// response named it.
func (n *Node) ControllerAddress(id int32) (string, bool) {
	if addr, ok := n.voterAddr(id); ok {
		return addr, true
	}
	o := n.obs.Load()
	if o == nil {
		return "", false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	addr, ok := o.book[id]
	return addr, ok
}

func (o *observer) run(done <-chan struct{}) {
	n := o.n
	defer func() {
		if o.conn != nil {
			o.conn.close()
		}
		if r := recover(); r != nil {
			n.fail(fmt.Errorf("raft: observer: internal error: %v", r))
		}
	}()
	backoff := n.cfg.RetryBackoff
	for {
		select {
		case <-done:
			return
		case <-n.wake:
			if err := n.handleNotes(); err != nil {
				n.fail(err)
				return
			}
		default:
		}
		n.refuseVoterRequests()
		err := o.fetch()
		var fatal *observerFatal
		switch {
		case errors.Is(err, errPromoted):
			if err := n.becomeVoter(); err != nil {
				n.fail(err)
			}
			return
		case errors.As(err, &fatal):
			n.fail(fatal.err)
			return
		case err != nil:
			n.logger.Debug("metadata fetch failed", "err", err)
			o.lost = true
			if o.conn != nil {
				o.conn.close()
				o.conn = nil
			}
			if !sleep(done, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
		default:
			o.lost = false
			backoff = n.cfg.RetryBackoff
		}
	}
}

// observerFatal is an error of the observer's own storage: it stops the
// node, as on a voter.
type observerFatal struct{ err error }

func (e *observerFatal) Error() string { return e.err.Error() }

// target is where the next fetch goes: the leader if its address is
// known, else the next bootstrap address.
func (o *observer) target() string {
	le := o.n.LeaderAndEpoch()
	if le.LeaderID >= 0 && !o.lost {
		if addr, ok := o.n.ControllerAddress(le.LeaderID); ok {
			return addr
		}
	}
	addr := o.bootstrap[o.next%len(o.bootstrap)]
	o.next++
	return addr
}

func (o *observer) connect() (*observerConn, error) {
	addr := o.target()
	if o.conn != nil && o.conn.addr == addr {
		return o.conn, nil
	}
	if o.conn != nil {
		o.conn.close()
		o.conn = nil
	}
	n := o.n
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout)
	defer cancel()
	oc, err := dialController(ctx, n, addr, fmt.Sprintf("moldau-raft-observer-%d", n.cfg.NodeID))
	if err != nil {
		return nil, err
	}
	o.conn = oc
	return oc, nil
}

// dialController connects to a controller listener for Kafka requests,
// one at a time; the connection closes when the node stops.
func dialController(ctx context.Context, n *Node, addr, clientID string) (*observerConn, error) {
	c, err := n.cfg.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	oc := &observerConn{addr: addr, c: c, r: bufio.NewReader(c),
		f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	oc.stop = context.AfterFunc(n.ctx, func() { c.Close() })
	return oc, nil
}

// fetch sends one Fetch and applies its answer.
func (o *observer) fetch() error {
	n := o.n
	conn, err := o.connect()
	if err != nil {
		return err
	}
	leo := n.ml.l.LogEndOffset()
	req := kmsg.NewPtrFetchRequest()
	req.Version = observerFetchVersion
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = n.cfg.NodeID, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(observerFetchWait/time.Millisecond), 1, maxObserverFetchSize
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = MetadataTopicPartition.Topic, MetadataTopicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.FetchOffset = 0, -1, leo
	p.LastFetchedEpoch, p.LogStartOffset, p.PartitionMaxBytes = n.ml.l.LatestEpoch(), -1, maxObserverFetchSize
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	r, err := conn.roundTrip(req, n.cfg.RequestTimeout+observerFetchWait)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return fmt.Errorf("fetch from %s: %w", conn.addr, kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("fetch from %s: a response without __cluster_metadata-0", conn.addr)
	}
	o.learn(resp.Brokers)
	rp := &resp.Topics[0].Partitions[0]
	followed := o.follow(rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch)
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case errors.Is(err, kerr.NotLeaderForPartition):
		if followed {
			o.lost = false
			return nil // try the new leader at once
		}
		return fmt.Errorf("fetch from %s: %w (leader %d)", conn.addr, err, rp.CurrentLeader.LeaderID)
	case err != nil:
		return fmt.Errorf("fetch from %s: %w", conn.addr, err)
	}
	if rp.SnapshotID.EndOffset > 0 && leo < rp.LogStartOffset {
		return o.fetchSnapshot(conn, OffsetAndEpoch{Offset: rp.SnapshotID.EndOffset, Epoch: rp.SnapshotID.Epoch}, rp.HighWatermark)
	}
	return o.appendBatches(leo, rp.RecordBatches, rp.HighWatermark)
}

// learn records the leader endpoints a response names.
func (o *observer) learn(brokers []kmsg.FetchResponseBroker) {
	if len(brokers) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range brokers {
		if _, voter := o.n.voterAddr(b.NodeID); !voter && b.Host != "" {
			o.book[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
	}
}

// follow takes the leader a response names if it is news: a later epoch,
// or a leader for the epoch known without one. It reports whether the
// leader changed.
func (o *observer) follow(leader, epoch int32) bool {
	n := o.n
	if leader == n.cfg.NodeID {
		// Voters that have not yet heard that this node, removed from
		// the voters, stopped leading: no leader known.
		leader = -1
	}
	n.mu.Lock()
	cur := LeaderAndEpoch{LeaderID: n.st.leader, Epoch: n.st.epoch}
	if epoch < cur.Epoch || (epoch == cur.Epoch && (leader < 0 || leader == cur.LeaderID)) {
		n.mu.Unlock()
		return false
	}
	n.st.leader, n.st.epoch = leader, epoch
	if leader >= 0 {
		n.st.heard[leader] = n.cfg.Now()
	}
	n.mu.Unlock()
	le := LeaderAndEpoch{LeaderID: leader, Epoch: epoch}
	n.app.leaderChange(le, -1)
	n.logger.Info("leader changed", "leader", leader, "epoch", epoch)
	return true
}

// appendBatches appends the committed batches of a fetch to the log and
// hands them to the applier; leaderHW is the leader's high watermark.
func (o *observer) appendBatches(leo int64, chunk []byte, leaderHW int64) error {
	n, ml := o.n, o.n.ml
	var ents []*pb.Entry
	idx := ml.last + 1
	if _, err := splitBatches(chunk, func(b []byte, h log.BatchHeader) error {
		if h.BaseOffset < leo {
			return nil
		}
		ents = append(ents, &pb.Entry{Term: new(uint64(max(h.PartitionLeaderEpoch, 0))), Index: new(idx), Type: pb.EntryNormal.Enum(), Data: b})
		idx++
		return nil
	}); err != nil {
		return fmt.Errorf("a fetch response's batches: %w", err)
	}
	if len(ents) > 0 {
		if err := ml.append(ents, -1, n.cfg.Now().UnixMilli()); err != nil {
			return &observerFatal{fmt.Errorf("raft: appending to the metadata log: %w", err)}
		}
		if err := ml.sync(); err != nil {
			return &observerFatal{fmt.Errorf("raft: fsyncing the metadata log: %w", err)}
		}
		ml.l.UpdateHighWatermark(ml.l.LogEndOffset())
		if n.metrics != nil {
			n.metrics.appended(false, ents, ml.l.LogEndOffset()-leo)
		}
	}
	o.published(leaderHW)
	return o.maybePromoted(leaderHW)
}

// maybePromoted returns errPromoted once the log's newest voter set names
// this node (an observer opened by Open: a controller being added, or a
// voter removed while it ran) and the log has caught up with leaderHW,
// the leader's high watermark: a voter removed while it ran truncated its
// log to its commit index, which may end before the VotersRecord that
// removed it.
func (o *observer) maybePromoted(leaderHW int64) error {
	n := o.n
	set, idx := n.ml.latestVoters()
	if idx > n.confIndex {
		n.conf, n.confIndex = set, idx
		n.mu.Lock()
		n.st.conf, n.st.kraftVersion = set, n.ml.kraftVersion()
		n.mu.Unlock()
	}
	if _, ok := set.Get(n.cfg.NodeID); ok && n.promote && n.ml.l.LogEndOffset() >= leaderHW {
		return errPromoted
	}
	return nil
}

// becomeVoter starts the raft node on the observer's log (observer
// goroutine, which returns after it). Everything in the log is committed
// and handed to the applier. The vote is kept: a voter removed and added
// back must not vote twice in a term.
func (n *Node) becomeVoter() error {
	ml := n.ml
	ml.hs = &pb.HardState{Term: new(ml.hs.GetTerm()), Vote: new(ml.hs.GetVote()), Commit: new(ml.last)}
	n.obsMode.Store(false)
	n.logger.Info("added to the voters; starting as a voter", "log_end_offset", ml.l.LogEndOffset())
	return n.startVoter(ml.last)
}

// published updates the status after the log or snapshot changed and
// moves the applier to the log end (all of it committed).
func (o *observer) published(leaderHW int64) {
	n, ml := o.n, o.n.ml
	leo := ml.l.LogEndOffset()
	n.mu.Lock()
	n.st.hw, n.st.hwKnown = max(leaderHW, leo), true
	n.st.leo, n.st.logStart, n.st.snap = leo, ml.l.LogStartOffset(), ml.snap
	n.notifyHighWatermark()
	n.mu.Unlock()
	n.app.commitTo(leo, ml.last)
}

// fetchSnapshot fetches snapshot id whole with FetchSnapshot and installs
// it: the log starts over at its end offset.
func (o *observer) fetchSnapshot(conn *observerConn, id OffsetAndEpoch, leaderHW int64) error {
	n := o.n
	var data []byte
	for {
		req := kmsg.NewPtrFetchSnapshotRequest()
		req.ReplicaID, req.MaxBytes = n.cfg.NodeID, maxObserverFetchSize
		t := kmsg.NewFetchSnapshotRequestTopic()
		t.Topic = MetadataTopicPartition.Topic
		p := kmsg.NewFetchSnapshotRequestTopicPartition()
		p.Partition, p.CurrentLeaderEpoch = 0, n.LeaderAndEpoch().Epoch
		p.SnapshotID.EndOffset, p.SnapshotID.Epoch, p.Position = id.Offset, id.Epoch, int64(len(data))
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		r, err := conn.roundTrip(req, n.cfg.RequestTimeout)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.FetchSnapshotResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("fetch snapshot %s from %s: %w", id, conn.addr, kerr.ErrorForCode(resp.ErrorCode))
		}
		rp := resp.Topics[0].Partitions[0]
		o.follow(rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch)
		if rp.ErrorCode != 0 {
			return fmt.Errorf("fetch snapshot %s from %s: %w", id, conn.addr, kerr.ErrorForCode(rp.ErrorCode))
		}
		if rp.Size <= 0 || rp.Size > maxObserverSnapshot || rp.Position != int64(len(data)) || (len(rp.Bytes) == 0 && rp.Position < rp.Size) {
			return fmt.Errorf("fetch snapshot %s from %s: a chunk of %d bytes at %d of %d, expected at %d", id, conn.addr, len(rp.Bytes), rp.Position, rp.Size, len(data))
		}
		if data == nil {
			data = make([]byte, 0, rp.Size)
		}
		data = append(data, rp.Bytes...)
		if int64(len(data)) >= rp.Size {
			break
		}
	}
	hdr, err := checkSnapshot(data)
	if err != nil || hdr.EndOffset != id.Offset {
		return fmt.Errorf("snapshot %s from %s is not valid (end offset %d): %v", id, conn.addr, hdr.EndOffset, err)
	}
	snap := &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{
		Index: new(hdr.LastContainedRaftIndex), Term: new(uint64(id.Epoch)), ConfState: confStateOf(n.conf)}}
	if _, _, err := n.ml.installSnapshot(snap, n.app.loadSnapshot); err != nil {
		return &observerFatal{fmt.Errorf("raft: installing the leader's snapshot %s: %w", id, err)}
	}
	n.ml.l.UpdateHighWatermark(n.ml.l.LogEndOffset())
	n.logger.Info("installed snapshot from the leader", "snapshot", id.String(), "index", hdr.LastContainedRaftIndex)
	o.published(leaderHW)
	return o.maybePromoted(leaderHW)
}

// observerConn is the observer's connection to a controller listener,
// one request at a time.
type observerConn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	f    *kmsg.RequestFormatter
	stop func() bool
	corr int32
}

func (c *observerConn) close() {
	c.stop()
	c.c.Close()
}

func (c *observerConn) roundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	c.corr++
	if err := c.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := c.c.Write(c.f.AppendRequest(nil, req, c.corr)); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > maxObserverResponse {
		return nil, fmt.Errorf("a response of %d bytes", size)
	}
	if corr := int32(binary.BigEndian.Uint32(hdr[4:])); corr != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", corr, c.corr)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		tags, k := binary.Uvarint(body)
		if k <= 0 || tags != 0 {
			return nil, errors.New("unexpected response header tags")
		}
		body = body[k:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}
