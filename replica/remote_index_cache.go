package replica

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log/remote"
)

// defaultRemoteIndexCacheBytes bounds the remote index cache. Kafka's
// RemoteIndexCache keeps the files on local disk, bounded by
// remote.log.index.file.cache.total.size.bytes (1 GiB); this one is in
// memory, so it has a smaller bound of its own.
const defaultRemoteIndexCacheBytes = 64 << 20

// maxRemoteIndexBytes bounds one index read from the store.
const maxRemoteIndexBytes = 64 << 20

// remoteIndexCache keeps the offset and time indexes of remote segments
// (Kafka's RemoteIndexCache), least recently used out first, so remote
// reads and timestamp searches do not fetch them from the store each
// time. Safe for concurrent use; two readers missing the same index both
// fetch it.
type remoteIndexCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	lru   *list.List // of *remoteIndexEntry, most recent first
	items map[remoteIndexKey]*list.Element
}

type remoteIndexKey struct {
	id  uuid.UUID
	typ remote.IndexType
}

type remoteIndexEntry struct {
	key remoteIndexKey
	b   []byte
}

func newRemoteIndexCache(maxBytes int64) *remoteIndexCache {
	return &remoteIndexCache{max: maxBytes, lru: list.New(), items: map[remoteIndexKey]*list.Element{}}
}

// get returns the segment's index of type t, from the cache or the store.
func (c *remoteIndexCache) get(ctx context.Context, rsm remote.RemoteStorageManager, m *remote.RemoteLogSegmentMetadata, t remote.IndexType) ([]byte, error) {
	key := remoteIndexKey{m.ID.ID, t}
	c.mu.Lock()
	if e, ok := c.items[key]; ok {
		c.lru.MoveToFront(e)
		b := e.Value.(*remoteIndexEntry).b
		c.mu.Unlock()
		return b, nil
	}
	c.mu.Unlock()
	rc, err := rsm.FetchIndex(ctx, m, t)
	if err != nil {
		return nil, fmt.Errorf("fetching the %s index of %s: %w", t, m.ID, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxRemoteIndexBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the %s index of %s: %w", t, m.ID, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; !ok && int64(len(b)) <= c.max {
		c.items[key] = c.lru.PushFront(&remoteIndexEntry{key, b})
		c.size += int64(len(b))
		for c.size > c.max {
			c.removeLocked(c.lru.Back())
		}
	}
	return b, nil
}

// remove forgets a segment's indexes (the segment was deleted).
func (c *remoteIndexCache) remove(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range []remote.IndexType{remote.IndexOffset, remote.IndexTimestamp} {
		if e, ok := c.items[remoteIndexKey{id, t}]; ok {
			c.removeLocked(e)
		}
	}
}

func (c *remoteIndexCache) removeLocked(e *list.Element) {
	ent := c.lru.Remove(e).(*remoteIndexEntry)
	delete(c.items, ent.key)
	c.size -= int64(len(ent.b))
}
