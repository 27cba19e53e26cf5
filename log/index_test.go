package log

import (
	"encoding/binary"
	"testing"
)

func TestOffsetIndexLookup(t *testing.T) {
	ix := newOffsetIndex(100, 1024)
	for _, e := range []OffsetPosition{{110, 400}, {120, 800}, {135, 1300}} {
		if err := ix.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		target int64
		want   OffsetPosition
	}{
		{50, OffsetPosition{100, 0}},  // below base
		{100, OffsetPosition{100, 0}}, // base, before first entry
		{109, OffsetPosition{100, 0}},
		{110, OffsetPosition{110, 400}},
		{119, OffsetPosition{110, 400}},
		{120, OffsetPosition{120, 800}},
		{134, OffsetPosition{120, 800}},
		{135, OffsetPosition{135, 1300}},
		{1 << 40, OffsetPosition{135, 1300}}, // beyond: last
	}
	for _, tt := range tests {
		if got := ix.Lookup(tt.target); got != tt.want {
			t.Errorf("Lookup(%d) = %+v, want %+v", tt.target, got, tt.want)
		}
	}
	if got := newOffsetIndex(5, 1024).Lookup(7); got != (OffsetPosition{5, 0}) {
		t.Errorf("empty index lookup = %+v", got)
	}
}

func TestOffsetIndexAppendRules(t *testing.T) {
	tests := []struct {
		name    string
		entries []OffsetPosition
		wantErr bool
	}{
		{"increasing", []OffsetPosition{{1, 10}, {2, 20}}, false},
		{"same offset", []OffsetPosition{{1, 10}, {1, 20}}, true},
		{"same position", []OffsetPosition{{1, 10}, {2, 10}}, true},
		{"below base", []OffsetPosition{{-1, 10}}, true},
		{"relative overflow", []OffsetPosition{{1 << 32, 10}}, true},
		{"full", []OffsetPosition{{1, 1}, {2, 2}, {3, 3}}, true}, // 16 bytes = 2 entries
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newOffsetIndex(0, 16)
			var err error
			for _, e := range tt.entries {
				if err = ix.Append(e.Offset, e.Position); err != nil {
					break
				}
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

func TestTimeIndex(t *testing.T) {
	ix := newTimeIndex(1000, 12*10)
	steps := []struct {
		ts, off int64
		entries int
	}{
		{5000, 1005, 1},
		{5000, 1010, 1}, // not larger: skipped
		{4000, 1011, 1}, // smaller: skipped
		{6000, 1020, 2},
		{9000, 1030, 3},
	}
	for _, s := range steps {
		if err := ix.MaybeAppend(s.ts, s.off, false); err != nil {
			t.Fatal(err)
		}
		if ix.Entries() != s.entries {
			t.Fatalf("after (%d,%d): %d entries, want %d", s.ts, s.off, ix.Entries(), s.entries)
		}
	}
	tests := []struct {
		ts   int64
		want TimestampOffsetEntry
	}{
		{1000, TimestampOffsetEntry{-1, 1000}},
		{5000, TimestampOffsetEntry{5000, 1005}},
		{5999, TimestampOffsetEntry{5000, 1005}},
		{6000, TimestampOffsetEntry{6000, 1020}},
		{1 << 50, TimestampOffsetEntry{9000, 1030}},
	}
	for _, tt := range tests {
		if got := ix.Lookup(tt.ts); got != tt.want {
			t.Errorf("Lookup(%d) = %+v, want %+v", tt.ts, got, tt.want)
		}
	}
	if ix.LastEntry() != (TimestampOffsetEntry{9000, 1030}) {
		t.Errorf("LastEntry = %+v", ix.LastEntry())
	}
	// Full keeps one slot for the final entry.
	small := newTimeIndex(0, 24) // 2 entries
	_ = small.MaybeAppend(1, 1, false)
	if !small.IsFull() {
		t.Fatal("time index with maxEntries-1 entries should be full")
	}
	if err := small.MaybeAppend(2, 2, true); err != nil || small.Entries() != 2 {
		t.Fatalf("final entry: err %v entries %d", err, small.Entries())
	}
}

func TestIndexDecode(t *testing.T) {
	enc := func(pairs ...uint32) []byte {
		var b []byte
		for _, p := range pairs {
			b = binary.BigEndian.AppendUint32(b, p)
		}
		return b
	}
	tests := []struct {
		name    string
		b       []byte
		want    int
		wantErr bool
	}{
		{"empty", nil, 0, false},
		{"two", enc(3, 100, 7, 300), 2, false},
		{"zero tail (preallocated)", enc(3, 100, 7, 300, 0, 0, 0, 0), 2, false},
		{"not a multiple", enc(3, 100, 7)[:11], 0, true},
		{"offsets not increasing", enc(7, 100, 3, 300), 0, true},
		{"positions not increasing", enc(3, 300, 7, 100), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeOffsetIndex(tt.b)
			if (err != nil) != tt.wantErr || (err == nil && len(got) != tt.want) {
				t.Fatalf("got %d entries, err %v; want %d, err %v", len(got), err, tt.want, tt.wantErr)
			}
		})
	}
	ti := newTimeIndex(10, 1024)
	_ = ti.MaybeAppend(100, 12, false)
	_ = ti.MaybeAppend(200, 15, false)
	b := ti.encode(nil, 0, 2)
	b = append(b, make([]byte, 24)...)
	got, err := decodeTimeIndex(b)
	if err != nil || len(got) != 2 || got[1].ts != 200 || got[1].rel != 5 {
		t.Fatalf("time index round trip: %v %+v", err, got)
	}
	if _, err := decodeTimeIndex(append(ti.encode(nil, 1, 2), ti.encode(nil, 0, 1)...)); err == nil {
		t.Fatal("decreasing time index decoded without error")
	}
}
