package share

import (
	"context"
	"sort"
)

// Persister is what share partitions need of the share coordinator
// (Kafka's Persister, one partition at a time): the broker implements it
// over the coordinator's state APIs, in-process or to the broker that
// leads the state's partition of __share_group_state. Errors wrap kerr
// sentinels.
type Persister interface {
	// ReadState returns the partition's state (ReadShareGroupState); a
	// partition never initialized has StartOffset -1.
	ReadState(ctx context.Context, k Key, leaderEpoch int32) (PersistedState, error)
	// WriteState merges batches into the state (WriteShareGroupState).
	WriteState(ctx context.Context, k Key, st PersistedState) error
}

// PersistedState is a share partition's durable state as the share
// coordinator keeps it.
type PersistedState struct {
	StateEpoch  int32
	LeaderEpoch int32
	StartOffset int64
	// DeliveryCompleteCount is how many offsets from the start offset
	// are acknowledged or archived (KIP-1226: the share-partition lag is
	// computed from it); written, not read.
	DeliveryCompleteCount int32
	Batches               []StateBatch
}

// overlay returns base with top written over it: where a batch of top
// covers offsets of base, top's state wins. Both are ordered and free of
// overlaps; so is the result. It lets a share partition send the changes
// made while one write was in flight as one later write, in which the
// newer state of an offset is the one sent.
func overlay(base, top []StateBatch) []StateBatch {
	if len(base) == 0 {
		return append([]StateBatch(nil), top...)
	}
	if len(top) == 0 {
		return base
	}
	var out []StateBatch
	for _, b := range base {
		// Cut out of b every range top covers.
		for _, t := range top {
			if t.LastOffset < b.FirstOffset || t.FirstOffset > b.LastOffset {
				continue
			}
			if t.FirstOffset > b.FirstOffset {
				left := b
				left.LastOffset = t.FirstOffset - 1
				out = append(out, left)
			}
			b.FirstOffset = t.LastOffset + 1
			if b.FirstOffset > b.LastOffset {
				break
			}
		}
		if b.FirstOffset <= b.LastOffset {
			out = append(out, b)
		}
	}
	out = append(out, top...)
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}
