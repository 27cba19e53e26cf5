package kapi

// ShareGroupDescribe, version 1 (KIP-932).
//
//   - v1: each share group's state (Empty or Stable), group and
//     assignment epochs, assignor ("simple"), and every member with its
//     rack, client, subscribed topic names and assignment.
//
// Version 0 was Kafka 4.0's early access and is not served, as Kafka 4.1
// and later do not serve it. A group that does not exist or is not a
// share group is GROUP_ID_NOT_FOUND; an empty group id is
// INVALID_GROUP_ID. With share groups not enabled the API answers
// UNSUPPORTED_VERSION. Authorization is Kafka's: DESCRIBE on each group;
// with an authorizer, a group whose members are assigned a topic the
// principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleShareGroupDescribe(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	if !h.cfg.Groups.ShareGroupsEnabled() {
		for _, g := range req.GroupIDs {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, dg)
		}
		rc.finish(resp)
		return
	}
	allowed, denied := splitGroups(h, rc, az.Describe, req.GroupIDs, func(g string) kmsg.ShareGroupDescribeResponseGroup {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		return dg
	})
	h.cfg.Groups.ShareGroupDescribe(groupContext(rc), allowed, func(gs []kmsg.ShareGroupDescribeResponseGroup) {
		for i := range gs {
			if gs[i].ErrorCode != 0 {
				continue
			}
			if req.IncludeAuthorizedOperations {
				gs[i].AuthorizedOperations = h.authorizedOperations(rc, az.Group, gs[i].GroupID)
			}
			if h.cfg.Authorizer != nil && !h.mayDescribeAssignedTopics(rc, gs[i]) {
				id, msg := gs[i].GroupID, "The group has described topic(s) that the client is not authorized to describe."
				gs[i] = kmsg.NewShareGroupDescribeResponseGroup()
				gs[i].GroupID, gs[i].ErrorCode, gs[i].ErrorMessage = id, kerr.TopicAuthorizationFailed.Code, &msg
			}
		}
		resp.Groups = append(denied, gs...)
		rc.finish(resp)
	})
}

// mayDescribeAssignedTopics: the principal may DESCRIBE every topic
// assigned to the group's members (KafkaApis.handleShareGroupDescribe).
func (h *Handler) mayDescribeAssignedTopics(rc *RequestContext, g kmsg.ShareGroupDescribeResponseGroup) bool {
	names := func(yield func(string) bool) {
		for _, m := range g.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				if !yield(tp.Topic) {
					return
				}
			}
		}
	}
	allowed := h.authorizeTopics(rc, az.Describe, names)
	for n := range names {
		if !allowed[n] {
			return false
		}
	}
	return true
}
