package kapi

// ElectLeaders, versions 0 to 2 (KIP-183; election types KIP-460).
//
//   - v0: preferred leader election of the named partitions (a null list:
//     every partition); per-partition error codes and messages.
//   - v1: election_type (0 PREFERRED, 1 UNCLEAN) and a top-level
//     error_code.
//   - v2: flexible.
//
// The controller decides (broker/controller, elect_leaders.go: Kafka's
// electLeaders); the broker forwards the request as it came, as Kafka 4
// does, and relays the answer once its own metadata shows the new leaders
// (bounded by timeout_ms), so the client's next Metadata here sees them.
// A request-wide failure (NOT_CONTROLLER, REQUEST_TIMED_OUT,
// INVALID_REQUEST for an unknown election type) is in every named
// partition and, from v1, the top-level code, as Kafka's
// getErrorResponse has it.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleElectLeaders(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ElectLeadersRequest)
	before := h.image()
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	r, err := h.forward(rc.Context(), req, timeout)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := r.(*kmsg.ElectLeadersResponse)
	// The leader epochs the elections moved past.
	type elected struct {
		topic     string
		partition int32
		epoch     int32
	}
	var want []elected
	for _, st := range resp.Topics {
		t, ok := before.Topic(st.Topic)
		if !ok {
			continue
		}
		for _, sp := range st.Partitions {
			if sp.ErrorCode == 0 && sp.Partition >= 0 && int(sp.Partition) < len(t.Partitions) {
				want = append(want, elected{st.Topic, sp.Partition, t.Partitions[sp.Partition].LeaderEpoch})
			}
		}
	}
	if len(want) > 0 {
		h.log.Info("elected leaders", "partitions", len(want), "election_type", req.ElectionType)
		h.waitForMetadata(rc.Context(), timeout, func(im *metadata.Image) bool {
			for _, w := range want {
				t, ok := im.Topic(w.topic)
				if ok && int(w.partition) < len(t.Partitions) && t.Partitions[w.partition].LeaderEpoch <= w.epoch {
					return false
				}
			}
			return true
		})
	}
	return resp
}
