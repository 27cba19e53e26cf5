package network

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/kapi"
)

// processor owns a group of connections of one listener (Kafka's
// Processor): their registry and count, their busy-time accounting for
// NetworkProcessorAvgIdlePercent, and their shutdown. Each connection runs
// its own goroutine; see the package documentation.
type processor struct {
	id       int
	listener string
	server   *SocketServer
	busy     *busyMeter

	connCount                prometheus.Gauge // nil without metrics
	connCreation, connClosed prometheus.Counter

	mu      sync.Mutex
	conns   map[*connection]struct{}
	index   uint64 // connections registered so far, for connection ids
	closing bool
	retired bool // removed by a smaller num.network.threads
}

func newProcessor(s *SocketServer, id int, listener string) *processor {
	p := &processor{
		id:       id,
		listener: listener,
		server:   s,
		busy:     newBusyMeter(s.epoch),
		conns:    make(map[*connection]struct{}),
	}
	if m := s.metrics; m != nil {
		p.connCount = m.connectionCount.WithLabelValues(listener)
		p.connCreation = m.connectionCreation.WithLabelValues(listener)
		p.connClosed = m.connectionClose.WithLabelValues(listener)
	}
	return p
}

// register takes ownership of an accepted connection and starts serving it;
// admitted: the connection quotas counted it (it is uncounted when it
// closes, or here if it cannot be served).
func (p *processor) register(nc net.Conn, addr netip.Addr, admitted bool) {
	s := p.server
	c := &connection{
		server:    s,
		processor: p,
		nc:        nc,
		br:        bufio.NewReaderSize(nc, connReadBufferSize),
		peer:      nc.RemoteAddr().String(),
		addr:      addr,
		admitted:  admitted,
		respCh:    make(chan *kapi.Response, 1),
		wake:      make(chan struct{}, 1),
	}
	refuse := func() {
		_ = nc.Close()
		if admitted {
			s.quotas.release(p.listener, addr)
		}
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		refuse()
		return
	}
	c.id = fmt.Sprintf("%s-%s-%d", nc.LocalAddr().String(), c.peer, p.index)
	p.index++
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	c.lastActive.Store(int64(time.Since(s.epoch)))
	if !s.connGroup.Go(func(<-chan struct{}) { c.serve() }) {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		refuse()
		return
	}
	if p.connCount != nil {
		p.connCount.Inc()
		p.connCreation.Inc()
	}
	s.connLog.opened1(c)
}

func (p *processor) unregister(c *connection) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	if p.connCount != nil {
		p.connCount.Dec()
		p.connClosed.Inc()
	}
}

func (p *processor) connectionCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// inFlight describes the requests its connections wait on ("Fetch v17
// from client-1 (127.0.0.1:5000) for 31s"), at most limit of them.
func (p *processor) inFlight(now time.Time, limit int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for c := range p.conns {
		if len(out) == limit {
			break
		}
		if r := c.inFlight.Load(); r != nil {
			out = append(out, fmt.Sprintf("%s v%d from %s (%s) for %s", apiName(r.APIKey), r.APIVersion, r.ClientID, c.peer,
				now.Sub(r.Received).Round(time.Millisecond)))
		}
	}
	return out
}

// drain closes idle connections now and the others after their request in
// flight.
func (p *processor) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closing = true
	for c := range p.conns {
		c.drain()
	}
}

// retire drains the processor because num.network.threads shrank: it
// takes no new connection and its connections close after their request
// in flight.
func (p *processor) retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	p.drain()
}

func (p *processor) isRetired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retired
}

// force interrupts every connection's blocking I/O.
func (p *processor) force() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.force()
	}
}
