package network

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Why a connection closed, for the connection summary.
const (
	closedByPeer     = "peer"        // the client closed it
	closedIdle       = "idle"        // connections.max.idle.ms passed
	closedByHandler  = "refused"     // the request handler asked (unknown API, unsupported version, malformed request, acks=0 failure)
	closedBadFrame   = "bad_request" // invalid size or header
	closedIOError    = "io_error"    // a read or write failed
	closedByShutdown = "shutdown"    // the broker is stopping
	// closedProcessorRemoved: num.network.threads shrank and the
	// connection's processor was removed; the client reconnects.
	closedProcessorRemoved = "processor_removed"
	// closedReceiveTimeout: a request took longer than
	// moldau.socket.request.receive.timeout.ms to arrive.
	closedReceiveTimeout = "receive_timeout"
	// closedMaxConnections: closed, least recently used first, to bring
	// the broker under max.connections.
	closedMaxConnections = "max_connections"
	// closedPerIPLimit: accepted but closed at once, its address being at
	// max.connections.per.ip (never registered as a connection).
	closedPerIPLimit = "per_ip_limit"
	// the listener's security handshake failed or timed out (Kafka's
	// failed authentication: an SSL handshake, a wrong certificate, a
	// PLAINTEXT client on an SSL listener)
	closedAuthentication = "authentication_failed"
	// closedSessionExpired: a SASL session outlived its lifetime
	// (connections.max.reauth.ms) and the client sent a request instead
	// of re-authenticating.
	closedSessionExpired = "session_expired"
)

// defaultConnectionSummaryInterval is how often the INFO summary of
// connections opened and closed is logged (when anything happened).
const defaultConnectionSummaryInterval = time.Minute

// maxDistinctRefusals bounds the refusal reasons remembered per interval.
const maxDistinctRefusals = 64

// connectionLog counts connections opened and closed, by reason, between
// two summaries. Each open and close is logged at DEBUG; an INFO summary
// ("connections opened 120, closed 118: peer=110 refused=8") comes at most
// once per interval, so a client reconnecting several times a second does
// not fill the log. A connection closed because the request handler
// refused a request (an API or version Moldau does not serve) is also
// logged at INFO the first time its reason is seen in an interval, since
// it usually means a client Moldau cannot serve.
type connectionLog struct {
	log *slog.Logger

	mu        sync.Mutex
	since     time.Time
	opened    int
	closed    map[string]int
	refusals  map[string]int // reason text -> count, at most maxDistinctRefusals
	refusedAt []string       // refusal texts in first-seen order
}

func newConnectionLog(logger *slog.Logger, now time.Time) *connectionLog {
	return &connectionLog{log: logger, since: now, closed: make(map[string]int), refusals: make(map[string]int)}
}

func (l *connectionLog) opened1(c *connection) {
	l.mu.Lock()
	l.opened++
	l.mu.Unlock()
	l.log.Debug("connection opened", "peer", c.peer, "conn", c.id, "listener", c.processor.listener)
}

// closed1 counts a close; reason is one of the closed* constants.
func (l *connectionLog) closed1(c *connection, reason string) {
	l.mu.Lock()
	l.closed[reason]++
	l.mu.Unlock()
	l.log.Debug("connection closed", "peer", c.peer, "conn", c.id, "listener", c.processor.listener, "principal", c.principal, "reason", reason)
}

// rejected counts a connection closed as soon as it was accepted (over
// a per-IP limit), which never became a connection.
func (l *connectionLog) rejected(reason string) {
	l.mu.Lock()
	l.closed[reason]++
	l.mu.Unlock()
}

// refused notes that the request handler asked to close a connection
// with the given text, and reports whether the text is new in this
// interval (then the caller logs it at INFO).
func (l *connectionLog) refused(text string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.refusals[text]; ok {
		l.refusals[text] = n + 1
		return false
	}
	if len(l.refusals) >= maxDistinctRefusals {
		return false
	}
	l.refusals[text] = 1
	l.refusedAt = append(l.refusedAt, text)
	return true
}

// summarize logs, at INFO, what happened since the last summary, if
// anything did, and starts a new interval. suppressed counts, by kind, the
// lines about misbehaving peers the per-peer limit left out (peerLog).
func (l *connectionLog) summarize(now time.Time, open int, suppressed map[string]int) {
	l.mu.Lock()
	opened, closed, since := l.opened, l.closed, l.since
	refusals, order := l.refusals, l.refusedAt
	l.opened, l.closed, l.since = 0, make(map[string]int), now
	l.refusals, l.refusedAt = make(map[string]int), nil
	l.mu.Unlock()
	total := 0
	reasons := make([]string, 0, len(closed))
	for r, n := range closed {
		total += n
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	if opened == 0 && total == 0 && len(suppressed) == 0 {
		return
	}
	sort.Strings(reasons)
	attrs := []any{"opened", opened, "closed", total, "open", open,
		"closed_by_reason", strings.Join(reasons, " "), "interval", now.Sub(since).Round(time.Second)}
	if len(order) > 0 {
		counts := make([]string, len(order))
		for i, text := range order {
			counts[i] = fmt.Sprintf("%dx %s", refusals[text], text)
		}
		attrs = append(attrs, "refused", strings.Join(counts, "; "))
	}
	if len(suppressed) > 0 {
		kinds := make([]string, 0, len(suppressed))
		for k, n := range suppressed {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(kinds)
		attrs = append(attrs, "log_lines_suppressed", strings.Join(kinds, " "))
	}
	l.log.Info("connections", attrs...)
}
