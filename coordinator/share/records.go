package share

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The records of __share_group_state, in Kafka's schemas
// (share-coordinator/src/main/resources/common/message). Every key starts
// with its record type as an int16 (Kafka's coordinator-key apiKey, in the
// place of a key version), then the key's fields at version 0: group id
// (string), topic id (uuid), partition (int32). Values start with their
// version (0) and are flexible:
//
//	ShareSnapshotValue (type 0): SnapshotEpoch int32, StateEpoch int32,
//	  LeaderEpoch int32, StartOffset int64, CreateTimestamp int64,
//	  WriteTimestamp int64, StateBatches [FirstOffset int64, LastOffset
//	  int64, DeliveryState int8, DeliveryCount int16], tag 0
//	  DeliveryCompleteCount int32 (default -1)
//	ShareUpdateValue (type 1): SnapshotEpoch int32, LeaderEpoch int32,
//	  StartOffset int64 (-1: unchanged), StateBatches as above, tag 0
//	  DeliveryCompleteCount int32 (default -1)
//
// A ShareSnapshotKey with a null value is a tombstone: the share-partition
// was deleted. DeliveryCompleteCount (KIP-1226, Kafka 4.2) is a tagged
// field, written only when it is not -1, so a value without it reads as
// Kafka 4.1 wrote it.
const (
	typeShareSnapshot int16 = 0
	typeShareUpdate   int16 = 1

	valueVersion int16 = 0

	tagDeliveryCompleteCount uint32 = 0
)

// shareValue is a decoded ShareSnapshotValue or ShareUpdateValue (Kafka's
// ShareGroupOffset): an update has no state epoch and no timestamps.
type shareValue struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	CreateTimestamp       int64
	WriteTimestamp        int64
	Batches               []StateBatch
}

func appendKey(typ int16, k Key) []byte {
	b := kbin.AppendInt16(make([]byte, 0, 2+2+len(k.GroupID)+16+4), typ)
	b = kbin.AppendString(b, k.GroupID)
	b = kbin.AppendUuid(b, k.TopicID)
	return kbin.AppendInt32(b, k.Partition)
}

// parseKey decodes a key; ok false is a record type this coordinator does
// not know (Kafka's replay ignores those).
func parseKey(key []byte) (typ int16, k Key, ok bool, err error) {
	if len(key) < 2 {
		return 0, k, false, fmt.Errorf("__share_group_state key of %d bytes", len(key))
	}
	r := kbin.Reader{Src: key}
	typ = r.Int16()
	if typ != typeShareSnapshot && typ != typeShareUpdate {
		return typ, k, false, nil
	}
	k.GroupID = r.String()
	k.TopicID = r.Uuid()
	k.Partition = r.Int32()
	if err := r.Complete(); err != nil || len(r.Src) != 0 {
		return typ, k, false, fmt.Errorf("__share_group_state key of type %d: malformed (%d bytes)", typ, len(key))
	}
	return typ, k, true, nil
}

func appendBatches(b []byte, batches []StateBatch) []byte {
	b = kbin.AppendCompactArrayLen(b, len(batches))
	for _, sb := range batches {
		b = kbin.AppendInt64(b, sb.FirstOffset)
		b = kbin.AppendInt64(b, sb.LastOffset)
		b = kbin.AppendInt8(b, sb.DeliveryState)
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return b
}

func appendValueTags(b []byte, deliveryCompleteCount int32) []byte {
	if deliveryCompleteCount == UninitializedDeliveryCompleteCount {
		return kbin.AppendUvarint(b, 0)
	}
	b = kbin.AppendUvarint(b, 1)
	b = kbin.AppendUvarint(b, tagDeliveryCompleteCount)
	b = kbin.AppendUvarint(b, 4)
	return kbin.AppendInt32(b, deliveryCompleteCount)
}

func snapshotRecord(k Key, v shareValue) runtime.Record {
	b := kbin.AppendInt16(make([]byte, 0, 64+len(v.Batches)*20), valueVersion)
	b = kbin.AppendInt32(b, v.SnapshotEpoch)
	b = kbin.AppendInt32(b, v.StateEpoch)
	b = kbin.AppendInt32(b, v.LeaderEpoch)
	b = kbin.AppendInt64(b, v.StartOffset)
	b = kbin.AppendInt64(b, v.CreateTimestamp)
	b = kbin.AppendInt64(b, v.WriteTimestamp)
	b = appendBatches(b, v.Batches)
	b = appendValueTags(b, v.DeliveryCompleteCount)
	return runtime.Record{Key: appendKey(typeShareSnapshot, k), Value: b}
}

func updateRecord(k Key, v shareValue) runtime.Record {
	b := kbin.AppendInt16(make([]byte, 0, 32+len(v.Batches)*20), valueVersion)
	b = kbin.AppendInt32(b, v.SnapshotEpoch)
	b = kbin.AppendInt32(b, v.LeaderEpoch)
	b = kbin.AppendInt64(b, v.StartOffset)
	b = appendBatches(b, v.Batches)
	b = appendValueTags(b, v.DeliveryCompleteCount)
	return runtime.Record{Key: appendKey(typeShareUpdate, k), Value: b}
}

// tombstone deletes a share-partition: a ShareSnapshotKey with no value,
// as Kafka's newShareStateTombstoneRecord writes.
func tombstone(k Key) runtime.Record { return runtime.Record{Key: appendKey(typeShareSnapshot, k)} }

func readBatches(r *kbin.Reader) []StateBatch {
	n := r.CompactArrayLen()
	if n <= 0 || !r.Ok() {
		return nil
	}
	// Each batch is at least 20 bytes: allocate no more than the bytes
	// that remain can hold.
	out := make([]StateBatch, 0, min(int(n), len(r.Src)/20+1))
	for range n {
		sb := StateBatch{FirstOffset: r.Int64(), LastOffset: r.Int64(), DeliveryState: r.Int8(), DeliveryCount: r.Int16()}
		skipTags(r)
		if !r.Ok() {
			return nil
		}
		out = append(out, sb)
	}
	return out
}

func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// readValueTags reads a value's tagged fields: DeliveryCompleteCount, or
// -1 without it; unknown tags are skipped.
func readValueTags(r *kbin.Reader) int32 {
	dcc := UninitializedDeliveryCompleteCount
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		tag, size := r.Uvarint(), int(r.Uvarint())
		field := kbin.Reader{Src: r.Span(size)}
		if tag == tagDeliveryCompleteCount {
			dcc = field.Int32()
		}
	}
	return dcc
}

func parseSnapshotValue(value []byte) (shareValue, error) {
	r := kbin.Reader{Src: value}
	if ver := r.Int16(); ver != valueVersion {
		return shareValue{}, fmt.Errorf("unknown ShareSnapshotValue version %d", ver)
	}
	v := shareValue{SnapshotEpoch: r.Int32(), StateEpoch: r.Int32(), LeaderEpoch: r.Int32(), StartOffset: r.Int64(),
		CreateTimestamp: r.Int64(), WriteTimestamp: r.Int64()}
	v.Batches = readBatches(&r)
	v.DeliveryCompleteCount = readValueTags(&r)
	if err := r.Complete(); err != nil {
		return shareValue{}, fmt.Errorf("ShareSnapshotValue: %w", err)
	}
	return v, nil
}

func parseUpdateValue(value []byte) (shareValue, error) {
	r := kbin.Reader{Src: value}
	if ver := r.Int16(); ver != valueVersion {
		return shareValue{}, fmt.Errorf("unknown ShareUpdateValue version %d", ver)
	}
	v := shareValue{SnapshotEpoch: r.Int32(), LeaderEpoch: r.Int32(), StartOffset: r.Int64()}
	v.Batches = readBatches(&r)
	v.DeliveryCompleteCount = readValueTags(&r)
	if err := r.Complete(); err != nil {
		return shareValue{}, fmt.Errorf("ShareUpdateValue: %w", err)
	}
	return v, nil
}
