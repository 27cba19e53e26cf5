package kapi

// ConsumerGroupDescribe, versions 0 and 1 (KIP-848).
//
//   - v0: each group's state, epochs, assignor, and every member with
//     its subscription, current and target assignment.
//   - v1: each member's type: 0 classic (a classic member of a consumer
//     group being migrated), 1 consumer.
//
// A group that does not exist or is not a consumer group is
// GROUP_ID_NOT_FOUND; an empty group id is INVALID_GROUP_ID. With no
// authorizer every group operation is authorized.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleConsumerGroupDescribe(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	allowed, denied := splitGroups(h, rc, az.Describe, req.Groups, func(g string) kmsg.ConsumerGroupDescribeResponseGroup {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		return dg
	})
	h.cfg.Groups.ConsumerGroupDescribe(groupContext(rc), allowed, func(gs []kmsg.ConsumerGroupDescribeResponseGroup) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		if req.IncludeAuthorizedOperations {
			for i := range gs {
				if gs[i].ErrorCode == 0 {
					gs[i].AuthorizedOperations = h.authorizedOperations(rc, az.Group, gs[i].Group)
				}
			}
		}
		resp.Groups = append(gs, denied...)
		rc.finish(resp)
	})
}
