package log

import "testing"

// memoryAccount records what validation takes and gives back.
type memoryAccount struct{ taken, peak, calls int64 }

func (m *memoryAccount) Take(n int64) {
	m.taken += n
	m.peak = max(m.peak, m.taken)
	m.calls++
}

func (m *memoryAccount) Return(n int64) { m.taken -= n }

// A batch decompressed for validation is taken from Config.Memory while
// it is validated, and returned after; an uncompressed one takes nothing.
func TestValidationCountsDecompressedMemory(t *testing.T) {
	recs := testRecords(200, 1000)
	for _, codec := range []int{CodecNone, CodecGzip, CodecZstd} {
		s := newSpec(recs)
		s.codec = codec
		m := &memoryAccount{}
		cfg := testConfig()
		cfg.Memory = m
		if _, err := ValidateAndAssignOffsets(s.build(t), 0, 0, testNow, cfg); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.taken != 0:
			t.Fatalf("codec %d: %d bytes not released", codec, m.taken)
		case codec == CodecNone && m.calls != 0:
			t.Fatalf("an uncompressed batch took %d bytes", m.peak)
		case codec != CodecNone && m.peak < int64(len(encodeRecords(recs))):
			t.Fatalf("codec %d: took %d bytes for %d decompressed", codec, m.peak, len(encodeRecords(recs)))
		}
	}
}
