package replica

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log"
)

// TxnMarker is one marker of a WriteTxnMarkers request (Kafka's
// TxnMarkerEntry): the transaction coordinator ends a producer's
// transaction on these partitions.
type TxnMarker struct {
	ProducerID    int64
	ProducerEpoch int16
	// Commit: a COMMIT marker; else ABORT.
	Commit bool
	// CoordinatorEpoch is the epoch of the coordinator's
	// __transaction_state partition; an older one than a partition saw
	// is TRANSACTION_COORDINATOR_FENCED.
	CoordinatorEpoch int32
	// TransactionVersion is the marker's transaction version
	// (WriteTxnMarkers v2, KIP-1228): from 2 the epoch must be newer
	// than the producer's. 0 before v2.
	TransactionVersion int16
	Partitions         []TopicPartition
}

// TxnMarkerResult is one partition's outcome.
type TxnMarkerResult struct {
	TopicPartition
	Err error
}

// WriteTxnMarkers appends the marker to each of its partitions as their
// leader, with Kafka's AppendOrigin.COORDINATOR (internal topics allowed,
// control batches accepted, producer and coordinator epochs checked) and
// acks=all, and calls done once every append committed or timeout passed
// (KafkaApis.handleWriteTxnMarkersRequest for one marker). A partition
// without a local log is UNKNOWN_TOPIC_OR_PARTITION (Kafka's getMagic
// finds no log); one whose log is here but not led here is
// NOT_LEADER_OR_FOLLOWER; a stale producer epoch is
// INVALID_PRODUCER_EPOCH; a stale coordinator epoch
// TRANSACTION_COORDINATOR_FENCED. done may run before this returns, or
// on another goroutine.
func (m *Manager) WriteTxnMarkers(timeout time.Duration, mk TxnMarker, now time.Time, done func([]TxnMarkerResult)) {
	results := make([]TxnMarkerResult, len(mk.Partitions))
	typ := log.ControlAbort
	if mk.Commit {
		typ = log.ControlCommit
	}
	var entries []ProduceEntry
	var idx []int // entries[i] answers results[idx[i]]
	for i, tp := range mk.Partitions {
		results[i].TopicPartition = tp
		if m.Partition(tp) == nil {
			results[i].Err = fmt.Errorf("%w: no log for %s on this broker", kerr.UnknownTopicOrPartition, tp)
			continue
		}
		// The log sets the leader epoch when it assigns the offset.
		rec := log.BuildControlBatch(0, now.UnixMilli(), mk.ProducerID, mk.ProducerEpoch, -1, typ, mk.CoordinatorEpoch)
		entries = append(entries, ProduceEntry{TopicPartition: tp, Records: rec})
		idx = append(idx, i)
	}
	if len(entries) == 0 {
		done(results)
		return
	}
	opts := log.AppendOptions{Origin: log.AppendOriginCoordinator, TransactionVersion: mk.TransactionVersion}
	m.appendRecords(timeout, -1, opts, entries, func(rs []ProduceResult) {
		for i, r := range rs {
			results[idx[i]].Err = r.Err
		}
		done(results)
	})
}

// ActiveProducers returns a hosted partition's producers (Kafka's
// Partition.activeProducerState, for DescribeProducers). The partition
// need not be led here: a follower answers from its own log, as in
// Kafka. Not hosted here: NOT_LEADER_OR_FOLLOWER if the cluster has it,
// else UNKNOWN_TOPIC_OR_PARTITION.
func (m *Manager) ActiveProducers(tp TopicPartition) ([]log.ProducerState, error) {
	if p := m.Partition(tp); p != nil {
		return p.Log.ActiveProducers(), nil
	}
	_, err := m.getPartition(tp)
	if err == nil {
		err = fmt.Errorf("%w: %s", kerr.NotLeaderForPartition, tp)
	}
	return nil, err
}
