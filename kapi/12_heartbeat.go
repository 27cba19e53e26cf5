package kapi

// Heartbeat, versions 0 to 4.
//
//   - v1: the response adds throttle_time_ms.
//   - v2: no change on the wire.
//   - v3: group_instance_id (KIP-345).
//   - v4: flexible versions.
//
// A classic member's heartbeat keeps its session alive and tells it when a
// rebalance started (REBALANCE_IN_PROGRESS).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleHeartbeat(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.HeartbeatRequest)
	if !h.authorize(rc, az.Read, az.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		rc.finish(resp)
		return
	}
	h.cfg.Groups.Heartbeat(groupContext(rc), req, func(resp *kmsg.HeartbeatResponse) { rc.finish(resp) })
}
