package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseOffsetSpec(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want offsetSpec
		err  string
	}{
		{in: "start", want: offsetSpec{kind: offsetStart}},
		{in: "beginning", want: offsetSpec{kind: offsetStart}},
		{in: "EARLIEST", want: offsetSpec{kind: offsetStart}},
		{in: "oldest", want: offsetSpec{kind: offsetStart}},
		{in: "end", want: offsetSpec{kind: offsetEnd}},
		{in: "latest", want: offsetSpec{kind: offsetEnd}},
		{in: "newest", want: offsetSpec{kind: offsetEnd}},
		{in: "0", want: offsetSpec{kind: offsetExact, n: 0}},
		{in: "1500", want: offsetSpec{kind: offsetExact, n: 1500}},
		{in: "-10", want: offsetSpec{kind: offsetFromEnd, n: 10}},
		{in: "-0", want: offsetSpec{kind: offsetFromEnd, n: 0}},
		{in: "+7", want: offsetSpec{kind: offsetFromStart, n: 7}},
		{in: "@1700000000000", want: offsetSpec{kind: offsetTime, millis: 1700000000000}},
		{in: "@0", want: offsetSpec{kind: offsetTime, millis: 0}},
		{in: "@2024-05-01T10:00:00Z", want: offsetSpec{kind: offsetTime, millis: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMilli()}},
		{in: "@2024-05-01T12:00:00+02:00", want: offsetSpec{kind: offsetTime, millis: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMilli()}},
		{in: "@2024-05-01T10:00:00.250Z", want: offsetSpec{kind: offsetTime, millis: time.Date(2024, 5, 1, 10, 0, 0, 250e6, time.UTC).UnixMilli()}},
		{in: "@2024-05-01", want: offsetSpec{kind: offsetTime, millis: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMilli()}},
		{in: "@-1h30m", want: offsetSpec{kind: offsetTime, millis: now.Add(-90 * time.Minute).UnixMilli()}},
		{in: " end ", want: offsetSpec{kind: offsetEnd}},
		{in: "", err: "empty"},
		{in: "-", err: "expected -N"},
		{in: "--5", err: "expected -N"},
		{in: "+-5", err: "expected +N"},
		{in: "+x", err: "expected +N"},
		{in: "abc", err: "expected start, end"},
		{in: "1.5", err: "expected start, end"},
		{in: "@", err: "expected @ followed by"},
		{in: "@-5", err: "milliseconds cannot be negative"},
		{in: "@-5x", err: "expected @-DURATION"},
		{in: "@yesterday", err: "expected Unix milliseconds"},
		{in: "@-1", err: "milliseconds cannot be negative"},
	}
	for _, tt := range tests {
		got, err := parseOffsetSpec(tt.in, now)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseOffsetSpec(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseOffsetSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestOffsetSpecResolve(t *testing.T) {
	// A partition whose log holds offsets [100, 200).
	const start, end = 100, 200
	tests := []struct {
		spec   string
		atTime int64
		want   int64
	}{
		{"start", -1, 100},
		{"end", -1, 200},
		{"150", -1, 150},
		{"50", -1, 100},  // before the log: its start
		{"500", -1, 200}, // past the end: the end
		{"-10", -1, 190},
		{"-0", -1, 200},
		{"-1000", -1, 100},
		{"+10", -1, 110},
		{"+1000", -1, 200},
		{"+9223372036854775807", -1, 200}, // no overflow
		{"@5", 140, 140},
		{"@5", -1, 200}, // no record at or after T: the end
	}
	for _, tt := range tests {
		spec, err := parseOffsetSpec(tt.spec, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.resolve(start, end, tt.atTime); got != tt.want {
			t.Errorf("%s.resolve(%d, %d, %d) = %d, want %d", tt.spec, start, end, tt.atTime, got, tt.want)
		}
	}
}

func TestOffsetSpecStringRoundTrips(t *testing.T) {
	for _, s := range []string{"start", "end", "42", "-3", "+3", "@1700000000000"} {
		spec, err := parseOffsetSpec(s, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := spec.String(); got != s {
			t.Errorf("String() = %q, want %q", got, s)
		}
		if again, _ := parseOffsetSpec(spec.String(), time.Now()); again != spec {
			t.Errorf("%q does not round-trip: %+v vs %+v", s, again, spec)
		}
	}
}

func TestParseSeekTarget(t *testing.T) {
	now := time.Now()
	got, err := parseSeekTarget("orders:0=12, orders:1=0,my:topic:3=7", now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[tp]int64{{"orders", 0}: 12, {"orders", 1}: 0, {"my:topic", 3}: 7}
	if len(got.exact) != len(want) {
		t.Fatalf("got %v, want %v", got.exact, want)
	}
	for k, v := range want {
		if got.exact[k] != v {
			t.Errorf("%v = %d, want %d", k, got.exact[k], v)
		}
	}
	if got, err := parseSeekTarget("@-1h", now); err != nil || got.spec.kind != offsetTime || got.exact != nil {
		t.Errorf("@-1h: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "orders=5", "orders:x=5", "orders:0=-1", "orders:0=1,orders:0=2", ":0=1", "nonsense"} {
		if _, err := parseSeekTarget(bad, now); err == nil {
			t.Errorf("parseSeekTarget(%q) accepted", bad)
		}
	}
}
