package kapi

// The transaction coordinator's topic: __transaction_state is created on
// first use through the controller.

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
)

// ensureTransactionStateTopic creates __transaction_state if it does not
// exist, as Kafka's FindCoordinator does through its
// AutoTopicCreationManager: transaction.state.log.num.partitions
// partitions, transaction.state.log.replication.factor replicas (capped by
// the controller to the quorum's size, as for __consumer_offsets),
// compacted, uncompressed, with transaction.state.log.segment.bytes
// segments, unclean leader election off, and min.insync.replicas
// transaction.state.log.min.isr (2) as Kafka sets it, lowered to the
// replication factor where the controller caps that (a single node's
// quorum of one), so a lone broker's transactions are not refused.
func (h *Handler) ensureTransactionStateTopic(ctx context.Context) (*metadata.Topic, error) {
	if t, ok := h.image().Topic(metadata.TransactionStateTopic); ok {
		return t, nil
	}
	configs := map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"unclean.leader.election.enable": "false",
		"segment.bytes":                  strconv.Itoa(int(h.cfg.Broker.GetInt("transaction.state.log.segment.bytes"))),
		"min.insync.replicas":            strconv.Itoa(int(h.transactionStateMinISR())),
	}
	t, err := h.CreateTopic(ctx, metadata.TransactionStateTopic, h.cfg.Broker.TransactionStateLogNumPartitions, h.cfg.Broker.TransactionStateLogReplicationFactor, configs)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		// Created concurrently (another FindCoordinator, or another
		// broker): wait until this broker's metadata has it.
		var t *metadata.Topic
		h.waitForMetadata(ctx, autoCreateTimeout, func(im *metadata.Image) bool {
			t, _ = im.Topic(metadata.TransactionStateTopic)
			return t != nil
		})
		if t != nil {
			return t, nil
		}
	}
	if err != nil {
		h.log.Error("creating the transaction coordinator's topic failed", "topic", metadata.TransactionStateTopic, "err", err)
		return nil, err
	}
	h.log.Info("created the transaction coordinator's topic", "topic", metadata.TransactionStateTopic, "partitions", len(t.Partitions))
	return t, nil
}

// transactionStateMinISR is transaction.state.log.min.isr, at most the
// replication factor __transaction_state gets (its configured one, capped
// to the controller quorum's size as the controller caps it).
func (h *Handler) transactionStateMinISR() int32 {
	minISR := h.cfg.Broker.GetInt("transaction.state.log.min.isr")
	rf := int32(h.cfg.Broker.TransactionStateLogReplicationFactor)
	voters := int32(max(len(h.cfg.Broker.QuorumVoters), 1))
	return min(minISR, rf, voters)
}
