package kapi

// AddOffsetsToTxn, versions 0 to 4.
//
//   - v0: adds the group's partition of __consumer_offsets to the
//     producer's transaction, before TxnOffsetCommit.
//   - v1: no change on the wire; v2: PRODUCER_FENCED may be answered (v0-1
//     get INVALID_PRODUCER_EPOCH); v3: flexible versions.
//   - v4: no change on the wire (KIP-890, TRANSACTION_ABORTABLE).
//
// The group's partition is abs(javaHashCode(group)) % partitions of
// __consumer_offsets; the transaction coordinator adds it as
// AddPartitionsToTxn would.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleAddOffsetsToTxn(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	var refused error
	switch {
	case !h.authorize(rc, az.Write, az.TransactionalID, req.TransactionalID):
		refused = errTxnIDAuthorization
	case !h.authorize(rc, az.Read, az.Group, req.Group):
		refused = errGroupAuthorization
	}
	if refused != nil {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = ErrorCode(refused)
		rc.finish(resp)
		return
	}
	h.cfg.Txn.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, req.Version, func(err error) {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = ErrorCode(err)
		rc.finish(resp)
	})
}
