package network

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"
)

func TestParseRequestHeader(t *testing.T) {
	cid := "client-1"
	cases := []struct {
		name     string
		frame    []byte
		err      error
		flexible bool
		clientID *string
		body     string
	}{
		{"apiversions v0", encodeRequest(18, 0, 7, &cid, []byte("body"))[4:], nil, false, &cid, "body"},
		{"apiversions v3 flexible", encodeRequest(18, 3, 7, &cid, []byte("body"))[4:], nil, true, &cid, "body"},
		{"produce v9 flexible", encodeRequest(0, 9, 7, &cid, []byte("b"))[4:], nil, true, &cid, "b"},
		{"produce v8", encodeRequest(0, 8, 7, &cid, []byte("b"))[4:], nil, false, &cid, "b"},
		{"null client id", encodeRequest(3, 1, 7, nil, []byte("b"))[4:], nil, false, nil, "b"},
		{"tagged fields skipped", append([]byte{0, 18, 0, 3, 0, 0, 0, 7, 0, 0, 2, 0, 1, 'x', 5, 2, 'y', 'z'}, "body"...), nil, true, new(string), "body"},
		{"empty", nil, errTruncatedHeader, false, nil, ""},
		{"9 bytes", make([]byte, 9), errTruncatedHeader, false, nil, ""},
		{"client id too long", []byte{0, 18, 0, 0, 0, 0, 0, 7, 0, 5, 'a'}, errClientIDLength, false, nil, ""},
		{"client id -2", []byte{0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xfe}, errClientIDLength, false, nil, ""},
		{"unknown key", encodeRequest(1000, 0, 7, &cid, nil)[4:], errUnknownAPIKey, false, &cid, ""},
		{"negative key", encodeRequest(-1, 0, 7, &cid, nil)[4:], errUnknownAPIKey, false, &cid, ""},
		{"tagged count too large", []byte{0, 18, 0, 3, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}, errHeaderTaggedFlds, false, nil, ""},
		{"tagged size past end", []byte{0, 18, 0, 3, 0, 0, 0, 7, 0xff, 0xff, 1, 0, 9, 'x'}, errHeaderTaggedFlds, false, nil, ""},
		{"tagged fields missing", []byte{0, 18, 0, 3, 0, 0, 0, 7, 0xff, 0xff}, errHeaderTaggedFlds, false, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := parseRequestHeader(tc.frame)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if tc.clientID != nil && string(h.ClientID) != *tc.clientID {
				t.Fatalf("client id %q", h.ClientID)
			}
			if err != nil {
				return
			}
			if h.CorrelationID != 7 || h.Flexible != tc.flexible || string(body) != tc.body {
				t.Fatalf("header %+v body %q", h, body)
			}
			if tc.clientID == nil && h.ClientID != nil {
				t.Fatal("null client id not nil")
			}
		})
	}
}

func TestParseRequestHeaderAllocs(t *testing.T) {
	frame := apiVersionsRequest(1, "some-client")[4:]
	if n := testing.AllocsPerRun(100, func() { parseRequestHeader(frame) }); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

// FuzzParseRequestHeader: never panics, never reads past the frame, and a
// successful parse consumes a consistent prefix.
func FuzzParseRequestHeader(f *testing.F) {
	cid := "c"
	f.Add(encodeRequest(18, 3, 1, &cid, []byte{0})[4:])
	f.Add(encodeRequest(18, 0, 1, nil, nil)[4:])
	f.Add(encodeRequest(0, 9, 1, &cid, []byte("xyz"))[4:])
	f.Add(encodeRequest(1, 17, 1, &cid, nil)[4:])
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 7, 0, 0, 2, 0, 1, 'x', 5, 2, 'y', 'z'})
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x7f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := parseRequestHeader(frame)
		if err != nil {
			if body != nil {
				t.Fatal("body on error")
			}
			return
		}
		consumed := len(frame) - len(body)
		if consumed < 10 || !bytes.Equal(frame[consumed:], body) || (len(body) > 0 && &frame[consumed] != &body[0]) {
			t.Fatalf("body is not the frame's suffix: consumed %d", consumed)
		}
		if cap(h.ClientID) > len(frame) {
			t.Fatal("client id larger than the frame")
		}
		flex, known := headerFlexible(h.APIKey, h.APIVersion)
		if !known || flex != h.Flexible {
			t.Fatalf("flexible %v known %v, header %+v", flex, known, h)
		}
		// Re-encoding a v1 header gives back the consumed prefix.
		if !h.Flexible {
			var cid *string
			if h.ClientID != nil {
				s := string(h.ClientID)
				cid = &s
			}
			re := encodeRequest(h.APIKey, h.APIVersion, h.CorrelationID, cid, nil)[4:]
			if !bytes.Equal(re, frame[:consumed]) {
				t.Fatalf("re-encoded %x, consumed %x", re, frame[:consumed])
			}
		}
	})
}

func TestHeaderFlexibleMatchesKmsg(t *testing.T) {
	for _, tc := range []struct {
		key, version int16
		flexible     bool
	}{
		{18, 2, false}, {18, 3, true}, {0, 8, false}, {0, 9, true}, {1, 11, false}, {1, 12, true},
		{3, 8, false}, {3, 9, true}, {18, math.MaxInt16, true}, {0, -1, false},
	} {
		flex, known := headerFlexible(tc.key, tc.version)
		if !known || flex != tc.flexible {
			t.Errorf("key %d v%d: flexible %v known %v", tc.key, tc.version, flex, known)
		}
	}
}

func TestFramePool(t *testing.T) {
	var p framePool
	for _, size := range []int{0, 1, 512, 513, 4096, 1 << 20, 1<<20 + 1, 5<<20 + 3, 1<<24 + 1} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i)
		}
		// One byte at a time exercises the growth path.
		r := io.Reader(bytes.NewReader(data))
		if size < 4096 {
			r = iotest.OneByteReader(r)
		}
		fb, err := p.read(r, size, false)
		if err != nil {
			t.Fatal(size, err)
		}
		if !bytes.Equal(fb.b, data) {
			t.Fatalf("size %d: frame differs", size)
		}
		if size <= 1<<24 && cap(fb.b) >= 2*max(size, 512) {
			t.Fatalf("size %d: capacity %d", size, cap(fb.b))
		}
		p.put(fb)
		// Truncated input.
		if size > 0 {
			if _, err := p.read(bytes.NewReader(data[:size-1]), size, false); err == nil {
				t.Fatalf("size %d: truncated frame read", size)
			}
		}
	}
}

func TestFrameGrowsWithReceivedBytes(t *testing.T) {
	var p framePool
	var sent bytes.Buffer
	sent.Write(make([]byte, 3<<20))
	r := &countingReader{r: &sent}
	if _, err := p.read(r, 1<<30, false); err == nil {
		t.Fatal("no error")
	}
	if r.maxAsk > 4<<20 {
		t.Fatalf("asked for %d bytes at once for 3 MiB received", r.maxAsk)
	}
}

type countingReader struct {
	r      io.Reader
	maxAsk int
}

func (c *countingReader) Read(b []byte) (int, error) {
	c.maxAsk = max(c.maxAsk, len(b))
	return c.r.Read(b)
}
