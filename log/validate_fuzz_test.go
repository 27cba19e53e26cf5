package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzValidate feeds arbitrary bytes to ValidateAndAssignOffsets: it must
// never panic, every error must wrap a kerr code, and every accepted input
// must come out as valid batches whose records all decode.
//
//	go test -run '^$' -fuzz FuzzValidate -fuzztime 2m ./log/
func FuzzValidate(f *testing.F) {
	for _, tc := range testCodecEncoders {
		recs := testRecords(3, 20)
		recs[1].Key = nil
		s := newSpec(recs)
		s.codec, s.compress = tc.codec, tc.compress
		f.Add(s.build(f), uint8(0))
		f.Add(s.build(f), uint8(0xff))
	}
	s := newSpec(testRecords(1, 0))
	s.ProducerID, s.ProducerEpoch, s.FirstSequence = 1, 0, 1<<31-1
	f.Add(s.build(f), uint8(0x12))
	f.Add([]byte{}, uint8(0))

	f.Fuzz(func(t *testing.T, in []byte, knobs uint8) {
		// The CRC would stop almost every mutation at the door; fix it up
		// in most runs so the fuzzer reaches the record parser.
		if knobs&1 == 0 && len(in) >= BatchHeaderSize {
			if n := int(binary.BigEndian.Uint32(in[offLength:])) + LogOverhead; n >= BatchHeaderSize && n <= len(in) {
				binary.BigEndian.PutUint32(in[offCRC:], BatchCRC(in[:n]))
			}
		}
		cfg := DefaultConfig()
		cfg.CompressionType = []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd", "producer", "producer"}[knobs>>1&7]
		if knobs&0x10 != 0 {
			cfg.MessageTimestampType = "LogAppendTime"
		}
		if knobs&0x20 != 0 {
			cfg.CleanupPolicy = []string{"compact"}
		}
		if knobs&0x40 != 0 {
			cfg.MessageTimestampBeforeMaxMs = 1 << 40
		}
		orig := bytes.Clone(in)
		res, err := ValidateAndAssignOffsets(in, 100, 5, testNow, cfg)
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				t.Fatalf("error wraps no kerr code: %v", err)
			}
			return
		}
		if len(res.Batches) != 1 || res.Batches[0].Size != len(res.Records) {
			t.Fatalf("batches %+v for %d bytes", res.Batches, len(res.Records))
		}
		h, err := CheckBatch(res.Records)
		if err != nil {
			t.Fatalf("output batch invalid: %v", err)
		}
		if h.BaseOffset != 100 || h.PartitionLeaderEpoch != 5 || res.FirstOffset != 100 ||
			res.LastOffset != 100+int64(h.NumRecords)-1 || res.NumRecords != int(h.NumRecords) {
			t.Fatalf("offsets: header %+v result %+v", h, res)
		}
		data, err := Decompress(nil, h.Codec(), res.Records[BatchHeaderSize:], 1<<30)
		if err != nil {
			t.Fatalf("output does not decompress: %v", err)
		}
		// The output must parse, with kmsg too, record for record.
		it := NewRecordIter(data)
		var r Record
		for i := 0; ; i++ {
			ok, err := it.Next(&r)
			if err != nil {
				t.Fatalf("output record %d: %v", i, err)
			}
			if !ok {
				if i != int(h.NumRecords) {
					t.Fatalf("output has %d records, header says %d", i, h.NumRecords)
				}
				break
			}
			if r.OffsetDelta != int32(i) {
				t.Fatalf("output record %d has offset delta %d", i, r.OffsetDelta)
			}
			var kr kmsg.Record
			if err := kr.ReadFrom(r.Raw); err != nil {
				t.Fatalf("kmsg cannot read output record %d: %v", i, err)
			}
		}
		// Nothing but the header fields Kafka patches may change in place.
		if &res.Records[0] == &in[0] {
			patched := bytes.Clone(orig[:len(res.Records)])
			for _, f := range [][2]int{
				{offBaseOffset, 8}, {offPartitionLeaderEpoch, 4}, {offCRC, 4}, {offAttributes, 2}, {offMaxTimestamp, 8},
			} {
				copy(patched[f[0]:f[0]+f[1]], res.Records[f[0]:f[0]+f[1]])
			}
			if !bytes.Equal(patched, res.Records) {
				t.Fatalf("in-place validation changed more than the header")
			}
		}
	})
}
