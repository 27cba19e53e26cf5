package remote

import (
	"fmt"
	"sync"
)

// RemoteLogMetadataStore maps each user partition to its
// RemoteLogMetadataCache and keeps partition delete state, built by
// applying decoded __remote_log_metadata events in log order (Kafka's
// RemotePartitionMetadataStore). A partition's cache is created by its
// first segment event; DELETE_PARTITION_FINISHED drops the cache and the
// delete state. Safe for concurrent readers and one writer.
type RemoteLogMetadataStore struct {
	mu      sync.RWMutex
	caches  map[TopicIdPartition]*RemoteLogMetadataCache
	deletes map[TopicIdPartition]*RemotePartitionDeleteMetadata
}

// NewRemoteLogMetadataStore returns an empty store.
func NewRemoteLogMetadataStore() *RemoteLogMetadataStore {
	return &RemoteLogMetadataStore{
		caches:  make(map[TopicIdPartition]*RemoteLogMetadataCache),
		deletes: make(map[TopicIdPartition]*RemotePartitionDeleteMetadata),
	}
}

// Apply applies one event as DecodeRemoteLogMetadata returns it.
func (s *RemoteLogMetadataStore) Apply(event any) error {
	switch e := event.(type) {
	case *RemoteLogSegmentMetadata:
		return s.cacheFor(e.ID.TopicIdPartition, true).AddCopyInProgressSegment(e)
	case *RemoteLogSegmentMetadataUpdate:
		c := s.cacheFor(e.ID.TopicIdPartition, false)
		if c == nil {
			return fmt.Errorf("update segment %s: no metadata for partition: %w", e.ID, ErrUnknownSegment)
		}
		return c.UpdateRemoteLogSegmentMetadata(*e)
	case *RemotePartitionDeleteMetadata:
		s.mu.Lock()
		defer s.mu.Unlock()
		if e.State == DeletePartitionFinished {
			delete(s.caches, e.TopicIdPartition)
			delete(s.deletes, e.TopicIdPartition)
			return nil
		}
		c := *e
		s.deletes[e.TopicIdPartition] = &c
		return nil
	}
	return fmt.Errorf("apply remote log metadata: unsupported event %T", event)
}

func (s *RemoteLogMetadataStore) cacheFor(tp TopicIdPartition, create bool) *RemoteLogMetadataCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.caches[tp]
	if c == nil && create {
		c = NewRemoteLogMetadataCache()
		s.caches[tp] = c
	}
	return c
}

// Cache returns tp's cache (false: no segment event seen).
func (s *RemoteLogMetadataStore) Cache(tp TopicIdPartition) (*RemoteLogMetadataCache, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.caches[tp]
	return c, ok
}

// PartitionDeleteMetadata returns tp's latest partition delete event,
// until DELETE_PARTITION_FINISHED.
func (s *RemoteLogMetadataStore) PartitionDeleteMetadata(tp TopicIdPartition) (RemotePartitionDeleteMetadata, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.deletes[tp]
	if !ok {
		return RemotePartitionDeleteMetadata{}, false
	}
	return *d, true
}

// Partitions returns the partitions the store has segments or a
// partition deletion in progress for.
func (s *RemoteLogMetadataStore) Partitions() []TopicIdPartition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]TopicIdPartition, 0, len(s.caches)+len(s.deletes))
	for tp := range s.caches {
		out = append(out, tp)
	}
	for tp := range s.deletes {
		if _, ok := s.caches[tp]; !ok {
			out = append(out, tp)
		}
	}
	return out
}
