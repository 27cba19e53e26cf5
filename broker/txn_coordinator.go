package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/coordinator/txn"
	"github.com/moldau/moldau/log"
)

// The transaction coordinator's wiring: its state in __transaction_state
// through the ReplicaManager, producer id blocks from the active
// controller, markers to partition leaders through the inter-broker
// channel, leadership of its partitions from coordinatorPublisher; and the
// group coordinator's transaction verification (Kafka's
// AddPartitionsToTxnManager) towards it.

// newTxnCoordinator creates the transaction coordinator and the channels
// it sends through.
func (b *Broker) newTxnCoordinator() (*txn.Service, error) {
	cfg := b.cfg
	tcfg := txnConfig(cfg)
	if err := tcfg.Validate(); err != nil {
		return nil, fmt.Errorf("transaction coordinator: %w", err)
	}
	local := func() network.RequestHandler {
		if h := b.handler; h != nil {
			return h
		}
		return nil
	}
	// Kafka's two NetworkClients: the marker channel sends one request
	// at a time per broker; AddPartitionsToTxn requests may each be held
	// back by the coordinator, so they get several connections.
	b.markerChannel = network.NewInterBrokerChannel(cfg.NodeID, cfg.InterBrokerListenerName,
		fmt.Sprintf("broker-%d-txn-marker-sender", cfg.NodeID), 1, b.log, b.loader.Image, local)
	b.addPartitionsChannel = network.NewInterBrokerChannel(cfg.NodeID, cfg.InterBrokerListenerName,
		fmt.Sprintf("broker-%d-add-partitions-to-txn", cfg.NodeID), addPartitionsConnsPerBroker, b.log, b.loader.Image, local)
	b.markerChannel.SetDialer(b.interBrokerDial)
	b.addPartitionsChannel.SetDialer(b.interBrokerDial)
	b.producerIDs = txn.NewProducerIDManager(b.allocateProducerIDs, b.log)
	return txn.NewService(txn.Options{
		Config: tcfg,
		Log:    b.replicas,
		NumPartitions: func() int32 {
			if t, ok := b.loader.Image().Topic(metadata.TransactionStateTopic); ok {
				return int32(len(t.Partitions))
			}
			return cfg.TransactionStateLogNumPartitions
		},
		ProducerIDs:    b.producerIDs,
		Markers:        b.markerChannel,
		Leader:         b.partitionLeader,
		GroupPartition: b.groups.PartitionFor,
		TransactionVersion: func() int16 {
			return b.loader.Image().Features[metadata.TransactionVersionFeature]
		},
		Logger:     b.log,
		Registerer: b.registry,
	}), nil
}

// txnConfig is the transaction coordinator's configuration from the
// broker's.
func txnConfig(c *config.KafkaConfig) txn.Config {
	ms := func(key string) time.Duration { return time.Duration(c.GetInt(key)) * time.Millisecond }
	return txn.Config{
		TransactionalIDExpiration: ms("transactional.id.expiration.ms"),
		MaxTimeout:                ms("transaction.max.timeout.ms"),
		AbortTimedOutInterval:     ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		RemoveExpiredInterval:     ms("transaction.remove.expired.transaction.cleanup.interval.ms"),
		RequestTimeout:            ms("request.timeout.ms"),
		CommitTimeout:             ms("offsets.commit.timeout.ms"),
		LoadBufferBytes:           c.GetInt("transaction.state.log.load.buffer.size"),
		ConcurrentWait:            ms("add.partitions.to.txn.retry.backoff.max.ms"),
	}
}

// txnCoordinatorPublisher tells the transaction coordinator which
// partitions of __transaction_state this broker leads.
func (b *Broker) txnCoordinatorPublisher() metadata.Publisher {
	return &coordinatorPublisher{
		name: "TransactionCoordinator", topic: metadata.TransactionStateTopic, nodeID: b.cfg.NodeID,
		onElection: b.txn.OnElection, onResignation: b.txn.OnResignation,
	}
}

// partitionLeader is a partition's leader in the metadata image (-1 when
// it has none) and whether the partition exists.
func (b *Broker) partitionLeader(tp log.TopicPartition) (int32, bool) {
	t, ok := b.loader.Image().Topic(tp.Topic)
	if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return -1, false
	}
	return t.Partitions[tp.Partition].Leader, true
}

// allocateProducerIDs asks the active controller for a block of n producer
// ids (AllocateProducerIds) and returns the first.
func (b *Broker) allocateProducerIDs(ctx context.Context, n int) (int64, error) {
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, b.lifecycle.Epoch()
	r, err := b.channel.Send(ctx, req)
	if err != nil {
		return -1, apierr.Errorf(kerr.CoordinatorLoadInProgress, "Allocating producer ids from the controller failed: %v", err)
	}
	resp := r.(*kmsg.AllocateProducerIDsResponse)
	if resp.ErrorCode != 0 {
		return -1, kerr.ErrorForCode(resp.ErrorCode)
	}
	if int(resp.ProducerIDLen) != n {
		return -1, fmt.Errorf("the controller handed out %d producer ids, not %d", resp.ProducerIDLen, n)
	}
	return resp.ProducerIDStart, nil
}
