package kapi

// DescribeGroups, versions 0 to 6.
//
//   - v1: the response adds throttle_time_ms.
//   - v2: no change on the wire.
//   - v3: include_authorized_operations; the response's
//     authorized_operations (KIP-430).
//   - v4: group_instance_id per member (KIP-345).
//   - v5: flexible versions.
//   - v6: a group that does not exist is GROUP_ID_NOT_FOUND with a
//     message, not just Dead (KIP-1043).
//
// Classic groups are described with their members' metadata and
// assignment (the metadata only once Stable). With no authorizer every
// group operation is authorized.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDescribeGroups(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	allowed, denied := splitGroups(h, rc, az.Describe, req.Groups, func(g string) kmsg.DescribeGroupsResponseGroup {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		return dg
	})
	h.cfg.Groups.DescribeGroups(groupContext(rc), allowed, func(gs []kmsg.DescribeGroupsResponseGroup) {
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		if req.Version >= 3 && req.IncludeAuthorizedOperations {
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
