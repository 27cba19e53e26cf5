package kapi

// SyncGroup, versions 0 to 5.
//
//   - v1: the response adds throttle_time_ms.
//   - v2: no change on the wire.
//   - v3: group_instance_id (KIP-345).
//   - v4: flexible versions.
//   - v5: protocol_type and protocol_name in request and response, which
//     must match the group's (KIP-559); missing is
//     INCONSISTENT_GROUP_PROTOCOL.
//
// The leader's request carries the assignment; every member's request
// waits in the coordinator until the assignment is durable in
// __consumer_offsets, without holding a handler goroutine.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleSyncGroup(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.SyncGroupRequest)
	if !h.authorize(rc, az.Read, az.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		rc.finish(resp)
		return
	}
	h.cfg.Groups.SyncGroup(groupContext(rc), req, func(resp *kmsg.SyncGroupResponse) { rc.finish(resp) })
}
