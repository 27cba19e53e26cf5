package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/kapi"
)

// controllerChannel sends requests to the active controller (Kafka's
// NodeToControllerChannelManager): in-process when the active controller is
// this node, otherwise over the controller listener of the voter that
// leads the metadata quorum, one connection per voter, one request at a
// time on each. NOT_CONTROLLER and connection failures are retried, with a
// short backoff, against whoever leads then, until the caller's context
// ends.
type controllerChannel struct {
	nodeID int32
	log    *slog.Logger
	// leader returns the quorum's leader (-1: none known).
	leader func() int32
	// local serves requests in-process when this node leads; nil for a
	// node without the controller role.
	local  *kapi.ControllerHandler
	voters map[int32]string

	formatter *kmsg.RequestFormatter

	mu     sync.Mutex
	conns  map[int32]*controllerConn
	closed bool
	// done is closed by Close: retries stop.
	done chan struct{}
}

func newControllerChannel(nodeID int32, logger *slog.Logger, voters map[int32]string, leader func() int32, local *kapi.ControllerHandler) *controllerChannel {
	return &controllerChannel{
		nodeID: nodeID, log: logger, leader: leader, local: local, voters: voters,
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(fmt.Sprintf("moldau-broker-%d-to-controller", nodeID))),
		conns:     map[int32]*controllerConn{},
		done:      make(chan struct{}),
	}
}

// ActiveController implements kapi.ControllerChannel.
func (c *controllerChannel) ActiveController() int32 { return c.leader() }

const controllerRetryBackoff = 50 * time.Millisecond

// Send implements kapi.ControllerChannel.
func (c *controllerChannel) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				if lastErr != nil {
					return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
				}
				return nil, ctx.Err()
			case <-c.done:
				return nil, fmt.Errorf("the broker is shutting down (last error: %v)", lastErr)
			case <-time.After(controllerRetryBackoff):
			}
		}
		leader := c.leader()
		if leader < 0 {
			lastErr = errors.New("no active controller is known")
			continue
		}
		var resp kmsg.Response
		var err error
		if leader == c.nodeID && c.local != nil {
			resp, err = c.local.Dispatch(ctx, req)
		} else {
			resp, err = c.sendRemote(ctx, leader, req)
		}
		if err == nil && slices.Contains(kapi.ResponseErrorCodes(resp), kerr.NotController.Code) {
			err = kerr.NotController
		}
		if err == nil {
			return resp, nil
		}
		if !errors.Is(err, kerr.NotController) && !isConnError(err) {
			return nil, err
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
		}
	}
}

func isConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, errConnClosed)
}

var errConnClosed = errors.New("controller connection closed")

func (c *controllerChannel) sendRemote(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, ok := c.voters[id]
	if !ok {
		return nil, fmt.Errorf("%w: controller %d is not among the voters", errConnClosed, id)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errConnClosed
	}
	cc := c.conns[id]
	if cc == nil {
		cc = &controllerConn{addr: addr}
		c.conns[id] = cc
	}
	c.mu.Unlock()
	return cc.roundTrip(ctx, c.formatter, req)
}

// Close closes the connections. Idempotent.
func (c *controllerChannel) Close() {
	c.mu.Lock()
	if !c.closed {
		close(c.done)
	}
	c.closed = true
	conns := c.conns
	c.conns = map[int32]*controllerConn{}
	c.mu.Unlock()
	for _, cc := range conns {
		cc.close()
	}
}

// controllerConn is one connection to a controller, used by one request at
// a time.
type controllerConn struct {
	addr string

	mu     sync.Mutex
	conn   net.Conn
	r      *bufio.Reader
	corrID int32
}

// maxControllerResponse bounds a response from a controller.
const maxControllerResponse = 100 << 20

func (cc *controllerConn) roundTrip(ctx context.Context, f *kmsg.RequestFormatter, req kmsg.Request) (kmsg.Response, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conn == nil {
		d := net.Dialer{Timeout: 2 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", cc.addr)
		if err != nil {
			return nil, err
		}
		cc.conn, cc.r = conn, bufio.NewReader(conn)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = cc.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = cc.conn.SetDeadline(time.Now()) })
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

func (cc *controllerConn) exchange(frame []byte, req kmsg.Request) (kmsg.Response, error) {
	if _, err := cc.conn.Write(frame); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(cc.r, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > maxControllerResponse {
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

func (cc *controllerConn) close() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.conn != nil {
		cc.conn.Close()
		cc.conn = nil
	}
}
