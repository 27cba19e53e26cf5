package kapi

// EndTxn, versions 0 to 5.
//
//   - v0: commit or abort the producer's transaction.
//   - v1: no change on the wire; v2: PRODUCER_FENCED may be answered (v0-1
//     get INVALID_PRODUCER_EPOCH); v3: flexible versions; v4: no change on
//     the wire (KIP-890, TRANSACTION_ABORTABLE).
//   - v5: transaction version 2 (KIP-890 part 2): the epoch is bumped at
//     every EndTxn and the response carries the producer id and epoch the
//     producer continues with.
//
// The transaction coordinator answers once PrepareCommit or PrepareAbort
// is durable; the markers are written to the partitions after that.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/txn"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleEndTxn(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.EndTxnRequest)
	if !h.authorize(rc, az.Write, az.TransactionalID, req.TransactionalID) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.TransactionalIDAuthorizationFailed.Code, -1, -1
		rc.finish(resp)
		return
	}
	h.cfg.Txn.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, req.Version, func(r txn.EndTxnResult) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = ErrorCode(r.Err)
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch
		rc.finish(resp)
	})
}
