package log

// The end offset of a leader epoch, as OffsetForLeaderEpoch answers it
// (KIP-101, KIP-279, KIP-320): Kafka's LeaderEpochFileCache.endOffsetFor
// and UnifiedLog.endOffsetForEpoch. A follower asks it of the leader to
// find where its log diverges; a consumer asks it after a leader change to
// check that the offset it holds was not truncated away.

// UndefinedEpoch and UndefinedEpochOffset are the answer when the cache
// knows nothing of the epoch asked for (Kafka's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// EndOffsetForEpoch returns, for a requested leader epoch, the largest
// epoch in the log at or below it and that epoch's end offset: the start
// offset of the next epoch, or the log end offset if it is the latest.
// An epoch below the first one the cache holds answers the requested
// epoch itself and the first epoch's start offset (the older entries went
// with the data, as in Kafka). UndefinedEpoch, an epoch above the latest,
// and an empty cache answer (UndefinedEpoch, UndefinedEpochOffset).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Under mu no append can move the log end past a new epoch's entry:
	// both change together under it.
	return l.epochs.endOffsetFor(epoch, l.LogEndOffset())
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor on the sorted
// entries (epochs and start offsets both increase).
func (c *leaderEpochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	es := c.entries
	switch {
	case requested == UndefinedEpoch || len(es) == 0:
		return UndefinedEpoch, UndefinedEpochOffset
	case es[len(es)-1].Epoch == requested:
		// The epoch being written: it ends at the log end.
		return requested, logEndOffset
	}
	// higher: the first entry with an epoch above the one requested.
	higher := 0
	for higher < len(es) && es[higher].Epoch <= requested {
		higher++
	}
	switch {
	case higher == len(es):
		// Above every epoch known.
		return UndefinedEpoch, UndefinedEpochOffset
	case higher == 0:
		// Below every epoch known: the data of older epochs is gone;
		// the next known epoch's start is where the log begins.
		return requested, es[0].StartOffset
	}
	return es[higher-1].Epoch, es[higher].StartOffset
}
