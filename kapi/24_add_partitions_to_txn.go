package kapi

// AddPartitionsToTxn, versions 0 to 5.
//
//   - v0-v3: a producer adds partitions to its transaction; one error per
//     partition. v1: no change on the wire; v2: PRODUCER_FENCED may be
//     answered (v0-1 get INVALID_PRODUCER_EPOCH); v3: flexible versions.
//   - v4: brokers only (KIP-890 part 1): a batch of transactions, each
//     either added or, with verify_only, checked (a partition leader
//     verifying that a transactional produce belongs to an ongoing
//     transaction; TRANSACTION_ABORTABLE for a partition that does not).
//   - v5: no change on the wire; sent by partition leaders to add a
//     partition on a producer's behalf (KIP-890 part 2, Produce v12+).
//
// Partitions that do not exist fail their whole transaction: they get
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED
// (KafkaApis); every other error applies to every partition of the
// transaction. The transaction coordinator decides the rest.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleAddPartitionsToTxn(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		if denied := h.authorizeAddPartitions(rc, req); denied != nil {
			resp.Topics = denied
			rc.finish(resp)
			return
		}
		tps := txnPartitions(req.Topics)
		h.cfg.Txn.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, req.Version, func(errs map[log.TopicPartition]error, err error) {
			resp.Topics = addPartitionsResults(req.Topics, errs, err)
			rc.finish(resp)
		})
		return
	}
	if err := h.authorizeCluster(rc, az.ClusterAction); err != nil {
		resp.ErrorCode = ErrorCode(err)
		rc.finish(resp)
		return
	}
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	if len(req.Transactions) == 0 {
		rc.finish(resp)
		return
	}
	var mu sync.Mutex
	left := len(req.Transactions)
	for i := range req.Transactions {
		t := &req.Transactions[i]
		topics := make([]kmsg.AddPartitionsToTxnRequestTopic, len(t.Topics))
		for j, tt := range t.Topics {
			topics[j] = kmsg.AddPartitionsToTxnRequestTopic{Topic: tt.Topic, Partitions: tt.Partitions}
		}
		done := func(errs map[log.TopicPartition]error, err error) {
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = t.TransactionalID
			for _, r := range addPartitionsResults(topics, errs, err) {
				rt.Topics = append(rt.Topics, kmsg.AddPartitionsToTxnResponseTransactionTopic{Topic: r.Topic, Partitions: toTxnPartitionResults(r.Partitions)})
			}
			mu.Lock()
			resp.Transactions[i] = rt
			left--
			last := left == 0
			mu.Unlock()
			if last {
				rc.finish(resp)
			}
		}
		tps := txnPartitions(topics)
		if t.VerifyOnly {
			h.cfg.Txn.VerifyPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps, done)
		} else {
			h.cfg.Txn.AddPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps, req.Version, done)
		}
	}
}

func txnPartitions(topics []kmsg.AddPartitionsToTxnRequestTopic) []log.TopicPartition {
	var tps []log.TopicPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			tps = append(tps, log.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return tps
}

// addPartitionsResults answers every requested partition: its own error
// from errs, else err.
func addPartitionsResults(topics []kmsg.AddPartitionsToTxnRequestTopic, errs map[log.TopicPartition]error, err error) []kmsg.AddPartitionsToTxnResponseTopic {
	out := make([]kmsg.AddPartitionsToTxnResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			e := err
			if errs != nil {
				e = errs[log.TopicPartition{Topic: t.Topic, Partition: p}]
			}
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, ErrorCode(e)
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

func toTxnPartitionResults(ps []kmsg.AddPartitionsToTxnResponseTopicPartition) []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition {
	out := make([]kmsg.AddPartitionsToTxnResponseTransactionTopicPartition, len(ps))
	for i, p := range ps {
		out[i] = kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode}
	}
	return out
}
