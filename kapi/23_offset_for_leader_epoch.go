package kapi

// OffsetForLeaderEpoch, versions 0 to 4.
//
//   - v0: per partition, the end offset of the leader epoch asked for
//     (KIP-101; a follower finds where its log diverges).
//   - v1: the response adds leader_epoch: the largest epoch at or below
//     the one asked for, whose end offset is answered (KIP-279).
//   - v2: current_leader_epoch per partition, checked as a fetch's
//     (FENCED_LEADER_EPOCH if older than the partition's, UNKNOWN_LEADER_EPOCH
//     if newer; -1 skips it); the response adds throttle_time_ms (KIP-320:
//     consumers call it after a leader change to check that their position
//     was not truncated away).
//   - v3: replica_id (-1 for a consumer; a broker id for a follower,
//     answered alike here for now).
//   - v4: flexible versions.
//
// Kafka 4.0 serves v2-4 (KIP-896 removed v0-1); v0-1 are served here as
// the other APIs' old versions are (see the version table), since kmsg
// decodes them and they differ only in fields missing.
//
// The answer is replica.Manager.LastOffsetForLeaderEpoch's: the partition
// must be led here (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
// KAFKA_STORAGE_ERROR as a fetch), and the epoch and end offset come from
// the log's leader-epoch cache (Kafka's LeaderEpochFileCache.endOffsetFor),
// -1 and -1 when it knows nothing of the epoch. A failed partition answers
// leader_epoch -1 and end_offset -1.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/replica"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleOffsetForLeaderEpoch(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// CLUSTER_ACTION (a follower) covers every topic, else DESCRIBE on
	// each (Kafka's handleOffsetForLeaderEpochRequest).
	all := h.authorizeQuiet(rc, az.ClusterAction, az.Cluster, az.ClusterName)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		allowed := all || h.authorize(rc, az.Describe, az.Topic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			if !allowed {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			current := rp.CurrentLeaderEpoch
			if req.Version < 2 {
				current = -1 // not on the wire: no fencing
			}
			tp := replica.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			epoch, end, err := h.cfg.Replicas.LastOffsetForLeaderEpoch(tp, current, rp.LeaderEpoch)
			if err != nil {
				sp.ErrorCode = ErrorCode(err)
			} else {
				sp.LeaderEpoch, sp.EndOffset = epoch, end
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
