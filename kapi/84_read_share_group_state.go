package kapi

// ReadShareGroupState, version 0 (the only one; KIP-932): a
// share-partition leader reads the state of its share-partitions when it
// loads them, naming its leader epoch, which the share coordinator records
// when it is newer (a write, as Kafka's readStateAndMaybeUpdateLeaderEpoch
// is). Inter-broker: CLUSTER_ACTION on the cluster. Per partition: the
// state epoch, start offset and state batches, or INVALID_REQUEST for a
// share-partition never initialized (Kafka 4.1+), FENCED_LEADER_EPOCH for
// an older leader epoch than recorded, UNKNOWN_TOPIC_OR_PARTITION,
// NOT_COORDINATOR. See share_state.go.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/share"
)

func (h *Handler) handleReadShareGroupState(rc *RequestContext, kreq kmsg.Request, done func(kmsg.Response)) {
	req := kreq.(*kmsg.ReadShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
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
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for pi, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			all = append(all, at{ti, pi})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	fanOut(rc, len(all), func(i int, finish func()) {
		t, p := req.Topics[all[i].t], req.Topics[all[i].t].Partitions[all[i].p]
		k := share.Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		h.cfg.Share.ReadState(k, p.LeaderEpoch, func(st share.PartitionState, err error) {
			rp := &resp.Topics[all[i].t].Partitions[all[i].p]
			rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			if err == nil {
				rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
				rp.StateBatches = make([]kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch, len(st.Batches))
				for j, sb := range st.Batches {
					b := &rp.StateBatches[j]
					b.Default()
					b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount
				}
			}
			finish()
		})
	}, func() kmsg.Response { return resp }, done)
}
