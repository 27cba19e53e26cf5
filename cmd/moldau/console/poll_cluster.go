package console

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataTopic is the KRaft metadata log DescribeQuorum describes.
const metadataTopic = "__cluster_metadata"

// fencedBrokers asks DescribeCluster (v2, KIP-1073) for the registered
// brokers that are fenced. A cluster below v2 answers without them; one
// that does not serve DescribeCluster at all leaves the set empty.
func (p *Poller) fencedBrokers(ctx context.Context) (map[int32]kmsg.DescribeClusterResponseBroker, error) {
	out := map[int32]kmsg.DescribeClusterResponseBroker{}
	err := p.ask("cluster", func() error {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = true
		resp, err := req.RequestWith(ctx, p.cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		for _, b := range resp.Brokers {
			if b.IsFenced {
				out[b.NodeID] = b
			}
		}
		return nil
	})
	if err == errNotServed {
		err = nil
	}
	return out, err
}

// pollQuorum fills s.Quorum from DescribeQuorum.
func (p *Poller) pollQuorum(ctx context.Context, s *Snapshot) error {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = metadataTopic
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return err
	}
	q, err := quorumFrom(resp)
	if err != nil {
		return err
	}
	s.Quorum = q
	return nil
}

// quorumFrom reads a DescribeQuorum response.
func quorumFrom(resp *kmsg.DescribeQuorumResponse) (*Quorum, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("DescribeQuorum answered without the %s-0 partition", metadataTopic)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return nil, err
	}
	q := &Quorum{LeaderID: rp.LeaderID, LeaderEpoch: rp.LeaderEpoch, HighWatermark: rp.HighWatermark,
		Voters: []QuorumVoter{}, Observers: []QuorumVoter{}}
	leaderLEO := int64(-1)
	for _, v := range rp.CurrentVoters {
		if v.ReplicaID == rp.LeaderID {
			leaderLEO = v.LogEndOffset
		}
	}
	conv := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState) QuorumVoter {
		v := QuorumVoter{ID: r.ReplicaID, LogEndOffset: r.LogEndOffset, Lag: -1}
		if leaderLEO >= 0 && r.LogEndOffset >= 0 {
			v.Lag = max(0, leaderLEO-r.LogEndOffset)
		}
		return v
	}
	for _, v := range rp.CurrentVoters {
		q.Voters = append(q.Voters, conv(v))
	}
	for _, o := range rp.Observers {
		q.Observers = append(q.Observers, conv(o))
	}
	return q, nil
}

// pollLogDirs fills broker and replica sizes from DescribeLogDirs sent to
// every live broker; a broker that fails keeps its previous sizes.
func (p *Poller) pollLogDirs(ctx context.Context, s, prev *Snapshot) error {
	dirs, err := p.adm.DescribeAllLogDirs(ctx, nil)
	applyLogDirs(s, prev, dirs)
	if err != nil && len(dirs) == 0 {
		return err
	}
	for _, d := range dirs {
		if err := d.Error(); err != nil {
			return err
		}
	}
	return nil
}

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// listed is one ListOffsets answer: an offset, or why there is none.
type listed struct {
	offset int64
	err    error
}

// pollOffsets fills log start, log end (= high watermark) and last stable
// offsets with three ListOffsets requests, which kgo splits by leader
// from the metadata it already holds.
func (p *Poller) pollOffsets(ctx context.Context, s, prev *Snapshot) error {
	parts := map[string][]int32{}
	for _, t := range s.Topics {
		for _, pt := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], pt.Partition)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	start := p.listOffsets(ctx, parts, 0, -2)
	end := p.listOffsets(ctx, parts, 0, -1)
	stable := p.listOffsets(ctx, parts, 1, -1)
	return applyOffsets(s, prev, start, end, stable)
}

// listOffsets lists one offset (timestamp -2 earliest, -1 latest) of every
// partition at an isolation level (0 read_uncommitted, 1 read_committed).
func (p *Poller) listOffsets(ctx context.Context, parts map[string][]int32, isolation int8, timestamp int64) map[tp]listed {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = isolation
	for topic, ps := range parts {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, pn := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = pn, timestamp, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	out := make(map[tp]listed, len(parts))
	for _, shard := range p.cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			// The shard's request says which partitions it carried.
			if r, ok := shard.Req.(*kmsg.ListOffsetsRequest); ok {
				for _, t := range r.Topics {
					for _, pt := range t.Partitions {
						out[tp{t.Topic, pt.Partition}] = listed{offset: -1, err: shard.Err}
					}
				}
			}
			continue
		}
		resp := shard.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			for _, pt := range t.Partitions {
				out[tp{t.Topic, pt.Partition}] = listed{offset: pt.Offset, err: kerr.ErrorForCode(pt.ErrorCode)}
			}
		}
	}
	return out
}
