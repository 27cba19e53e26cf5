package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Validation of a Produce request's records for one partition, and offset
// assignment: Kafka's ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords and LogValidator, for magic v2 and
// AppendOrigin.CLIENT. The checks run in Kafka's order, so the first
// failing check decides the error code, as it does in Kafka:
//
//  1. records empty                                   INVALID_RECORD
//  2. framing: batch length below the v0 minimum (14),
//     magic outside 0..2, a batch or trailing bytes
//     cut short                                       CORRUPT_MESSAGE
//  3. first batch's magic is not 2                    INVALID_RECORD
//  4. more than one batch                             INVALID_RECORD
//  5. baseOffset is not 0                             INVALID_RECORD
//  6. batch larger than max.message.bytes             MESSAGE_TOO_LARGE
//  7. batch shorter than its header, CRC mismatch     CORRUPT_MESSAGE
//  8. compression codec id above 4                    UNSUPPORTED_COMPRESSION_TYPE
//     (Kafka: IllegalArgumentException, UNKNOWN_SERVER_ERROR)
//  9. offset range, record count, control batch,
//     producer id without a sequence                  INVALID_RECORD
//  10. records do not decode (bad varints, lengths past
//     the end, negative header key length, fewer or
//     more records than the count)                    INVALID_RECORD
//     (the compressed payload does not decompress:
//     CORRUPT_MESSAGE; decompresses past the limit:
//     MESSAGE_TOO_LARGE)
//  11. per record, all records checked: compacted topic
//     and a null key (INVALID_RECORD), timestamp out of
//     range or LogAppendTime set by the producer
//     (INVALID_TIMESTAMP); if any record has a timestamp
//     error the batch fails with INVALID_TIMESTAMP,
//     else with INVALID_RECORD (processRecordErrors);
//     the error is a *RecordValidationError listing
//     each bad record, for the Produce response.
//  12. after recompression, batch larger than
//     max.message.bytes                               MESSAGE_TOO_LARGE
//
// Where this differs from Kafka 4 on purpose:
//   - A trailing partial batch (fewer than 12 bytes, or a length past the
//     end) is rejected with CORRUPT_MESSAGE. Kafka's batch iterator stops
//     silently there, and the append trims the bytes (or, if even the
//     first batch is partial, answers INVALID_RECORD "must have at least
//     one record batch").
//   - Kafka rewrites a compressed batch whose record offset deltas are not
//     0, 1, 2, ... (old clients got inner offsets wrong) and stores an
//     uncompressed one as it came. We rewrite both, so a stored batch's
//     record offsets are always baseOffset+i.
//   - A payload that does not decompress is CORRUPT_MESSAGE (Kafka:
//     KafkaException, UNKNOWN_SERVER_ERROR), and decompression is bounded
//     by maxDecompressedSize.
//
// Like Kafka, a negative key or value length other than -1 is read as
// null (Utils.readBytes), and is rewritten as -1 if the batch is rebuilt.

// ValidationResult is the outcome of ValidateAndAssignOffsets (Kafka's
// LogValidator.ValidationResult plus what LogAppendInfo needs).
type ValidationResult struct {
	Records              []byte // batches to write (input patched in place, or a new buffer)
	FirstOffset          int64
	LastOffset           int64
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64 // Kafka's shallowOffsetOfMaxTimestamp: last offset of the batch holding MaxTimestamp, -1 if none
	LogAppendTime        int64 // -1 for CreateTime
	NumRecords           int
	Batches              []ValidatedBatch // one per batch in Records, in order
}

// ValidatedBatch describes one batch of a ValidationResult; the producer
// state manager needs these to check and record sequences.
type ValidatedBatch struct {
	Pos, Size                  int // byte range within Records
	BaseOffset, LastOffset     int64
	MaxTimestamp               int64
	ProducerID                 int64
	ProducerEpoch              int16
	BaseSequence, LastSequence int32
	Transactional, Control     bool
}

// RecordError is one rejected record: its index in the batch and why
// (ProduceResponse's record_errors).
type RecordError struct {
	BatchIndex int32
	Message    string
}

// RecordValidationError is returned when records fail the per-record
// checks (Kafka's RecordValidationException). It wraps
// kerr.InvalidTimestamp if any record has a timestamp error, otherwise
// kerr.InvalidRecord.
type RecordValidationError struct {
	Err     error // the kerr sentinel
	Records []RecordError
}

func (e *RecordValidationError) Error() string {
	if e.Err == kerr.InvalidTimestamp {
		return fmt.Sprintf("%v: one or more records have been rejected due to invalid timestamp: %s", e.Err, e.Records[0].Message)
	}
	return fmt.Sprintf("%v: one or more records have been rejected due to %d record errors in total, first: %s", e.Err, len(e.Records), e.Records[0].Message)
}

func (e *RecordValidationError) Unwrap() error { return e.Err }

const (
	// noTimestamp is RecordBatch.NO_TIMESTAMP.
	noTimestamp = -1
	// minLegacyRecordSize is LegacyRecord.RECORD_OVERHEAD_V0, the smallest
	// length ByteBufferLogInputStream accepts before it looks at magic.
	minLegacyRecordSize = 14
	// headerSizeUpToMagic is LOG_OVERHEAD + partitionLeaderEpoch + magic.
	headerSizeUpToMagic = offMagic + 1
)

// maxDecompressedSize bounds how far a compressed batch may expand:
// 64 × max.message.bytes, between 16 MiB and 256 MiB (64 MiB by default).
// Kafka sets no bound; a producer's batch is at most batch.size compressed
// and rarely compresses better than 64:1.
func maxDecompressedSize(cfg Config) int {
	n := 64 * int64(cfg.MaxMessageBytes)
	return int(min(max(n, 16<<20), 256<<20))
}

// ValidateAndAssignOffsets validates records as a producer sent them (one or more magic-v2 batches)
// against cfg and assigns offsets starting at nextOffset by patching headers in place (or
// recompressing into a new buffer if compression.type requires). Errors wrap kerr sentinels.
//
// Like Kafka for Produce v3+, exactly one batch is accepted (see the list
// of checks above). The returned Records alias the input when no rewrite
// was needed.
func ValidateAndAssignOffsets(records []byte, nextOffset int64, leaderEpoch int32, now time.Time, cfg Config) (ValidationResult, error) {
	return validateAndAssignOffsets(records, nextOffset, leaderEpoch, now, cfg, AppendOriginClient)
}

// validateAndAssignOffsets is ValidateAndAssignOffsets for an origin:
// Kafka's LogValidator runs the batch checks of step 9 (offset range,
// count, control batch, sequence) and the base offset check only for
// AppendOriginClient, so a coordinator may append control batches.
func validateAndAssignOffsets(records []byte, nextOffset int64, leaderEpoch int32, now time.Time, cfg Config, origin AppendOrigin) (ValidationResult, error) {
	batch, err := shallowValidate(records, cfg, origin)
	if err != nil {
		return ValidationResult{}, err
	}
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return ValidationResult{}, err
	}
	srcCodec := h.Codec()
	if srcCodec > CodecZstd {
		return ValidationResult{}, fmt.Errorf("%w: unknown compression type id %d", kerr.UnsupportedCompressionType, srcCodec)
	}
	if origin == AppendOriginClient {
		if err := validateBatch(h); err != nil {
			return ValidationResult{}, err
		}
	}
	targetCodec, producer, err := ParseCompressionType(cfg.CompressionType)
	if err != nil {
		return ValidationResult{}, err
	}
	if producer || (srcCodec == CodecNone && h.IsControl()) {
		// Kafka does not compress control records unless they were
		// written compressed.
		targetCodec = srcCodec
	}
	logAppendTime := cfg.MessageTimestampType == "LogAppendTime"
	nowMs := now.UnixMilli()

	v := recordValidator{
		h:             h,
		nowMs:         nowMs,
		logAppendTime: logAppendTime,
		compacted:     slices.Contains(cfg.CleanupPolicy, "compact"),
		beforeMaxMs:   cfg.MessageTimestampBeforeMaxMs,
		afterMaxMs:    cfg.MessageTimestampAfterMaxMs,
		maxTimestamp:  noTimestamp,
	}

	// The records section, decompressed if need be.
	var buf *[]byte
	data := batch[BatchHeaderSize:]
	if srcCodec != CodecNone {
		buf = getScratch()
		defer putScratch(buf)
		*buf, err = Decompress((*buf)[:0], srcCodec, data, maxDecompressedSize(cfg))
		if err != nil {
			return ValidationResult{}, err
		}
		if cfg.Memory != nil {
			n := int64(cap(*buf))
			cfg.Memory.Take(n)
			defer cfg.Memory.Return(n)
		}
		data = *buf
	}
	if err := v.validateRecords(data); err != nil {
		return ValidationResult{}, err
	}

	if srcCodec != targetCodec || !v.offsetsInOrder {
		return rebuild(&v, data, nextOffset, leaderEpoch, targetCodec, cfg)
	}

	return assignInPlace(batch, h, &v, srcCodec, nextOffset, leaderEpoch), nil
}

// assignInPlace sets the offsets, leader epoch and timestamps of a batch
// kept as the producer encoded it: Kafka's assignOffsetsNonCompressed, or
// the in-place branch of validateMessagesAndAssignOffsetsCompressed.
func assignInPlace(batch []byte, h BatchHeader, v *recordValidator, srcCodec int, nextOffset int64, leaderEpoch int32) ValidationResult {
	count := int64(h.NumRecords)
	last := nextOffset + count - 1
	SetBaseOffset(batch, nextOffset)
	SetPartitionLeaderEpoch(batch, leaderEpoch)
	res := ValidationResult{
		Records:       batch,
		FirstOffset:   nextOffset,
		LastOffset:    last,
		LogAppendTime: -1,
		NumRecords:    int(count),
	}
	if v.logAppendTime {
		SetLogAppendTime(batch, v.nowMs)
		res.MaxTimestamp = v.nowMs
		res.OffsetOfMaxTimestamp = last
		res.LogAppendTime = v.nowMs
	} else {
		setMaxTimestampCreateTime(batch, h, v.maxTimestamp)
		res.MaxTimestamp = v.maxTimestamp
		// Uncompressed, Kafka keeps -1 when no record has a timestamp;
		// compressed it always reports the last offset.
		res.OffsetOfMaxTimestamp = last
		if srcCodec == CodecNone && v.maxTimestamp <= noTimestamp {
			res.OffsetOfMaxTimestamp = -1
		}
	}
	res.Batches = []ValidatedBatch{{
		Pos:           0,
		Size:          len(batch),
		BaseOffset:    nextOffset,
		LastOffset:    last,
		MaxTimestamp:  res.MaxTimestamp,
		ProducerID:    h.ProducerID,
		ProducerEpoch: h.ProducerEpoch,
		BaseSequence:  h.BaseSequence,
		LastSequence:  lastSequence(h.BaseSequence, h.LastOffsetDelta),
		Transactional: h.IsTransactional(),
		Control:       h.IsControl(),
	}}
	return res
}

// shallowValidate walks the batches of records as Kafka's
// ByteBufferLogInputStream, ProduceRequest.validateRecords and
// UnifiedLog.analyzeAndValidateRecords do, and returns the one batch.
func shallowValidate(records []byte, cfg Config, origin AppendOrigin) ([]byte, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: produce requests must have at least one record batch per partition", kerr.InvalidRecord)
	}
	size, err := nextBatchSize(records)
	if err != nil {
		return nil, err
	}
	if magic := int8(records[offMagic]); magic != 2 {
		return nil, fmt.Errorf("%w: produce requests are only allowed to contain record batches with magic version 2, not %d", kerr.InvalidRecord, magic)
	}
	if size < len(records) {
		if _, err := nextBatchSize(records[size:]); err != nil {
			return nil, fmt.Errorf("%w (after the first batch of %d bytes)", err, size)
		}
		return nil, fmt.Errorf("%w: produce requests are only allowed to contain exactly one record batch per partition", kerr.InvalidRecord)
	}
	batch := records[:size]
	if base := int64(binary.BigEndian.Uint64(batch)); base != 0 && origin == AppendOriginClient {
		return nil, fmt.Errorf("%w: the baseOffset of the record batch in the append should be 0, but it is %d", kerr.InvalidRecord, base)
	}
	if size > int(cfg.MaxMessageBytes) {
		return nil, fmt.Errorf("%w: the record batch size in the append is %d bytes which exceeds the maximum configured value of %d",
			kerr.MessageTooLarge, size, cfg.MaxMessageBytes)
	}
	if size < BatchHeaderSize {
		return nil, fmt.Errorf("%w: record batch is corrupt (the size %d is smaller than the minimum allowed overhead %d)",
			kerr.CorruptMessage, size, BatchHeaderSize)
	}
	if stored, got := binary.BigEndian.Uint32(batch[offCRC:]), BatchCRC(batch); stored != got {
		return nil, fmt.Errorf("%w: record is corrupt (stored crc = %d, computed crc = %d)", kerr.CorruptMessage, stored, got)
	}
	return batch, nil
}

// nextBatchSize is ByteBufferLogInputStream.nextBatchSize, except that a
// batch cut short is an error rather than the end of the stream.
func nextBatchSize(b []byte) (int, error) {
	if len(b) < LogOverhead {
		return 0, fmt.Errorf("%w: %d trailing bytes are not a record batch", kerr.CorruptMessage, len(b))
	}
	length := int32(binary.BigEndian.Uint32(b[offLength:]))
	if length < minLegacyRecordSize {
		return 0, fmt.Errorf("%w: record size %d is less than the minimum record overhead (%d)", kerr.CorruptMessage, length, minLegacyRecordSize)
	}
	if len(b) < headerSizeUpToMagic {
		return 0, fmt.Errorf("%w: record batch cut short after %d bytes", kerr.CorruptMessage, len(b))
	}
	if magic := int8(b[offMagic]); magic < 0 || magic > 2 {
		return 0, fmt.Errorf("%w: invalid magic found in record: %d", kerr.CorruptMessage, magic)
	}
	size := int(length) + LogOverhead
	if size > len(b) {
		return 0, fmt.Errorf("%w: record batch of %d bytes cut short after %d bytes", kerr.CorruptMessage, size, len(b))
	}
	return size, nil
}

// validateBatch is LogValidator.validateBatch for AppendOrigin.CLIENT.
func validateBatch(h BatchHeader) error {
	countFromOffsets := int64(h.LastOffsetDelta) + 1
	if countFromOffsets <= 0 {
		return fmt.Errorf("%w: batch has an invalid offset range: [%d, %d]", kerr.InvalidRecord, h.BaseOffset, h.LastOffset())
	}
	if h.NumRecords <= 0 {
		return fmt.Errorf("%w: invalid reported count for record batch: %d", kerr.InvalidRecord, h.NumRecords)
	}
	if countFromOffsets != int64(h.NumRecords) {
		return fmt.Errorf("%w: inconsistent batch offset range [%d, %d] and count of records %d",
			kerr.InvalidRecord, h.BaseOffset, h.LastOffset(), h.NumRecords)
	}
	if h.IsControl() {
		return fmt.Errorf("%w: clients are not allowed to write control records", kerr.InvalidRecord)
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return fmt.Errorf("%w: invalid sequence number %d in record batch with producerId %d", kerr.InvalidRecord, h.BaseSequence, h.ProducerID)
	}
	return nil
}

// recordValidator runs LogValidator.validateRecord over a batch's records.
type recordValidator struct {
	h                       BatchHeader
	nowMs                   int64
	logAppendTime           bool
	compacted               bool
	beforeMaxMs, afterMaxMs int64

	maxTimestamp   int64
	offsetsInOrder bool // every offsetDelta equals the record's index
	recordErrs     []RecordError
	timestampErr   bool
}

// timestamp is Record.timestamp() of a record in the batch.
func (v *recordValidator) timestamp(r *Record) int64 {
	if v.h.LogAppendTime() {
		return v.h.MaxTimestamp
	}
	return v.h.BaseTimestamp + r.TimestampDelta
}

func (v *recordValidator) validateRecords(data []byte) error {
	it := NewRecordIter(data)
	var r Record
	n := int(v.h.NumRecords)
	v.offsetsInOrder = true
	for i := 0; i < n; i++ {
		ok, err := it.Next(&r)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: incorrect declared batch size, premature EOF reached (record %d of %d)", kerr.InvalidRecord, i, n)
		}
		if r.OffsetDelta != int32(i) {
			v.offsetsInOrder = false
		}
		ts := v.timestamp(&r)
		if ts > v.maxTimestamp {
			v.maxTimestamp = ts
		}
		v.validateRecord(int32(i), &r, ts)
	}
	if it.Remaining() > 0 {
		return fmt.Errorf("%w: incorrect declared batch size, records still remaining in file", kerr.InvalidRecord)
	}
	if len(v.recordErrs) > 0 {
		e := &RecordValidationError{Err: kerr.InvalidRecord, Records: v.recordErrs}
		if v.timestampErr {
			e.Err = kerr.InvalidTimestamp
		}
		return e
	}
	return nil
}

// validateRecord is LogValidator.validateKey then validateTimestamp.
func (v *recordValidator) validateRecord(i int32, r *Record, ts int64) {
	if v.compacted && r.Key == nil {
		v.recordErrs = append(v.recordErrs, RecordError{i, "compacted topic cannot accept message without key"})
		return
	}
	if !v.logAppendTime && ts != noTimestamp {
		diff := v.nowMs - ts
		if diff > v.beforeMaxMs || -diff > v.afterMaxMs {
			v.timestampErr = true
			v.recordErrs = append(v.recordErrs, RecordError{i, fmt.Sprintf(
				"timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				ts, r.OffsetDelta, v.nowMs-v.beforeMaxMs, v.nowMs+v.afterMaxMs)})
		}
	} else if v.h.LogAppendTime() {
		v.timestampErr = true
		v.recordErrs = append(v.recordErrs, RecordError{i, "invalid timestamp type in message: producer should not set timestamp type to LogAppendTime"})
	}
}

// setMaxTimestampCreateTime is DefaultRecordBatch.setMaxTimestamp(CREATE_TIME,
// ts): it clears the LogAppendTime bit, sets the max timestamp and
// recomputes the CRC, only if something changes.
func setMaxTimestampCreateTime(b []byte, h BatchHeader, ts int64) {
	if !h.LogAppendTime() && h.MaxTimestamp == ts {
		return
	}
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) &^ AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
}

// lastSequence is DefaultRecordBatch.lastSequence: the base sequence plus
// lastOffsetDelta, wrapping past MaxInt32 to 0 (incrementSequence).
func lastSequence(base, lastOffsetDelta int32) int32 {
	if base < 0 {
		return -1
	}
	if base > 1<<31-1-lastOffsetDelta {
		return lastOffsetDelta - (1<<31 - 1 - base) - 1
	}
	return base + lastOffsetDelta
}

// rebuild writes the validated records as one new batch with codec, as
// LogValidator.buildRecordsAndAssignOffsets does with a
// MemoryRecordsBuilder: offsets nextOffset.., attributes 0 on every record,
// baseTimestamp the first record's timestamp, the producer fields of the
// original batch.
func rebuild(v *recordValidator, data []byte, nextOffset int64, leaderEpoch int32, codec int, cfg Config) (ValidationResult, error) {
	h := v.h
	raw := getScratch()
	defer putScratch(raw)

	// Re-encode the records, uncompressed, into raw.
	it := NewRecordIter(data)
	var r Record
	baseTs := int64(noTimestamp)
	out := (*raw)[:0]
	for i := int32(0); ; i++ {
		ok, _ := it.Next(&r) // validated already
		if !ok {
			break
		}
		ts := v.timestamp(&r)
		if i == 0 {
			baseTs = ts
		}
		out = appendRecord(out, ts-baseTs, i, &r)
	}
	*raw = out

	count := h.NumRecords
	last := nextOffset + int64(count) - 1
	maxTs := v.maxTimestamp
	attrs := uint16(codec)
	if h.IsTransactional() {
		attrs |= AttrTransactional
	}
	if h.IsControl() {
		attrs |= AttrControl
	}
	logAppendTime := int64(-1)
	if v.logAppendTime {
		attrs |= AttrTimestampType
		maxTs = v.nowMs
		logAppendTime = v.nowMs
	}

	var hdr [BatchHeaderSize]byte
	capacity := BatchHeaderSize + len(out)
	if codec != CodecNone {
		capacity = BatchHeaderSize + len(out)/2 + 64
	}
	b := make([]byte, 0, capacity)
	b = append(b, hdr[:]...)
	var err error
	if b, err = Compress(b, codec, out); err != nil {
		return ValidationResult{}, fmt.Errorf("%w: recompressing record batch as %s: %v", kerr.UnknownServerError, CodecName(codec), err)
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(nextOffset))
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(leaderEpoch))
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(count-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
	binary.BigEndian.PutUint32(b[offCRC:], BatchCRC(b))

	if len(b) > int(cfg.MaxMessageBytes) {
		return ValidationResult{}, fmt.Errorf("%w: message batch size is %d bytes in append which exceeds the maximum configured size of %d",
			kerr.MessageTooLarge, len(b), cfg.MaxMessageBytes)
	}
	return ValidationResult{
		Records:              b,
		FirstOffset:          nextOffset,
		LastOffset:           last,
		MaxTimestamp:         maxTs,
		OffsetOfMaxTimestamp: last, // MemoryRecordsBuilder.info for v2
		LogAppendTime:        logAppendTime,
		NumRecords:           int(count),
		Batches: []ValidatedBatch{{
			Pos:           0,
			Size:          len(b),
			BaseOffset:    nextOffset,
			LastOffset:    last,
			MaxTimestamp:  maxTs,
			ProducerID:    h.ProducerID,
			ProducerEpoch: h.ProducerEpoch,
			BaseSequence:  h.BaseSequence,
			LastSequence:  lastSequence(h.BaseSequence, count-1),
			Transactional: h.IsTransactional(),
			Control:       h.IsControl(),
		}},
	}, nil
}
