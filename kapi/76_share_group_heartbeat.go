package kapi

// ShareGroupHeartbeat, version 1 (KIP-932, share groups, GA in Kafka 4.2).
//
//   - v1: join (member_epoch 0, with the subscribed topic names),
//     heartbeat, leave (-1). The member makes its own id; the coordinator
//     assigns partitions with the simple assignor (a partition may go to
//     several members) once their share-group state is initialized, and
//     answers each member's epoch, heartbeat interval and assignment.
//
// Version 0 was Kafka 4.0's early access and is not served, as Kafka 4.1
// and later do not serve it. Errors carry an error message. With share
// groups not enabled (the share.version feature) the API answers
// UNSUPPORTED_VERSION, as Kafka does. Authorization is Kafka's: READ on
// the group, DESCRIBE on every subscribed topic (else
// TOPIC_AUTHORIZATION_FAILED).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleShareGroupHeartbeat(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	fail := func(code *kerr.Error) {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = code.Code
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
	if len(req.SubscribedTopicNames) > 0 {
		allowed := h.authorizeTopics(rc, az.Describe, slices.Values(req.SubscribedTopicNames))
		for _, t := range req.SubscribedTopicNames {
			if !allowed[t] {
				fail(kerr.TopicAuthorizationFailed)
				return
			}
		}
	}
	h.cfg.Groups.ShareGroupHeartbeat(groupContext(rc), req, func(resp *kmsg.ShareGroupHeartbeatResponse) {
		resp.Version = req.Version
		rc.finish(resp)
	})
}
