package kapi

// LeaveGroup, versions 0 to 5.
//
//   - v0-v2: one member_id; the response has one error_code (v1 adds
//     throttle_time_ms).
//   - v3: batched: members, each by member_id or, to remove a static
//     member as an admin, by group_instance_id alone; one error per
//     member in the response (KIP-345).
//   - v4: flexible versions.
//   - v5: a reason per member (KIP-800).
//
// Before v3 the request is turned into the batched form with one member
// and the member's error becomes the response's, as Kafka's
// LeaveGroupRequest.normalizedData and LeaveGroupResponse do.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleLeaveGroup(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	if !h.authorize(rc, az.Read, az.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		rc.finish(resp)
		return
	}
	if req.Version < 3 {
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	h.cfg.Groups.LeaveGroup(groupContext(rc), req, func(resp *kmsg.LeaveGroupResponse) {
		if req.Version < 3 {
			if resp.ErrorCode == 0 && len(resp.Members) == 1 {
				resp.ErrorCode = resp.Members[0].ErrorCode
			}
			resp.Members = nil
		}
		rc.finish(resp)
	})
}
