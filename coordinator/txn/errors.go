package txn

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
)

func errInvalidRequest(msg string) error { return apierr.Errorf(kerr.InvalidRequest, "%s", msg) }

func errProducerIDMapping(id string, pid int64) error {
	return apierr.Errorf(kerr.InvalidProducerIDMapping, "The producer id %d is not the one of transactional id %s.", pid, id)
}

func errUnknownTransactionalID(id string) error {
	return apierr.Errorf(kerr.InvalidProducerIDMapping, "Transactional id %s is not known to the coordinator.", id)
}

func errProducerFenced(m *txnMetadata, epoch int16) error {
	return apierr.Errorf(kerr.ProducerFenced, "There is a newer producer with the same transactional id %s: epoch %d is not the current epoch %d.", m.id, epoch, m.producerEpoch)
}

func errConcurrent(m *txnMetadata) error {
	return apierr.Errorf(kerr.ConcurrentTransactions, "Transactional id %s is completing a transaction (%s); retry.", m.id, m.state)
}

func errInvalidTxnState(m *txnMetadata, commit bool) error {
	what := "abort"
	if commit {
		what = "commit"
	}
	return apierr.Errorf(kerr.InvalidTxnState, "Transactional id %s is in state %s, which cannot %s.", m.id, m.state, what)
}

// errNoProducerID: the producer id manager has no id at hand (Kafka's
// RPCProducerIdManager answers COORDINATOR_LOAD_IN_PROGRESS while it asks
// the controller for the next block; the client retries).
var errNoProducerID = apierr.Errorf(kerr.CoordinatorLoadInProgress, "The producer id manager is waiting for a block of producer ids from the controller.")

// errParked: the operation waits for a transaction to complete and runs
// again then; it is answered by that run.
var errParked = errors.New("waiting for the transaction to complete")

// operationError maps an operation's failure to what the client gets
// (Kafka's TransactionStateManager.appendTransactionToLog): the log's
// errors become coordinator errors the client retries on.
func operationError(err error) error {
	if err == nil {
		return nil
	}
	var ill errIllegalTransition
	if errors.As(err, &ill) {
		return apierr.Errorf(kerr.UnknownServerError, "%s", ill.msg)
	}
	switch apierr.CodeOf(err) {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return apierr.Errorf(kerr.CoordinatorNotAvailable, "Writing to __transaction_state failed: %v", err)
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return apierr.Errorf(kerr.NotCoordinator, "Writing to __transaction_state failed: %v", err)
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return apierr.Errorf(kerr.UnknownServerError, "Writing to __transaction_state failed: %v", err)
	}
	return err
}
