package raft

import (
	"errors"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The leader's side of the observers' fetch path (Kafka's
// KafkaRaftClient.handleFetchRequest and handleFetchSnapshotRequest, for
// observers only: voters replicate through etcd raft). An observer sends
// Fetch for __cluster_metadata-0 on the controller listener; the leader
// answers with the committed batches from the fetch offset (never past
// the high watermark, so an observer's log holds only committed batches
// and never diverges), with its newest snapshot's id when the offset is
// below its log start (the observer then sends FetchSnapshot), or with
// NOT_LEADER_OR_FOLLOWER and the leader it knows.

// MetadataTopicID is the topic id of __cluster_metadata (Kafka's
// Uuid.METADATA_TOPIC_ID, AAAAAAAAAAAAAAAAAAAAAQ).
var MetadataTopicID = [16]byte{15: 1}

const (
	maxObserverWait      = 500 * time.Millisecond
	maxObserverFetchSize = 8 << 20
	// maxObservers bounds the observers DescribeQuorum lists (a Fetch
	// may name any replica id).
	maxObservers = 4096
)

// observerProgress is what the leader knows of an observer (DescribeQuorum).
type observerProgress struct {
	leo       int64
	lastFetch time.Time
	caughtUp  time.Time // the last fetch at or past the high watermark
}

// snapshotCache keeps the snapshot last served whole in memory, so that
// its chunks are not read from disk once each.
type snapshotCache struct {
	mu   sync.Mutex
	id   OffsetAndEpoch
	data []byte
}

// FetchMinVersion and FetchMaxVersion bound the Fetch versions served for
// the metadata partition: v12 (the first with leader epochs and snapshot
// ids) to v17.
const (
	FetchMinVersion int16 = 12
	FetchMaxVersion int16 = 17
)

func isMetadataTopic(version int16, name string, id [16]byte) bool {
	if version >= 13 {
		return id == MetadataTopicID
	}
	return name == MetadataTopicPartition.Topic
}

// HandleFetch answers an observer's Fetch of __cluster_metadata-0 (see
// the file comment), waiting up to MaxWaitMillis (at most 500 ms) for a
// commit past the fetch offset: HandleFetchAsync, waited for.
func (n *Node) HandleFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	ch := make(chan *kmsg.FetchResponse, 1)
	n.HandleFetchAsync(req, func(r *kmsg.FetchResponse) { ch <- r })
	return <-ch
}

// HandleFetchAsync answers an observer's Fetch through done, called
// exactly once: at once when there is something to say (batches, a
// snapshot id, an error), else when the high watermark moves, the leader
// changes, the node stops or the fetch's max wait (at most 500 ms)
// passes, from a goroutine of its own (a runtime timer's), so a long
// poll holds no request handler of the controller plane. Any partition
// but __cluster_metadata-0 is UNKNOWN_TOPIC_OR_PARTITION.
func (n *Node) HandleFetchAsync(req *kmsg.FetchRequest, done func(*kmsg.FetchResponse)) {
	resp, waitable := n.fetchNow(req)
	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxObserverWait)
	if !waitable || wait <= 0 {
		done(resp)
		return
	}
	var once sync.Once
	finish := func() { once.Do(func() { r, _ := n.fetchNow(req); done(r) }) }
	n.mu.Lock()
	if n.err != nil {
		n.mu.Unlock()
		done(resp)
		return
	}
	n.fetchWaiters = append(n.fetchWaiters, finish)
	n.mu.Unlock()
	time.AfterFunc(wait, finish)
}

// fetchNow answers a Fetch from the current state; waitable: it has
// nothing for the observer yet.
func (n *Node) fetchNow(req *kmsg.FetchRequest) (*kmsg.FetchResponse, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replica := req.ReplicaID
	if req.Version >= 15 {
		replica = req.ReplicaState.ID
	}
	leaderKnown, waitable := false, false
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			var rp kmsg.FetchResponseTopicPartition
			if !isMetadataTopic(req.Version, t.Topic, t.TopicID) || p.Partition != 0 {
				rp = kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
				rp.HighWatermark, rp.LogStartOffset, rp.LastStableOffset = -1, -1, -1
			} else {
				rp = n.fetchMetadata(replica, p.FetchOffset, min(req.MaxBytes, p.PartitionMaxBytes))
				leaderKnown = rp.CurrentLeader.LeaderID >= 0
				waitable = rp.ErrorCode == 0 && rp.SnapshotID.EndOffset <= 0 && len(rp.RecordBatches) == 0
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 16 && leaderKnown {
		le := n.LeaderAndEpoch()
		if addr, ok := n.voterAddr(le.LeaderID); ok {
			if host, port, err := net.SplitHostPort(addr); err == nil {
				if p, err := strconv.ParseInt(port, 10, 32); err == nil {
					b := kmsg.NewFetchResponseBroker()
					b.NodeID, b.Host, b.Port = le.LeaderID, host, int32(p)
					resp.Brokers = append(resp.Brokers, b)
				}
			}
		}
	}
	return resp, waitable
}

func (n *Node) fetchMetadata(replica int32, offset int64, maxBytes int32) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.LastStableOffset = -1
	if maxBytes <= 0 || maxBytes > maxObserverFetchSize {
		maxBytes = maxObserverFetchSize
	}
	for range 2 {
		n.mu.Lock()
		leader, epoch, hw, snap, stopped := n.st.leader, n.st.epoch, n.st.hw, n.st.snap, n.err != nil
		isLeader := leader == n.cfg.NodeID && n.st.hwKnown
		// A fetcher with no replica id (below 0: a client such as the
		// console) is answered but not tracked, as Kafka's
		// LeaderState.updateReplicaState ignores it: it is no observer.
		if _, known := n.st.observers[replica]; isLeader && replica >= 0 && (known || len(n.st.observers) < maxObservers) {
			op := observerProgress{leo: offset, lastFetch: n.cfg.Now(), caughtUp: n.st.observers[replica].caughtUp}
			if offset >= hw {
				op.caughtUp = op.lastFetch
			}
			n.st.observers[replica] = op
		}
		n.mu.Unlock()
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
		rp.HighWatermark, rp.LogStartOffset = hw, n.ml.l.LogStartOffset()
		switch {
		case stopped:
			rp.ErrorCode = kerr.BrokerNotAvailable.Code
			return rp
		case !isLeader:
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
			return rp
		case offset < rp.LogStartOffset:
			rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = snap.Offset, snap.Epoch
			return rp
		case offset >= hw:
			// Nothing committed past it yet (or, past the high
			// watermark, a new leader has yet to learn the quorum's
			// commit with its first).
			return rp
		}
		fd, err := n.ml.l.Read(offset, maxBytes, hw, true)
		var chunk []byte
		if err == nil {
			chunk, err = fd.Records.ReadInto(nil)
		}
		if err == nil {
			rp.RecordBatches = chunk
			return rp
		}
		if offset >= n.ml.l.LogStartOffset() {
			rp.ErrorCode = kerr.UnknownServerError.Code
			return rp
		}
		// The log was cleaned under us: answer with the snapshot.
	}
	return rp
}

// notifyHighWatermark answers the observers' fetches waiting for a
// commit or a new leader (called with n.mu held): each on a goroutine of
// its own, never on the caller's (the raft goroutine).
func (n *Node) notifyHighWatermark() {
	for _, f := range n.fetchWaiters {
		time.AfterFunc(0, f)
	}
	n.fetchWaiters = nil
}

// HandleFetchSnapshot answers an observer's FetchSnapshot (API 59): a
// chunk of the named snapshot of __cluster_metadata-0 from its position,
// on the leader only.
func (n *Node) HandleFetchSnapshot(req *kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse {
	resp := req.ResponseKind().(*kmsg.FetchSnapshotResponse)
	le := n.LeaderAndEpoch()
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 || maxBytes > maxObserverFetchSize {
		maxBytes = maxObserverFetchSize
	}
	for _, t := range req.Topics {
		rt := kmsg.NewFetchSnapshotResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchSnapshotResponseTopicPartition()
			rp.Partition, rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = p.Partition, p.SnapshotID.EndOffset, p.SnapshotID.Epoch
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = le.LeaderID, le.Epoch
			switch {
			case t.Topic != MetadataTopicPartition.Topic || p.Partition != 0:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case le.LeaderID != n.cfg.NodeID:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				id := OffsetAndEpoch{Offset: p.SnapshotID.EndOffset, Epoch: p.SnapshotID.Epoch}
				data, err := n.snapshotBytes(id)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					rp.ErrorCode = kerr.SnapshotNotFound.Code
				case err != nil:
					rp.ErrorCode = kerr.UnknownServerError.Code
				case p.Position < 0 || p.Position > int64(len(data)):
					rp.ErrorCode = kerr.PositionOutOfRange.Code
				default:
					rp.Size, rp.Position = int64(len(data)), p.Position
					rp.Bytes = data[p.Position:min(int64(len(data)), p.Position+maxBytes)]
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// snapshotBytes reads snapshot id whole (cached: observers fetch it in
// chunks).
func (n *Node) snapshotBytes(id OffsetAndEpoch) ([]byte, error) {
	if id.Offset <= 0 {
		return nil, fs.ErrNotExist
	}
	c := &n.served
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id == id && c.data != nil {
		return c.data, nil
	}
	data, err := readWholeFile(n.cfg.FS, filepath.Join(n.ml.dir, snapshotFileName(id)))
	if err != nil {
		return nil, err
	}
	c.id, c.data = id, data
	return data, nil
}
