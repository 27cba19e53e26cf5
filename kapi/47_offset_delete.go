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
	h.cfg.Groups.OffsetDelete(groupContext(rc), req, func(resp *kmsg.OffsetDeleteResponse) { rc.finish(resp) })
}
