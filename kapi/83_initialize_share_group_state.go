package kapi

// InitializeShareGroupState, version 0 (the only one; KIP-932): the group
// coordinator asks the share coordinator to write each share-partition's
// state afresh, with a state epoch and a start offset (-1: not yet
// known), before the share-partition is assigned (Kafka 4.1+). Inter-broker:
// CLUSTER_ACTION on the cluster. Per partition: FENCED_STATE_EPOCH for an
// older state epoch than recorded, UNKNOWN_TOPIC_OR_PARTITION for a topic
// or partition the metadata does not have, NOT_COORDINATOR off the key's
// coordinator. See share_state.go.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/share"
)

func (h *Handler) handleInitializeShareGroupState(rc *RequestContext, kreq kmsg.Request, done func(kmsg.Response)) {
	req := kreq.(*kmsg.InitializeShareGroupStateRequest)
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
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
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for pi, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
			all = append(all, at{ti, pi})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	fanOut(rc, len(all), func(i int, finish func()) {
		t, p := req.Topics[all[i].t], req.Topics[all[i].t].Partitions[all[i].p]
		k := share.Key{GroupID: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
		h.cfg.Share.InitializeState(k, p.StateEpoch, p.StartOffset, func(err error) {
			rp := &resp.Topics[all[i].t].Partitions[all[i].p]
			rp.ErrorCode, rp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
			finish()
		})
	}, func() kmsg.Response { return resp }, done)
}
