package kapi

// JoinGroup, versions 0 to 9.
//
//   - v0: group_id, session_timeout_ms, member_id, protocol_type,
//     protocols. There is no rebalance timeout: it is the session timeout,
//     as Kafka's JoinGroupRequest sets it.
//   - v1: rebalance_timeout_ms (KIP-62).
//   - v2: the response adds throttle_time_ms.
//   - v3: no change on the wire.
//   - v4: a new member gets MEMBER_ID_REQUIRED with its member id and must
//     join again with it (KIP-394).
//   - v5: group_instance_id: static membership (KIP-345).
//   - v6: flexible versions.
//   - v7: the response adds protocol_type, and protocol_name is nullable
//     (KIP-559).
//   - v8: reason (KIP-800).
//   - v9: a static leader that comes back during a stable generation is
//     told to skip the assignment (skip_assignment, KIP-814).
//
// The request waits in the coordinator until the join phase of the
// rebalance completes, without holding a handler goroutine: the
// coordinator answers from its shard's goroutine.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleJoinGroup(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.JoinGroupRequest)
	if req.Version == 0 {
		req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	}
	if !h.authorize(rc, az.Read, az.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		rc.finish(resp)
		return
	}
	h.cfg.Groups.JoinGroup(groupContext(rc), req, func(resp *kmsg.JoinGroupResponse) { rc.finish(resp) })
}
