package txn

import (
	"bytes"
	"encoding/binary"
	"github.com/moldau/moldau/log"
	"testing"
)

// TestRecordLayout checks the record bytes against Kafka's
// TransactionLogKey v0 and TransactionLogValue v0 layout, built by hand.
func TestRecordLayout(t *testing.T) {
	tr := transit{
		producerID: 7, prevProducerID: -1, nextProducerID: -1, producerEpoch: 3, timeoutMs: 60000,
		state: Ongoing, partitions: []log.TopicPartition{tp("a", 0), tp("a", 2), tp("b", 1)},
		startTimestamp: 1000, lastUpdate: 2000,
	}
	rec := txnRecord("tx", tr, 0)
	be := binary.BigEndian
	var key []byte
	key = be.AppendUint16(key, 0)
	key = be.AppendUint16(key, 2)
	key = append(key, "tx"...)
	if !bytes.Equal(rec.Key, key) {
		t.Fatalf("key %x, want %x", rec.Key, key)
	}
	var v []byte
	v = be.AppendUint16(v, 0)
	v = be.AppendUint64(v, 7)
	v = be.AppendUint16(v, 3)
	v = be.AppendUint32(v, 60000)
	v = append(v, byte(Ongoing))
	v = be.AppendUint32(v, 2) // topics
	v = be.AppendUint16(v, 1)
	v = append(v, 'a')
	v = be.AppendUint32(v, 2)
	v = be.AppendUint32(v, 0)
	v = be.AppendUint32(v, 2)
	v = be.AppendUint16(v, 1)
	v = append(v, 'b')
	v = be.AppendUint32(v, 1)
	v = be.AppendUint32(v, 1)
	v = be.AppendUint64(v, 2000)
	v = be.AppendUint64(v, 1000)
	if !bytes.Equal(rec.Value, v) {
		t.Fatalf("value\n %x\nwant\n %x", rec.Value, v)
	}
	// Empty has null partitions.
	empty := txnRecord("tx", transit{producerID: 7, producerEpoch: 0, state: Empty, startTimestamp: -1}, 0)
	if off := 2 + 8 + 2 + 4 + 1; be.Uint32(empty.Value[off:]) != 0xffffffff {
		t.Fatalf("Empty's partitions are not null: %x", empty.Value)
	}

	// v1 (transaction.version 1+) round-trips the tagged fields.
	tr.prevProducerID, tr.nextProducerID, tr.clientTV = 5, 9, 2
	got, err := parseValue(txnRecord("tx", tr, 2).Value)
	if err != nil {
		t.Fatal(err)
	}
	if got.prevProducerID != 5 || got.nextProducerID != 9 || got.clientTV != 2 || len(got.partitions) != 3 || got.state != Ongoing {
		t.Fatalf("v1 round trip: %+v", got)
	}
	// v0 loses them, as in Kafka.
	got, _ = parseValue(txnRecord("tx", tr, 0).Value)
	if got.prevProducerID != -1 || got.clientTV != 0 {
		t.Fatalf("v0 round trip: %+v", got)
	}
	id, ok, err := parseKey(rec.Key)
	if err != nil || !ok || id != "tx" {
		t.Fatalf("parseKey: %q %v %v", id, ok, err)
	}
	if _, ok, _ := parseKey([]byte{0, 1, 0, 0}); ok {
		t.Fatal("a key of another version was taken")
	}
}
