package network

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
	"github.com/moldau/moldau/kapi"
)

// InterBrokerChannel sends requests from this broker to brokers, the way
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
// in turn. It implements txn.MarkerSender and replica.BrokerClient (the
// replica fetchers' clients, with no local handler); its connections are
// brokerConns.
type InterBrokerChannel struct {
	nodeID   int32
	listener string
	log      *slog.Logger
	image    func() *metadata.Image
	// local is the request handler of this broker (set once it exists).
	local    func() RequestHandler
	maxConns int
	dial     DialFunc // nil: a net.Dialer (SetDialer)

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
	cc    *brokerConn
	users int // requests using or waiting for it
}

// NewInterBrokerChannel creates a channel named clientID (the client id of
// its requests) with up to maxConns connections per destination, on the
// destinations' listener endpoints in image; local returns this broker's
// request handler, or nil while there is none (then a request to this
// broker fails, to be retried).
func NewInterBrokerChannel(nodeID int32, listener, clientID string, maxConns int, logger *slog.Logger, image func() *metadata.Image, local func() RequestHandler) *InterBrokerChannel {
	return &InterBrokerChannel{
		nodeID: nodeID, listener: listener, log: logger, image: image, local: local, maxConns: max(maxConns, 1),
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		clientID:  clientID,
		dests:     map[int32]*destConns{},
	}
}

// SendWriteTxnMarkers implements txn.MarkerSender.
func (c *InterBrokerChannel) SendWriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp, err := c.Send(ctx, broker, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// Send sends req to broker and returns its response.
func (c *InterBrokerChannel) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
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
func (c *InterBrokerChannel) acquire(broker int32, addr string) (*pooledConn, []*pooledConn, error) {
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
		pc = &pooledConn{cc: &brokerConn{addr: addr, dial: c.dial}}
		d.conns = append(d.conns, pc)
	default:
		pc = d.conns[d.next%len(d.conns)]
		d.next++
	}
	pc.users++
	return pc, stale, nil
}

func (c *InterBrokerChannel) release(pc *pooledConn) {
	c.mu.Lock()
	pc.users--
	c.mu.Unlock()
}

// endpoint is broker's address on the inter-broker listener.
func (c *InterBrokerChannel) endpoint(broker int32) (string, error) {
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
func (c *InterBrokerChannel) dispatchLocal(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
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

// Close closes the connections. Idempotent.
func (c *InterBrokerChannel) Close() {
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

// SetDialer makes the channel dial with d (before its first Send).
func (c *InterBrokerChannel) SetDialer(d DialFunc) { c.dial = d }
