package kapi

// InitProducerId, versions 0 to 5.
//
//   - v1: no change on the wire; v2: flexible versions.
//   - v3: producer_id and producer_epoch in the request, so a producer
//     can bump its epoch after an error (KIP-360).
//   - v4: PRODUCER_FENCED may be answered (older versions get
//     INVALID_PRODUCER_EPOCH instead, as Kafka answers them).
//   - v5: no change on the wire (KIP-890, TRANSACTION_ABORTABLE).
//
// Everything is the transaction coordinator's (coordinator/txn, Kafka's
// TransactionCoordinator.handleInitProducerId): without a transactional id
// a fresh producer id with epoch 0; with one, the id's producer is
// initialized, its epoch bumped and any older producer fenced. Producer
// ids come in blocks of 1000 from the active controller (AllocateProducerIds,
// a ProducerIdsRecord in the metadata log), so no id is handed out twice.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/txn"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleInitProducerID(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	// WRITE on the transactional id; without one, IDEMPOTENT_WRITE on
	// the cluster or WRITE on some topic (Kafka's handleInitProducerIdRequest).
	var refused int16
	switch {
	case req.TransactionalID != nil && *req.TransactionalID != "":
		if !h.authorize(rc, az.Write, az.TransactionalID, *req.TransactionalID) {
			refused = kerr.TransactionalIDAuthorizationFailed.Code
		}
	case !h.authorizeQuiet(rc, az.IdempotentWrite, az.Cluster, az.ClusterName) && !h.authorizeByResourceType(rc, az.Write, az.Topic):
		refused = kerr.ClusterAuthorizationFailed.Code
	}
	if refused != 0 {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, refused
		rc.finish(resp)
		return
	}
	h.cfg.Txn.InitProducerID(rc.Context(), req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch, req.Version,
		func(r txn.InitProducerIDResult) {
			resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
			resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = r.ProducerID, r.ProducerEpoch, ErrorCode(r.Err)
			rc.finish(resp)
		})
}
