package share

import (
	"sync"

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
}

// SessionCache holds the share sessions of this broker, at most
// group.share.max.share.sessions of them (Kafka's ShareSessionCache).
type SessionCache struct {
	max int

	mu       sync.Mutex
	sessions map[[2]string]*shareSession
}

// NewSessionCache makes a cache of at most max sessions.
func NewSessionCache(max int) *SessionCache {
	return &SessionCache{max: max, sessions: map[[2]string]*shareSession{}}
}

// SessionUpdate is what a ShareFetch does to its member's session.
type SessionUpdate struct {
	Group, Member string
	Epoch         int32
	Add, Forget   []TopicIDPartition
}

// Update applies a ShareFetch's session fields and returns the partitions
// the fetch reads: those of the session after the update. Epoch 0 opens a
// session (replacing one the member had), -1 closes it (and returns its
// partitions, whose records the caller releases); any other epoch must be
// the session's next, which then moves on. Errors are Kafka's:
// SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED.
func (c *SessionCache) Update(u SessionUpdate) ([]TopicIDPartition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{u.Group, u.Member}
	s := c.sessions[k]
	switch u.Epoch {
	case InitialSessionEpoch:
		if s == nil && len(c.sessions) >= c.max {
			return nil, kerr.ShareSessionLimitReached
		}
		s = &shareSession{group: u.Group, member: u.Member, partitions: map[TopicIDPartition]bool{}}
		c.sessions[k] = s
	case FinalSessionEpoch:
		if s == nil {
			return nil, kerr.ShareSessionNotFound
		}
		delete(c.sessions, k)
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
	s.epoch = nextEpoch(s.epoch)
	return s.list(), nil
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
		delete(c.sessions, k)
		return s.list(), nil
	case epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch
	}
	s.epoch = nextEpoch(s.epoch)
	return nil, nil
}

// Remove drops a member's session (it left its group) and returns its
// partitions.
func (c *SessionCache) Remove(group, member string) []TopicIDPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{group, member}
	s := c.sessions[k]
	if s == nil {
		return nil
	}
	delete(c.sessions, k)
	return s.list()
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
