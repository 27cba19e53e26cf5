package kapi

// ListTransactions, versions 0 to 2 (KIP-664): the transactions this
// broker coordinates.
//
//   - v0: filters by state names (unknown ones are returned) and producer
//     ids.
//   - v1: duration_filter: only transactions open longer than it
//     (KIP-994).
//   - v2: transactional_id_pattern, an RE2 regular expression the whole id
//     must match (KIP-1152); an invalid one is INVALID_REGULAR_EXPRESSION.
//
// COORDINATOR_LOAD_IN_PROGRESS while a partition of __transaction_state is
// loading.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleListTransactions(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ListTransactionsRequest)
	h.cfg.Txn.ListTransactions(req, func(resp *kmsg.ListTransactionsResponse) {
		// Only the ids the principal may describe (Kafka's
		// handleListTransactionsRequest).
		if h.cfg.Authorizer != nil {
			kept := resp.TransactionStates[:0]
			for _, s := range resp.TransactionStates {
				if h.authorizeQuiet(rc, az.Describe, az.TransactionalID, s.TransactionalID) {
					kept = append(kept, s)
				}
			}
			resp.TransactionStates = kept
		}
		rc.finish(resp)
	})
}
