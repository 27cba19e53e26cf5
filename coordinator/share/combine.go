package share

import (
	"cmp"
	"slices"
)

// combineStateBatches merges a share-partition's state batches so far with
// new ones into a list of batches that do not overlap, as Kafka's
// PersisterStateBatchCombiner.combineStateBatches does (the coordinator
// runs it on every WriteShareGroupState and when a ShareUpdate is
// replayed):
//
//   - Every batch ending before startOffset is dropped, and one that
//     straddles it is cut to start there (startOffset -1: nothing is
//     pruned).
//   - The batches are put in order (first offset, last offset, delivery
//     count, delivery state; equal batches collapse into one), then the
//     first pair that overlaps, or that is contiguous with the same
//     delivery count and state, is merged, until no such pair is left.
//   - A pair with the same delivery count and state becomes one batch.
//     Where two batches with different ones overlap, the offsets they
//     share take the state of the one that ranks higher: the higher
//     delivery count, then the higher delivery state id (ARCHIVED over
//     ACKNOWLEDGED over AVAILABLE); the rest of each keeps its own.
//
// Batches that overlap nothing and are not merged come out in order. With
// fewer than two batches after pruning, they are returned as they are.
func combineStateBatches(soFar, newBatches []StateBatch, startOffset int64) []StateBatch {
	combined := make([]StateBatch, 0, len(soFar)+len(newBatches))
	combined = append(append(combined, soFar...), newBatches...)
	combined = pruneBatches(combined, startOffset)
	if len(combined) < 2 {
		return combined
	}
	m := &batchMerger{}
	for _, b := range combined {
		m.add(b)
	}
	for {
		prev, cand, ok := m.nextCandidatePair()
		if !ok {
			break
		}
		m.remove(prev)
		m.remove(cand)
		if compareDeliveryInfo(cand, prev) == 0 {
			m.add(StateBatch{prev.FirstOffset, max(cand.LastOffset, prev.LastOffset), prev.DeliveryState, prev.DeliveryCount})
		} else {
			m.mergeDifferentStates(prev, cand)
		}
	}
	return append(m.final, m.sorted...)
}

// pruneBatches drops the batches that end before startOffset and cuts the
// one that straddles it (Kafka's pruneBatches).
func pruneBatches(batches []StateBatch, startOffset int64) []StateBatch {
	if startOffset == -1 {
		return batches
	}
	out := batches[:0]
	for _, b := range batches {
		switch {
		case b.LastOffset < startOffset:
		case b.FirstOffset >= startOffset:
			out = append(out, b)
		default:
			b.FirstOffset = startOffset
			out = append(out, b)
		}
	}
	return out
}

// compareBatch is PersisterStateBatch.compareTo: first offset, last
// offset, delivery count, delivery state.
func compareBatch(a, b StateBatch) int {
	if c := cmp.Compare(a.FirstOffset, b.FirstOffset); c != 0 {
		return c
	}
	if c := cmp.Compare(a.LastOffset, b.LastOffset); c != 0 {
		return c
	}
	return compareDeliveryInfo(a, b)
}

// compareDeliveryInfo ranks two batches' delivery information (Kafka's
// compareBatchDeliveryInfo): delivery count, then delivery state.
func compareDeliveryInfo(a, b StateBatch) int {
	if c := cmp.Compare(a.DeliveryCount, b.DeliveryCount); c != 0 {
		return c
	}
	return cmp.Compare(a.DeliveryState, b.DeliveryState)
}

// batchMerger is the combiner's working state: sorted is Kafka's TreeSet
// of batches still to merge (ordered by compareBatch, without
// duplicates), final the batches done.
type batchMerger struct {
	sorted []StateBatch
	final  []StateBatch
}

func (m *batchMerger) add(b StateBatch) {
	i, found := slices.BinarySearchFunc(m.sorted, b, compareBatch)
	if !found {
		m.sorted = slices.Insert(m.sorted, i, b)
	}
}

func (m *batchMerger) remove(b StateBatch) {
	if i, found := slices.BinarySearchFunc(m.sorted, b, compareBatch); found {
		m.sorted = slices.Delete(m.sorted, i, i+1)
	}
}

// nextCandidatePair finds the first two batches in order that can be
// merged: they overlap, or are contiguous with the same delivery
// information. The batches before them merge with nothing and move to
// final (Kafka's getMergeCandidatePair).
func (m *batchMerger) nextCandidatePair() (prev, cand StateBatch, ok bool) {
	if len(m.sorted) == 0 {
		return prev, cand, false
	}
	prev = m.sorted[0]
	for i := 1; i < len(m.sorted); i++ {
		cand = m.sorted[i]
		if cand.FirstOffset <= prev.LastOffset ||
			(prev.LastOffset+1 == cand.FirstOffset && compareDeliveryInfo(prev, cand) == 0) {
			m.moveToFinal(i - 1)
			return prev, cand, true
		}
		prev = cand
	}
	m.moveToFinal(len(m.sorted) - 1)
	return prev, cand, false
}

// moveToFinal moves the first n sorted batches to final.
func (m *batchMerger) moveToFinal(n int) {
	m.final = append(m.final, m.sorted[:n]...)
	m.sorted = slices.Delete(m.sorted, 0, n)
}

// mergeDifferentStates splits an overlapping pair with different delivery
// information (prev sorts first, so prev.FirstOffset <= cand.FirstOffset):
// the shared offsets go to the one that ranks higher.
func (m *batchMerger) mergeDifferentStates(prev, cand StateBatch) {
	candWins := compareDeliveryInfo(cand, prev) >= 0
	if cand.FirstOffset == prev.FirstOffset {
		// Same first offset; the set's order puts the shorter (or,
		// with the same span, the lower-ranked) first.
		switch {
		case cand.LastOffset == prev.LastOffset:
			m.add(cand)
		case !candWins:
			m.add(prev)
			m.add(StateBatch{prev.LastOffset + 1, cand.LastOffset, cand.DeliveryState, cand.DeliveryCount})
		default:
			m.add(cand)
		}
		return
	}
	head := StateBatch{prev.FirstOffset, cand.FirstOffset - 1, prev.DeliveryState, prev.DeliveryCount}
	switch {
	case cand.LastOffset < prev.LastOffset: // prev swallows cand
		if !candWins {
			m.add(prev)
			return
		}
		m.add(head)
		m.add(cand)
		m.add(StateBatch{cand.LastOffset + 1, prev.LastOffset, prev.DeliveryState, prev.DeliveryCount})
	case cand.LastOffset == prev.LastOffset:
		if !candWins {
			m.add(prev)
			return
		}
		m.add(head)
		m.add(cand)
	default: // cand runs past prev
		if !candWins {
			m.add(prev)
			m.add(StateBatch{prev.LastOffset + 1, cand.LastOffset, cand.DeliveryState, cand.DeliveryCount})
			return
		}
		m.add(head)
		m.add(cand)
	}
}
