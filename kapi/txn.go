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
// the controller to the brokers registered, as for __consumer_offsets),
// compacted, uncompressed, with transaction.state.log.segment.bytes
// segments and unclean leader election off. Kafka also sets the topic's
// min.insync.replicas to transaction.state.log.min.isr (2), which a
// replication factor capped to 1 could never meet; Moldau leaves the
// broker's default until partitions are replicated.
func (h *Handler) ensureTransactionStateTopic(ctx context.Context) (*metadata.Topic, error) {
	if t, ok := h.image().Topic(metadata.TransactionStateTopic); ok {
		return t, nil
	}
	configs := map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"unclean.leader.election.enable": "false",
		"segment.bytes":                  strconv.Itoa(int(h.cfg.Broker.GetInt("transaction.state.log.segment.bytes"))),
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
