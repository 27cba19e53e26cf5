package log

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// The builder's bytes equal the kmsg-built reference batch (ltBatch) for
// every codec, producer fields included.
func TestBatchBuilderMatchesReference(t *testing.T) {
	for _, codec := range []int{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for _, pid := range []int64{-1, 7} {
			spec := ltBatchSpec{n: 5, valueSize: 40, ts: 1_700_000_000_000, pid: pid, epoch: 3, seq: 11, codec: codec}
			want := ltBatch(t, spec)
			b := NewBatchBuilder(0)
			b.Codec = codec
			if pid >= 0 {
				b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 3, 11
			}
			for i := 0; i < spec.n; i++ {
				b.Add(spec.ts+int64(i), fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{byte('a' + i%26)}, spec.valueSize))
			}
			got, err := b.Build(nil)
			if err != nil {
				t.Fatal(err)
			}
			if codec == CodecNone || codec == CodecSnappy {
				// Deterministic codecs: identical bytes.
				if !bytes.Equal(got, want) {
					t.Fatalf("codec %d pid %d: builder bytes differ from the reference", codec, pid)
				}
			}
			h, err := CheckBatch(got)
			if err != nil {
				t.Fatalf("codec %d: %v", codec, err)
			}
			if h.NumRecords != 5 || h.LastOffsetDelta != 4 || h.MaxTimestamp != spec.ts+4 || h.ProducerID != pid {
				t.Fatalf("codec %d: header %+v", codec, h)
			}
			// The log accepts it as a producer batch.
			if _, err := ValidateAndAssignOffsets(got, 0, 0, time.UnixMilli(1_700_000_000_000), DefaultConfig()); err != nil {
				t.Fatalf("codec %d: validate: %v", codec, err)
			}
		}
	}
}

// Records added with explicit offsets keep them; the batch may claim a
// larger last offset than its last record, and carry a delete horizon.
func TestBatchBuilderCleanerShape(t *testing.T) {
	b := NewBatchBuilder(100)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 5, 0, 0
	b.DeleteHorizonMs = 99_000
	b.AddWithOffset(1, 10, []byte("a"), []byte("1"), Header{"h", []byte("v")})
	b.AddWithOffset(3, 12, []byte("b"), nil)
	b.SetLastOffsetDelta(4)
	raw, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := CheckBatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 100 || h.LastOffset() != 104 || h.NumRecords != 2 || h.Attributes&AttrDeleteHorizon == 0 || h.BaseTimestamp != 99_000 {
		t.Fatalf("header %+v", h)
	}
	it := NewRecordIter(raw[BatchHeaderSize:])
	var r Record
	var offs []int32
	for {
		ok, err := it.Next(&r)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		offs = append(offs, r.OffsetDelta)
		// Timestamps are relative to the delete horizon (KIP-534).
		if ts := h.BaseTimestamp + r.TimestampDelta; ts != 10+2*int64(r.OffsetDelta-1)/2 {
			t.Fatalf("record %d: timestamp %d", r.OffsetDelta, ts)
		}
		if r.OffsetDelta == 3 && r.Value != nil {
			t.Fatal("tombstone lost its null value")
		}
		if r.OffsetDelta == 1 {
			hi := NewHeaderIter(&r)
			k, v, ok := hi.Next()
			if !ok || string(k) != "h" || string(v) != "v" {
				t.Fatalf("header %q=%q %v", k, v, ok)
			}
		}
	}
	if fmt.Sprint(offs) != "[1 3]" {
		t.Fatalf("offset deltas %v", offs)
	}
}

// Setting the delete horizon after records were added is refused (their
// timestamp deltas would be relative to the wrong base); an empty batch
// keeps the max timestamp it is given, as Kafka's writeEmptyHeader.
func TestBatchBuilderHorizonAndEmpty(t *testing.T) {
	b := NewBatchBuilder(7)
	b.Add(10, []byte("k"), []byte("v"))
	b.DeleteHorizonMs = 99
	if _, err := b.Build(nil); err == nil {
		t.Fatal("a late DeleteHorizonMs was accepted")
	}
	b.Reset(7)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = 3, 1, 40
	b.SetLastOffsetDelta(9)
	b.SetMaxTimestamp(1234)
	raw, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := CheckBatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	if h.NumRecords != 0 || h.LastOffset() != 16 || h.MaxTimestamp != 1234 || h.BaseTimestamp != -1 || h.BaseSequence != 40 || len(raw) != BatchHeaderSize {
		t.Fatalf("empty batch header %+v (%d bytes)", h, len(raw))
	}
}

func TestBuildControlBatch(t *testing.T) {
	raw := BuildControlBatch(42, 1000, 9, 2, 7, ControlCommit, 5)
	h, err := CheckBatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 9 || h.ProducerEpoch != 2 || h.PartitionLeaderEpoch != 7 || h.BaseOffset != 42 {
		t.Fatalf("header %+v", h)
	}
	it := NewRecordIter(raw[BatchHeaderSize:])
	var r Record
	if ok, err := it.Next(&r); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if !bytes.Equal(r.Key, []byte{0, 0, 0, 1}) || !bytes.Equal(r.Value, []byte{0, 0, 0, 0, 0, 5}) {
		t.Fatalf("key %x value %x", r.Key, r.Value)
	}
}
