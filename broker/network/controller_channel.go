package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/kapi"
)

// ControllerChannel sends requests to the active controller (Kafka's
// NodeToControllerChannelManager): in-process when the active controller is
// this node, otherwise over the controller listener of the voter that
// leads the metadata quorum, one connection per voter, one request at a
// time on each. NOT_CONTROLLER and connection failures are retried, with a
// short backoff, against whoever leads then, until the caller's context
// ends. It implements kapi.ControllerChannel; its connections are
// brokerConns.
type ControllerChannel struct {
	nodeID int32
	log    *slog.Logger
	// leader returns the quorum's leader (-1: none known).
	leader func() int32
	// local serves requests in-process when this node leads; nil for a
	// node without the controller role.
	local  *kapi.ControllerHandler
	voters map[int32]string
	// address, when set, finds a controller's address that voters lacks
	// (a broker-only node that learned the leader's from the quorum).
	address func(id int32) (string, bool)
	dial    DialFunc // nil: a net.Dialer (SetDialer)

	formatter *kmsg.RequestFormatter

	mu     sync.Mutex
	conns  map[int32]*brokerConn
	closed bool
	// done is closed by Close: retries stop.
	done chan struct{}
}

// NewControllerChannel creates the channel of node nodeID to the active
// controller: voters are the controller listener addresses by node id,
// leader names the quorum's leader, and local (nil without the controller
// role) serves requests in-process when this node leads.
func NewControllerChannel(nodeID int32, logger *slog.Logger, voters map[int32]string, leader func() int32, local *kapi.ControllerHandler) *ControllerChannel {
	return &ControllerChannel{
		nodeID: nodeID, log: logger, leader: leader, local: local, voters: voters,
		formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(fmt.Sprintf("moldau-broker-%d-to-controller", nodeID))),
		conns:     map[int32]*brokerConn{},
		done:      make(chan struct{}),
	}
}

// ActiveController implements kapi.ControllerChannel.
func (c *ControllerChannel) ActiveController() int32 { return c.leader() }

const controllerRetryBackoff = 50 * time.Millisecond

// Send implements kapi.ControllerChannel.
func (c *ControllerChannel) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
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

func (c *ControllerChannel) sendRemote(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, ok := c.voters[id]
	if !ok && c.address != nil {
		addr, ok = c.address(id)
	}
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
		cc = &brokerConn{addr: addr, dial: c.dial}
		c.conns[id] = cc
	}
	c.mu.Unlock()
	return cc.roundTrip(ctx, c.formatter, req)
}

// Close closes the connections. Idempotent.
func (c *ControllerChannel) Close() {
	c.mu.Lock()
	if !c.closed {
		close(c.done)
	}
	c.closed = true
	conns := c.conns
	c.conns = map[int32]*brokerConn{}
	c.mu.Unlock()
	for _, cc := range conns {
		cc.close()
	}
}

// SetAddresses makes the channel look controllers up with address when
// they are not among the voters it was given (before its first Send).
func (c *ControllerChannel) SetAddresses(address func(id int32) (string, bool)) { c.address = address }

// SetDialer makes the channel dial with d (before its first Send).
func (c *ControllerChannel) SetDialer(d DialFunc) { c.dial = d }
