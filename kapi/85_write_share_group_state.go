package kapi

// WriteShareGroupState, versions 0 to 1: a share-partition leader writes
// the state batches that changed (and its start offset, -1 if unchanged);
// the share coordinator merges them into the share-partition's state.
//
//   - v0: state epoch, leader epoch, start offset, state batches (KIP-932).
//   - v1: delivery_complete_count, the offsets at or above the start
//     offset whose delivery is complete, for share-partition lag
//     (KIP-1226, Kafka 4.2); -1 in v0.
//
// Inter-broker: CLUSTER_ACTION on the cluster. Per partition:
// INVALID_REQUEST for a share-partition never initialized,
// FENCED_LEADER_EPOCH or FENCED_STATE_EPOCH for an older epoch than
// recorded (-1: unchecked), UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR.
// See share_state.go.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/share"
)

func (h *Handler) handleWriteShareGroupState(rc *RequestContext, kreq kmsg.Request, done func(kmsg.Response)) {
	req := kreq.(*kmsg.WriteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
	}
	if shareRequestEmpty(req.GroupID, counts...) {
		done(resp)
		return
	}
	type at struct{ t, p int }
	var all []at
	for ti, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for pi, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			all = append(all, at{ti, pi})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	fanOut(rc, len(all), func(i int, finish func()) {
		t, p := req.Topics[all[i].t], req.Topics[all[i].t].Partitions[all[i].p]
		k := share.Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		st := share.PartitionState{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset,
			DeliveryCompleteCount: p.DeliveryCompleteCount, Batches: make([]share.StateBatch, len(p.StateBatches))}
		if req.Version < 1 {
			st.DeliveryCompleteCount = share.UninitializedDeliveryCompleteCount
		}
		for j, b := range p.StateBatches {
			st.Batches[j] = share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount}
		}
		h.cfg.Share.WriteState(k, st, func(err error) {
			rp := &resp.Topics[all[i].t].Partitions[all[i].p]
			rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			finish()
		})
	}, func() kmsg.Response { return resp }, done)
}
