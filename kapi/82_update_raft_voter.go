package kapi

// UpdateRaftVoter, version 0 (KIP-853): a voter tells the quorum's leader
// its current controller endpoints and supported kraft.version range;
// the leader writes a new VotersRecord with them for the same id and
// directory id, and answers once it is appended (not committed), as
// Kafka does. Voters send it themselves (broker/raft, voter_update.go):
// after a restart with another controller listener port, or to fill in
// their directory id in a voter set started from controller.quorum.voters.
//
// Served on the controller listener only, as Kafka's (brokers neither
// advertise nor forward it). Every answer names the leader this node
// knows, its epoch and its controller endpoint (CurrentLeader).
// INCONSISTENT_CLUSTER_ID for another cluster id (a null one is
// accepted); FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH for another
// epoch; NOT_LEADER_OR_FOLLOWER off the leader; INVALID_REQUEST without a
// directory id, without an endpoint on the controller listener, or with
// a kraft.version range that is malformed or leaves out the quorum's;
// REQUEST_TIMED_OUT while another voter change is pending or before the
// leader has committed in its epoch; UNSUPPORTED_VERSION at kraft.version
// 0 (a static quorum with no VotersRecord); VOTER_NOT_FOUND if the id is
// not a voter or has another directory id.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *ControllerHandler) handleUpdateRaftVoter(ctx context.Context, req *kmsg.UpdateRaftVoterRequest) (kmsg.Response, error) {
	if h.quorum == nil {
		resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, voterChangeTimeout(0)-5*time.Second)
	defer cancel()
	return h.quorum.UpdateRaftVoter(ctx, req), nil
}
