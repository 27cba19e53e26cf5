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
//   - v10: timeout_ms (KIP-1075): how long a search by timestamp in
//     remote storage may take (DelayedRemoteListOffsets, off the handler
//     pool; older versions wait remote.list.offsets.request.timeout.ms),
//     then REQUEST_TIMED_OUT; v11: timestamp -6, the earliest offset
//     pending upload to remote storage (KIP-1023; -1 for a topic not
//     tiered).
//
// A partition named twice in one request is INVALID_REQUEST, as in Kafka.
// The handler is asynchronous: the answer goes once every partition is
// answered (replica.Manager.ListOffsets).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/replica"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleListOffsets(rc *RequestContext, kreq kmsg.Request) {
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
	var asks []replica.ListOffsetsPartition
	var answers []*kmsg.ListOffsetsResponseTopicPartition // answers[i] answers asks[i]
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for ti, rt := range req.Topics {
		for pi, rp := range rt.Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			tp := replica.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			switch {
			case !allowed[rt.Topic]:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case seen[tp] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			default:
				asks = append(asks, replica.ListOffsetsPartition{TopicPartition: tp, CurrentLeaderEpoch: rp.CurrentLeaderEpoch, Timestamp: rp.Timestamp})
				answers = append(answers, sp)
			}
		}
	}
	var timeout time.Duration // v10's timeout_ms; before, remote.list.offsets.request.timeout.ms
	if req.Version >= 10 {
		timeout = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	h.cfg.Replicas.ListOffsets(asks, req.IsolationLevel, req.ReplicaID, timeout, func(results []replica.ListOffsetsResult) {
		for i, r := range results {
			if r.Err != nil {
				answers[i].ErrorCode = ErrorCode(r.Err)
			} else {
				answers[i].Timestamp, answers[i].Offset, answers[i].LeaderEpoch = r.Timestamp, r.Offset, r.LeaderEpoch
			}
		}
		rc.finish(resp)
	})
}
