package kapi

// AlterShareGroupOffsets, version 0 (KIP-932).
//
//   - v0: sets the share-partition start offset of topic partitions of a
//     share group, answering per partition.
//
// Only an empty share group's offsets may be altered (NON_EMPTY_GROUP);
// a group id no group has becomes a new, empty share group; a group of
// another type is GROUP_ID_NOT_FOUND. A topic or partition that does not
// exist answers UNKNOWN_TOPIC_OR_PARTITION for its partitions. The new
// start offsets are written through the share coordinator
// (InitializeShareGroupState at the group's epoch, which drops the
// partitions' in-flight state) and the partitions recorded as initialized
// before the answer. An empty group id is INVALID_GROUP_ID; with share
// groups not enabled the API answers UNSUPPORTED_VERSION. Authorization
// is Kafka's: READ on the group (GROUP_AUTHORIZATION_FAILED for the
// request), READ on each topic (TOPIC_AUTHORIZATION_FAILED for its
// partitions, which are not passed to the coordinator). Routed to the
// group's coordinator (FindCoordinator GROUP).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleAlterShareGroupOffsets(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	fail := func(code *kerr.Error) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = code.Code, kmsg.StringPtr(code.Description)
		rc.finish(resp)
	}
	if !h.cfg.Groups.ShareGroupsEnabled() {
		fail(kerr.UnsupportedVersion)
		return
	}
	if !h.authorize(rc, az.Read, az.Group, req.GroupID) {
		fail(kerr.GroupAuthorizationFailed)
		return
	}
	var denied []kmsg.AlterShareGroupOffsetsResponseTopic
	allowed := *req
	allowed.Topics = nil
	for _, t := range req.Topics {
		if h.authorize(rc, az.Read, az.Topic, t.Topic) {
			allowed.Topics = append(allowed.Topics, t)
			continue
		}
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if mt, ok := h.image().Topic(t.Topic); ok {
			rt.TopicID = mt.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr(kerr.TopicAuthorizationFailed.Description)
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	h.cfg.Groups.AlterShareGroupOffsets(groupContext(rc), &allowed, func(resp *kmsg.AlterShareGroupOffsetsResponse) {
		if resp.ErrorCode == 0 {
			resp.Topics = append(denied, resp.Topics...)
		} else {
			resp.Topics = nil
		}
		rc.finish(resp)
	})
}
