package network

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/moldau/moldau/broker/config"
)

// connectionQuotas enforces the connection limits of the broker listeners
// (Kafka's ConnectionQuotas): max.connections (broker-wide and per
// listener), max.connections.per.ip with its overrides, and
// max.connection.creation.rate (broker-wide and per listener). The
// acceptor calls admit for each accepted socket, and the connection calls
// release when it closes.
//
// As in Kafka: the acceptor waits (holding the accepted socket, taking no
// other) while the listener or the broker is at its connection limit, or
// while the creation rate is above its quota; a connection from an address
// at its per-IP limit is closed at once. The inter-broker listener, when
// there are several listeners, is "protected": only its own limits apply,
// and when it takes the broker past max.connections the least recently
// used connection of another listener is closed. Lowering max.connections
// at run time closes the least recently used connections above it.
//
// Where we differ: the creation rate is a token bucket holding one
// second's worth of connections (Kafka averages over quota.window.num
// samples of quota.window.size.seconds), and its wait is not capped at one
// window.
type connectionQuotas struct {
	protected string // the protected listener, "" if none
	now       func() time.Time

	mu          sync.Mutex
	q           config.ConnectionQuotas
	overrides   map[netip.Addr]int32 // resolved PerIPOverrides
	perIP       map[netip.Addr]int
	perListener map[string]int
	total       int
	broker      tokenBucket
	listeners   map[string]*tokenBucket
	// changed is closed (and replaced) whenever a count drops or a limit
	// changes: waiting acceptors look again.
	changed chan struct{}
}

// admitResult says what admit decided.
type admitResult int

const (
	admitted admitResult = iota
	rejectedPerIP
	admitStopped // done was closed while waiting
)

func newConnectionQuotas(q config.ConnectionQuotas, protected string, listeners []string) *connectionQuotas {
	cq := &connectionQuotas{
		protected:   protected,
		now:         time.Now,
		perIP:       make(map[netip.Addr]int),
		perListener: make(map[string]int),
		listeners:   make(map[string]*tokenBucket),
		changed:     make(chan struct{}),
	}
	for _, l := range listeners {
		cq.listeners[l] = &tokenBucket{}
	}
	if len(listeners) < 2 {
		cq.protected = "" // Kafka protects it only beside other listeners
	}
	cq.set(q)
	return cq
}

// set installs new limits; the caller then closes connections above
// max.connections (excess).
func (cq *connectionQuotas) set(q config.ConnectionQuotas) {
	overrides := make(map[netip.Addr]int32)
	for host, n := range q.PerIPOverrides {
		for _, a := range resolveHost(host) {
			overrides[a] = n
		}
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	cq.q = q
	cq.overrides = overrides
	now := cq.now()
	cq.broker.setRate(q.MaxConnectionCreationRate, now)
	for name, b := range cq.listeners {
		b.setRate(cq.listenerQuota(name).MaxConnectionCreationRate, now)
	}
	cq.broadcastLocked()
}

// resolveHost turns an override's host into addresses: an IP literal as
// it is, a name by DNS (none if it does not resolve, as Kafka fails).
func resolveHost(host string) []netip.Addr {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out
}

func (cq *connectionQuotas) listenerQuota(name string) config.ListenerQuota {
	if lq, ok := cq.q.Listeners[name]; ok {
		return lq
	}
	return config.ListenerQuota{MaxConnections: math.MaxInt32, MaxConnectionCreationRate: math.MaxInt32}
}

func (cq *connectionQuotas) broadcastLocked() {
	close(cq.changed)
	cq.changed = make(chan struct{})
}

// slotAvailableLocked is Kafka's connectionSlotAvailable.
func (cq *connectionQuotas) slotAvailableLocked(listener string) bool {
	if cq.perListener[listener] >= int(cq.listenerQuota(listener).MaxConnections) {
		return false
	}
	return listener == cq.protected || cq.total < int(cq.q.MaxConnections)
}

// admit counts a new connection from addr on listener, first waiting out
// the creation-rate throttle and for a free connection slot (Kafka's
// waitForConnectionSlot). It returns how long it waited and whether the
// rate throttled it.
func (cq *connectionQuotas) admit(listener string, addr netip.Addr, done <-chan struct{}) (res admitResult, blocked time.Duration, throttled bool) {
	start := cq.now()
	cq.mu.Lock()
	// The rate: every connection is recorded; the wait is what brings
	// the rate back under its quota (the broker's, unless the listener
	// is protected, and the listener's).
	var wait time.Duration
	if listener != cq.protected {
		wait = cq.broker.take(start)
	}
	if b := cq.listeners[listener]; b != nil {
		wait = max(wait, b.take(start))
	}
	cq.mu.Unlock()
	if wait > 0 {
		throttled = true
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return admitStopped, cq.now().Sub(start), throttled
		}
	}
	cq.mu.Lock()
	for !cq.slotAvailableLocked(listener) {
		ch := cq.changed
		cq.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return admitStopped, cq.now().Sub(start), throttled
		}
		cq.mu.Lock()
	}
	defer cq.mu.Unlock()
	blocked = cq.now().Sub(start)
	limit := cq.q.MaxConnectionsPerIP
	if n, ok := cq.overrides[addr]; ok {
		limit = n
	}
	if cq.perIP[addr] >= int(limit) {
		return rejectedPerIP, blocked, throttled
	}
	cq.perIP[addr]++
	cq.perListener[listener]++
	cq.total++
	return admitted, blocked, throttled
}

// release uncounts a connection admitted earlier.
func (cq *connectionQuotas) release(listener string, addr netip.Addr) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if n := cq.perIP[addr]; n <= 1 {
		delete(cq.perIP, addr)
	} else {
		cq.perIP[addr] = n - 1
	}
	cq.perListener[listener]--
	cq.total--
	cq.broadcastLocked()
}

// excess is how many connections of unprotected listeners are above
// max.connections (Kafka's maxConnectionsExceeded, as a count).
func (cq *connectionQuotas) excess() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return max(0, cq.total-int(cq.q.MaxConnections))
}

// perIPLimit is the limit for addr (for log messages).
func (cq *connectionQuotas) perIPLimit(addr netip.Addr) int32 {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if n, ok := cq.overrides[addr]; ok {
		return n
	}
	return cq.q.MaxConnectionsPerIP
}

// tokenBucket limits a rate of events: rate tokens a second, at most one
// second's worth in store. take records an event and says how long the
// caller must wait for the rate to be back under its quota. A rate of
// math.MaxInt32 (Kafka's default) is no limit. Not safe for concurrent use
// (connectionQuotas.mu guards it).
type tokenBucket struct {
	rate   float64 // tokens per second; 0: unlimited
	tokens float64 // may go negative: events waiting
	last   time.Time
}

func (b *tokenBucket) setRate(rate int32, now time.Time) {
	if rate >= math.MaxInt32 || rate <= 0 {
		// 0 is accepted by Kafka's validator but would block every
		// connection forever; Kafka's quota of 0 throttles each by the
		// window: treat it as one a second.
		if rate <= 0 {
			b.rate = 1
		} else {
			b.rate = 0
		}
	} else {
		b.rate = float64(rate)
	}
	b.tokens = b.rate
	b.last = now
}

func (b *tokenBucket) take(now time.Time) time.Duration {
	if b.rate == 0 {
		return 0
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = min(b.rate, b.tokens+elapsed*b.rate)
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// peerAddr is the IP of a connection's peer (zero if not TCP/UDP).
func peerAddr(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
