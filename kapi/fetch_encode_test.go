package kapi

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// encodeWithRegions must put on the wire exactly what kmsg would encode
// with the record bytes inline, for every Fetch version served.
func TestEncodeWithRegionsMatchesKmsg(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	slices := []log.FileSlice{
		{File: f, Pos: 0, Size: 10},
		{File: f, Pos: 100, Size: 200},    // 1-byte uvarint
		{File: f, Pos: 1000, Size: 20000}, // 3-byte uvarint
		{File: f, Pos: 0, Size: int64(len(data))},
		log.BytesSlice(data[5000:9000]), // bytes in memory (remote storage): a region of their own
	}
	h := New(Config{})
	for v := int16(4); v <= 18; v++ {
		build := func(inline bool) *kmsg.FetchResponse {
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = v
			resp.SessionID = 7
			for ti := 0; ti < 2; ti++ {
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = "topic-" + string(rune('a'+ti))
				rt.TopicID = [16]byte{byte(ti + 1)}
				for pi := 0; pi < 3; pi++ {
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition = int32(pi)
					rp.HighWatermark = int64(1000 + pi)
					rp.RecordBatches = []byte{}
					switch pi { // read_committed answers: a list, or an empty one
					case 1:
						at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
						at.ProducerID, at.FirstOffset = 5, 900
						rp.AbortedTransactions = append(rp.AbortedTransactions, at, at)
					case 2:
						rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
					}
					n := ti*3 + pi
					if n < len(slices) {
						s := slices[n]
						if b, ok := s.Bytes(); ok && inline {
							rp.RecordBatches = b
						} else if inline {
							rp.RecordBatches = data[s.Pos : s.Pos+s.Size]
						} else {
							rp.RecordBatches = regionMarker(n)
						}
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		r := &Request{APIKey: 1, APIVersion: v, CorrelationID: 99}
		want := h.encode(r, build(true)).Buf
		bare := build(false)
		got := spliceRegions(h.encode(r, bare), bare.IsFlexible(), slices)
		var wire []byte
		at := 0
		for _, reg := range got.Regions {
			wire = append(wire, got.Buf[at:reg.At]...)
			if reg.File == nil {
				wire = append(wire, reg.Bytes...)
			} else {
				wire = append(wire, data[reg.Off:reg.Off+reg.Len]...)
			}
			at = reg.At
		}
		wire = append(wire, got.Buf[at:]...)
		if !bytes.Equal(wire, want) {
			t.Fatalf("v%d: spliced response differs from kmsg's (%d vs %d bytes)", v, len(wire), len(want))
		}
		if got.Size() != int64(len(want)) {
			t.Fatalf("v%d: Size %d, want %d", v, got.Size(), len(want))
		}
	}
}
