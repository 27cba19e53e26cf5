package log

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Records inside a magic-v2 batch, after the 61-byte header (decompressed
// first if the batch is compressed), one after another:
//
//	length          varint   bytes after this field
//	attributes      int8     unused, 0
//	timestampDelta  varlong  from the batch's baseTimestamp
//	offsetDelta     varint   from the batch's baseOffset
//	keyLength       varint   negative: null key (Kafka writes -1)
//	key             bytes
//	valueLength     varint   negative: null value
//	value           bytes
//	headerCount     varint
//	headers         headerKeyLength varint (>= 0), key, headerValueLength varint (negative: null), value
//
// Varints are zig-zag encoded as in protobuf; a varint is at most 5 bytes
// and a varlong at most 10 (Kafka's ByteUtils.readVarint / readVarlong).
// Parse errors wrap kerr.InvalidRecord, as Kafka's DefaultRecord.readFrom
// throws InvalidRecordException for them.

// Record is one record of a batch, parsed in place: Key, Value and Headers
// alias the buffer the record was read from. Key and Value are nil for a
// null key or value.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	NumHeaders     int
	// Headers is the encoded headers after the count; walk them with
	// HeaderIter.
	Headers []byte
	// Raw is the whole record including its length prefix.
	Raw []byte
}

// RecordIter walks the records of a batch's (decompressed) records section
// without allocating.
type RecordIter struct {
	buf []byte
	pos int
}

// NewRecordIter returns an iterator over the records encoded in b.
func NewRecordIter(b []byte) RecordIter { return RecordIter{buf: b} }

// Remaining reports the number of bytes not yet consumed.
func (it *RecordIter) Remaining() int { return len(it.buf) - it.pos }

// Next parses the next record into r. It returns false at the end of the
// buffer; a malformed record gives an error wrapping kerr.InvalidRecord.
func (it *RecordIter) Next(r *Record) (bool, error) {
	if it.pos >= len(it.buf) {
		return false, nil
	}
	start := it.pos
	b := it.buf[it.pos:]
	length, n := readVarint(b)
	if n <= 0 {
		return false, errRecordStructure("record length")
	}
	b = b[n:]
	if length < 0 || int(length) > len(b) {
		return false, fmt.Errorf("%w: invalid record size: expected %d bytes in record payload, but the buffer has only %d remaining bytes",
			kerr.InvalidRecord, length, len(b))
	}
	body := b[:length]
	if err := parseRecordBody(body, r); err != nil {
		return false, err
	}
	it.pos += n + int(length)
	r.Raw = it.buf[start:it.pos]
	return true, nil
}

// parseRecordBody parses body (a record after its length prefix) into r.
// It checks that the record's fields fill body exactly.
func parseRecordBody(body []byte, r *Record) error {
	if len(body) < 1 {
		return errRecordStructure("attributes")
	}
	r.Attributes = int8(body[0])
	p := 1
	ts, n := readVarlong(body[p:])
	if n <= 0 {
		return errRecordStructure("timestamp delta")
	}
	r.TimestampDelta = ts
	p += n
	od, n := readVarint(body[p:])
	if n <= 0 {
		return errRecordStructure("offset delta")
	}
	r.OffsetDelta = od
	p += n
	var err error
	if r.Key, p, err = readBytesField(body, p, "key"); err != nil {
		return err
	}
	if r.Value, p, err = readBytesField(body, p, "value"); err != nil {
		return err
	}
	nh, n := readVarint(body[p:])
	if n <= 0 {
		return errRecordStructure("header count")
	}
	p += n
	if nh < 0 {
		return fmt.Errorf("%w: found invalid number of record headers %d", kerr.InvalidRecord, nh)
	}
	if int(nh) > len(body)-p {
		return fmt.Errorf("%w: found invalid number of record headers. %d is larger than the remaining size of the buffer", kerr.InvalidRecord, nh)
	}
	r.NumHeaders = int(nh)
	hstart := p
	for i := 0; i < int(nh); i++ {
		kl, n := readVarint(body[p:])
		if n <= 0 {
			return errRecordStructure("header key length")
		}
		p += n
		if kl < 0 {
			return fmt.Errorf("%w: invalid negative header key size %d", kerr.InvalidRecord, kl)
		}
		if int(kl) > len(body)-p {
			return errRecordStructure("header key")
		}
		p += int(kl)
		if _, p, err = readBytesField(body, p, "header value"); err != nil {
			return err
		}
	}
	r.Headers = body[hstart:p]
	if p != len(body) {
		return fmt.Errorf("%w: invalid record size: expected to read %d bytes in record payload, but instead read %d",
			kerr.InvalidRecord, len(body), p)
	}
	return nil
}

// readBytesField reads a varint length and that many bytes at b[p:]. A
// negative length is a null field (Kafka's Utils.readBytes).
func readBytesField(b []byte, p int, what string) ([]byte, int, error) {
	l, n := readVarint(b[p:])
	if n <= 0 {
		return nil, p, errRecordStructure(what + " length")
	}
	p += n
	if l < 0 {
		return nil, p, nil
	}
	if int(l) > len(b)-p {
		return nil, p, errRecordStructure(what)
	}
	return b[p : p+int(l) : p+int(l)], p + int(l), nil
}

func errRecordStructure(what string) error {
	return fmt.Errorf("%w: found invalid record structure (%s)", kerr.InvalidRecord, what)
}

// HeaderIter walks a record's Headers.
type HeaderIter struct {
	buf []byte
	pos int
}

// NewHeaderIter iterates over r's headers; r must have come from
// RecordIter.Next, which has already validated them.
func NewHeaderIter(r *Record) HeaderIter { return HeaderIter{buf: r.Headers} }

// Next returns the next header; ok is false at the end. A nil value is a
// null header value.
func (h *HeaderIter) Next() (key, value []byte, ok bool) {
	if h.pos >= len(h.buf) {
		return nil, nil, false
	}
	kl, n := readVarint(h.buf[h.pos:])
	if n <= 0 || kl < 0 || int(kl) > len(h.buf)-h.pos-n {
		return nil, nil, false
	}
	h.pos += n
	key = h.buf[h.pos : h.pos+int(kl)]
	h.pos += int(kl)
	value, p, err := readBytesField(h.buf, h.pos, "header value")
	if err != nil {
		return nil, nil, false
	}
	h.pos = p
	return key, value, true
}

// readUvarint decodes an unsigned varint of at most maxBytes bytes. It
// returns n <= 0 if b is too short or the varint too long.
func readUvarint(b []byte, maxBytes int) (uint64, int) {
	var x uint64
	var s uint
	for i := 0; i < len(b) && i < maxBytes; i++ {
		c := b[i]
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}

// readVarint decodes a zig-zag varint of at most 5 bytes (an int32).
func readVarint(b []byte) (int32, int) {
	ux, n := readUvarint(b, 5)
	if n <= 0 {
		return 0, n
	}
	u := uint32(ux)
	return int32(u>>1) ^ -int32(u&1), n
}

// readVarlong decodes a zig-zag varlong of at most 10 bytes.
func readVarlong(b []byte) (int64, int) {
	ux, n := readUvarint(b, 10)
	if n <= 0 {
		return 0, n
	}
	return int64(ux>>1) ^ -int64(ux&1), n
}

// appendVarint appends v zig-zag encoded.
func appendVarint(dst []byte, v int32) []byte {
	return appendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

// appendVarlong appends v zig-zag encoded.
func appendVarlong(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func appendUvarint(dst []byte, u uint64) []byte {
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// sizeOfUvarint is the encoded length of u.
func sizeOfUvarint(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func sizeOfVarint(v int32) int  { return sizeOfUvarint(uint64(uint32(v<<1) ^ uint32(v>>31))) }
func sizeOfVarlong(v int64) int { return sizeOfUvarint(uint64(v<<1) ^ uint64(v>>63)) }

// appendRecord appends a record as Kafka's DefaultRecord.writeTo writes it
// (attributes 0), with the key, value and encoded headers (count first) of
// r. Null key or value are written with length -1.
func appendRecord(dst []byte, timestampDelta int64, offsetDelta int32, r *Record) []byte {
	body := 1 + sizeOfVarlong(timestampDelta) + sizeOfVarint(offsetDelta) +
		bytesFieldSize(r.Key) + bytesFieldSize(r.Value) +
		sizeOfVarint(int32(r.NumHeaders)) + len(r.Headers)
	dst = appendVarint(dst, int32(body))
	dst = append(dst, 0)
	dst = appendVarlong(dst, timestampDelta)
	dst = appendVarint(dst, offsetDelta)
	dst = appendBytesField(dst, r.Key)
	dst = appendBytesField(dst, r.Value)
	dst = appendVarint(dst, int32(r.NumHeaders))
	return append(dst, r.Headers...)
}

func bytesFieldSize(b []byte) int {
	if b == nil {
		return 1
	}
	return sizeOfVarint(int32(len(b))) + len(b)
}

func appendBytesField(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	dst = appendVarint(dst, int32(len(b)))
	return append(dst, b...)
}
