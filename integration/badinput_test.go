package integration

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Garbage, a truncated frame, a 2 GiB size prefix, an unknown API key and
// an unknown ApiVersions version: the broker logs the problem, closes the
// connection or answers as Kafka does, and a second client on another
// connection is served throughout.
func TestBadInputKeepsServingOthers(t *testing.T) {
	b := startBroker(t, "")
	good := dial(t, b.Seed())
	checkServed := func(step string) {
		t.Helper()
		resp := apiVersions(t, good, 3)
		if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
			t.Fatalf("after %s: good client got error %d, %d keys", step, resp.ErrorCode, len(resp.ApiKeys))
		}
	}
	checkServed("start")

	cases := []struct {
		name    string
		send    []byte
		logHint string
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ""},
		{"2 GiB size prefix", be32(0x7fffffff), "socket.request.max.bytes"},
		{"negative size", be32(0xffffffff), ""},
		{"truncated header", append(be32(3), 0, 18, 0), ""},
		{"unknown API key", frame(9999, 0, 7, nil), "unknown API key"},
		{"unsupported version", frame(3, 99, 7, nil), "unsupported API version"},
		{"malformed body", frame(19, 7, 7, []byte{0xff, 0xff, 0xff}), "malformed"},
	}
	for i, c := range cases {
		// Each from its own address: the broker logs a peer's bad frames
		// once a minute (issue 11), and each case must be logged.
		conn, err := dialFrom(fmt.Sprintf("127.0.0.%d", 10+i), b.Seed())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write(c.send); err != nil {
			t.Fatalf("%s: write: %v", c.name, err)
		}
		if c.name == "truncated header" {
			// The peer stops mid-frame and closes its side.
			conn.(*net.TCPConn).CloseWrite()
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := io.Copy(io.Discard, conn)
		if err != nil {
			t.Fatalf("%s: connection not closed by the broker (read %d bytes): %v", c.name, n, err)
		}
		conn.Close()
		if c.logHint != "" {
			eventually(t, 5*time.Second, func() error {
				if !strings.Contains(b.Logs.String(), c.logHint) {
					return errString("broker log does not mention " + c.logHint)
				}
				return nil
			})
		}
		checkServed(c.name)
	}

	// ApiVersions v127: Kafka answers in the v0 format with
	// UNSUPPORTED_VERSION and its versions, and keeps the connection.
	conn := dial(t, b.Seed())
	writeFrame(t, conn, frame(18, 127, 42, nil))
	corr, body := readFrame(t, conn)
	if corr != 42 {
		t.Fatalf("correlation id %d, want 42", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("v0 ApiVersions response does not parse: %v", err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v127: error %d, %d keys; want UNSUPPORTED_VERSION and the key list", resp.ErrorCode, len(resp.ApiKeys))
	}
	if got := apiVersions(t, conn, 3); got.ErrorCode != 0 {
		t.Fatalf("connection not usable after the v127 answer: %d", got.ErrorCode)
	}
	checkServed("ApiVersions v127")
}

type errString string

func (e errString) Error() string { return string(e) }

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// frame builds a request with a v1 header (key, version, correlation id,
// client id "t") — flexible requests get their v2 header from kmsg.
func frame(key, version int16, corr int32, body []byte) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, 0, 1, 't')
	if req := kmsg.RequestForKey(key); req != nil && version >= 0 && version <= req.MaxVersion() {
		req.SetVersion(version)
		if req.IsFlexible() {
			b = append(b, 0)
		}
	} else if key == 18 && version >= 3 {
		b = append(b, 0) // a client asking for a newer ApiVersions sends header v2
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func writeFrame(t testing.TB, c net.Conn, f []byte) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(f); err != nil {
		t.Fatal(err)
	}
}

// readFrame reads one response: correlation id and the rest.
func readFrame(t testing.TB, c net.Conn) (int32, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading response size: %v", err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("reading response: %v", err)
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:]
}

func apiVersions(t testing.TB, c net.Conn, version int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName, req.ClientSoftwareVersion = "moldau-test", "1.0"
	writeFrame(t, c, frame(18, version, 1, req.AppendTo(nil)))
	_, body := readFrame(t, c)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("ApiVersions v%d response: %v", version, err)
	}
	return resp
}
