package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
	"github.com/moldau/moldau/log"
)

// The records of __transaction_state, in Kafka's schemas
// (TransactionLogKey and TransactionLogValue, kmsg's TxnMetadataKey and
// TxnMetadataValue): the key is a version (0) and the transactional id; the
// value a version (0, or 1 from transaction.version 1: flexible, with the
// previous and next producer ids and the client's transaction version as
// tagged fields), the producer id and epoch, the timeout, the state id,
// the partitions by topic (null in state Empty), the last update and the
// start timestamps. A null value is a tombstone: the id expired.

const txnKeyVersion int16 = 0

func txnKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = txnKeyVersion, id
	return k.AppendTo(nil)
}

// parseKey returns the transactional id of a key, or ok false for a key
// of another version (Kafka skips those with a warning).
func parseKey(key []byte) (id string, ok bool, err error) {
	if len(key) < 2 {
		return "", false, fmt.Errorf("__transaction_state key of %d bytes", len(key))
	}
	r := kbin.Reader{Src: key}
	if v := r.Int16(); v != txnKeyVersion {
		return "", false, nil
	}
	k := kmsg.NewTxnMetadataKey()
	if err := k.ReadFrom(key); err != nil {
		return "", false, fmt.Errorf("TransactionLogKey: %w", err)
	}
	return k.TransactionalID, true, nil
}

// valueVersion is the value version a transaction.version level writes
// (Kafka's transactionLogValueVersion).
func valueVersion(tv int16) int16 {
	if tv >= tv1 {
		return 1
	}
	return 0
}

// txnRecord is the record of a transition, written at the cluster's
// transaction.version.
func txnRecord(id string, t transit, clusterTV int16) runtime.Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion(clusterTV)
	v.ProducerID, v.ProducerEpoch = t.producerID, t.producerEpoch
	v.TimeoutMillis = t.timeoutMs
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp, v.StartTimestamp = t.lastUpdate, t.startTimestamp
	v.PreviousProducerID, v.NextProducerID = t.prevProducerID, t.nextProducerID
	v.ClientTransactionVersion = t.clientTV
	if t.state != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range t.partitions {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
	}
	return runtime.Record{Key: txnKey(id), Value: v.AppendTo(nil)}
}

func tombstone(id string) runtime.Record { return runtime.Record{Key: txnKey(id)} }

// parseValue decodes a value into the transition it stored.
func parseValue(value []byte) (transit, error) {
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(value); err != nil {
		return transit{}, fmt.Errorf("TransactionLogValue: %w", err)
	}
	if v.Version < 0 || v.Version > 1 {
		return transit{}, fmt.Errorf("unknown TransactionLogValue version %d", v.Version)
	}
	st := State(v.State)
	if st < Empty || st > PrepareEpochFence {
		return transit{}, fmt.Errorf("unknown transaction state id %d", v.State)
	}
	t := transit{
		producerID: v.ProducerID, producerEpoch: v.ProducerEpoch, lastProducerEpoch: noProducerEpoch,
		prevProducerID: noProducerID, nextProducerID: noProducerID,
		timeoutMs: v.TimeoutMillis, state: st, lastUpdate: v.LastUpdateTimestamp, startTimestamp: v.StartTimestamp,
	}
	if v.Version >= 1 {
		t.prevProducerID, t.nextProducerID, t.clientTV = v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion
	}
	for _, tt := range v.Topics {
		for _, p := range tt.Partitions {
			t.partitions = append(t.partitions, log.TopicPartition{Topic: tt.Topic, Partition: p})
		}
	}
	sortPartitions(t.partitions)
	return t, nil
}
