package share

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The key bytes are Kafka's: the record type as an int16, then group id,
// topic id and partition.
func TestKeyBytes(t *testing.T) {
	k := Key{GroupID: "g1", TopicID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Partition: 7}
	want := []byte{0, 1, 0, 2, 'g', '1', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 7}
	if got := appendKey(typeShareUpdate, k); !bytes.Equal(got, want) {
		t.Fatalf("key %x, want %x", got, want)
	}
	typ, got, ok, err := parseKey(want)
	if err != nil || !ok || typ != typeShareUpdate || got != k {
		t.Fatalf("parseKey: %d %+v %v %v", typ, got, ok, err)
	}
	if _, _, ok, err := parseKey([]byte{0, 9, 1}); ok || err != nil {
		t.Fatalf("unknown type: ok %v err %v, want ignored", ok, err)
	}
	if _, _, _, err := parseKey(append(want, 0)); err == nil {
		t.Fatal("trailing bytes accepted")
	}
}

// Values round-trip; the delivery-complete count is a tagged field,
// absent when -1, and unknown tags are skipped.
func TestValueRoundTrip(t *testing.T) {
	k := Key{GroupID: "g", TopicID: topicA, Partition: 1}
	batches := []StateBatch{b(1, 5, DeliveryAcknowledged, 1), b(6, 9, DeliveryArchived, 5)}
	for _, dcc := range []int32{-1, 0, 42} {
		snap := shareValue{SnapshotEpoch: 3, StateEpoch: 4, LeaderEpoch: 5, StartOffset: 1, DeliveryCompleteCount: dcc,
			CreateTimestamp: 1000, WriteTimestamp: 2000, Batches: batches}
		r := snapshotRecord(k, snap)
		got, err := parseSnapshotValue(r.Value)
		if err != nil || !reflect.DeepEqual(got, snap) {
			t.Fatalf("snapshot %+v -> %+v, %v", snap, got, err)
		}
		upd := shareValue{SnapshotEpoch: 3, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: dcc, Batches: batches}
		r = updateRecord(k, upd)
		if got, err = parseUpdateValue(r.Value); err != nil || !reflect.DeepEqual(got, upd) {
			t.Fatalf("update %+v -> %+v, %v", upd, got, err)
		}
		if dcc == -1 && r.Value[len(r.Value)-1] != 0 {
			t.Fatalf("no tagged fields expected when the count is -1: %x", r.Value)
		}
	}
	// ShareUpdateValue v0 as Kafka 4.1 writes it, with an unknown tag 5.
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendInt32(v, 2)
	v = kbin.AppendInt32(v, 7)
	v = kbin.AppendInt64(v, 10)
	v = appendBatches(v, batches[:1])
	v = append(v, 1, 5, 2, 0xff, 0xff)
	got, err := parseUpdateValue(v)
	want := shareValue{SnapshotEpoch: 2, LeaderEpoch: 7, StartOffset: 10, DeliveryCompleteCount: -1, Batches: batches[:1]}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Kafka 4.1 value: %+v, %v", got, err)
	}
	if _, err := parseUpdateValue(v[:len(v)-3]); err == nil {
		t.Fatal("a truncated value was accepted")
	}
	if r := tombstone(k); r.Value != nil || !bytes.Equal(r.Key, appendKey(typeShareSnapshot, k)) {
		t.Fatalf("tombstone %+v", r)
	}
}
