package kapi

// AddRaftVoter, versions 0 and 1 (KIP-853): add a controller to the
// metadata quorum's voters.
//
//   - v0: the voter's id, directory id and listeners; the answer comes
//     once the new voter set is committed.
//   - v1: AckWhenCommitted (Moldau always answers after the commit, as
//     Kafka does by default).
//
// Served by the quorum's leader (the active controller) on the controller
// listener; elsewhere NOT_CONTROLLER. Brokers forward it to the active
// controller, as Kafka's do. The leader refuses with REQUEST_TIMED_OUT
// while another voter change is in flight, before it has committed in its
// epoch, or when the new voter is not an observer caught up with it;
// DUPLICATE_VOTER when the id is a voter already.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleAddRaftVoter(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AddRaftVoterRequest)
	r, err := h.forward(rc.Context(), req, voterChangeTimeout(req.TimeoutMillis))
	if err != nil {
		return errorResponse(req, err)
	}
	return r
}
