package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/moldau/moldau/broker/uuid"
)

// The record values of __remote_log_metadata, as Kafka's
// RemoteLogMetadataSerde writes them: Kafka's AbstractApiMessageSerde frame,
// the api key and the version each as an unsigned varint, then the message
// body in its flexible (compact) encoding, every struct ending in a tagged
// field section. We write version 0 and read 0 and 1. Decoding bounds every
// length by the remaining input, so a corrupt or hostile value returns an
// error and never allocates more than its own size.
//
// Field order, CustomMetadata (compact nullable bytes, after
// SegmentSizeInBytes, and before the state in the update record) and
// TxnIndexEmpty as tagged field 0 are as Kafka's schemas
// (storage/src/main/resources/message/RemoteLogSegmentMetadata*.json);
// a byte comparison with records a Kafka broker wrote is still to do.
const (
	apiKeySegmentMetadata       = 0 // RemoteLogSegmentMetadataRecord
	apiKeySegmentMetadataUpdate = 1 // RemoteLogSegmentMetadataUpdateRecord
	apiKeyPartitionDelete       = 2 // RemotePartitionDeleteMetadataRecord
	apiKeySnapshot              = 3 // RemoteLogSegmentMetadataSnapshotRecord (not decoded)
	// tagTxnIndexEmpty is RemoteLogSegmentMetadataRecord's TxnIndexEmpty,
	// a tagged field of the top-level struct.
	tagTxnIndexEmpty = 0
)

// ErrCorruptRemoteLogMetadata: a value of __remote_log_metadata that does
// not decode.
var ErrCorruptRemoteLogMetadata = errors.New("corrupt remote log metadata record")

// EncodeRemoteLogMetadata returns the record value Kafka writes for v, one
// of *RemoteLogSegmentMetadata, *RemoteLogSegmentMetadataUpdate or
// *RemotePartitionDeleteMetadata.
func EncodeRemoteLogMetadata(v any) ([]byte, error) {
	var w metaWriter
	switch m := v.(type) {
	case *RemoteLogSegmentMetadata:
		w.frame(apiKeySegmentMetadata)
		w.segmentID(m.ID)
		w.i64(m.StartOffset)
		w.i64(m.EndOffset)
		w.i32(m.BrokerID)
		w.i64(m.MaxTimestampMs)
		w.i64(m.EventTimestampMs)
		epochs := m.Epochs()
		w.uvarint(uint64(len(epochs)) + 1)
		for _, e := range epochs {
			w.i32(e)
			w.i64(m.SegmentLeaderEpochs[e])
			w.uvarint(0)
		}
		w.i32(m.SegmentSizeInBytes)
		w.nullableBytes(m.CustomMetadata)
		w.i8(int8(m.State))
		if m.TxnIdxEmpty {
			// one tagged field: tag, size, a bool
			w.uvarint(1)
			w.uvarint(tagTxnIndexEmpty)
			w.uvarint(1)
			w.i8(1)
		} else {
			w.uvarint(0)
		}
	case *RemoteLogSegmentMetadataUpdate:
		w.frame(apiKeySegmentMetadataUpdate)
		w.segmentID(m.ID)
		w.i32(m.BrokerID)
		w.i64(m.EventTimestampMs)
		w.nullableBytes(m.CustomMetadata)
		w.i8(int8(m.State))
		w.uvarint(0)
	case *RemotePartitionDeleteMetadata:
		w.frame(apiKeyPartitionDelete)
		w.topicIDPartition(m.TopicIdPartition)
		w.i32(m.BrokerID)
		w.i64(m.EventTimestampMs)
		w.i8(int8(m.State))
		w.uvarint(0)
	default:
		return nil, fmt.Errorf("encode remote log metadata: unsupported type %T", v)
	}
	return w.b, nil
}

// DecodeRemoteLogMetadata decodes a record value of __remote_log_metadata
// into *RemoteLogSegmentMetadata, *RemoteLogSegmentMetadataUpdate or
// *RemotePartitionDeleteMetadata. Errors wrap ErrCorruptRemoteLogMetadata;
// snapshot records (api key 3) are refused.
func DecodeRemoteLogMetadata(b []byte) (any, error) {
	r := metaReader{b: b}
	key := r.uvarint()
	version := r.uvarint()
	if r.err != nil {
		return nil, r.fail("frame")
	}
	// Version 1 of the segment and update records (Kafka 4.2+) adds
	// tagged fields only (BrokerLeaderEpoch, and the update's EndOffset),
	// which are skipped.
	if version > 1 || version == 1 && key != apiKeySegmentMetadata && key != apiKeySegmentMetadataUpdate {
		return nil, fmt.Errorf("%w: api key %d version %d unsupported", ErrCorruptRemoteLogMetadata, key, version)
	}
	var v any
	switch key {
	case apiKeySegmentMetadata:
		v = r.segmentMetadata()
	case apiKeySegmentMetadataUpdate:
		u := &RemoteLogSegmentMetadataUpdate{ID: r.segmentID()}
		u.BrokerID = r.i32()
		u.EventTimestampMs = r.i64()
		u.CustomMetadata = r.nullableBytes()
		u.State = RemoteLogSegmentState(r.i8())
		r.skipTags(nil)
		v = u
	case apiKeyPartitionDelete:
		d := &RemotePartitionDeleteMetadata{TopicIdPartition: r.topicIDPartition()}
		d.BrokerID = r.i32()
		d.EventTimestampMs = r.i64()
		d.State = RemotePartitionDeleteState(r.i8())
		r.skipTags(nil)
		v = d
	default:
		return nil, fmt.Errorf("%w: api key %d unsupported", ErrCorruptRemoteLogMetadata, key)
	}
	if r.err != nil {
		return nil, r.fail(fmt.Sprintf("api key %d", key))
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorruptRemoteLogMetadata, len(r.b))
	}
	return v, nil
}

// metaWriter appends the flexible encoding's primitives.
type metaWriter struct{ b []byte }

func (w *metaWriter) frame(apiKey uint64) { w.uvarint(apiKey); w.uvarint(0) }
func (w *metaWriter) uvarint(v uint64)    { w.b = binary.AppendUvarint(w.b, v) }
func (w *metaWriter) i8(v int8)           { w.b = append(w.b, byte(v)) }
func (w *metaWriter) i32(v int32)         { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *metaWriter) i64(v int64)         { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *metaWriter) uuid(u uuid.UUID)    { w.b = append(w.b, u[:]...) }

func (w *metaWriter) compactString(s string) {
	w.uvarint(uint64(len(s)) + 1)
	w.b = append(w.b, s...)
}

// nullableBytes writes COMPACT_NULLABLE_BYTES: 0 for null, else length+1.
func (w *metaWriter) nullableBytes(p []byte) {
	if p == nil {
		w.uvarint(0)
		return
	}
	w.uvarint(uint64(len(p)) + 1)
	w.b = append(w.b, p...)
}

// topicIDPartition writes TopicIdPartitionEntry: Name, Id, Partition, tags.
func (w *metaWriter) topicIDPartition(tp TopicIdPartition) {
	w.compactString(tp.Topic)
	w.uuid(tp.TopicID)
	w.i32(tp.Partition)
	w.uvarint(0)
}

// segmentID writes RemoteLogSegmentIdEntry: TopicIdPartition, Id, tags.
func (w *metaWriter) segmentID(id RemoteLogSegmentId) {
	w.topicIDPartition(id.TopicIdPartition)
	w.uuid(id.ID)
	w.uvarint(0)
}

// metaReader consumes the flexible encoding; the first failure sticks in
// err and every later read returns zero values.
type metaReader struct {
	b   []byte
	err error
}

func (r *metaReader) fail(what string) error {
	return fmt.Errorf("%w: %s: %v", ErrCorruptRemoteLogMetadata, what, r.err)
}

func (r *metaReader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("need %d bytes, %d left", n, len(r.b))
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

// uvarint reads an unsigned varint of at most 5 bytes (Kafka's
// readUnsignedVarint is 32-bit).
func (r *metaReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n > 5 || v > 0xffffffff {
		r.err = errors.New("bad unsigned varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *metaReader) i8() int8 {
	p := r.take(1)
	if p == nil {
		return 0
	}
	return int8(p[0])
}

func (r *metaReader) i32() int32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (r *metaReader) i64() int64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (r *metaReader) uuid() (u uuid.UUID) {
	copy(u[:], r.take(16))
	return u
}

func (r *metaReader) compactString() string {
	n := r.uvarint()
	if r.err == nil && n == 0 {
		r.err = errors.New("null non-nullable string")
	}
	if r.err != nil {
		return ""
	}
	if n-1 > 0x7fff {
		r.err = fmt.Errorf("string length %d", n-1)
		return ""
	}
	return string(r.take(n - 1))
}

func (r *metaReader) nullableBytes() []byte {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	p := r.take(n - 1)
	if p == nil {
		return nil
	}
	return slices.Clone(p)
}

// skipTags reads a tagged-field section, handing each field to f (nil:
// skip them all); unknown tags are skipped as Kafka does.
func (r *metaReader) skipTags(f func(tag uint64, data []byte)) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		data := r.take(size)
		if r.err == nil && f != nil {
			f(tag, data)
		}
	}
}

func (r *metaReader) topicIDPartition() TopicIdPartition {
	var tp TopicIdPartition
	tp.Topic = r.compactString()
	tp.TopicID = r.uuid()
	tp.Partition = r.i32()
	r.skipTags(nil)
	return tp
}

func (r *metaReader) segmentID() RemoteLogSegmentId {
	var id RemoteLogSegmentId
	id.TopicIdPartition = r.topicIDPartition()
	id.ID = r.uuid()
	r.skipTags(nil)
	return id
}

func (r *metaReader) segmentMetadata() *RemoteLogSegmentMetadata {
	m := &RemoteLogSegmentMetadata{ID: r.segmentID()}
	m.StartOffset = r.i64()
	m.EndOffset = r.i64()
	m.BrokerID = r.i32()
	m.MaxTimestampMs = r.i64()
	m.EventTimestampMs = r.i64()
	n := r.uvarint()
	if r.err == nil && n == 0 {
		r.err = errors.New("null segment leader epochs")
	}
	// each entry takes at least 13 bytes: bound the count by the input
	if r.err == nil && (n-1)*13 > uint64(len(r.b)) {
		r.err = fmt.Errorf("%d leader epochs in %d bytes", n-1, len(r.b))
	}
	m.SegmentLeaderEpochs = make(map[int32]int64)
	for i := uint64(1); i < n && r.err == nil; i++ {
		e := r.i32()
		m.SegmentLeaderEpochs[e] = r.i64()
		r.skipTags(nil)
	}
	m.SegmentSizeInBytes = r.i32()
	m.CustomMetadata = r.nullableBytes()
	m.State = RemoteLogSegmentState(r.i8())
	r.skipTags(func(tag uint64, data []byte) {
		if tag == tagTxnIndexEmpty && len(data) == 1 {
			m.TxnIdxEmpty = data[0] != 0
		}
	})
	return m
}
