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
	"github.com/moldau/moldau/coordinator/txn"
	"github.com/moldau/moldau/log"
)

// The transaction coordinator's wiring: its state in __transaction_state
// through the ReplicaManager, producer id blocks from the active
// controller, markers to partition leaders through the inter-broker
// channel, leadership of its partitions from coordinatorPublisher; and the
// group coordinator's transaction verification (Kafka's
// AddPartitionsToTxnManager) towards it.

// TransactionVersionFeature is Kafka's transaction.version feature.
const TransactionVersionFeature = "transaction.version"

// newTxnCoordinator creates the transaction coordinator and the channels
// it sends through.
func (b *Broker) newTxnCoordinator() (*txn.Service, error) {
	cfg := b.cfg
	tcfg := txnConfig(cfg)
	if err := tcfg.Validate(); err != nil {
		return nil, fmt.Errorf("transaction coordinator: %w", err)
	}
	b.interBroker = newInterBrokerChannel(cfg.NodeID, cfg.InterBrokerListenerName, b.log, b.loader.Image, func() RequestHandler {
		if h := b.handler; h != nil {
			return h
		}
		return nil
	})
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
		Markers:        b.interBroker,
		Leader:         b.partitionLeader,
		GroupPartition: b.groups.PartitionFor,
		TransactionVersion: func() int16 {
			return b.loader.Image().Features[TransactionVersionFeature]
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

// verifyTransaction is the group coordinator's TxnVerifier (Kafka's
// AddPartitionsToTxnManager for a TxnOffsetCommit): it asks the
// transaction coordinator of transactionalID whether the group's partition
// of __consumer_offsets is in the producer's transaction (v4) or to add it
// (v5+, KIP-890 part 2), in-process when this broker coordinates the
// transaction and with AddPartitionsToTxn v4/v5 otherwise. Errors are
// mapped as Kafka's ReplicaManager maps them for the group coordinator:
// a coordinator that cannot answer now is NOT_ENOUGH_REPLICAS (which the
// group coordinator answers COORDINATOR_NOT_AVAILABLE, so the producer
// retries), PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, and
// TRANSACTION_ABORTABLE is INVALID_TXN_STATE for clients older than v4.
// transaction.partition.verification.enable=false skips all this.
func (b *Broker) verifyTransaction(transactionalID string, producerID int64, producerEpoch int16, partition int32, version int16, done func(error)) {
	add := version >= 5
	if !add && !b.cfg.GetBool("transaction.partition.verification.enable") {
		done(nil)
		return
	}
	tp := log.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: partition}
	finish := func(err error) { done(mapVerificationError(err, version)) }
	coordinator, ok := b.partitionLeader(log.TopicPartition{Topic: metadata.TransactionStateTopic, Partition: b.txn.PartitionFor(transactionalID)})
	switch {
	case !ok || coordinator < 0:
		finish(apierr.Errorf(kerr.CoordinatorNotAvailable, "The transaction coordinator of %s is not available.", transactionalID))
	case coordinator == b.cfg.NodeID:
		one := func(errs map[log.TopicPartition]error, err error) {
			if errs != nil {
				err = errs[tp]
			}
			finish(err)
		}
		if add {
			b.txn.AddPartitions(transactionalID, producerID, producerEpoch, []log.TopicPartition{tp}, 5, one)
		} else {
			b.txn.VerifyPartitions(transactionalID, producerID, producerEpoch, []log.TopicPartition{tp}, one)
		}
	default:
		if !b.g.Go(func(stop <-chan struct{}) {
			finish(b.verifyRemotely(stop, coordinator, transactionalID, producerID, producerEpoch, tp, add))
		}) {
			finish(apierr.Errorf(kerr.CoordinatorNotAvailable, "The broker is shutting down."))
		}
	}
}

// verifyRemotely sends one AddPartitionsToTxn v4 (verify) or v5 (add) to
// the transaction coordinator's broker.
func (b *Broker) verifyRemotely(stop <-chan struct{}, coordinator int32, transactionalID string, producerID int64, producerEpoch int16, tp log.TopicPartition, add bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(b.cfg.GetInt("request.timeout.ms"))*time.Millisecond)
	defer cancel()
	go func() { // ends with ctx, at the latest when this returns
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if add {
		req.Version = 5
	}
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = transactionalID, producerID, producerEpoch, !add
	t.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: tp.Topic, Partitions: []int32{tp.Partition}}}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{t}
	r, err := b.interBroker.Send(ctx, coordinator, req)
	if err != nil {
		return apierr.Errorf(kerr.NetworkException, "Verifying the transaction with broker %d failed: %v", coordinator, err)
	}
	resp := r.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, rt := range resp.Transactions {
		for _, topic := range rt.Topics {
			for _, p := range topic.Partitions {
				if topic.Topic == tp.Topic && p.Partition == tp.Partition {
					return kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	return apierr.Errorf(kerr.NetworkException, "Broker %d did not answer for %s.", coordinator, tp)
}

// mapVerificationError is what a failed verification becomes for the
// group coordinator (see verifyTransaction).
func mapVerificationError(err error, version int16) error {
	if err == nil {
		return nil
	}
	switch apierr.CodeOf(err) {
	case kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.ConcurrentTransactions, kerr.NetworkException:
		return apierr.Errorf(kerr.NotEnoughReplicas, "The transaction could not be verified now: %v", err)
	case kerr.ProducerFenced:
		return apierr.Errorf(kerr.InvalidProducerEpoch, "%v", err)
	case kerr.TransactionAbortable:
		if version < 4 {
			return apierr.Errorf(kerr.InvalidTxnState, "The partition is not part of the transaction: %v", err)
		}
	}
	return err
}
