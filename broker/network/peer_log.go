package network

import (
	"net/netip"
	"sync"
	"time"
)

const (
	// maxLoggedPeers bounds the peers peerLog remembers per interval.
	maxLoggedPeers = 4096
	// maxLinesPerKind bounds the lines of one kind per interval, however
	// many addresses misbehave.
	maxLinesPerKind = 100
)

// peerLog rate-limits log lines about what peers do wrong (an invalid
// frame, a request sent too slowly, a connection over the per-IP limit):
// one line per peer address and kind per interval, the rest counted and
// reported in the connection summary. A hostile client reconnecting and
// misbehaving in a loop then costs one line a minute, not one per frame,
// and many addresses at most maxLinesPerKind lines of a kind a minute.
// It remembers at most maxLoggedPeers addresses per interval; beyond that,
// lines are only counted. Safe for concurrent use.
type peerLog struct {
	interval time.Duration

	mu         sync.Mutex
	since      time.Time
	seen       map[peerKind]struct{}
	lines      map[string]int // logged this interval, by kind
	suppressed map[string]int // by kind
}

type peerKind struct {
	addr netip.Addr
	kind string
}

func newPeerLog(interval time.Duration, now time.Time) *peerLog {
	return &peerLog{interval: interval, since: now, seen: make(map[peerKind]struct{}), lines: make(map[string]int), suppressed: make(map[string]int)}
}

// allow reports whether a line of this kind about addr may be logged now;
// if not, it is counted.
func (l *peerLog) allow(addr netip.Addr, kind string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.since) >= l.interval {
		l.resetLocked(now)
	}
	k := peerKind{addr, kind}
	if _, ok := l.seen[k]; ok || len(l.seen) >= maxLoggedPeers || l.lines[kind] >= maxLinesPerKind {
		l.suppressed[kind]++
		return false
	}
	l.seen[k] = struct{}{}
	l.lines[kind]++
	return true
}

func (l *peerLog) resetLocked(now time.Time) {
	l.since = now
	clear(l.seen)
	clear(l.lines)
}

// takeSuppressed returns the counts of lines not logged since the last
// call, by kind, and starts a new interval.
func (l *peerLog) takeSuppressed(now time.Time) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.suppressed
	l.suppressed = make(map[string]int)
	l.resetLocked(now)
	return out
}
