package remote

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// ErrInvalidTransition: an event moves a segment to a state its current
// state does not allow (Kafka's IllegalStateException from
// RemoteLogMetadataCache.checkStateTransition).
var ErrInvalidTransition = errors.New("invalid remote log segment state transition")

// ErrUnknownSegment: an update names a segment the cache does not hold
// (Kafka's RemoteResourceNotFoundException).
var ErrUnknownSegment = errors.New("remote log segment not found")

// RemoteLogMetadataCache holds one user partition's remote segments, built
// only by applying the events of __remote_log_metadata in log order
// (Kafka's RemoteLogMetadataCache). Guarantees, as Kafka's:
//   - A segment is found by (epoch, offset) only once COPY_SEGMENT_FINISHED
//     and until DELETE_SEGMENT_STARTED; for every epoch it spans, it is
//     mapped at that epoch's start offset in it.
//   - A later copy of the same range finishing replaces the earlier one in
//     that mapping; the replaced segment becomes unreferenced.
//   - COPY_SEGMENT_STARTED segments never finished, replaced and
//     DELETE_SEGMENT_STARTED segments are unreferenced: listed, never
//     found by offset, kept until DELETE_SEGMENT_FINISHED removes them.
//   - HighestOffsetForEpoch only grows; deleting segments leaves it.
//
// Safe for concurrent readers and one writer. Returned metadata is shared:
// callers must not modify it.
type RemoteLogMetadataCache struct {
	mu     sync.RWMutex
	byID   map[RemoteLogSegmentId]*RemoteLogSegmentMetadata
	epochs map[int32]*remoteLogLeaderEpochState
}

// remoteLogLeaderEpochState is one leader epoch's segments (Kafka's
// RemoteLogLeaderEpochState).
type remoteLogLeaderEpochState struct {
	offsetToID   map[int64]RemoteLogSegmentId // epoch's start offset in the segment → copied segment
	unreferenced map[RemoteLogSegmentId]struct{}
	highest      int64
	hasHighest   bool
}

// NewRemoteLogMetadataCache returns an empty cache.
func NewRemoteLogMetadataCache() *RemoteLogMetadataCache {
	return &RemoteLogMetadataCache{
		byID:   make(map[RemoteLogSegmentId]*RemoteLogSegmentMetadata),
		epochs: make(map[int32]*remoteLogLeaderEpochState),
	}
}

func (c *RemoteLogMetadataCache) epoch(e int32) *remoteLogLeaderEpochState {
	s := c.epochs[e]
	if s == nil {
		s = &remoteLogLeaderEpochState{
			offsetToID:   make(map[int64]RemoteLogSegmentId),
			unreferenced: make(map[RemoteLogSegmentId]struct{}),
		}
		c.epochs[e] = s
	}
	return s
}

// AddCopyInProgressSegment adds a segment in COPY_SEGMENT_STARTED as an
// unreferenced segment of each of its epochs. It refuses other states and
// a segment id already held.
func (c *RemoteLogMetadataCache) AddCopyInProgressSegment(m *RemoteLogSegmentMetadata) error {
	if m.State != CopySegmentStarted {
		return fmt.Errorf("add segment %s in state %s: %w", m.ID, m.State, ErrInvalidTransition)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byID[m.ID]; ok {
		return fmt.Errorf("add segment %s: already in state %s: %w", m.ID, old.State, ErrInvalidTransition)
	}
	for e := range m.SegmentLeaderEpochs {
		c.epoch(e).unreferenced[m.ID] = struct{}{}
	}
	c.byID[m.ID] = m.Clone()
	return nil
}

// UpdateRemoteLogSegmentMetadata moves a held segment to u's state. It
// refuses unknown ids (ErrUnknownSegment) and transitions ValidTransition
// does not allow (ErrInvalidTransition).
func (c *RemoteLogMetadataCache) UpdateRemoteLogSegmentMetadata(u RemoteLogSegmentMetadataUpdate) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.byID[u.ID]
	if !ok {
		return fmt.Errorf("update segment %s to %s: %w", u.ID, u.State, ErrUnknownSegment)
	}
	if !old.State.ValidTransition(u.State) {
		return fmt.Errorf("update segment %s from %s to %s: %w", u.ID, old.State, u.State, ErrInvalidTransition)
	}
	m, err := old.Update(u)
	if err != nil {
		return fmt.Errorf("update segment %s: %w", u.ID, err)
	}
	epochs := m.Epochs()
	switch u.State {
	case CopySegmentFinished:
		for i, e := range epochs {
			end := m.EndOffset
			if i+1 < len(epochs) {
				end = m.SegmentLeaderEpochs[epochs[i+1]] - 1
			}
			s := c.epoch(e)
			start := m.SegmentLeaderEpochs[e]
			prev, had := s.offsetToID[start]
			s.offsetToID[start] = m.ID
			delete(s.unreferenced, m.ID)
			if had && prev != m.ID {
				s.unreferenced[prev] = struct{}{}
			}
			if !s.hasHighest || end > s.highest {
				s.highest, s.hasHighest = end, true
			}
		}
		c.byID[m.ID] = m
	case DeleteSegmentStarted:
		for _, e := range epochs {
			s := c.epoch(e)
			start := m.SegmentLeaderEpochs[e]
			if s.offsetToID[start] == m.ID {
				delete(s.offsetToID, start)
			}
			s.unreferenced[m.ID] = struct{}{}
		}
		c.byID[m.ID] = m
	case DeleteSegmentFinished:
		for _, e := range epochs {
			if s := c.epochs[e]; s != nil {
				delete(s.unreferenced, m.ID)
				if len(s.offsetToID) == 0 && len(s.unreferenced) == 0 {
					delete(c.epochs, e)
				}
			}
		}
		delete(c.byID, m.ID)
	}
	return nil
}

// RemoteLogSegmentMetadata returns the COPY_SEGMENT_FINISHED segment
// holding offset within leaderEpoch's range in it.
func (c *RemoteLogMetadataCache) RemoteLogSegmentMetadata(leaderEpoch int32, offset int64) (*RemoteLogSegmentMetadata, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.epochs[leaderEpoch]
	if s == nil {
		return nil, false
	}
	// floor entry of offset
	var id RemoteLogSegmentId
	floor, found := int64(0), false
	for start, sid := range s.offsetToID {
		if start <= offset && (!found || start > floor) {
			floor, id, found = start, sid, true
		}
	}
	if !found {
		return nil, false
	}
	m := c.byID[id]
	if m == nil || offset > m.EndOffset {
		return nil, false
	}
	epochEnd := m.EndOffset
	for e, start := range m.SegmentLeaderEpochs {
		if e > leaderEpoch && start-1 < epochEnd {
			epochEnd = start - 1
		}
	}
	if offset > epochEnd {
		return nil, false
	}
	return m, true
}

// HighestOffsetForEpoch returns the highest offset of epoch in any segment
// whose copy finished (false: none yet).
func (c *RemoteLogMetadataCache) HighestOffsetForEpoch(epoch int32) (int64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s := c.epochs[epoch]; s != nil && s.hasHighest {
		return s.highest, true
	}
	return 0, false
}

// ListRemoteLogSegments returns every held segment, in any state, ordered
// by start offset.
func (c *RemoteLogMetadataCache) ListRemoteLogSegments() []*RemoteLogSegmentMetadata {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return metaSortByStart(slices.Collect(maps.Values(c.byID)))
}

// ListRemoteLogSegmentsForEpoch returns the segments of epoch, the copied
// ones and the unreferenced ones, ordered by start offset.
func (c *RemoteLogMetadataCache) ListRemoteLogSegmentsForEpoch(epoch int32) []*RemoteLogSegmentMetadata {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.epochs[epoch]
	if s == nil {
		return nil
	}
	var out []*RemoteLogSegmentMetadata
	for _, id := range s.offsetToID {
		out = append(out, c.byID[id])
	}
	for id := range s.unreferenced {
		out = append(out, c.byID[id])
	}
	return metaSortByStart(out)
}

// UnreferencedSegments returns the segments that no (epoch, offset) lookup
// finds: copies never finished, copies replaced in every epoch they span,
// and deletes in progress, ordered by start offset. They wait for
// DELETE_SEGMENT_FINISHED. As in Kafka, a segment is unreferenced per
// epoch: one replaced in one epoch but still mapped in another is found by
// the other and is not listed here.
func (c *RemoteLogMetadataCache) UnreferencedSegments() []*RemoteLogSegmentMetadata {
	c.mu.RLock()
	defer c.mu.RUnlock()
	referenced := make(map[RemoteLogSegmentId]bool)
	for _, s := range c.epochs {
		for _, id := range s.offsetToID {
			referenced[id] = true
		}
	}
	seen := make(map[RemoteLogSegmentId]bool)
	var out []*RemoteLogSegmentMetadata
	for _, s := range c.epochs {
		for id := range s.unreferenced {
			if !seen[id] && !referenced[id] {
				seen[id] = true
				out = append(out, c.byID[id])
			}
		}
	}
	return metaSortByStart(out)
}

func metaSortByStart(ms []*RemoteLogSegmentMetadata) []*RemoteLogSegmentMetadata {
	slices.SortFunc(ms, func(a, b *RemoteLogSegmentMetadata) int {
		return cmp.Or(cmp.Compare(a.StartOffset, b.StartOffset), cmp.Compare(a.EndOffset, b.EndOffset))
	})
	return ms
}

// NextSegmentWithTxnIndex returns the first segment mapped in leaderEpoch,
// in offset order, that ends at or after offset and has a transaction index
// (Kafka's nextSegmentWithTxnIndex, used to collect aborted transactions
// across segments). The epoch's own range in the segment is not checked:
// the caller reads the segment's whole index.
func (c *RemoteLogMetadataCache) NextSegmentWithTxnIndex(leaderEpoch int32, offset int64) (*RemoteLogSegmentMetadata, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.epochs[leaderEpoch]
	if s == nil {
		return nil, false
	}
	var best *RemoteLogSegmentMetadata
	for _, id := range s.offsetToID {
		m := c.byID[id]
		if m == nil || m.TxnIdxEmpty || m.EndOffset < offset {
			continue
		}
		if best == nil || m.StartOffset < best.StartOffset {
			best = m
		}
	}
	return best, best != nil
}
