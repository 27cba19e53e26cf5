package kapi

// DeleteShareGroupState, version 0 (the only one; KIP-932): the group
// coordinator deletes the state of share-partitions (a share group or its
// offsets deleted); the share coordinator writes a tombstone for each that
// has state. Inter-broker: CLUSTER_ACTION on the cluster. Per partition:
// UNKNOWN_TOPIC_OR_PARTITION, NOT_COORDINATOR. See share_state.go.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/share"
)

func (h *Handler) handleDeleteShareGroupState(rc *RequestContext, kreq kmsg.Request, done func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
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
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for pi, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			all = append(all, at{ti, pi})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	fanOut(rc, len(all), func(i int, finish func()) {
		t, p := req.Topics[all[i].t], req.Topics[all[i].t].Partitions[all[i].p]
		k := share.Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		h.cfg.Share.DeleteState(k, func(err error) {
			rp := &resp.Topics[all[i].t].Partitions[all[i].p]
			rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			finish()
		})
	}, func() kmsg.Response { return resp }, done)
}
