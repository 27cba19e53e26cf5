package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record batch (magic v2) header layout, as Kafka stores it on disk and
// sends it on the wire. All integers are big-endian.
//
//	offset  size  field
//	     0     8  baseOffset
//	     8     4  batchLength (bytes after this field)
//	    12     4  partitionLeaderEpoch
//	    16     1  magic (2)
//	    17     4  crc (CRC-32C of everything from attributes to the end)
//	    21     2  attributes
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61        records...
const (
	BatchHeaderSize = 61
	// LogOverhead is the baseOffset and batchLength prefix of every batch.
	LogOverhead = 12

	offBaseOffset           = 0
	offLength               = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offRecordCount          = 57

	// Attribute bits.
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	AttrDeleteHorizon   = 0x40
)

// Compression codecs in the attributes' low three bits.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded fixed header of one record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ParseBatchHeader decodes the header at the start of b. It checks only
// that b is long enough for the header and that the magic is 2; it does not
// check that the whole batch is present or its CRC (see CheckBatch).
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: record batch header needs %d bytes, have %d", kerr.CorruptMessage, BatchHeaderSize, len(b))
	}
	h := BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: record batch magic %d, only magic 2 is supported", kerr.CorruptMessage, h.Magic)
	}
	if h.Length < BatchHeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: record batch length %d is below the header size", kerr.CorruptMessage, h.Length)
	}
	return h, nil
}

// TotalSize is the batch's size in bytes including the offset and length
// prefix.
func (h BatchHeader) TotalSize() int { return int(h.Length) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the compression codec.
func (h BatchHeader) Codec() int { return int(h.Attributes & AttrCompressionMask) }

// IsTransactional reports the transactional bit.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports the control bit (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&AttrControl != 0 }

// LogAppendTime reports whether timestamps are LogAppendTime.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&AttrTimestampType != 0 }

// CheckBatch checks that b holds exactly one whole batch whose CRC-32C
// matches. It returns the parsed header.
func CheckBatch(b []byte) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if h.TotalSize() != len(b) {
		return h, fmt.Errorf("%w: record batch length %d does not match the %d bytes present", kerr.CorruptMessage, h.TotalSize(), len(b))
	}
	if got := crc32.Checksum(b[offAttributes:], crc32c); got != h.CRC {
		return h, fmt.Errorf("%w: record batch CRC mismatch: stored %08x, computed %08x", kerr.CorruptMessage, h.CRC, got)
	}
	return h, nil
}

// SetBaseOffset patches a batch's base offset in place. The CRC does not
// cover the base offset, so it stays valid.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

// SetPartitionLeaderEpoch patches the leader epoch in place; it is outside
// the CRC too.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime sets the timestamp type to LogAppendTime and the max
// timestamp to ts, then recomputes the CRC, as Kafka does for topics with
// message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
}

// BatchCRC computes the CRC-32C a batch should carry.
func BatchCRC(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], crc32c) }
