package metadata

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/moldau/moldau/broker/uuid"
)

// Metadata records use Kafka's "flexible" message encoding (KIP-482):
// compact strings and arrays (length + 1 as an unsigned varint, 0 for
// null) and a tagged-fields section at the end of every struct. This file
// holds the primitives; records.go the schemas.

// writer appends a flexible-version message.
type writer struct{ b []byte }

func (w *writer) i8(v int8)        { w.b = kbin.AppendInt8(w.b, v) }
func (w *writer) i16(v int16)      { w.b = kbin.AppendInt16(w.b, v) }
func (w *writer) u16(v uint16)     { w.b = kbin.AppendUint16(w.b, v) }
func (w *writer) i32(v int32)      { w.b = kbin.AppendInt32(w.b, v) }
func (w *writer) i64(v int64)      { w.b = kbin.AppendInt64(w.b, v) }
func (w *writer) boolean(v bool)   { w.b = kbin.AppendBool(w.b, v) }
func (w *writer) f64(v float64)    { w.b = kbin.AppendFloat64(w.b, v) }
func (w *writer) uuid(v uuid.UUID) { w.b = kbin.AppendUuid(w.b, v) }
func (w *writer) str(s string)     { w.b = kbin.AppendCompactString(w.b, s) }
func (w *writer) nstr(s *string)   { w.b = kbin.AppendCompactNullableString(w.b, s) }
func (w *writer) bytes(b []byte)   { w.b = kbin.AppendCompactBytes(w.b, b) }
func (w *writer) uvarint(v uint32) { w.b = kbin.AppendUvarint(w.b, v) }
func (w *writer) arrayLen(n int)   { w.b = kbin.AppendCompactArrayLen(w.b, n) }
func (w *writer) noTags()          { w.uvarint(0) }
func (w *writer) nullableLen(n int, null bool) {
	w.b = kbin.AppendCompactNullableArrayLen(w.b, n, null)
}

func (w *writer) i32s(v []int32) {
	w.arrayLen(len(v))
	for _, x := range v {
		w.i32(x)
	}
}

// ni32s writes a nullable int32 array: nil is null.
func (w *writer) ni32s(v []int32) {
	w.nullableLen(len(v), v == nil)
	for _, x := range v {
		w.i32(x)
	}
}

func (w *writer) uuids(v []uuid.UUID) {
	w.arrayLen(len(v))
	for _, x := range v {
		w.uuid(x)
	}
}

// tagged is one tagged field to write, already encoded.
type tagged struct {
	tag  uint32
	data []byte
}

// tags writes the tagged-fields section; fields must be in tag order.
func (w *writer) tags(fs ...tagged) {
	w.uvarint(uint32(len(fs)))
	for _, f := range fs {
		w.uvarint(f.tag)
		w.uvarint(uint32(len(f.data)))
		w.b = append(w.b, f.data...)
	}
}

// field encodes one value for a tagged field.
func field(tag uint32, enc func(w *writer)) tagged {
	var w writer
	enc(&w)
	return tagged{tag, w.b}
}

// reader decodes a flexible-version message. Like kbin.Reader it turns
// short input into zero values and remembers the failure; err reports it.
type reader struct {
	r   kbin.Reader
	err error
}

func newReader(b []byte) *reader { return &reader{r: kbin.Reader{Src: b}} }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) i8() int8        { return r.r.Int8() }
func (r *reader) i16() int16      { return r.r.Int16() }
func (r *reader) u16() uint16     { return r.r.Uint16() }
func (r *reader) i32() int32      { return r.r.Int32() }
func (r *reader) i64() int64      { return r.r.Int64() }
func (r *reader) boolean() bool   { return r.r.Bool() }
func (r *reader) f64() float64    { return r.r.Float64() }
func (r *reader) uuid() uuid.UUID { return r.r.Uuid() }
func (r *reader) str() string     { return r.r.CompactString() }
func (r *reader) nstr() *string   { return r.r.CompactNullableString() }

// bytes reads compact bytes into a copy (the record outlives the batch).
func (r *reader) bytes() []byte     { return append([]byte{}, r.r.CompactBytes()...) }
func (r *reader) uvarint() uint32   { return r.r.Uvarint() }
func (r *reader) remaining() int    { return len(r.r.Src) }
func (r *reader) span(n int) []byte { return r.r.Span(n) }
func (r *reader) ok() bool          { return r.r.Ok() && r.err == nil }

// arrayLen reads a compact array length; -1 is null. A length larger than
// the bytes left is refused, so a corrupt record cannot make us allocate.
func (r *reader) arrayLen(minElem int) int {
	n := int(r.r.CompactArrayLen())
	if n > 0 && n*minElem > r.remaining() {
		r.fail("array of %d elements in %d bytes", n, r.remaining())
		return 0
	}
	return n
}

func (r *reader) i32s() []int32 {
	n := r.arrayLen(4)
	if n < 0 {
		return nil
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = r.i32()
	}
	return v
}

func (r *reader) uuids() []uuid.UUID {
	n := r.arrayLen(16)
	if n < 0 {
		return nil
	}
	v := make([]uuid.UUID, n)
	for i := range v {
		v[i] = r.uuid()
	}
	return v
}

// tags reads the tagged-fields section, calling fn for each field with a
// reader over its data; unknown tags are skipped, as Kafka does.
func (r *reader) tags(fn func(tag uint32, fr *reader)) {
	n := r.uvarint()
	for i := uint32(0); i < n && r.ok(); i++ {
		tag := r.uvarint()
		size := int(r.uvarint())
		if size > r.remaining() {
			r.fail("tagged field %d of %d bytes in %d", tag, size, r.remaining())
			return
		}
		data := r.span(size)
		if fn != nil {
			fr := newReader(data)
			fn(tag, fr)
			if !fr.ok() {
				r.fail("tagged field %d: %v", tag, fr.error())
			}
		}
	}
}

func (r *reader) error() error {
	if r.err != nil {
		return r.err
	}
	if err := r.r.Complete(); err != nil {
		return errors.New("record ends early")
	}
	return nil
}
