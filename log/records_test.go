package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestVarintRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 1 << 20, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		// Varlongs match encoding/binary's zig-zag.
		want := binary.AppendVarint(nil, v)
		got := appendVarlong(nil, v)
		if !bytes.Equal(got, want) || sizeOfVarlong(v) != len(want) {
			t.Errorf("appendVarlong(%d) = % x, want % x", v, got, want)
		}
		if d, n := readVarlong(got); d != v || n != len(got) {
			t.Errorf("readVarlong(% x) = %d, %d", got, d, n)
		}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			got := appendVarint(nil, int32(v))
			if !bytes.Equal(got, want) || sizeOfVarint(int32(v)) != len(want) {
				t.Errorf("appendVarint(%d) = % x, want % x", v, got, want)
			}
			if d, n := readVarint(got); d != int32(v) || n != len(got) {
				t.Errorf("readVarint(% x) = %d, %d", got, d, n)
			}
		}
	}
	// Too long or cut short.
	for _, b := range [][]byte{{}, {0x80}, {0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, n := readVarint(b); n > 0 {
			t.Errorf("readVarint(% x) accepted", b)
		}
	}
	if _, n := readVarlong(bytes.Repeat([]byte{0xff}, 11)); n > 0 {
		t.Error("11-byte varlong accepted")
	}
}

func TestRecordIterKmsg(t *testing.T) {
	recs := []kmsg.Record{
		{TimestampDelta64: 0, OffsetDelta: 0, Key: []byte("k"), Value: []byte("v")},
		{TimestampDelta64: -5, OffsetDelta: 1, Key: nil, Value: nil},
		{TimestampDelta64: 1 << 40, OffsetDelta: 2, Key: []byte{}, Value: []byte{},
			Headers: []kmsg.Header{{Key: "a", Value: []byte("1")}, {Key: "", Value: nil}, {Key: "c", Value: []byte{}}}},
	}
	data := encodeRecords(recs)
	it := NewRecordIter(data)
	var r Record
	for i, w := range recs {
		ok, err := it.Next(&r)
		if !ok || err != nil {
			t.Fatalf("record %d: %v %v", i, ok, err)
		}
		if r.TimestampDelta != w.TimestampDelta64 || r.OffsetDelta != w.OffsetDelta ||
			!bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) || r.NumHeaders != len(w.Headers) {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
		hi := NewHeaderIter(&r)
		for j, wh := range w.Headers {
			k, v, ok := hi.Next()
			if !ok || string(k) != wh.Key || !bytes.Equal(v, wh.Value) || (v == nil) != (wh.Value == nil) {
				t.Errorf("record %d header %d: %q %q %v", i, j, k, v, ok)
			}
		}
		if _, _, ok := hi.Next(); ok {
			t.Errorf("record %d: extra header", i)
		}
		// Re-encoding reproduces kmsg's bytes.
		one := encodeRecords([]kmsg.Record{w})
		if got := appendRecord(nil, r.TimestampDelta, r.OffsetDelta, &r); !bytes.Equal(got, one) || !bytes.Equal(r.Raw, one) {
			t.Errorf("record %d: re-encoded % x, want % x (raw % x)", i, got, one, r.Raw)
		}
	}
	if ok, err := it.Next(&r); ok || err != nil || it.Remaining() != 0 {
		t.Errorf("after the last record: %v %v", ok, err)
	}
}

func TestRecordIterNegativeLengthIsNull(t *testing.T) {
	// Kafka reads any negative key or value length as null.
	data := rawRecord(by(0), vl(0), vi(0), vi(-7), vi(-2), vi(0))
	it := NewRecordIter(data)
	var r Record
	if ok, err := it.Next(&r); !ok || err != nil || r.Key != nil || r.Value != nil {
		t.Fatalf("%v %v %+v", ok, err, r)
	}
	// Rewritten as -1.
	if got, want := appendRecord(nil, 0, 0, &r), rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(0)); !bytes.Equal(got, want) {
		t.Errorf("% x, want % x", got, want)
	}
}

func TestRecordIterMalformed(t *testing.T) {
	for name, data := range map[string][]byte{
		"bad length varint":    {0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"length past end":      append(appendVarint(nil, 10), 0, 0),
		"negative length":      appendVarint(nil, -3),
		"empty body":           appendVarint(nil, 0),
		"no timestamp":         rawRecord(by(0)),
		"no offset delta":      rawRecord(by(0), vl(0)),
		"no key":               rawRecord(by(0), vl(0), vi(0)),
		"key past end":         rawRecord(by(0), vl(0), vi(0), vi(3), by('a')),
		"no value":             rawRecord(by(0), vl(0), vi(0), vi(-1)),
		"no header count":      rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1)),
		"negative headers":     rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(-2)),
		"too many headers":     rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(100)),
		"null header key":      rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1)),
		"header key past end":  rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(1), vi(5), by('a')),
		"header value missing": rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(1), vi(1), by('a')),
		"trailing body bytes":  rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(0), by(1)),
	} {
		it := NewRecordIter(data)
		var r Record
		if ok, err := it.Next(&r); ok || !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: ok %v err %v, want InvalidRecord", name, ok, err)
		}
	}
}

func TestRecordIterAllocs(t *testing.T) {
	data := encodeRecords(testRecords(20, 100))
	allocs := testing.AllocsPerRun(100, func() {
		it := NewRecordIter(data)
		var r Record
		for {
			ok, err := it.Next(&r)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			hi := NewHeaderIter(&r)
			for _, _, ok := hi.Next(); ok; _, _, ok = hi.Next() {
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
