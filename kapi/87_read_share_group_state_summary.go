package kapi

// ReadShareGroupStateSummary, versions 0 to 1: the group coordinator reads
// the start offset and epochs of share-partitions (DescribeShareGroupOffsets)
// without their batches; nothing is recorded.
//
//   - v0: state epoch, leader epoch, start offset (KIP-932).
//   - v1: delivery_complete_count, from which the share-partition's lag
//     is computed (KIP-1226, Kafka 4.2).
//
// A share-partition never initialized is answered start offset -1 and
// epochs 0 without error, as Kafka answers. Inter-broker: CLUSTER_ACTION on
// the cluster. Per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR.
// See share_state.go.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/share"
)

func (h *Handler) handleReadShareGroupStateSummary(rc *RequestContext, kreq kmsg.Request, done func(kmsg.Response)) {
	req := kreq.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
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
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for pi, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			all = append(all, at{ti, pi})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	fanOut(rc, len(all), func(i int, finish func()) {
		t, p := req.Topics[all[i].t], req.Topics[all[i].t].Partitions[all[i].p]
		k := share.Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		h.cfg.Share.ReadStateSummary(k, func(st share.PartitionState, err error) {
			rp := &resp.Topics[all[i].t].Partitions[all[i].p]
			rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			if err == nil {
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = st.StateEpoch, st.LeaderEpoch, st.StartOffset
				rp.DeliveryCompleteCount = st.DeliveryCompleteCount
			}
			finish()
		})
	}, func() kmsg.Response { return resp }, done)
}
