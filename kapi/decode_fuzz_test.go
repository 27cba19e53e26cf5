package kapi

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRequest feeds arbitrary bodies to the decoder of every API and
// version the broker serves. It must never panic, and must never allocate
// more than a bounded multiple of the input (the class of bug behind
// CVE-2022-34917).
func FuzzDecodeRequest(f *testing.F) {
	for _, a := range apis {
		for v := a.min; v <= a.max; v++ {
			req := kmsg.RequestForKey(a.key)
			req.SetVersion(v)
			f.Add(a.key, v, req.AppendTo(nil))
		}
	}
	// Hostile array lengths.
	f.Add(int16(3), int16(12), binary.BigEndian.AppendUint32([]byte{0x7f, 0xff, 0xff, 0xff}, 0x7fffffff))
	f.Add(int16(1), int16(4), make([]byte, 64))
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		a := lookupAPI(key)
		if a == nil {
			a = &apis[int(uint16(key))%len(apis)]
		}
		if version < a.min || version > a.max {
			version = a.min + int16(int(uint16(version))%int(a.max-a.min+1))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		req, err := decodeRequest(a.key, version, body)
		runtime.ReadMemStats(&after)
		if err == nil && req == nil {
			t.Fatal("nil request without error")
		}
		// Each wire byte can become at most one struct element; the
		// largest kmsg request element is a few hundred bytes.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(body))*512+1<<20 {
			t.Fatalf("%s v%d: %d-byte body allocated %d bytes", kmsg.NameForKey(a.key), version, len(body), alloc)
		}
	})
}
