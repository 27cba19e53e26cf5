package kapi

// AlterPartitionReassignments (45, versions 0 to 1) and
// ListPartitionReassignments (46, version 0), KIP-455.
//
//   - 45 v0: target replicas per partition (null cancels the partition's
//     reassignment); per-partition error codes and messages, a top-level
//     error_code for request-wide failures.
//   - 45 v1: allow_replication_factor_change (KIP-860, default true): when
//     false, a target of another size than the current replicas is
//     INVALID_REPLICATION_FACTOR; the response echoes it.
//   - 46 v0: the partitions being reassigned (a null topic list: all) with
//     their replicas, adding and removing replicas.
//
// The controller decides (broker/controller, reassignment.go: Kafka's
// ReplicationControlManager); the broker forwards both as they came, as
// Kafka 4 does. A request-wide failure (NOT_CONTROLLER, REQUEST_TIMED_OUT)
// is the top-level code and, for 45, every named partition's, as Kafka's
// getErrorResponse has it.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleAlterPartitionReassignments(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	r, err := h.forward(rc.Context(), req, time.Duration(req.TimeoutMillis)*time.Millisecond)
	if err != nil {
		return errorResponse(req, err)
	}
	return r
}

func (h *Handler) handleListPartitionReassignments(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	r, err := h.forward(rc.Context(), req, time.Duration(req.TimeoutMillis)*time.Millisecond)
	if err != nil {
		return errorResponse(req, err)
	}
	return r
}
