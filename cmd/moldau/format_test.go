package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func testRecord() *kgo.Record {
	return &kgo.Record{
		Topic: "orders", Partition: 2, Offset: 1234, LeaderEpoch: 5,
		Timestamp: time.UnixMilli(1700000000123),
		Key:       []byte("user-7"), Value: []byte(`{"n":1}`),
		Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("cli")}, {Key: "trace", Value: []byte("abc")}},
	}
}

func TestFormat(t *testing.T) {
	r := testRecord()
	tests := []struct{ format, want string }{
		{`%v\n`, "{\"n\":1}\n"},
		{`%t/%p/%o %k=%v`, `orders/2/1234 user-7={"n":1}`},
		{`%T %e`, "1700000000123 5"},
		{`%K %V`, "6 7"},
		{`%h`, "source=cli,trace=abc"},
		{`100%% %k\t%v\r\n\\`, "100% user-7\t{\"n\":1}\r\n\\"},
		{`plain text`, "plain text"},
		{``, ""},
	}
	for _, tt := range tests {
		f, err := parseFormat(tt.format)
		if err != nil {
			t.Fatalf("parseFormat(%q): %v", tt.format, err)
		}
		if got := string(f.appendRecord(nil, r)); got != tt.want {
			t.Errorf("format %q = %q, want %q", tt.format, got, tt.want)
		}
	}
}

func TestFormatNulls(t *testing.T) {
	r := &kgo.Record{Topic: "t", Timestamp: time.UnixMilli(0)}
	f, err := parseFormat(`[%k][%v][%K][%V][%h]`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(f.appendRecord(nil, r)), "[][][-1][-1][]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	r.Key, r.Value = []byte{}, []byte{}
	if got, want := string(f.appendRecord(nil, r)), "[][][0][0][]"; got != want {
		t.Errorf("empty: got %q, want %q", got, want)
	}
}

func TestFormatBytesVerbatim(t *testing.T) {
	r := &kgo.Record{Key: []byte{0xff, 0}, Value: []byte{0x80, '\n', 0xfe}}
	f, _ := parseFormat(`%k|%v`)
	if got, want := f.appendRecord(nil, r), []byte{0xff, 0, '|', 0x80, '\n', 0xfe}; !bytes.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFormatErrors(t *testing.T) {
	for _, tt := range []struct{ format, err string }{
		{`%x`, "unknown verb %x"},
		{`%`, "lone"},
		{`abc\`, "lone"},
		{`\q`, `unknown escape \q`},
		{`%d`, "unknown verb %d"},
	} {
		_, err := parseFormat(tt.format)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("parseFormat(%q) = %v, want error containing %q", tt.format, err, tt.err)
		}
	}
}

// TestJSONRecordRoundTrip checks that consume --json's encoding gives back
// the exact bytes of any key, value and header, UTF-8 or not.
func TestJSONRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name       string
		key, value []byte
		header     []byte
		wantEnc    string // value_encoding
	}{
		{"text", []byte("k"), []byte("héllo wörld"), []byte("h"), ""},
		{"controls", []byte("a\x00b"), []byte("line1\nline2\t\"q\" <&> \u2028"), nil, ""},
		{"binary", []byte{0xff, 0xfe}, []byte{0x00, 0x80, 0xc3, 0x28, 0xff}, []byte{0xc0}, "base64"},
		{"nulls", nil, nil, nil, ""},
		{"empty", []byte{}, []byte{}, []byte{}, ""},
	}
	for _, c := range cases {
		r := &kgo.Record{Topic: "t", Key: c.key, Value: c.value, Timestamp: time.UnixMilli(1),
			Headers: []kgo.RecordHeader{{Key: "h", Value: c.header}}}
		var buf bytes.Buffer
		if err := writeJSON(&buf, toJSONRecord(r)); err != nil {
			t.Fatal(err)
		}
		if bytes.Count(buf.Bytes(), []byte("\n")) != 1 {
			t.Errorf("%s: not one line: %q", c.name, buf.String())
		}
		var got jsonRecord
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, buf.String())
		}
		if got.ValueEncoding != c.wantEnc {
			t.Errorf("%s: value_encoding %q, want %q", c.name, got.ValueEncoding, c.wantEnc)
		}
		k, err1 := decodeBytes(got.Key, got.KeyEncoding)
		v, err2 := decodeBytes(got.Value, got.ValueEncoding)
		h, err3 := decodeBytes(got.Headers[0].Value, got.Headers[0].ValueEncoding)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: decode: %v %v %v", c.name, err1, err2, err3)
		}
		if !sameBytes(k, c.key) || !sameBytes(v, c.value) || !sameBytes(h, c.header) {
			t.Errorf("%s: round trip gave key %q value %q header %q, want %q %q %q", c.name, k, v, h, c.key, c.value, c.header)
		}
	}
}

// sameBytes is bytes.Equal that also tells null from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
