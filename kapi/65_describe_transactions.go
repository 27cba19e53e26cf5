package kapi

// DescribeTransactions, version 0 (KIP-664): the state of transactional
// ids coordinated by this broker: producer id and epoch, state, timeout,
// start time and partitions; NOT_COORDINATOR for an id coordinated
// elsewhere, TRANSACTIONAL_ID_NOT_FOUND for one not known.

import "github.com/twmb/franz-go/pkg/kmsg"

func (h *Handler) handleDescribeTransactions(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	h.cfg.Txn.DescribeTransactions(req.TransactionalIDs, func(states []kmsg.DescribeTransactionsResponseTransactionState) {
		resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		resp.TransactionStates = states
		rc.finish(resp)
	})
}
