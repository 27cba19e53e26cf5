package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/raft"
	"github.com/moldau/moldau/log"
)

// quorum joins the metadata quorum (broker/raft) to what follows it: the
// broker's metadata loader and the controller both receive every committed
// batch, snapshot and leader change, in that order, from the quorum's one
// listener goroutine (Kafka registers both as RaftClient listeners). It
// also answers DescribeQuorum and carries the quorum's messages for the
// controller listener.
type quorum struct {
	node   *raft.Node
	loader *metadata.Loader
	ctrl   *controller.QuorumController
	log    *slog.Logger
	leader atomic.Int32
	// opened is node once Open has returned: the listener, called from
	// inside Open too, reads the high watermark through it.
	opened atomic.Pointer[raft.Node]
	// endpoints are this node's controller endpoints once it listens
	// (SetLocalEndpoints); the voter compares its entry with them.
	endpoints atomic.Pointer[[]raft.Endpoint]
}

type quorumConfig struct {
	NodeID   int32
	Voters   map[int32]string // empty: this node alone
	Dir      string           // metadata.log.dir (the log is in Dir/__cluster_metadata-0)
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Config   *config.KafkaConfig
	FS       log.FS // nil: the OS
	// Observer: this node is broker-only, a metadata observer that
	// follows the voters (or finds them through Bootstrap) and votes
	// not; ctrl is nil.
	Observer  bool
	Bootstrap []string
	// Dial dials the quorum's peers; nil: raft's default.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ClusterID and DirectoryID (metadata.log.dir's) identify this
	// voter in UpdateRaftVoter.
	ClusterID   string
	DirectoryID [16]byte
}

// inProcessAddr stands for the address of a single voter, which never
// dials itself.
const inProcessAddr = "in-process:0"

func openQuorum(c quorumConfig, loader *metadata.Loader, ctrl *controller.QuorumController) (*quorum, error) {
	voters := c.Voters
	if len(voters) == 0 && len(c.Bootstrap) == 0 {
		voters = map[int32]string{c.NodeID: inProcessAddr}
	}
	q := &quorum{loader: loader, ctrl: ctrl, log: c.Logger}
	q.leader.Store(-1)
	// The loader publishes nothing until it has replayed what was
	// committed before this start (see maybeCaughtUp).
	loader.HoldUntilCaughtUp()
	open := raft.Open
	if c.Observer {
		open, voters = raft.OpenObserver, c.Voters
	}
	listener := ""
	if names := c.Config.ControllerListenerNames; len(names) > 0 {
		listener = names[0]
	}
	node, err := open(raft.Config{
		NodeID:                      c.NodeID,
		ListenerName:                listener,
		Voters:                      voters,
		Bootstrap:                   c.Bootstrap,
		Dir:                         c.Dir,
		Logger:                      c.Logger,
		Registerer:                  c.Registry,
		ElectionTimeout:             c.Config.QuorumElectionTimeout,
		MaxBytesBetweenSnapshots:    c.Config.MetadataSnapshotMaxNewRecordBytes,
		MaxIntervalBetweenSnapshots: c.Config.MetadataSnapshotMaxInterval,
		MaxRetentionBytes:           c.Config.MetadataMaxRetentionBytes,
		SegmentBytes:                c.Config.MetadataLogSegmentBytes,
		FS:                          c.FS,
		Dial:                        c.Dial,
		ClusterID:                   c.ClusterID,
		DirectoryID:                 c.DirectoryID,
		LocalEndpoints:              q.localEndpoints,
		UpdateVoterPeriod:           3 * c.Config.QuorumFetchTimeout, // Kafka's follower
	}, q)
	if err != nil {
		return nil, err
	}
	q.node = node
	q.opened.Store(node)
	q.maybeCaughtUp()
	return q, nil
}

// maybeCaughtUp lets the loader publish once it has replayed every batch
// below the quorum's high watermark, known only once this node has learned
// a commit since it opened (as leader, or from the leader). Called after
// each thing the listener hands over, and once Open returns.
func (q *quorum) maybeCaughtUp() {
	n := q.opened.Load()
	if n == nil || !q.loader.CatchingUp() {
		return
	}
	if hw, ok := n.KnownHighWatermark(); ok {
		q.loader.CaughtUpTo(hw)
	}
}

// Start is a no-op: the node runs from Open; it is here so the wiring reads
// in Kafka's order.
func (q *quorum) Start() error { return q.node.Err() }

// Close stops the node. Idempotent.
func (q *quorum) Close() error {
	if q.node == nil {
		return nil
	}
	return q.node.Close()
}

// Leader is the quorum's leader (the active controller), -1 if none.
func (q *quorum) Leader() int32 { return q.leader.Load() }

// LastHeard is when this node last heard from another voter (see
// raft.Node.LastHeard); the controller asks it when it becomes active.
func (q *quorum) LastHeard(id int32) (time.Time, bool) { return q.node.LastHeard(id) }

// ScheduleAppend implements controller.RaftClient.
func (q *quorum) ScheduleAppend(epoch int32, records [][]byte) (int64, error) {
	return q.node.ScheduleAppend(epoch, records)
}

// HandleCommit implements raft.Listener.
func (q *quorum) HandleCommit(batches []raft.Batch) {
	for _, b := range batches {
		if err := q.loader.HandleCommit(b.LastOffset, b.Epoch, b.Records); err != nil {
			return // logged by the loader, which stops applying
		}
		if q.ctrl == nil {
			continue
		}
		q.ctrl.HandleCommit(controller.Batch{BaseOffset: b.BaseOffset, LastOffset: b.LastOffset, Epoch: b.Epoch, AppendTimeMs: b.AppendTimestamp, Records: b.Records})
	}
	q.maybeCaughtUp()
}

// HandleLoadSnapshot implements raft.Listener.
func (q *quorum) HandleLoadSnapshot(r *raft.SnapshotReader) {
	var records [][]byte
	for {
		b, ok, err := r.Next()
		if err != nil {
			q.log.Error("reading a metadata snapshot failed", "snapshot", r.SnapshotID().String(), "err", err)
			return
		}
		if !ok {
			break
		}
		records = append(records, b.Records...)
	}
	offset, epoch := r.LastContainedLogOffset(), r.SnapshotID().Epoch
	if err := q.loader.HandleSnapshot(offset, epoch, records); err != nil {
		return
	}
	if q.ctrl != nil {
		q.ctrl.HandleSnapshot(offset, epoch, records)
	}
	q.maybeCaughtUp()
}

// HandleLeaderChange implements raft.Listener.
func (q *quorum) HandleLeaderChange(l raft.LeaderAndEpoch) {
	q.leader.Store(l.LeaderID)
	if q.ctrl != nil {
		q.ctrl.HandleLeaderChange(l.LeaderID, l.Epoch)
	}
	q.maybeCaughtUp()
}

// WriteSnapshot implements raft.StateMachine: the records of the image the
// loader has applied, which is the state at the snapshot's offset (the
// quorum calls it between commits).
func (q *quorum) WriteSnapshot(w *raft.SnapshotWriter) error {
	im := q.loader.Image()
	if want := w.SnapshotID().Offset - 1; im.Offset != want {
		return fmt.Errorf("metadata snapshot at %s: the image is at offset %d, not %d", w.SnapshotID(), im.Offset, want)
	}
	const perAppend = 1000
	var recs [][]byte
	for _, r := range im.Records() {
		recs = append(recs, metadata.Encode(r))
		if len(recs) == perAppend {
			if err := w.Append(recs...); err != nil {
				return err
			}
			recs = recs[:0]
		}
	}
	if len(recs) > 0 {
		return w.Append(recs...)
	}
	return nil
}

// Fetch implements kapi.QuorumAPI: an observer's Fetch of
// __cluster_metadata-0.
func (q *quorum) Fetch(req *kmsg.FetchRequest, done func(*kmsg.FetchResponse)) {
	q.node.HandleFetchAsync(req, done)
}

// FetchSnapshot implements kapi.QuorumAPI.
func (q *quorum) FetchSnapshot(req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	return q.node.HandleFetchSnapshot(req)
}

// TransportKey implements kapi.QuorumAPI.
func (q *quorum) TransportKey() int16 { return raft.APIKey }

// HandleTransport implements kapi.QuorumAPI.
func (q *quorum) HandleTransport(body []byte) ([]byte, error) {
	return q.node.HandleTransportRequest(body)
}

// DescribeQuorum implements kapi.QuorumAPI: __cluster_metadata-0 as the
// leader sees it (elsewhere NOT_LEADER_OR_FOLLOWER, as Kafka answers):
// the voters, the observers (broker-only nodes) that fetch from it, and
// from v2 the registered voters' endpoints.
func (q *quorum) DescribeQuorum(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	info, err := q.node.DescribeQuorum()
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case t.Topic != metadata.ClusterMetadataTopic || p.Partition != 0:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				if req.Version >= 2 {
					msg := err.Error()
					rp.ErrorMessage = &msg
				}
				rp.LeaderID, rp.LeaderEpoch = q.node.LeaderAndEpoch().LeaderID, q.node.LeaderAndEpoch().Epoch
			default:
				rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = info.LeaderID, info.LeaderEpoch, info.HighWatermark
				for _, v := range info.Voters {
					rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
					rs.ReplicaID, rs.LogEndOffset, rs.ReplicaDirectoryID = v.ReplicaID, v.LogEndOffset, v.DirectoryID
					rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = v.LastFetchTimestamp, v.LastCaughtUpTimestamp
					rp.CurrentVoters = append(rp.CurrentVoters, rs)
				}
				rp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
				for _, v := range info.Observers {
					rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
					rs.ReplicaID, rs.LogEndOffset = v.ReplicaID, v.LogEndOffset
					rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = v.LastFetchTimestamp, v.LastCaughtUpTimestamp
					rp.Observers = append(rp.Observers, rs)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 2 && err == nil {
		// The voters' endpoints, from the voter set (the VotersRecord,
		// or controller.quorum.voters), as Kafka lists them.
		for _, v := range q.node.Voters() {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = v.ID
			for _, e := range v.Endpoints {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
				n.Listeners = append(n.Listeners, l)
			}
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp
}

// AddRaftVoter implements kapi.QuorumAPI (KIP-853).
func (q *quorum) AddRaftVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) error {
	v := raft.Voter{ID: req.VoterID, DirectoryID: req.VoterDirectoryID, MinKRaftVersion: 0, MaxKRaftVersion: 1}
	for _, l := range req.Listeners {
		v.Endpoints = append(v.Endpoints, raft.Endpoint{Name: l.Name, Host: l.Host, Port: uint16(l.Port)})
	}
	return q.node.AddVoter(ctx, v)
}

// SetLocalEndpoints gives the node's controller listeners as other nodes
// reach them, once they listen.
func (q *quorum) SetLocalEndpoints(ls []config.Listener) {
	eps := make([]raft.Endpoint, 0, len(ls))
	for _, l := range ls {
		eps = append(eps, raft.Endpoint{Name: l.Name, Host: l.Host, Port: uint16(l.Port)})
	}
	q.endpoints.Store(&eps)
}

func (q *quorum) localEndpoints() []raft.Endpoint {
	if eps := q.endpoints.Load(); eps != nil {
		return *eps
	}
	return nil
}

// UpdateRaftVoter implements kapi.QuorumAPI (KIP-853): a voter's new
// endpoints.
func (q *quorum) UpdateRaftVoter(ctx context.Context, req *kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse {
	return q.node.HandleUpdateRaftVoter(ctx, req)
}

// RemoveRaftVoter implements kapi.QuorumAPI (KIP-853).
func (q *quorum) RemoveRaftVoter(ctx context.Context, req *kmsg.RemoveRaftVoterRequest) error {
	return q.node.RemoveVoter(ctx, req.VoterID, req.VoterDirectoryID)
}
