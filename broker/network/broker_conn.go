package network

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerConn is one connection to another node, used by one request at a
// time: a request framed with kmsg.RequestFormatter, written, and its
// response read and decoded before the next request may use it. It is
// the one broker-to-broker client (Kafka's NetworkClient with one
// in-flight request per connection) under the controller channel and
// every inter-broker channel: the transaction markers, AddPartitionsToTxn
// and the replica fetchers. A failed exchange closes the connection; the
// next request dials again.
type brokerConn struct {
	addr string
	dial DialFunc // nil: a net.Dialer

	mu     sync.Mutex
	conn   net.Conn
	r      *bufio.Reader
	corrID int32
}

// DialFunc dials another node (net.Dialer.DialContext's signature); tests
// put network faults between brokers with one.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// maxBrokerResponse bounds a response from another node.
const maxBrokerResponse = 100 << 20

func (cc *brokerConn) roundTrip(ctx context.Context, f *kmsg.RequestFormatter, req kmsg.Request) (kmsg.Response, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conn == nil {
		dial := cc.dial
		if dial == nil {
			d := net.Dialer{Timeout: 2 * time.Second}
			dial = d.DialContext
		}
		conn, err := dial(ctx, "tcp", cc.addr)
		if err != nil {
			return nil, err
		}
		cc.conn, cc.r = conn, bufio.NewReader(conn)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	// The cancellation callback gets this connection, not the field: a
	// failed exchange clears the field while the callback may be running.
	conn := cc.conn
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	cc.corrID++
	frame := f.AppendRequest(nil, req, cc.corrID)
	resp, err := cc.exchange(frame, req)
	if err != nil {
		cc.conn.Close()
		cc.conn, cc.r = nil, nil
		return nil, err
	}
	return resp, nil
}

func (cc *brokerConn) exchange(frame []byte, req kmsg.Request) (kmsg.Response, error) {
	if _, err := cc.conn.Write(frame); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(cc.r, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > maxBrokerResponse {
		return nil, fmt.Errorf("%w: response of %d bytes", errConnClosed, size)
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != cc.corrID {
		return nil, fmt.Errorf("%w: correlation id %d, want %d", errConnClosed, got, cc.corrID)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(cc.r, body); err != nil {
		return nil, err
	}
	return decodeResponseBody(req, body)
}

func (cc *brokerConn) close() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conn != nil {
		cc.conn.Close()
		cc.conn = nil
	}
}

// isConnError tells whether err is a connection failure worth retrying.
func isConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, errConnClosed)
}

// errConnClosed wraps every failure of a broker-to-broker request that the
// caller should retry (on another connection, or once the metadata has
// changed). Its text is the controller channel's, where it began.
var errConnClosed = errors.New("controller connection closed")

// decodeResponseBody decodes a response body (after the size and the
// correlation id) for req: a flexible response header's tagged fields
// come first, except for ApiVersions.
func decodeResponseBody(req kmsg.Request, body []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		n, k := binary.Uvarint(body)
		if k <= 0 || n != 0 {
			return nil, fmt.Errorf("%w: unexpected response header tags", errConnClosed)
		}
		body = body[k:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s response: %v", errConnClosed, kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}
