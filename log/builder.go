package log

import (
	"encoding/binary"
	"fmt"
)

// BatchBuilder builds one magic-v2 record batch in Kafka's layout (see
// batch.go), as Kafka's MemoryRecordsBuilder does: the coordinators write
// their records with it, the log cleaner rewrites retained records with it,
// the metadata quorum frames its entries with it, and tests build producer
// batches with it. The zero value is not usable; start with NewBatchBuilder.
//
// A builder is not safe for concurrent use. It allocates its buffer once
// (grown as records are added); Reset reuses it.
type BatchBuilder struct {
	// Header fields. BaseOffset is 0 for batches a producer sends (the
	// log assigns offsets); ProducerID -1 with epoch and sequence -1 means
	// not idempotent.
	BaseOffset           int64
	PartitionLeaderEpoch int32
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	Transactional        bool
	Control              bool
	LogAppendTime        bool // timestamp type: LogAppendTime instead of CreateTime
	// DeleteHorizonMs, when >= 0, is stored as the base timestamp with the
	// delete-horizon attribute set (KIP-534), as the log cleaner writes
	// batches holding tombstones or transaction markers; the records'
	// timestamp deltas are then relative to it. Set it before adding
	// records.
	DeleteHorizonMs int64
	Codec           int // CodecNone, CodecGzip, ...

	records    []byte // encoded records, uncompressed
	n          int32
	baseTs     int64
	maxTs      int64
	maxTsSet   bool  // SetMaxTimestamp was called
	lastOffset int32 // offset delta of the last record
}

// NewBatchBuilder returns a builder for a batch at baseOffset with no
// producer, CreateTime timestamps and no compression.
func NewBatchBuilder(baseOffset int64) *BatchBuilder {
	b := &BatchBuilder{}
	b.Reset(baseOffset)
	return b
}

// Reset empties the builder for a new batch at baseOffset, keeping its
// buffer, and sets every header field back to NewBatchBuilder's.
func (b *BatchBuilder) Reset(baseOffset int64) {
	*b = BatchBuilder{
		BaseOffset:           baseOffset,
		PartitionLeaderEpoch: -1,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		DeleteHorizonMs:      -1,
		records:              b.records[:0],
	}
}

// NumRecords is the number of records added.
func (b *BatchBuilder) NumRecords() int { return int(b.n) }

// EstimatedSize is the batch's size if built uncompressed now.
func (b *BatchBuilder) EstimatedSize() int { return BatchHeaderSize + len(b.records) }

// Add appends a record with the next offset delta. key or value nil is a
// null key or value (a value of nil is a tombstone). headers are key/value
// pairs (a nil header value is null).
func (b *BatchBuilder) Add(timestampMs int64, key, value []byte, headers ...Header) {
	b.AddWithOffset(b.n, timestampMs, key, value, headers...)
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// AddWithOffset appends a record at an explicit offset delta, which must be
// larger than the last one's (the log cleaner keeps records' offsets, so a
// rewritten batch may have gaps).
func (b *BatchBuilder) AddWithOffset(offsetDelta int32, timestampMs int64, key, value []byte, headers ...Header) {
	if b.n > 0 && offsetDelta <= b.lastOffset {
		panic(fmt.Sprintf("log: BatchBuilder offset delta %d not after %d", offsetDelta, b.lastOffset))
	}
	b.noteTimestamp(timestampMs)
	var hdrs []byte
	for _, h := range headers {
		hdrs = appendVarint(hdrs, int32(len(h.Key)))
		hdrs = append(hdrs, h.Key...)
		hdrs = appendBytesField(hdrs, h.Value)
	}
	r := Record{Key: key, Value: value, NumHeaders: len(headers), Headers: hdrs}
	b.records = appendRecord(b.records, timestampMs-b.baseTs, offsetDelta, &r)
	b.lastOffset = offsetDelta
	b.n++
}

// AddRecord appends a record parsed from another batch (RecordIter),
// keeping its offset delta relative to that batch's base offset srcBase,
// its key, value and headers; its timestamp is srcBaseTs + its delta.
// The builder's BaseOffset must be set to srcBase before the first call.
func (b *BatchBuilder) AddRecord(srcBaseTs int64, r *Record) {
	ts := srcBaseTs + r.TimestampDelta
	if b.n > 0 && r.OffsetDelta <= b.lastOffset {
		panic(fmt.Sprintf("log: BatchBuilder offset delta %d not after %d", r.OffsetDelta, b.lastOffset))
	}
	b.noteTimestamp(ts)
	b.records = appendRecord(b.records, ts-b.baseTs, r.OffsetDelta, r)
	b.lastOffset = r.OffsetDelta
	b.n++
}

// noteTimestamp sets the base timestamp at the first record (the delete
// horizon if there is one, as Kafka's MemoryRecordsBuilder) and tracks the
// max timestamp.
func (b *BatchBuilder) noteTimestamp(ts int64) {
	if b.n == 0 {
		b.baseTs = ts
		if b.DeleteHorizonMs >= 0 {
			b.baseTs = b.DeleteHorizonMs
		}
		if !b.maxTsSet {
			b.maxTs = ts
		}
	} else if ts > b.maxTs && !b.maxTsSet {
		b.maxTs = ts
	}
}

// SetLastOffsetDelta makes the batch claim offsets through delta even when
// its last records were removed (the log cleaner keeps the batch's offset
// range so that producer sequence numbers stay consistent, as Kafka does).
func (b *BatchBuilder) SetLastOffsetDelta(delta int32) {
	if delta < b.lastOffset {
		panic(fmt.Sprintf("log: last offset delta %d before the last record's %d", delta, b.lastOffset))
	}
	b.lastOffset = delta
}

// SetMaxTimestamp overrides the batch's max timestamp: the log cleaner
// keeps the original batch's for LogAppendTime batches and for the empty
// batches it leaves (Kafka's writeEmptyHeader).
func (b *BatchBuilder) SetMaxTimestamp(ts int64) { b.maxTs, b.maxTsSet = ts, true }

// Build returns the encoded batch, CRC included, appended to dst. A batch
// with no records is allowed only with SetLastOffsetDelta (Kafka writes
// such empty batches to keep producer state; see KAFKA-5793).
func (b *BatchBuilder) Build(dst []byte) ([]byte, error) {
	if b.n > 0 && b.DeleteHorizonMs >= 0 && b.baseTs != b.DeleteHorizonMs {
		return dst, fmt.Errorf("log: BatchBuilder.DeleteHorizonMs set after records were added")
	}
	payload := b.records
	if b.Codec != CodecNone && b.n > 0 {
		var err error
		if payload, err = Compress(nil, b.Codec, b.records); err != nil {
			return dst, err
		}
	}
	attrs := int16(b.Codec & AttrCompressionMask)
	if b.LogAppendTime {
		attrs |= AttrTimestampType
	}
	if b.Transactional {
		attrs |= AttrTransactional
	}
	if b.Control {
		attrs |= AttrControl
	}
	baseTs := b.baseTs
	if b.DeleteHorizonMs >= 0 {
		attrs |= AttrDeleteHorizon
		baseTs = b.DeleteHorizonMs
	}
	maxTs := b.maxTs
	if b.n == 0 {
		baseTs, maxTs = -1, -1
		if b.DeleteHorizonMs >= 0 {
			baseTs = b.DeleteHorizonMs
		}
		if b.maxTsSet {
			maxTs = b.maxTs
		}
	}
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	h := dst[start:]
	be := binary.BigEndian
	be.PutUint64(h[offBaseOffset:], uint64(b.BaseOffset))
	be.PutUint32(h[offLength:], uint32(BatchHeaderSize-LogOverhead+len(payload)))
	be.PutUint32(h[offPartitionLeaderEpoch:], uint32(b.PartitionLeaderEpoch))
	h[offMagic] = 2
	be.PutUint16(h[offAttributes:], uint16(attrs))
	be.PutUint32(h[offLastOffsetDelta:], uint32(b.lastOffset))
	be.PutUint64(h[offBaseTimestamp:], uint64(baseTs))
	be.PutUint64(h[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(h[offProducerID:], uint64(b.ProducerID))
	be.PutUint16(h[offProducerEpoch:], uint16(b.ProducerEpoch))
	be.PutUint32(h[offBaseSequence:], uint32(b.BaseSequence))
	be.PutUint32(h[offRecordCount:], uint32(b.n))
	dst = append(dst, payload...)
	be.PutUint32(dst[start+offCRC:], BatchCRC(dst[start:]))
	return dst, nil
}

// Control record types (the key of a control record, Kafka's
// ControlRecordType): version 0, then the type.
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// BuildControlBatch returns a transaction marker batch (COMMIT or ABORT)
// for a producer, as Kafka's MemoryRecords.withEndTransactionMarker
// writes it: one control record whose key is (version 0, type) and whose
// value is (version 0, coordinator epoch).
func BuildControlBatch(baseOffset int64, timestampMs, producerID int64, producerEpoch int16, leaderEpoch int32, typ int16, coordinatorEpoch int32) []byte {
	b := NewBatchBuilder(baseOffset)
	b.PartitionLeaderEpoch = leaderEpoch
	b.ProducerID, b.ProducerEpoch = producerID, producerEpoch
	b.Transactional, b.Control = true, true
	key := []byte{0, 0, byte(uint16(typ) >> 8), byte(typ)}
	value := []byte{0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))
	b.Add(timestampMs, key, value)
	out, _ := b.Build(nil) // uncompressed: cannot fail
	return out
}
