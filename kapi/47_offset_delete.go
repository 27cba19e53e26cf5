package kapi

// OffsetDelete, version 0 (KIP-496).
//
// Deletes a group's committed offsets for the partitions listed, unless
// the group is subscribed to the topic (GROUP_SUBSCRIBED_TO_TOPIC) or is a
// classic group not using the consumer protocol that is not empty
// (NON_EMPTY_GROUP). Unknown topics or partitions are
// UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleOffsetDelete(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	groupErr, denied := h.authorizeOffsetDelete(rc, req)
	if groupErr != 0 || len(denied) > 0 && len(req.Topics) == 0 {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode, resp.Topics = groupErr, denied
		rc.finish(resp)
		return
	}
	h.cfg.Groups.OffsetDelete(groupContext(rc), req, func(resp *kmsg.OffsetDeleteResponse) {
		resp.Topics = append(resp.Topics, denied...)
		rc.finish(resp)
	})
}
