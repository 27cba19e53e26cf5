package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testNow is the broker's clock in these tests.
var testNow = time.UnixMilli(1_700_000_000_000)

// encodeRecords encodes recs as a batch's records section, computing each
// record's length.
func encodeRecords(recs []kmsg.Record) []byte {
	var out []byte
	for i := range recs {
		r := recs[i]
		r.Length = 0
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // the zero length took one byte
		out = r.AppendTo(out)
	}
	return out
}

// testRecords makes n records with keys, values of size valueSize and a
// header, timestamps baseTs+i.
func testRecords(n, valueSize int) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)
		recs[i] = kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              fmt.Appendf(nil, "key-%d", i),
			Value:            v,
			Headers:          []kmsg.Header{{Key: "h", Value: []byte{byte(i)}}},
		}
	}
	return recs
}

// batchSpec describes a producer batch; zero fields take the defaults of
// newSpec.
type batchSpec struct {
	kmsg.RecordBatch
	recs     []kmsg.Record
	payload  []byte // records section as sent; nil: encodeRecords(recs) compressed with codec
	codec    int
	compress func([]byte) []byte // nil: Compress
	noCRC    bool                // leave CRC as set
}

func newSpec(recs []kmsg.Record) batchSpec {
	s := batchSpec{recs: recs}
	s.Magic = 2
	s.PartitionLeaderEpoch = -1
	s.LastOffsetDelta = int32(len(recs) - 1)
	s.FirstTimestamp = testNow.UnixMilli() - 1000
	s.MaxTimestamp = s.FirstTimestamp + int64(len(recs)-1)
	s.ProducerID = -1
	s.ProducerEpoch = -1
	s.FirstSequence = -1
	s.NumRecords = int32(len(recs))
	return s
}

func (s batchSpec) build(t testing.TB) []byte {
	t.Helper()
	payload := s.payload
	if payload == nil {
		raw := encodeRecords(s.recs)
		switch {
		case s.compress != nil:
			payload = s.compress(raw)
		default:
			var err error
			if payload, err = Compress(nil, s.codec, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	rb := s.RecordBatch
	rb.Attributes = rb.Attributes&^AttrCompressionMask | int16(s.codec)
	rb.Records = payload
	rb.Length = int32(BatchHeaderSize - LogOverhead + len(payload))
	b := rb.AppendTo(nil)
	if !s.noCRC {
		binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	}
	return b
}

// decodedRecord is a record as a consumer sees it.
type decodedRecord struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []kmsg.Header
}

// readBatch checks b is one valid batch and returns its header and records.
func readBatch(t testing.TB, b []byte) (BatchHeader, []decodedRecord) {
	t.Helper()
	h, err := CheckBatch(b)
	if err != nil {
		t.Fatalf("CheckBatch: %v", err)
	}
	data, err := Decompress(nil, h.Codec(), b[BatchHeaderSize:], 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var out []decodedRecord
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
		d := decodedRecord{
			Offset:    h.BaseOffset + int64(r.OffsetDelta),
			Timestamp: h.BaseTimestamp + r.TimestampDelta,
			Key:       r.Key,
			Value:     r.Value,
		}
		if h.LogAppendTime() {
			d.Timestamp = h.MaxTimestamp
		}
		hi := NewHeaderIter(&r)
		for {
			k, v, ok := hi.Next()
			if !ok {
				break
			}
			d.Headers = append(d.Headers, kmsg.Header{Key: string(k), Value: v})
		}
		out = append(out, d)
	}
	if len(out) != int(h.NumRecords) {
		t.Fatalf("batch has %d records, header says %d", len(out), h.NumRecords)
	}
	return h, out
}

func testConfig() Config { return DefaultConfig() }

func TestValidateInPlaceUncompressed(t *testing.T) {
	recs := testRecords(5, 100)
	s := newSpec(recs)
	s.ProducerID, s.ProducerEpoch, s.FirstSequence = 42, 3, 10
	s.Attributes = AttrTransactional
	in := s.build(t)
	orig := bytes.Clone(in)

	res, err := ValidateAndAssignOffsets(in, 100, 7, testNow, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if &res.Records[0] != &in[0] {
		t.Error("uncompressed batch was not patched in place")
	}
	h, got := readBatch(t, res.Records)
	if h.BaseOffset != 100 || h.PartitionLeaderEpoch != 7 {
		t.Errorf("header base offset %d epoch %d", h.BaseOffset, h.PartitionLeaderEpoch)
	}
	if !bytes.Equal(res.Records[offAttributes:], orig[offAttributes:]) {
		t.Error("bytes covered by the CRC changed")
	}
	want := ValidationResult{
		FirstOffset: 100, LastOffset: 104,
		MaxTimestamp: s.FirstTimestamp + 4, OffsetOfMaxTimestamp: 104,
		LogAppendTime: -1, NumRecords: 5,
	}
	res2 := res
	res2.Records, res2.Batches = nil, nil
	if fmt.Sprint(res2) != fmt.Sprint(want) {
		t.Errorf("result\n got %+v\nwant %+v", res2, want)
	}
	wantB := ValidatedBatch{Pos: 0, Size: len(in), BaseOffset: 100, LastOffset: 104, MaxTimestamp: s.FirstTimestamp + 4,
		ProducerID: 42, ProducerEpoch: 3, BaseSequence: 10, LastSequence: 14, Transactional: true}
	if len(res.Batches) != 1 || res.Batches[0] != wantB {
		t.Errorf("batches\n got %+v\nwant %+v", res.Batches, wantB)
	}
	for i, r := range got {
		if r.Offset != 100+int64(i) || !bytes.Equal(r.Value, recs[i].Value) || !bytes.Equal(r.Key, recs[i].Key) {
			t.Errorf("record %d: %+v", i, r)
		}
	}
}

func TestValidateMaxTimestampRewritten(t *testing.T) {
	for _, codec := range []int{CodecNone, CodecZstd} {
		t.Run(CodecName(codec), func(t *testing.T) {
			s := newSpec(testRecords(3, 10))
			s.codec = codec
			s.MaxTimestamp = 5 // wrong: records go up to FirstTimestamp+2
			res, err := ValidateAndAssignOffsets(s.build(t), 0, 1, testNow, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			h, _ := readBatch(t, res.Records)
			if want := s.FirstTimestamp + 2; h.MaxTimestamp != want || res.MaxTimestamp != want {
				t.Errorf("max timestamp header %d result %d, want %d", h.MaxTimestamp, res.MaxTimestamp, want)
			}
		})
	}
}

func TestValidateNoTimestamps(t *testing.T) {
	// All records without timestamp (-1): Kafka's uncompressed path
	// reports offsetOfMaxTimestamp -1, the compressed path the last offset.
	for _, tc := range []struct {
		codec      int
		wantOffset int64
	}{{CodecNone, -1}, {CodecGzip, 12}} {
		recs := testRecords(3, 10)
		for i := range recs {
			recs[i].TimestampDelta64 = 0
		}
		s := newSpec(recs)
		s.codec = tc.codec
		s.FirstTimestamp, s.MaxTimestamp = -1, -1
		res, err := ValidateAndAssignOffsets(s.build(t), 10, 1, testNow, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		if res.MaxTimestamp != -1 || res.OffsetOfMaxTimestamp != tc.wantOffset {
			t.Errorf("%s: max timestamp %d at %d, want -1 at %d", CodecName(tc.codec), res.MaxTimestamp, res.OffsetOfMaxTimestamp, tc.wantOffset)
		}
	}
}

func TestValidateLogAppendTime(t *testing.T) {
	cfg := testConfig()
	cfg.MessageTimestampType = "LogAppendTime"
	for _, codec := range []int{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for _, target := range []string{"producer", "zstd"} {
			t.Run(CodecName(codec)+"/"+target, func(t *testing.T) {
				cfg.CompressionType = target
				s := newSpec(testRecords(4, 50))
				s.codec = codec
				s.FirstTimestamp = 1 // far in the past: not checked under LogAppendTime
				res, err := ValidateAndAssignOffsets(s.build(t), 20, 2, testNow, cfg)
				if err != nil {
					t.Fatal(err)
				}
				h, recs := readBatch(t, res.Records) // CRC valid after the rewrite
				now := testNow.UnixMilli()
				if !h.LogAppendTime() || h.MaxTimestamp != now {
					t.Errorf("attributes %x max timestamp %d", h.Attributes, h.MaxTimestamp)
				}
				if res.LogAppendTime != now || res.MaxTimestamp != now || res.OffsetOfMaxTimestamp != 23 {
					t.Errorf("result %+v", res)
				}
				for _, r := range recs {
					if r.Timestamp != now {
						t.Errorf("record timestamp %d", r.Timestamp)
					}
				}
			})
		}
	}
}

func TestValidateCodecs(t *testing.T) {
	// Payloads from our encoder and from the libraries directly, as other
	// clients write them; each validated in place.
	for _, tc := range testCodecEncoders {
		t.Run(tc.name, func(t *testing.T) {
			recs := testRecords(50, 300)
			s := newSpec(recs)
			s.codec, s.compress = tc.codec, tc.compress
			in := s.build(t)
			res, err := ValidateAndAssignOffsets(in, 1000, 3, testNow, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			if &res.Records[0] != &in[0] {
				t.Error("not in place")
			}
			h, got := readBatch(t, res.Records)
			if h.Codec() != tc.codec || h.BaseOffset != 1000 {
				t.Errorf("codec %d base %d", h.Codec(), h.BaseOffset)
			}
			checkSameRecords(t, s, recs, got, 1000)
		})
	}
}

func checkSameRecords(t *testing.T, s batchSpec, want []kmsg.Record, got []decodedRecord, base int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		w := want[i]
		if r.Offset != base+int64(i) || r.Timestamp != s.FirstTimestamp+w.TimestampDelta64 ||
			!bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) ||
			fmt.Sprint(r.Headers) != fmt.Sprint(w.Headers) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, r, w)
		}
	}
}

func TestValidateRecompress(t *testing.T) {
	targets := []string{"uncompressed", "gzip", "snappy", "lz4", "zstd"}
	for _, src := range []int{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for ti, target := range targets {
			t.Run(CodecName(src)+"->"+target, func(t *testing.T) {
				recs := testRecords(30, 200)
				recs[3].Key = nil
				recs[4].Value = nil
				recs[5].Headers = nil
				recs[6].Headers = append(recs[6].Headers, kmsg.Header{Key: "null"})
				s := newSpec(recs)
				s.codec = src
				s.ProducerID, s.ProducerEpoch, s.FirstSequence = 9, 1, 1<<31-10
				s.Attributes = AttrTransactional
				in := s.build(t)
				cfg := testConfig()
				cfg.CompressionType = target
				res, err := ValidateAndAssignOffsets(in, 500, 4, testNow, cfg)
				if err != nil {
					t.Fatal(err)
				}
				inPlace := &res.Records[0] == &in[0]
				if inPlace != (src == ti) {
					t.Errorf("in place = %v", inPlace)
				}
				h, got := readBatch(t, res.Records)
				if h.Codec() != ti || h.BaseOffset != 500 || h.PartitionLeaderEpoch != 4 ||
					h.ProducerID != 9 || h.ProducerEpoch != 1 || h.BaseSequence != 1<<31-10 || !h.IsTransactional() ||
					h.MaxTimestamp != s.FirstTimestamp+29 || h.BaseTimestamp != s.FirstTimestamp {
					t.Errorf("header %+v", h)
				}
				checkSameRecords(t, s, recs, got, 500)
				b := res.Batches[0]
				if b.Size != len(res.Records) || b.LastOffset != 529 || b.LastSequence != 19 || res.OffsetOfMaxTimestamp != 529 {
					t.Errorf("result %+v batch %+v", res, b)
				}
			})
		}
	}
}

func TestValidateRewritesOffsetDeltas(t *testing.T) {
	for _, codec := range []int{CodecNone, CodecLZ4} {
		recs := testRecords(4, 10)
		for i := range recs {
			recs[i].OffsetDelta = int32(i * 2)
		}
		s := newSpec(recs)
		s.codec = codec
		res, err := ValidateAndAssignOffsets(s.build(t), 7, 0, testNow, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		h, got := readBatch(t, res.Records)
		if h.Codec() != codec {
			t.Errorf("codec changed to %d", h.Codec())
		}
		checkSameRecords(t, s, recs, got, 7)
	}
}

func TestLastSequence(t *testing.T) {
	for _, tc := range []struct{ base, delta, want int32 }{
		{-1, 5, -1},
		{0, 0, 0},
		{10, 4, 14},
		{1<<31 - 1, 0, 1<<31 - 1},
		{1<<31 - 1, 1, 0},
		{1<<31 - 3, 5, 2},
	} {
		if got := lastSequence(tc.base, tc.delta); got != tc.want {
			t.Errorf("lastSequence(%d, %d) = %d, want %d", tc.base, tc.delta, got, tc.want)
		}
	}
}

// rawRecord builds a records section by hand: fields are appended as given.
func rawRecord(fields ...func([]byte) []byte) []byte {
	var body []byte
	for _, f := range fields {
		body = f(body)
	}
	return append(appendVarint(nil, int32(len(body))), body...)
}

func vi(v int32) func([]byte) []byte   { return func(b []byte) []byte { return appendVarint(b, v) } }
func vl(v int64) func([]byte) []byte   { return func(b []byte) []byte { return appendVarlong(b, v) } }
func by(p ...byte) func([]byte) []byte { return func(b []byte) []byte { return append(b, p...) } }

func TestValidateErrors(t *testing.T) {
	one := testRecords(1, 10)
	valid := func() batchSpec { return newSpec(testRecords(3, 10)) }
	good := valid().build(t)
	now := testNow.UnixMilli()

	type tc struct {
		name  string
		in    func(t *testing.T) []byte
		cfg   func(*Config)
		want  *kerr.Error
		nrecs int // for record errors: number of records listed
	}
	spec := func(f func(*batchSpec)) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			s := valid()
			f(&s)
			return s.build(t)
		}
	}
	bytesOf := func(b []byte) func(t *testing.T) []byte { return func(*testing.T) []byte { return bytes.Clone(b) } }
	patch := func(f func(b []byte)) func(t *testing.T) []byte {
		return func(*testing.T) []byte { b := bytes.Clone(good); f(b); return b }
	}
	bomb := func(codec int, compress func([]byte) []byte) func(t *testing.T) []byte {
		// 20 MiB of zeros in one value: beyond the 16 MiB limit of a
		// small max.message.bytes.
		return spec(func(s *batchSpec) {
			s.recs = []kmsg.Record{{Value: make([]byte, 20<<20)}}
			s.LastOffsetDelta, s.NumRecords = 0, 1
			s.codec, s.compress = codec, compress
		})
	}
	smallMax := func(c *Config) { c.MaxMessageBytes = 100 << 10 }

	cases := []tc{
		{name: "empty", in: bytesOf(nil), want: kerr.InvalidRecord},
		{name: "short", in: bytesOf(good[:5]), want: kerr.CorruptMessage},
		{name: "length below v0 minimum", in: patch(func(b []byte) { binary.BigEndian.PutUint32(b[offLength:], 13) }), want: kerr.CorruptMessage},
		{name: "magic 3", in: patch(func(b []byte) { b[offMagic] = 3 }), want: kerr.CorruptMessage},
		{name: "magic -1", in: patch(func(b []byte) { b[offMagic] = 0xff }), want: kerr.CorruptMessage},
		{name: "magic 1", in: patch(func(b []byte) { b[offMagic] = 1 }), want: kerr.InvalidRecord},
		{name: "magic 0", in: patch(func(b []byte) { b[offMagic] = 0 }), want: kerr.InvalidRecord},
		{name: "truncated", in: bytesOf(good[:len(good)-1]), want: kerr.CorruptMessage},
		{name: "cut before magic", in: bytesOf(good[:16]), want: kerr.CorruptMessage},
		{name: "two batches", in: bytesOf(append(bytes.Clone(good), good...)), want: kerr.InvalidRecord},
		{name: "trailing garbage", in: bytesOf(append(bytes.Clone(good), 1, 2, 3)), want: kerr.CorruptMessage},
		{name: "trailing partial batch", in: bytesOf(append(bytes.Clone(good), good[:40]...)), want: kerr.CorruptMessage},
		{name: "base offset not 0", in: spec(func(s *batchSpec) { s.FirstOffset = 7 }), want: kerr.InvalidRecord},
		{name: "too large", in: bytesOf(good), cfg: func(c *Config) { c.MaxMessageBytes = int32(len(good) - 1) }, want: kerr.MessageTooLarge},
		{name: "crc", in: patch(func(b []byte) { b[len(b)-1] ^= 1 }), want: kerr.CorruptMessage},
		{name: "crc field", in: spec(func(s *batchSpec) { s.noCRC = true; s.CRC = 1234 }), want: kerr.CorruptMessage},
		{name: "shorter than header", in: func(*testing.T) []byte {
			b := bytes.Clone(good[:40])
			binary.BigEndian.PutUint32(b[offLength:], 40-LogOverhead)
			return b
		}, want: kerr.CorruptMessage},
		{name: "codec 5", in: spec(func(s *batchSpec) { s.payload = encodeRecords(s.recs); s.codec = 5 }), want: kerr.UnsupportedCompressionType},
		{name: "codec 7", in: spec(func(s *batchSpec) { s.payload = encodeRecords(s.recs); s.codec = 7 }), want: kerr.UnsupportedCompressionType},
		{name: "negative lastOffsetDelta", in: spec(func(s *batchSpec) { s.LastOffsetDelta = -1 }), want: kerr.InvalidRecord},
		{name: "zero count", in: spec(func(s *batchSpec) { s.recs = nil; s.LastOffsetDelta = 0; s.NumRecords = 0 }), want: kerr.InvalidRecord},
		{name: "count and lastOffsetDelta differ", in: spec(func(s *batchSpec) { s.NumRecords = 2 }), want: kerr.InvalidRecord},
		{name: "control batch", in: spec(func(s *batchSpec) { s.Attributes = AttrControl }), want: kerr.InvalidRecord},
		{name: "producer id without sequence", in: spec(func(s *batchSpec) { s.ProducerID = 5; s.ProducerEpoch = 0 }), want: kerr.InvalidRecord},
		{name: "fewer records than count", in: spec(func(s *batchSpec) { s.LastOffsetDelta, s.NumRecords = 3, 4 }), want: kerr.InvalidRecord},
		{name: "fewer records than count, compressed", in: spec(func(s *batchSpec) { s.LastOffsetDelta, s.NumRecords, s.codec = 3, 4, CodecGzip }), want: kerr.InvalidRecord},
		{name: "more records than count", in: spec(func(s *batchSpec) { s.LastOffsetDelta, s.NumRecords = 1, 2 }), want: kerr.InvalidRecord},
		{name: "more records than count, compressed", in: spec(func(s *batchSpec) { s.LastOffsetDelta, s.NumRecords, s.codec = 1, 2, CodecZstd }), want: kerr.InvalidRecord},
		{name: "record length past end", in: spec(func(s *batchSpec) {
			s.payload = encodeRecords(one)
			s.payload[0] += 2 // zig-zag: length + 1
			s.LastOffsetDelta, s.NumRecords = 0, 1
		}), want: kerr.InvalidRecord},
		{name: "record length negative", in: spec(func(s *batchSpec) {
			s.payload = rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(0))
			s.payload[0] = 1 // zig-zag -1
			s.LastOffsetDelta, s.NumRecords = 0, 1
		}), want: kerr.InvalidRecord},
		{name: "varint too long", in: spec(func(s *batchSpec) {
			s.payload = append(appendVarint(nil, 12), 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)
			s.LastOffsetDelta, s.NumRecords = 0, 1
		}), want: kerr.InvalidRecord},
		{name: "key past end", in: spec(func(s *batchSpec) {
			s.payload = rawRecord(by(0), vl(0), vi(0), vi(50), by('k'), vi(-1), vi(0))
			s.LastOffsetDelta, s.NumRecords = 0, 1
		}), want: kerr.InvalidRecord},
		{name: "negative header count", in: spec(func(s *batchSpec) {
			s.payload = rawRecord(by(0), vl(0), vi(0), vi(-1), vi(-1), vi(-1))
			s.LastOffsetDelta, s.NumRecords = 0, 1
		}), want: kerr.InvalidRecord},
		{name: "null header key", in: spec(func(s *batchSpec) {
			s.payload = rawRecord(by(0), vl(0), vi(0), vi(1), by('k'), vi(-1), vi(1), vi(-1), vi(-1))
			s.LastOffsetDelta, s.NumRecords = 0, 1
		}), want: kerr.InvalidRecord},
		{name: "record body longer than fields", in: spec(func(s *batchSpec) {
			s.payload = rawRecord(by(0), vl(0), vi(0), vi(1), by('k'), vi(-1), vi(0), by(9))
			s.LastOffsetDelta, s.NumRecords = 0, 1
		}), want: kerr.InvalidRecord},
		{name: "compacted without key", in: spec(func(s *batchSpec) { s.recs[1].Key = nil; s.recs[2].Key = nil }),
			cfg: func(c *Config) { c.CleanupPolicy = []string{"compact", "delete"} }, want: kerr.InvalidRecord, nrecs: 2},
		{name: "timestamp too old", in: spec(func(s *batchSpec) { s.FirstTimestamp = now - 10_000 }),
			cfg: func(c *Config) { c.MessageTimestampBeforeMaxMs = 9_998 }, want: kerr.InvalidTimestamp, nrecs: 2},
		{name: "timestamp too new", in: spec(func(s *batchSpec) { s.FirstTimestamp = now + 3_600_000 }),
			want: kerr.InvalidTimestamp, nrecs: 2},
		{name: "producer set LogAppendTime", in: spec(func(s *batchSpec) { s.Attributes = AttrTimestampType }),
			cfg: func(c *Config) { c.MessageTimestampType = "LogAppendTime" }, want: kerr.InvalidTimestamp, nrecs: 3},
		{name: "key and timestamp errors", in: spec(func(s *batchSpec) { s.recs[0].Key = nil; s.FirstTimestamp = now + 3_600_000 }),
			cfg: func(c *Config) { c.CleanupPolicy = []string{"compact"} }, want: kerr.InvalidTimestamp, nrecs: 3},
		{name: "corrupt gzip", in: spec(func(s *batchSpec) { s.codec = CodecGzip; s.payload = []byte("not gzip at all") }), want: kerr.CorruptMessage},
		{name: "corrupt snappy", in: spec(func(s *batchSpec) { s.codec = CodecSnappy; s.payload = []byte{0xff, 0xff, 0xff} }), want: kerr.CorruptMessage},
		{name: "corrupt xerial", in: spec(func(s *batchSpec) {
			s.codec = CodecSnappy
			s.payload = append(append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1), 0, 0, 1, 0, 1)
		}), want: kerr.CorruptMessage},
		{name: "corrupt lz4", in: spec(func(s *batchSpec) { s.codec = CodecLZ4; s.payload = []byte{0x04, 0x22, 0x4d, 0x18, 1, 2, 3} }), want: kerr.CorruptMessage},
		{name: "corrupt zstd", in: spec(func(s *batchSpec) { s.codec = CodecZstd; s.payload = []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0} }), want: kerr.CorruptMessage},
		{name: "truncated zstd", in: spec(func(s *batchSpec) {
			s.codec = CodecZstd
			p, _ := Compress(nil, CodecZstd, encodeRecords(s.recs))
			s.payload = p[:len(p)-3]
		}), want: kerr.CorruptMessage},
		{name: "gzip bomb", in: bomb(CodecGzip, nil), cfg: smallMax, want: kerr.MessageTooLarge},
		// Snappy cannot expand more than about 32:1, but a block declares
		// its decoded length up front: 1 GiB here, refused before decoding.
		{name: "snappy bomb", in: spec(func(s *batchSpec) {
			s.codec = CodecSnappy
			s.payload = append(binary.AppendUvarint(nil, 1<<30), 0, 0, 0)
		}), want: kerr.MessageTooLarge},
		{name: "xerial bomb", in: spec(func(s *batchSpec) {
			s.codec = CodecSnappy
			s.payload = append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 8)
			s.payload = append(binary.AppendUvarint(s.payload, 1<<30), 0, 0, 0)
		}), want: kerr.MessageTooLarge},
		{name: "lz4 bomb", in: bomb(CodecLZ4, nil), cfg: smallMax, want: kerr.MessageTooLarge},
		{name: "zstd bomb", in: bomb(CodecZstd, nil), cfg: smallMax, want: kerr.MessageTooLarge},
		{name: "zstd bomb, streamed frame", in: bomb(CodecZstd, zstdStreamed), cfg: smallMax, want: kerr.MessageTooLarge},
		{name: "too large after recompression", in: spec(func(s *batchSpec) {
			s.recs = []kmsg.Record{{Value: make([]byte, 50<<10)}}
			s.LastOffsetDelta, s.NumRecords, s.codec = 0, 1, CodecZstd
		}), cfg: func(c *Config) { c.MaxMessageBytes = 10 << 10; c.CompressionType = "uncompressed" }, want: kerr.MessageTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			in := c.in(t)
			res, err := ValidateAndAssignOffsets(in, 0, 0, testNow, cfg)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v (result %+v)", err, c.want, res.Batches)
			}
			var rve *RecordValidationError
			if errors.As(err, &rve) != (c.nrecs > 0) {
				t.Fatalf("RecordValidationError: %v, want records %d", err, c.nrecs)
			}
			if rve != nil && len(rve.Records) != c.nrecs {
				t.Errorf("record errors %+v, want %d", rve.Records, c.nrecs)
			}
			t.Log(err)
		})
	}
}

func TestValidateTimestampBounds(t *testing.T) {
	now := testNow.UnixMilli()
	cfg := testConfig()
	cfg.MessageTimestampBeforeMaxMs = 1000
	cfg.MessageTimestampAfterMaxMs = 1000
	for _, tc := range []struct {
		ts int64
		ok bool
	}{
		{now - 1000, true}, {now - 1001, false}, {now + 1000, true}, {now + 1001, false},
		{-1, true}, // NO_TIMESTAMP is never checked
	} {
		s := newSpec(testRecords(1, 1))
		s.FirstTimestamp, s.MaxTimestamp = tc.ts, tc.ts
		s.recs[0].TimestampDelta64 = 0
		_, err := ValidateAndAssignOffsets(s.build(t), 0, 0, testNow, cfg)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, kerr.InvalidTimestamp)) {
			t.Errorf("timestamp now%+d: err %v", tc.ts-now, err)
		}
	}
}

func TestValidateCreateTimeClearsProducerLogAppendTime(t *testing.T) {
	// Kafka accepts a producer's LogAppendTime bit on a CreateTime topic:
	// every record takes the batch max timestamp, and setMaxTimestamp
	// resets the type to CreateTime.
	s := newSpec(testRecords(2, 1))
	s.Attributes = AttrTimestampType
	s.MaxTimestamp = testNow.UnixMilli() - 5
	res, err := ValidateAndAssignOffsets(s.build(t), 0, 0, testNow, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	h, _ := readBatch(t, res.Records)
	if h.LogAppendTime() || h.MaxTimestamp != s.MaxTimestamp || res.MaxTimestamp != s.MaxTimestamp {
		t.Errorf("header %+v result %+v", h, res)
	}
}

func TestValidateUncompressedAllocs(t *testing.T) {
	in := newSpec(benchRecords()).build(t)
	cfg := testConfig()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ValidateAndAssignOffsets(in, 0, 0, testNow, cfg); err != nil {
			t.Fatal(err)
		}
		SetBaseOffset(in, 0)
	})
	if allocs > 1 { // the Batches slice
		t.Errorf("%v allocations per validation, want at most 1", allocs)
	}
}

// benchRecords is 16 records of 1 KiB with text-like values, about 16 KiB.
func benchRecords() []kmsg.Record {
	recs := testRecords(16, 0)
	text := compressibleData(16 << 10)
	for i := range recs {
		recs[i].Value = text[i<<10 : (i+1)<<10]
	}
	return recs
}

func BenchmarkValidateUncompressed(b *testing.B) {
	in := newSpec(benchRecords()).build(b)
	cfg := testConfig()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValidateAndAssignOffsets(in, 0, 0, testNow, cfg); err != nil {
			b.Fatal(err)
		}
		SetBaseOffset(in, 0)
	}
}

func BenchmarkValidateZstd(b *testing.B) {
	s := newSpec(benchRecords())
	s.codec = CodecZstd
	in := s.build(b)
	raw := len(encodeRecords(s.recs)) + BatchHeaderSize
	cfg := testConfig()
	b.SetBytes(int64(raw)) // uncompressed bytes validated
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValidateAndAssignOffsets(in, 0, 0, testNow, cfg); err != nil {
			b.Fatal(err)
		}
		SetBaseOffset(in, 0)
	}
}

func BenchmarkValidateRecompressZstd(b *testing.B) {
	in := newSpec(benchRecords()).build(b)
	cfg := testConfig()
	cfg.CompressionType = "zstd"
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValidateAndAssignOffsets(in, 0, 0, testNow, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	// Pooled decoders, encoders and buffers shared by goroutines (run
	// with -race).
	cfg := testConfig()
	cfg.CompressionType = "lz4"
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			for i := 0; i < 20 && err == nil; i++ {
				s := newSpec(testRecords(10+g, 100))
				s.codec = []int{CodecNone, CodecGzip, CodecSnappy, CodecZstd}[(g+i)%4]
				var res ValidationResult
				if res, err = ValidateAndAssignOffsets(s.build(t), int64(i), 0, testNow, cfg); err == nil {
					var h BatchHeader
					if h, err = CheckBatch(res.Records); err == nil && h.NumRecords != int32(10+g) {
						err = fmt.Errorf("%d records", h.NumRecords)
					}
				}
			}
			done <- err
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
