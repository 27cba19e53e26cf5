package kapi

// DescribeQuorum, versions 0 to 2 (KIP-595, KIP-836, KIP-853).
//
//   - v0: the quorum of __cluster_metadata-0: leader, epoch, high
//     watermark, each voter's and observer's log end offset.
//   - v1: last fetch and last caught-up timestamps per replica.
//   - v2: error messages, directory ids, and the nodes with their
//     listeners.
//
// Brokers forward it to the active controller, as Kafka does, which
// answers from the metadata quorum.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleDescribeQuorum(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	r, err := h.forward(rc.Context(), req, 0)
	if err != nil {
		return errorResponse(req, err)
	}
	return r
}
