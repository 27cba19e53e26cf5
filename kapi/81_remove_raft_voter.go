package kapi

// RemoveRaftVoter, version 0 (KIP-853): remove a voter (id and directory
// id; a zero directory id matches a voter of controller.quorum.voters,
// which has none) from the metadata quorum. The answer comes once the new
// voter set is committed. A leader that removes itself hands its
// leadership on and steps down. VOTER_NOT_FOUND if it is not a voter;
// REQUEST_TIMED_OUT while another change is in flight. Served and
// forwarded as AddRaftVoter.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleRemoveRaftVoter(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.RemoveRaftVoterRequest)
	r, err := h.forward(rc.Context(), req, voterChangeTimeout(0))
	if err != nil {
		return errorResponse(req, err)
	}
	return r
}

// voterChangeTimeout bounds a voter change: the request's timeout, or
// Kafka's default of 15 s, plus time to reach the controller.
func voterChangeTimeout(ms int32) time.Duration {
	if ms <= 0 {
		ms = 15000
	}
	return time.Duration(ms)*time.Millisecond + 5*time.Second
}
