package kapi

import (
	"container/list"
	"math/rand/v2"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Fetch sessions (KIP-227). A consumer that opens a session (epoch 0)
// sends the full partition list once; later fetches (epoch 1, 2, ...) carry
// only the partitions whose fetch state changed plus forgotten partitions,
// and the response carries only partitions with something new: records, an
// error, or a moved high watermark, last stable offset or log start
// offset. Kafka's FetchSession.scala is the model.

// Session epochs with special meaning.
const (
	initialSessionEpoch int32 = 0  // open a new session (full fetch)
	finalSessionEpoch   int32 = -1 // no session, or close the one named
)

// sessionKey identifies a partition within a session. Topic IDs are used
// from Fetch v13; before that the name.
type sessionKey struct {
	id        [16]byte
	topic     string
	partition int32
}

// sessionPartition is a session's cached state of one partition.
type sessionPartition struct {
	key                sessionKey
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	logStartOffset     int64 // follower's; unused for consumers
	lastFetchedEpoch   int32 // v12+, -1: not given

	// What the client was last told; a response includes the partition
	// again only if one of these changed (or there are records/errors).
	hw, lso, lstart int64
}

type fetchSession struct {
	mu    sync.Mutex
	id    int32
	epoch int32 // the next epoch expected
	parts []*sessionPartition
	index map[sessionKey]*sessionPartition
	elem  *list.Element // in the cache's LRU
}

// fetchSessionCache holds sessions up to a slot limit
// (max.incremental.fetch.session.cache.slots, 1000 by default, counting
// sessions), evicting the least recently used.
type fetchSessionCache struct {
	mu       sync.Mutex
	max      int
	sessions map[int32]*fetchSession
	lru      *list.List // front: most recently used
}

func newFetchSessionCache(max int) *fetchSessionCache {
	return &fetchSessionCache{max: max, sessions: make(map[int32]*fetchSession), lru: list.New()}
}

// create makes a new session; nil if the cache holds no slots.
func (c *fetchSessionCache) create() *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max <= 0 {
		return nil
	}
	if len(c.sessions) >= c.max {
		oldest := c.lru.Back()
		s := oldest.Value.(*fetchSession)
		c.lru.Remove(oldest)
		delete(c.sessions, s.id)
	}
	var id int32
	for id == 0 || c.sessions[id] != nil {
		id = rand.Int32N(1<<31 - 1)
	}
	s := &fetchSession{id: id, epoch: 1, index: make(map[sessionKey]*sessionPartition)}
	s.elem = c.lru.PushFront(s)
	c.sessions[id] = s
	return s
}

// get finds a session for an incremental fetch and checks its epoch.
func (c *fetchSessionCache) get(id, epoch int32) (*fetchSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		return nil, kerr.FetchSessionIDNotFound
	}
	s.mu.Lock()
	e := s.epoch
	s.mu.Unlock()
	if e != epoch {
		return nil, kerr.InvalidFetchSessionEpoch
	}
	c.lru.MoveToFront(s.elem)
	return s, nil
}

func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[id]; s != nil {
		c.lru.Remove(s.elem)
		delete(c.sessions, id)
	}
}

// upsert adds or updates a partition's fetch state.
func (s *fetchSession) upsert(p sessionPartition) {
	if cur := s.index[p.key]; cur != nil {
		cur.fetchOffset, cur.maxBytes, cur.currentLeaderEpoch, cur.logStartOffset = p.fetchOffset, p.maxBytes, p.currentLeaderEpoch, p.logStartOffset
		cur.lastFetchedEpoch = p.lastFetchedEpoch
		return
	}
	p.hw, p.lso, p.lstart = -1, -1, -1
	np := &p
	s.index[p.key] = np
	s.parts = append(s.parts, np)
}

func (s *fetchSession) forget(k sessionKey) {
	if s.index[k] == nil {
		return
	}
	delete(s.index, k)
	for i, p := range s.parts {
		if p.key == k {
			s.parts = append(s.parts[:i], s.parts[i+1:]...)
			return
		}
	}
}

// rotate moves the partitions that returned records to the end, so that
// with a small response limit the others get their turn next time (as
// Kafka's incremental context does).
func (s *fetchSession) rotate(sent map[sessionKey]bool) {
	if len(sent) == 0 || len(sent) == len(s.parts) {
		return
	}
	front := s.parts[:0:0]
	var back []*sessionPartition
	for _, p := range s.parts {
		if sent[p.key] {
			back = append(back, p)
		} else {
			front = append(front, p)
		}
	}
	s.parts = append(front, back...)
}
