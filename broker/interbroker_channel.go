package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/kapi"
)

// interBrokerChannel sends requests from this broker to brokers, the way
// Kafka's coordinators do through their inter-broker NetworkClients: to
// the destination's endpoint on inter.broker.listener.name, as the
// metadata image has it, framed with kmsg.RequestFormatter. When the
// destination is this broker the request is encoded all the same and
// handed to the request handler (kapi.Handler.Handle) as if it had come
// over that listener, so that a local partition takes exactly the path a
// remote one does. Errors are the caller's to retry.
//
// Each sender has a channel of its own, as each has its own NetworkClient
// in Kafka (the TransactionMarkerChannelManager's
// "broker-N-txn-marker-sender", the AddPartitionsToTxnManager's
// "AddPartitionsManager"): the transaction coordinator holds an
// AddPartitionsToTxn back while the producer's previous transaction
// writes its markers, and a broker answers one request of a connection
// at a time, so a marker request queued behind a held-back add on a
// shared connection waits for that wait to expire, and two brokers each
// holding the other's add behind their markers both do. A channel keeps
// up to maxConns connections per destination, each with one request at a
// time; a request takes an idle one, else opens one, else queues on one
// in turn.
type interBrokerChannel struct {
	nodeID   int32
	listener string
	log      *slog.Logger
	image    func() *metadata.Image
	// local is the request handler of this broker (set once it exists).
	local    func() network.RequestHandler
	maxConns int

	formatter *kmsg.RequestFormatter
	clientID  string

	mu     sync.Mutex
	dests  map[int32]*destConns // by broker id; addr checked on use
	closed bool
	corrID int32 // for in-process requests
}

// destConns are a channel's connections to one broker.
type destConns struct {
	addr  string
	conns []*pooledConn
	next  int // the connection the next queued request waits on
}

type pooledConn struct {
	cc    *controllerConn
	users int // requests using or waiting for it
}

// newInterBrokerChannel creates a channel named clientID (the client id of
// its requests) with up to maxConns connections per destination.
func newInterBrokerChannel(nodeID int32, listener, clientID string, maxConns int, logger *slog.Logger, image func() *metadata.Image, local func() network.RequestHandler) *interBrokerChannel {
	return &interBrokerChannel{
		nodeID: nodeID, listener: listener, log: logger, image: image, local: local, maxConns: max(maxConns, 1),
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		clientID:  clientID,
		dests:     map[int32]*destConns{},
	}
}

// SendWriteTxnMarkers implements txn.MarkerSender.
func (c *interBrokerChannel) SendWriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp, err := c.Send(ctx, broker, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// Send sends req to broker and returns its response.
func (c *interBrokerChannel) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	if broker == c.nodeID {
		return c.dispatchLocal(ctx, req)
	}
	addr, err := c.endpoint(broker)
	if err != nil {
		return nil, err
	}
	pc, stale, err := c.acquire(broker, addr)
	for _, old := range stale {
		old.cc.close() // waits for a request still on it
	}
	if err != nil {
		return nil, err
	}
	defer c.release(pc)
	return pc.cc.roundTrip(ctx, c.formatter, req)
}

// acquire picks the connection to broker at addr that req goes on: an
// idle one, else a new one while there are fewer than maxConns, else the
// next in turn (its roundTrip queues the request). Connections to an
// address the broker no longer has are returned for the caller to close.
func (c *interBrokerChannel) acquire(broker int32, addr string) (*pooledConn, []*pooledConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, errConnClosed
	}
	var stale []*pooledConn
	d := c.dests[broker]
	if d == nil || d.addr != addr {
		if d != nil {
			stale = d.conns
		}
		d = &destConns{addr: addr}
		c.dests[broker] = d
	}
	var pc *pooledConn
	for _, x := range d.conns {
		if x.users == 0 {
			pc = x
			break
		}
	}
	switch {
	case pc != nil:
	case len(d.conns) < c.maxConns:
		pc = &pooledConn{cc: &controllerConn{addr: addr}}
		d.conns = append(d.conns, pc)
	default:
		pc = d.conns[d.next%len(d.conns)]
		d.next++
	}
	pc.users++
	return pc, stale, nil
}

func (c *interBrokerChannel) release(pc *pooledConn) {
	c.mu.Lock()
	pc.users--
	c.mu.Unlock()
}

// endpoint is broker's address on the inter-broker listener.
func (c *interBrokerChannel) endpoint(broker int32) (string, error) {
	b := c.image().Brokers[broker]
	if b == nil || b.Fenced {
		return "", fmt.Errorf("%w: broker %d is not registered and unfenced", errConnClosed, broker)
	}
	ep, ok := b.Endpoint(c.listener)
	if !ok {
		return "", fmt.Errorf("%w: broker %d has no %s endpoint", errConnClosed, broker, c.listener)
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

// dispatchLocal serves req with this broker's request handler, encoded and
// decoded as on the wire.
func (c *interBrokerChannel) dispatchLocal(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	h := c.local()
	if h == nil {
		return nil, fmt.Errorf("%w: this broker's request handler is not ready", errConnClosed)
	}
	c.mu.Lock()
	c.corrID++
	corr := c.corrID
	c.mu.Unlock()
	body := req.AppendTo(nil)
	r := &kapi.Request{
		APIKey: req.Key(), APIVersion: req.GetVersion(), CorrelationID: corr, ClientID: c.clientID,
		Body: body, Size: len(body), Listener: c.listener, ConnID: "in-process", Received: time.Now(),
	}
	ch := make(chan *kapi.Response, 1)
	h.Handle(ctx, r, func(resp *kapi.Response) { ch <- resp })
	var resp *kapi.Response
	select {
	case resp = <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if resp.Release != nil {
		defer resp.Release()
	}
	switch {
	case resp.Close:
		return nil, fmt.Errorf("%w: %s", errConnClosed, resp.CloseReason)
	case resp.NoResponse || len(resp.Regions) > 0 || len(resp.Buf) < 8:
		return nil, fmt.Errorf("%w: no response to %s", errConnClosed, kmsg.NameForKey(req.Key()))
	}
	if got := int32(binary.BigEndian.Uint32(resp.Buf[4:])); got != corr {
		return nil, fmt.Errorf("%w: correlation id %d, want %d", errConnClosed, got, corr)
	}
	return decodeResponseBody(req, resp.Buf[8:])
}

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

// Close closes the connections. Idempotent.
func (c *interBrokerChannel) Close() {
	c.mu.Lock()
	c.closed = true
	dests := c.dests
	c.dests = map[int32]*destConns{}
	c.mu.Unlock()
	for _, d := range dests {
		for _, pc := range d.conns {
			pc.cc.close()
		}
	}
}
