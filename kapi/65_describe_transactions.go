package kapi

// DescribeTransactions, version 0 (KIP-664): the state of transactional
// ids coordinated by this broker: producer id and epoch, state, timeout,
// start time and partitions; NOT_COORDINATOR for an id coordinated
// elsewhere, TRANSACTIONAL_ID_NOT_FOUND for one not known. As Kafka's: an
// id the principal may not describe is TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
// and the topics it may not describe are left out of a transaction's.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDescribeTransactions(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	h.cfg.Txn.DescribeTransactions(req.TransactionalIDs, func(states []kmsg.DescribeTransactionsResponseTransactionState) {
		resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		if h.cfg.Authorizer != nil {
			for i := range states {
				st := &states[i]
				if id := st.TransactionalID; !h.authorize(rc, az.Describe, az.TransactionalID, id) {
					*st = kmsg.NewDescribeTransactionsResponseTransactionState()
					st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
					st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
					continue
				}
				kept := st.Topics[:0]
				for _, t := range st.Topics {
					if h.authorizeQuiet(rc, az.Describe, az.Topic, t.Topic) {
						kept = append(kept, t)
					}
				}
				st.Topics = kept
			}
		}
		resp.TransactionStates = states
		rc.finish(resp)
	})
}
