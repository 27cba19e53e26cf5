package kapi

// ListOffsets, versions 1 to 11.
//
//   - v1: one offset per partition (v0's max_num_offsets is gone; v0 is not
//     served, as in Kafka 4.0, KIP-896).
//   - v2: isolation_level (read_committed answers "latest" with the last
//     stable offset).
//   - v4: current_leader_epoch in the request, leader_epoch in the response
//     (KIP-320).
//   - v6: flexible versions.
//   - v7: timestamp -3 finds the record with the largest timestamp (KIP-734).
//   - v8: timestamp -4, the earliest local offset (KIP-405).
//   - v9: timestamp -5, the latest tiered offset (KIP-1005).
//   - v10: timeout_ms (KIP-1075); v11: timestamp -6, earliest pending
//     upload (KIP-1023) — no tiered storage yet, so it answers -1.
//
// A partition named twice in one request is INVALID_REQUEST, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/replica"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleListOffsets(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	seen := make(map[replica.TopicPartition]int)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			seen[replica.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]++
		}
	}
	allowed := h.authorizeTopics(rc, az.Describe, func(yield func(string) bool) {
		for _, rt := range req.Topics {
			if !yield(rt.Topic) {
				return
			}
		}
	})
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			tp := replica.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			switch {
			case !allowed[rt.Topic]:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case seen[tp] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case rp.Timestamp == -6: // earliest pending upload: nothing tiered
			default:
				to, err := h.cfg.Replicas.ListOffset(tp, rp.CurrentLeaderEpoch, rp.Timestamp, req.IsolationLevel, req.ReplicaID)
				if err != nil {
					sp.ErrorCode = ErrorCode(err)
				} else {
					sp.Timestamp, sp.Offset, sp.LeaderEpoch = to.Timestamp, to.Offset, to.LeaderEpoch
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
