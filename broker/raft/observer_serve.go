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
)

// observerProgress is what the leader knows of an observer (DescribeQuorum).
type observerProgress struct {
	leo       int64
	lastFetch time.Time
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
// the file comment). It waits up to MaxWaitMillis (at most 500 ms) for a
// commit past the fetch offset. Any other partition is
// UNKNOWN_TOPIC_OR_PARTITION.
func (n *Node) HandleFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replica := req.ReplicaID
	if req.Version >= 15 {
		replica = req.ReplicaState.ID
	}
	leaderKnown := false
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
				rp = n.fetchMetadata(replica, p.FetchOffset, min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxObserverWait), min(req.MaxBytes, p.PartitionMaxBytes))
				leaderKnown = rp.CurrentLeader.LeaderID >= 0
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 16 && leaderKnown {
		le := n.LeaderAndEpoch()
		if addr, ok := n.cfg.Voters[le.LeaderID]; ok {
			if host, port, err := net.SplitHostPort(addr); err == nil {
				if p, err := strconv.ParseInt(port, 10, 32); err == nil {
					b := kmsg.NewFetchResponseBroker()
					b.NodeID, b.Host, b.Port = le.LeaderID, host, int32(p)
					resp.Brokers = append(resp.Brokers, b)
				}
			}
		}
	}
	return resp
}

func (n *Node) fetchMetadata(replica int32, offset int64, wait time.Duration, maxBytes int32) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.LastStableOffset = -1
	if maxBytes <= 0 || maxBytes > maxObserverFetchSize {
		maxBytes = maxObserverFetchSize
	}
	deadline := time.Now().Add(wait)
	for {
		n.mu.Lock()
		leader, epoch, hw, snap, stopped := n.st.leader, n.st.epoch, n.st.hw, n.st.snap, n.err != nil
		ch := n.hwWait
		if ch == nil {
			ch = make(chan struct{})
			n.hwWait = ch
		}
		isLeader := leader == n.cfg.NodeID && n.st.hwKnown
		if isLeader && replica >= 0 {
			n.st.observers[replica] = observerProgress{leo: offset, lastFetch: n.cfg.Now()}
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
		case offset > hw:
			// Past what this leader knows committed: a new leader learns
			// the quorum's commit with its first commit. Nothing yet.
			return rp
		case offset < hw:
			fd, err := n.ml.l.Read(offset, maxBytes, hw, true)
			var chunk []byte
			if err == nil {
				chunk, err = fd.Records.ReadInto(nil)
			}
			if err != nil {
				if offset < n.ml.l.LogStartOffset() {
					continue // the log was cleaned under us: answer with the snapshot
				}
				rp.ErrorCode = kerr.UnknownServerError.Code
				return rp
			}
			rp.RecordBatches = chunk
			return rp
		}
		t := time.Until(deadline)
		if t <= 0 {
			return rp
		}
		timer := time.NewTimer(t)
		select {
		case <-ch:
		case <-timer.C:
		case <-n.g.Stopping():
		}
		timer.Stop()
	}
}

// notifyHighWatermark wakes the observers' fetches waiting for a commit
// (called with n.mu held).
func (n *Node) notifyHighWatermark() {
	if n.hwWait != nil {
		close(n.hwWait)
		n.hwWait = nil
	}
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
