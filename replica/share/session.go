package share

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Key names one share partition: a share group's view of one partition.
type Key struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// TopicIDPartition names a partition by topic id, as ShareFetch does, with
// the topic's name once known.
type TopicIDPartition struct {
	TopicID   [16]byte
	Partition int32
}

// Session epochs of ShareFetch and ShareAcknowledge (KIP-932).
const (
	// InitialSessionEpoch opens a share session.
	InitialSessionEpoch int32 = 0
	// FinalSessionEpoch closes one: only acknowledgements, no fetch.
	FinalSessionEpoch int32 = -1
)

// shareSession is one member's share session on this broker: the
// partitions it fetches and the epoch its next request must carry (Kafka's
// ShareSession).
type shareSession struct {
	group, member string
	epoch         int32
	partitions    map[TopicIDPartition]bool
	lastUsed      time.Time
	// connID is the connection whose ShareFetch opened the session
	// (Kafka's client connection id); "" for none. The session ends
	// when that connection closes, whichever connections the member's
	// later requests come on.
	connID string
}

// SessionCache holds the share sessions of this broker, at most
// group.share.max.share.sessions of them (Kafka's ShareSessionCache). A
// member that never closes its session (its process was killed) leaves it
// behind: when the cache is full, the session used least recently is
// evicted if it has been idle for idleTimeout, longer than a member can
// stay in its group without a heartbeat.
//
// A session also ends with the connection that opened it (Kafka 4.1's
// connection disconnect listener): the socket server calls OnDisconnect
// for every connection that closes, and the sessions opened on it are
// removed and their members' acquired records given back through
// onMemberLeave, as a closed session's are.
type SessionCache struct {
	max         int
	idleTimeout time.Duration
	now         func() time.Time

	mu       sync.Mutex
	sessions map[[2]string]*shareSession
	byGroup  map[string]int
	// byConn maps a connection id to the sessions opened on it (a
	// client may open several members' sessions on one connection).
	byConn map[string]map[[2]string]struct{}
	// onGroupEmpty is told of a group whose last session here was
	// evicted (a closed one is the caller's to handle).
	onGroupEmpty func(group string)
	// onMemberLeave is told of each session removed because its
	// connection closed, with its partitions, without the lock; it
	// must not block (it runs on the closing connection's goroutine).
	onMemberLeave func(group, member string, parts []TopicIDPartition)
	// evicted counts sessions removed by the cache itself: idle ones
	// evicted for room and those whose connection closed (Kafka's
	// ShareSessionEvictionsPerSec); nil: not counted.
	evicted func()
}

// NewSessionCache makes a cache of at most max sessions; a session idle
// for idleTimeout may be evicted to make room.
func NewSessionCache(max int, idleTimeout time.Duration, now func() time.Time) *SessionCache {
	if now == nil {
		now = time.Now
	}
	return &SessionCache{max: max, idleTimeout: idleTimeout, now: now, sessions: map[[2]string]*shareSession{}, byGroup: map[string]int{},
		byConn: map[string]map[[2]string]struct{}{}}
}

// GroupSessions is the number of sessions of group here.
func (c *SessionCache) GroupSessions(group string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byGroup[group]
}

// add puts s in the cache, in place of the member's session if it had
// one; mu held.
func (c *SessionCache) add(k [2]string, s *shareSession) {
	if old := c.sessions[k]; old == nil {
		c.byGroup[s.group]++
	} else {
		// The replaced session's connection no longer ends the member's
		// session (Kafka's KAFKA-19950: a re-opened session is not
		// removed when the old connection closes).
		c.unlinkConn(k, old.connID)
	}
	c.sessions[k] = s
	if s.connID != "" {
		keys := c.byConn[s.connID]
		if keys == nil {
			keys = map[[2]string]struct{}{}
			c.byConn[s.connID] = keys
		}
		keys[k] = struct{}{}
	}
}

// unlinkConn forgets that the session of k was opened on connID; mu held.
func (c *SessionCache) unlinkConn(k [2]string, connID string) {
	keys := c.byConn[connID]
	if keys == nil {
		return
	}
	delete(keys, k)
	if len(keys) == 0 {
		delete(c.byConn, connID)
	}
}

// remove takes the session of k out; it reports whether its group has no
// session left. mu held.
func (c *SessionCache) remove(k [2]string) bool {
	s := c.sessions[k]
	if s == nil {
		return false
	}
	delete(c.sessions, k)
	c.unlinkConn(k, s.connID)
	if c.byGroup[s.group]--; c.byGroup[s.group] <= 0 {
		delete(c.byGroup, s.group)
		return true
	}
	return false
}

// evictIdle makes room by evicting the least recently used session, if it
// has been idle long enough; it returns the group left without sessions,
// if any. mu held.
func (c *SessionCache) evictIdle() (bool, string) {
	var oldest [2]string
	var at time.Time
	for k, s := range c.sessions {
		if at.IsZero() || s.lastUsed.Before(at) {
			oldest, at = k, s.lastUsed
		}
	}
	if at.IsZero() || c.now().Sub(at) < c.idleTimeout {
		return false, ""
	}
	group := c.sessions[oldest].group
	if c.evicted != nil {
		c.evicted()
	}
	if c.remove(oldest) {
		return true, group
	}
	return true, ""
}

// SessionUpdate is what a ShareFetch does to its member's session.
type SessionUpdate struct {
	Group, Member string
	Epoch         int32
	Add, Forget   []TopicIDPartition
	// ConnID is the connection the ShareFetch came on: one that opens
	// the session ties it to that connection.
	ConnID string
}

// Update applies a ShareFetch's session fields and returns the partitions
// the fetch reads: those of the session after the update. Epoch 0 opens a
// session (replacing one the member had), -1 closes it (and returns its
// partitions, whose records the caller releases); any other epoch must be
// the session's next, which then moves on. Errors are Kafka's:
// SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED.
func (c *SessionCache) Update(u SessionUpdate) (_ []TopicIDPartition, err error) {
	var empty []string
	defer func() { c.tellEmpty(empty) }()
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{u.Group, u.Member}
	s := c.sessions[k]
	switch u.Epoch {
	case InitialSessionEpoch:
		if s == nil && len(c.sessions) >= c.max {
			ok, g := c.evictIdle()
			if !ok {
				return nil, kerr.ShareSessionLimitReached
			}
			if g != "" && g != u.Group {
				empty = append(empty, g)
			}
		}
		s = &shareSession{group: u.Group, member: u.Member, partitions: map[TopicIDPartition]bool{}, connID: u.ConnID}
		c.add(k, s)
	case FinalSessionEpoch:
		if s == nil {
			return nil, kerr.ShareSessionNotFound
		}
		c.remove(k) // the caller drops the group's partitions once it released them
		return s.list(), nil
	default:
		if s == nil {
			return nil, kerr.ShareSessionNotFound
		}
		if u.Epoch != s.epoch {
			return nil, kerr.InvalidShareSessionEpoch
		}
	}
	for _, tp := range u.Add {
		s.partitions[tp] = true
	}
	for _, tp := range u.Forget {
		delete(s.partitions, tp)
	}
	s.epoch, s.lastUsed = nextEpoch(s.epoch), c.now()
	return s.list(), nil
}

// tellEmpty calls onGroupEmpty for each group, without the lock.
func (c *SessionCache) tellEmpty(groups []string) {
	if c.onGroupEmpty == nil {
		return
	}
	for _, g := range groups {
		c.onGroupEmpty(g)
	}
}

// Check validates a ShareAcknowledge's epoch against the member's session
// without moving it on, except that -1 closes the session (returning its
// partitions) and 0 is refused: acknowledgements need a session.
func (c *SessionCache) Check(group, member string, epoch int32) ([]TopicIDPartition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{group, member}
	s := c.sessions[k]
	switch {
	case epoch == InitialSessionEpoch:
		return nil, kerr.InvalidShareSessionEpoch
	case s == nil:
		return nil, kerr.ShareSessionNotFound
	case epoch == FinalSessionEpoch:
		c.remove(k) // the caller drops the group's partitions once it released them
		return s.list(), nil
	case epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch
	}
	s.epoch, s.lastUsed = nextEpoch(s.epoch), c.now()
	return nil, nil
}

// Remove drops a member's session (it left its group) and returns its
// partitions.
func (c *SessionCache) Remove(group, member string) []TopicIDPartition {
	var empty []string
	defer func() { c.tellEmpty(empty) }()
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{group, member}
	s := c.sessions[k]
	if s == nil {
		return nil
	}
	if c.remove(k) {
		empty = append(empty, group)
	}
	return s.list()
}

// OnDisconnect is the socket server's connection disconnect listener
// (Kafka's ShareSessionCache.ClientConnectionDisconnectListener): the
// sessions opened on the closed connection are removed and onMemberLeave
// is told of each. A session closed already (final epoch) or re-opened on
// another connection is left alone. It costs one map lookup for a
// connection that opened no session.
func (c *SessionCache) OnDisconnect(connID string) {
	type left struct {
		group, member string
		parts         []TopicIDPartition
	}
	var gone []left
	c.mu.Lock()
	for k := range c.byConn[connID] {
		s := c.sessions[k]
		if s == nil || s.connID != connID {
			continue
		}
		c.remove(k) // the listener drops the group's partitions once it released them
		gone = append(gone, left{s.group, s.member, s.list()})
	}
	delete(c.byConn, connID)
	c.mu.Unlock()
	for _, l := range gone {
		if c.evicted != nil {
			c.evicted()
		}
		if c.onMemberLeave != nil {
			c.onMemberLeave(l.group, l.member, l.parts)
		}
	}
}

// Has reports whether member has a session.
func (c *SessionCache) Has(group, member string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[[2]string{group, member}] != nil
}

// Len is the number of open sessions.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

func (s *shareSession) list() []TopicIDPartition {
	out := make([]TopicIDPartition, 0, len(s.partitions))
	for tp := range s.partitions {
		out = append(out, tp)
	}
	return out
}

// nextEpoch is the epoch after e: it wraps to 1, as Kafka's
// ShareRequestMetadata.nextEpoch, never to 0 or -1.
func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}
