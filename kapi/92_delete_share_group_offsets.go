package kapi

// DeleteShareGroupOffsets, version 0 (KIP-932).
//
//   - v0: deletes the share-partition state of whole topics of a share
//     group, answering per topic.
//
// Only an empty share group's offsets may be deleted (NON_EMPTY_GROUP); a
// group that does not exist or is not a share group is GROUP_ID_NOT_FOUND.
// A topic that does not exist, or whose state the group never
// initialized, answers UNKNOWN_TOPIC_OR_PARTITION. The topic moves to the
// group's deleting topics, the share coordinator deletes every
// partition's state (DeleteShareGroupState), and the topic leaves the
// group's state metadata, so a later member starts afresh
// (share.auto.offset.reset). An empty group id is INVALID_GROUP_ID; with
// share groups not enabled the API answers UNSUPPORTED_VERSION.
// Authorization is Kafka's: DELETE on the group
// (GROUP_AUTHORIZATION_FAILED for the request), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for the topic, which is not passed to the
// coordinator). Routed to the group's coordinator (FindCoordinator GROUP).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDeleteShareGroupOffsets(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	fail := func(code *kerr.Error) {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = code.Code, kmsg.StringPtr(code.Description)
		rc.finish(resp)
	}
	if !h.cfg.Groups.ShareGroupsEnabled() {
		fail(kerr.UnsupportedVersion)
		return
	}
	if !h.authorize(rc, az.Delete, az.Group, req.GroupID) {
		fail(kerr.GroupAuthorizationFailed)
		return
	}
	var denied []kmsg.DeleteShareGroupOffsetsResponseTopic
	allowed := *req
	allowed.Topics = nil
	for _, t := range req.Topics {
		if h.authorize(rc, az.Read, az.Topic, t.Topic) {
			allowed.Topics = append(allowed.Topics, t)
			continue
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		rt.ErrorCode, rt.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr(kerr.TopicAuthorizationFailed.Description)
		denied = append(denied, rt)
	}
	h.cfg.Groups.DeleteShareGroupOffsets(groupContext(rc), &allowed, func(resp *kmsg.DeleteShareGroupOffsetsResponse) {
		if resp.ErrorCode == 0 {
			resp.Topics = append(denied, resp.Topics...)
		}
		rc.finish(resp)
	})
}
