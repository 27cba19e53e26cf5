package kapi

// ConsumerGroupHeartbeat, versions 0 and 1 (KIP-848, the consumer
// rebalance protocol, GA in Kafka 4.0).
//
//   - v0: join (member_epoch 0), heartbeat, leave (-1; -2 for a static
//     member leaving for now); the coordinator assigns partitions with a
//     server-side assignor and answers each member's epoch and
//     assignment. A joining member without an id gets one.
//   - v1: subscribed_topic_regex, resolved by the coordinator (RE2/J
//     syntax, the whole topic name); the member must generate its own
//     member id (KIP-1082), an empty one is INVALID_REQUEST.
//
// Errors carry an error message. With "consumer" not in
// group.coordinator.rebalance.protocols the API answers
// UNSUPPORTED_VERSION, as Kafka does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleConsumerGroupHeartbeat(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !h.authorize(rc, az.Read, az.Group, req.Group) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		rc.finish(resp)
		return
	}
	h.cfg.Groups.ConsumerGroupHeartbeat(groupContext(rc), req, func(resp *kmsg.ConsumerGroupHeartbeatResponse) { rc.finish(resp) })
}
