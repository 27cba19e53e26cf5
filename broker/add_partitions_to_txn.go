package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/kapi"
	"github.com/moldau/moldau/log"
)

// Kafka's AddPartitionsToTxnManager: before a partition leader writes a
// transactional batch (a Produce, or the group coordinator's
// TxnOffsetCommit) it asks the producer's transaction coordinator whether
// the partition is part of the ongoing transaction (KIP-890 part 1,
// transaction.partition.verification.enable), or, from Produce v12 and
// TxnOffsetCommit v5 (KIP-890 part 2, transaction.version 2), to add it.
// The coordinator is asked in-process when this broker coordinates the
// transaction, else with AddPartitionsToTxn v4 (verify_only) or v5 over
// the inter-broker channel. A partition whose log already has the
// producer's transaction open at this epoch needs nothing. An add that
// meets a transaction still writing its markers is held back by the
// coordinator until they are written, for at most
// add.partitions.to.txn.retry.backoff.max.ms; answered
// CONCURRENT_TRANSACTIONS before that (a wait of 0, or a coordinator
// that answers at once), it is retried here every
// add.partitions.to.txn.retry.backoff.ms for as long (bounded by
// request.timeout.ms), as Kafka 4 retries the adds of Produce v12 and
// TxnOffsetCommit v5 (KAFKA-18654). When the wait expires a Produce v12
// client is answered CONCURRENT_TRANSACTIONS, as Kafka 4 answers clients
// of transaction version 2; older clients get NOT_ENOUGH_REPLICAS.
//
// The partition's log hands out a VerificationGuard when a produce's
// verification starts, and the append must bring it back: a marker that
// ends the transaction in between retires the guard, so the late append
// fails with INVALID_TXN_STATE instead of opening a transaction the
// coordinator does not know (log/verification.go). The group
// coordinator's TxnOffsetCommit checks the open transaction when it
// arrives, without a guard.

// addPartitionsConnsPerBroker bounds the connections to one transaction
// coordinator that AddPartitionsToTxn requests use at once: the
// coordinator may hold each back for up to
// add.partitions.to.txn.retry.backoff.max.ms, and should not hold up
// another producer's add behind it.
const addPartitionsConnsPerBroker = 8

// addOrVerifyTxn asks the transaction coordinator of transactionalID about
// the partitions in ask (see above) and calls done once with the error of
// each partition that may not be written (nil or empty: all may).
func (b *Broker) addOrVerifyTxn(transactionalID string, producerID int64, producerEpoch int16, ask []log.TopicPartition, add bool, done func(map[log.TopicPartition]error)) {
	if len(ask) == 0 {
		done(nil)
		return
	}
	ms := func(key string) time.Duration { return time.Duration(b.cfg.GetInt(key)) * time.Millisecond }
	// Kafka's retryTimeoutMs: the retries end with the request.
	deadline := time.Now().Add(min(ms("add.partitions.to.txn.retry.backoff.max.ms"), ms("request.timeout.ms")))
	backoff := ms("add.partitions.to.txn.retry.backoff.ms")
	var attempt func()
	attempt = func() {
		b.askTxnCoordinator(transactionalID, producerID, producerEpoch, ask, add, func(errs map[log.TopicPartition]error) {
			if add && anyConcurrent(errs) && time.Now().Before(deadline) {
				if b.g.Go(func(stop <-chan struct{}) {
					t := time.NewTimer(backoff)
					defer t.Stop()
					select {
					case <-t.C:
						attempt()
					case <-stop:
						done(errs)
					}
				}) {
					return
				}
			}
			// The answer may come on the coordinator's shard
			// goroutine, which must not do the caller's work (the
			// append of the produce that waited): as Kafka's
			// wrapAsyncCallback hands it back to a request handler
			// thread, it goes to a goroutine of its own.
			if !b.g.Go(func(<-chan struct{}) { done(errs) }) {
				done(errs)
			}
		})
	}
	attempt()
}

// anyConcurrent: some partition met the previous transaction still writing
// its markers (Kafka retries the whole add then; the partitions already
// added are answered at once).
func anyConcurrent(errs map[log.TopicPartition]error) bool {
	for _, err := range errs {
		if apierr.CodeOf(err) == kerr.ConcurrentTransactions {
			return true
		}
	}
	return false
}

// askTxnCoordinator sends one question to the coordinator and maps its
// answer to an error per partition, nil for the partitions that are fine.
func (b *Broker) askTxnCoordinator(transactionalID string, producerID int64, producerEpoch int16, tps []log.TopicPartition, add bool, done func(map[log.TopicPartition]error)) {
	all := func(err error) {
		errs := make(map[log.TopicPartition]error, len(tps))
		for _, tp := range tps {
			errs[tp] = err
		}
		done(errs)
	}
	coordinator, ok := b.partitionLeader(log.TopicPartition{Topic: metadata.TransactionStateTopic, Partition: b.txn.PartitionFor(transactionalID)})
	switch {
	case !ok || coordinator < 0:
		all(apierr.Errorf(kerr.CoordinatorNotAvailable, "The transaction coordinator of %s is not available.", transactionalID))
	case coordinator == b.cfg.NodeID:
		reply := func(errs map[log.TopicPartition]error, err error) {
			if errs == nil {
				all(err)
				return
			}
			done(errs)
		}
		if add {
			b.txn.AddPartitions(transactionalID, producerID, producerEpoch, tps, 5, reply)
		} else {
			b.txn.VerifyPartitions(transactionalID, producerID, producerEpoch, tps, reply)
		}
	default:
		if !b.g.Go(func(stop <-chan struct{}) {
			done(b.askRemotely(stop, coordinator, transactionalID, producerID, producerEpoch, tps, add))
		}) {
			all(apierr.Errorf(kerr.CoordinatorNotAvailable, "The broker is shutting down."))
		}
	}
}

// askRemotely sends one AddPartitionsToTxn v4 (verify_only) or v5 (add) to
// the transaction coordinator's broker.
func (b *Broker) askRemotely(stop <-chan struct{}, coordinator int32, transactionalID string, producerID int64, producerEpoch int16, tps []log.TopicPartition, add bool) map[log.TopicPartition]error {
	errs := make(map[log.TopicPartition]error, len(tps))
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
	for _, tp := range tps {
		if n := len(t.Topics); n == 0 || t.Topics[n-1].Topic != tp.Topic {
			t.Topics = append(t.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tp.Topic})
		}
		last := &t.Topics[len(t.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{t}
	r, err := b.addPartitionsChannel.Send(ctx, coordinator, req)
	var top error
	switch {
	case err != nil:
		top = apierr.Errorf(kerr.NetworkException, "Asking transaction coordinator %d failed: %v", coordinator, err)
	case r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode != 0:
		top = kerr.ErrorForCode(r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode)
	}
	if top != nil {
		for _, tp := range tps {
			errs[tp] = top
		}
		return errs
	}
	answered := map[log.TopicPartition]bool{}
	for _, rt := range r.(*kmsg.AddPartitionsToTxnResponse).Transactions {
		for _, topic := range rt.Topics {
			for _, p := range topic.Partitions {
				tp := log.TopicPartition{Topic: topic.Topic, Partition: p.Partition}
				answered[tp] = true
				if p.ErrorCode != 0 {
					errs[tp] = kerr.ErrorForCode(p.ErrorCode)
				}
			}
		}
	}
	for _, tp := range tps {
		if !answered[tp] {
			errs[tp] = apierr.Errorf(kerr.NetworkException, "Transaction coordinator %d did not answer for %s.", coordinator, tp)
		}
	}
	return errs
}

// txnErrorFor maps a coordinator's answer to what the writer answers
// (Kafka's AddPartitionsToTxnManager and ReplicaManager): a coordinator
// that cannot answer now is NOT_ENOUGH_REPLICAS, which every producer
// retries, except that CONCURRENT_TRANSACTIONS stays itself for clients
// from concurrentFrom on (Produce v12, transaction version 2: Kafka 4
// answers it as is, the error being common while a commit completes; -1:
// never); PRODUCER_FENCED is INVALID_PRODUCER_EPOCH; and
// TRANSACTION_ABORTABLE is INVALID_TXN_STATE ("Partition was not added to
// the transaction") for clients older than abortableFrom.
func txnErrorFor(err error, version, abortableFrom, concurrentFrom int16) error {
	switch apierr.CodeOf(err) {
	case nil:
		return nil
	case kerr.ConcurrentTransactions:
		if concurrentFrom >= 0 && version >= concurrentFrom {
			return err
		}
		return apierr.Errorf(kerr.NotEnoughReplicas, "The transaction could not be verified now: %v", err)
	case kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.NetworkException:
		return apierr.Errorf(kerr.NotEnoughReplicas, "The transaction could not be verified now: %v", err)
	case kerr.ProducerFenced:
		return apierr.Errorf(kerr.InvalidProducerEpoch, "%v", err)
	case kerr.TransactionAbortable:
		if version < abortableFrom {
			return apierr.Errorf(kerr.InvalidTxnState, "Partition was not added to the transaction")
		}
	}
	return err
}

// verifyTransaction is the group coordinator's TxnVerifier: TxnOffsetCommit
// v5+ adds the group's partition of __consumer_offsets, older versions
// verify it (when transaction.partition.verification.enable is on).
func (b *Broker) verifyTransaction(transactionalID string, producerID int64, producerEpoch int16, partition int32, version int16, done func(error)) {
	add := version >= 5
	if !add && !b.cfg.GetBool("transaction.partition.verification.enable") {
		done(nil)
		return
	}
	tp := log.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: partition}
	var ask []log.TopicPartition
	if p := b.replicas.Partition(tp); p == nil || !p.Log.HasOngoingTransaction(producerID, producerEpoch) {
		ask = append(ask, tp)
	}
	b.addOrVerifyTxn(transactionalID, producerID, producerEpoch, ask, add, func(errs map[log.TopicPartition]error) {
		done(txnErrorFor(errs[tp], version, 4, -1))
	})
}

// verifyProduce is kapi's hook for transactional produce requests: Produce
// v12+ adds the partitions to the transaction, older versions verify them
// (when transaction.partition.verification.enable is on). Each partition's
// log gives the guard its append brings; where the producer's
// transaction is open already, nothing is asked.
func (b *Broker) verifyProduce(transactionalID string, producerID int64, producerEpoch int16, parts []kapi.TxnPartition, version int16, done func(kapi.TxnVerification)) {
	add := version >= 12
	if !add && !b.cfg.GetBool("transaction.partition.verification.enable") {
		done(kapi.TxnVerification{})
		return
	}
	v := kapi.TxnVerification{Guards: make(map[log.TopicPartition]log.VerificationGuard, len(parts)), Refused: map[log.TopicPartition]error{}}
	b.verifyProduceAttempt(transactionalID, producerID, producerEpoch, parts, version, v, true, done)
}

// verifyProduceAttempt takes the guards of parts and asks the coordinator.
// An add the coordinator held back until the previous transaction's
// markers were written comes back with its guard retired by those
// markers; its "yes" may predate them, so with again the partitions whose
// guard was retired are asked once more under fresh guards (Kafka's
// broker retries such an add after CONCURRENT_TRANSACTIONS, with a new
// guard). Under transaction version 2 the epoch tells transactions apart:
// if the marker ended the very transaction the produce belongs to, the
// second answer is a fenced epoch. The classic protocol's verify-only
// check is not repeated: there the client adds its partitions after the
// previous markers, so a retired guard means the transaction ended.
func (b *Broker) verifyProduceAttempt(transactionalID string, producerID int64, producerEpoch int16, parts []kapi.TxnPartition, version int16, v kapi.TxnVerification, again bool, done func(kapi.TxnVerification)) {
	add := version >= 12
	var ask []log.TopicPartition  // the partitions whose guard is not the sentinel
	var asked []kapi.TxnPartition // the same, as given
	for _, p := range parts {
		g, err := b.replicas.MaybeStartTransactionVerification(p.TopicPartition, producerID, p.FirstSequence, producerEpoch)
		if err != nil {
			delete(v.Guards, p.TopicPartition)
			continue // not the leader, or offline: the append says so
		}
		v.Guards[p.TopicPartition] = g
		if g != log.SentinelGuard {
			ask, asked = append(ask, p.TopicPartition), append(asked, p)
		}
	}
	b.addOrVerifyTxn(transactionalID, producerID, producerEpoch, ask, add, func(errs map[log.TopicPartition]error) {
		var retry []kapi.TxnPartition
		for i, tp := range ask {
			err := txnErrorFor(errs[tp], version, 11, 12)
			switch {
			case err != nil:
				v.Refused[tp] = err
				if code := apierr.CodeOf(err); code == nil || !code.Retriable {
					b.replicas.AbandonTransactionVerification(tp, producerID, v.Guards[tp])
				}
				delete(v.Guards, tp)
			case add && again && !b.replicas.TransactionVerificationCurrent(tp, producerID, v.Guards[tp]):
				retry = append(retry, asked[i])
			}
		}
		if len(retry) > 0 {
			b.verifyProduceAttempt(transactionalID, producerID, producerEpoch, retry, version, v, false, done)
			return
		}
		done(v)
	})
}
