package kapi

// AlterPartition (key 56), versions 0-3, served on the controller listener
// only: in KRaft it is a controller API (Kafka's AlterPartitionRequest.json
// lists the zkBroker and controller listeners), so a broker's data-plane
// listener neither lists it in ApiVersions nor serves it (the connection
// is closed, as for any API the listener does not enable). A partition's
// leader sends it to the active controller to shrink or expand the ISR.
//
//   - v0: topics by name, NewISR as broker ids.
//   - v1: LeaderRecoveryState (KIP-704) in the request and response.
//   - v2: topics by id (KIP-841); UNKNOWN_TOPIC_ID for an unknown id, and
//     INELIGIBLE_REPLICA where v0-1 get OPERATION_NOT_ATTEMPTED.
//   - v3: NewEpochISR, each member with its broker epoch (KIP-903), -1 for
//     unchecked; NewISR is gone.
//
// Every version is flexible. A request-wide error (STALE_BROKER_EPOCH,
// NOT_CONTROLLER, a timeout) is the top-level ErrorCode with no topics,
// as Kafka's AlterPartitionRequest.getErrorResponse; partition errors are
// per partition. The rules are the controller's (controller.AlterPartition).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterPartitionError is the response to an AlterPartition that failed as
// a whole.
func alterPartitionError(req *kmsg.AlterPartitionRequest, err error) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.ErrorCode = ErrorCode(err)
	return resp
}
