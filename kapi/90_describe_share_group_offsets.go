package kapi

// DescribeShareGroupOffsets, versions 0 and 1 (KIP-932).
//
//   - v0: per group, per topic partition, the share-partition start
//     offset (SPSO) and the leader epoch the share coordinator recorded.
//   - v1: the share-partition lag too (KIP-1226): the records from the
//     start offset to the high watermark whose delivery is not complete,
//     -1 when not known (the partition is led elsewhere, or its state has
//     no delivery-complete count yet).
//
// Topics null is every topic partition whose share state the group
// initialized (the path kadm takes); an empty list answers no topics. A
// partition with no state, or of a topic that does not exist, answers
// start offset -1, as Kafka: absence of data, not an error. An empty group
// id is INVALID_GROUP_ID; with share groups not enabled every group is
// UNSUPPORTED_VERSION. Authorization is Kafka's: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic: a named topic the
// principal may not describe answers TOPIC_AUTHORIZATION_FAILED per
// partition, and topics left out of the "all" answer. Routed to the
// group's coordinator (FindCoordinator GROUP); another broker answers
// NOT_COORDINATOR, for the explicit topics too (Kafka's explicit path
// reads the persister from any broker).

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDescribeShareGroupOffsets(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	resp.Groups = make([]kmsg.DescribeShareGroupOffsetsResponseGroup, len(req.Groups))
	collect := gatherResponses(len(req.Groups), func() { rc.finish(resp) })
	for i, g := range req.Groups {
		answer := func(rg kmsg.DescribeShareGroupOffsetsResponseGroup) {
			collect(func() { resp.Groups[i] = rg })
		}
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		switch {
		case !h.cfg.Groups.ShareGroupsEnabled():
			rg.ErrorCode = kerr.UnsupportedVersion.Code
			answer(rg)
		case !h.authorize(rc, az.Describe, az.Group, g.GroupID):
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			answer(rg)
		case g.Topics != nil && len(g.Topics) == 0:
			rg.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
			answer(rg)
		default:
			h.describeShareGroupOffsets(rc, g, answer)
		}
	}
}

// describeShareGroupOffsets asks the coordinator about the topics the
// principal may describe and answers the others.
func (h *Handler) describeShareGroupOffsets(rc *RequestContext, g kmsg.DescribeShareGroupOffsetsRequestGroup, answer func(kmsg.DescribeShareGroupOffsetsResponseGroup)) {
	all := g.Topics == nil
	var denied []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	if !all {
		kept := g.Topics[:0:0]
		for _, t := range g.Topics {
			if h.authorize(rc, az.Describe, az.Topic, t.Topic) {
				kept = append(kept, t)
				continue
			}
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset = p, -1
				rp.ErrorCode, rp.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr(kerr.TopicAuthorizationFailed.Description)
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
		}
		g.Topics = kept
	}
	h.cfg.Groups.DescribeShareGroupOffsets(groupContext(rc), g, func(rg kmsg.DescribeShareGroupOffsetsResponseGroup) {
		if rg.ErrorCode != 0 {
			answer(rg)
			return
		}
		if all && h.cfg.Authorizer != nil {
			kept := rg.Topics[:0:0]
			for _, t := range rg.Topics {
				if h.authorize(rc, az.Describe, az.Topic, t.Topic) {
					kept = append(kept, t)
				}
			}
			rg.Topics = kept
		}
		rg.Topics = append(rg.Topics, denied...)
		answer(rg)
	})
}

// gatherResponses returns a collector: each of n answers calls it once
// with its change to the response, and final runs after the last one.
// Answers may come from several goroutines.
func gatherResponses(n int, final func()) func(func()) {
	if n == 0 {
		final()
		return func(func()) {}
	}
	var mu sync.Mutex
	left := n
	return func(apply func()) {
		mu.Lock()
		apply()
		left--
		last := left == 0
		mu.Unlock()
		if last {
			final()
		}
	}
}
