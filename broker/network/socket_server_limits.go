package network

import (
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/memory"
)

// MemoryPool is the server's request memory pool (queued.max.request.bytes).
func (s *SocketServer) MemoryPool() *memory.Pool { return s.pool }

// SetRequestReceiveTimeout changes moldau.socket.request.receive.timeout.ms
// (0: none) for the requests that begin from now on.
func (s *SocketServer) SetRequestReceiveTimeout(d time.Duration) {
	s.receiveTimeout.Store(int64(max(d, 0)))
}

// SetConnectionQuotas changes the connection quotas at run time (Kafka's
// SocketServer.reconfigure): acceptors waiting for a slot look again, and
// connections above a lowered max.connections close, least recently used
// first. It does nothing for a server built without quotas.
func (s *SocketServer) SetConnectionQuotas(q config.ConnectionQuotas) {
	if s.quotas == nil {
		return
	}
	s.quotas.set(q)
	s.log.Info("connection quotas updated", "max.connections", q.MaxConnections,
		"max.connections.per.ip", q.MaxConnectionsPerIP, "max.connection.creation.rate", q.MaxConnectionCreationRate)
	s.enforceMaxConnections()
}

// admit applies the connection quotas to an accepted connection: it may
// wait (the acceptor takes no other connection meanwhile, as Kafka's), or
// close the connection when its address is at its per-IP limit. stop: the
// server is shutting down (the connection is closed).
func (s *SocketServer) admit(listener string, nc net.Conn, addr netip.Addr) (admitted, stop bool) {
	if s.quotas == nil {
		return true, false
	}
	res, blocked, throttled := s.quotas.admit(listener, addr, s.acceptDone)
	if s.limits != nil {
		if blocked > 0 {
			s.limits.acceptorBlocked.WithLabelValues(listener).Add(blocked.Seconds())
		}
		if throttled {
			s.limits.acceptThrottled.WithLabelValues(listener).Inc()
		}
	}
	switch res {
	case admitStopped:
		_ = nc.Close()
		return false, true
	case rejectedPerIP:
		_ = nc.Close()
		s.connLog.rejected(closedPerIPLimit)
		if s.limits != nil {
			s.limits.closeReason.WithLabelValues(listener, closedPerIPLimit).Inc()
		}
		if s.peerLogAllow(addr, logPerIPLimit) {
			s.log.Info("rejected connection: the address already has the configured maximum of connections (logged once per address and minute)",
				"peer", nc.RemoteAddr().String(), "listener", listener, "max.connections.per.ip", s.quotas.perIPLimit(addr))
		}
		return false, false
	}
	if listener == s.quotas.protected {
		// The protected listener may take the broker past
		// max.connections: another listener's LRU connection goes.
		s.enforceMaxConnections()
	}
	return true, false
}

// enforceMaxConnections closes connections of unprotected listeners while
// the broker is above max.connections (Kafka's Processor closes its least
// recently used channel when maxConnectionsExceeded): idle connections
// first, least recently active first; then busy ones after their request.
func (s *SocketServer) enforceMaxConnections() {
	if s.quotas == nil {
		return
	}
	excess := s.quotas.excess() - int(s.evicting.Load())
	if excess <= 0 {
		return
	}
	var candidates []*connection
	for _, p := range s.allProcessors() {
		if p.listener == s.quotas.protected {
			continue
		}
		p.mu.Lock()
		for c := range p.conns {
			candidates = append(candidates, c)
		}
		p.mu.Unlock()
	}
	// Idle before busy, then least recently active first.
	idle := make(map[*connection]bool, len(candidates))
	for _, c := range candidates {
		idle[c] = c.isIdle()
	}
	slices.SortFunc(candidates, func(a, b *connection) int {
		if idle[a] != idle[b] {
			if idle[a] {
				return -1
			}
			return 1
		}
		return int(a.lastActive.Load() - b.lastActive.Load())
	})
	closed := 0
	for _, c := range candidates {
		if closed == excess {
			break
		}
		if c.evict() {
			s.evicting.Add(1)
			closed++
		}
	}
	if closed > 0 {
		s.log.Info("closing the least recently used connections above max.connections", "closing", closed)
	}
}

// freeFrame returns a request's frame buffer and its bytes in the pool.
func (s *SocketServer) freeFrame(r *request) {
	s.frames.put(r.frame)
	r.frame = nil
	s.pool.Release(r.reserved)
	s.pool.Return(r.taken)
	r.reserved, r.taken = 0, 0
}

// peerLogAllow reports whether a line of this kind about addr may be
// logged now (one per peer, kind and summary interval); if not it is
// counted for the connection summary and the metrics.
func (s *SocketServer) peerLogAllow(addr netip.Addr, kind string) bool {
	if s.peerLog.allow(addr, kind, time.Now()) {
		return true
	}
	if s.limits != nil {
		s.limits.logsSuppressed.WithLabelValues(kind).Inc()
	}
	return false
}
