package log

// EndOffsetForEpoch answers OffsetForLeaderEpoch for this log (Kafka's
// LeaderEpochFileCache.endOffsetFor): the largest epoch at most epoch that
// the log has, and the offset where the next epoch starts, the log end
// offset for the latest epoch. (-1, -1) when epoch is newer than every
// epoch the log has, or the log has none; an epoch older than the first
// gives (epoch, the first epoch's start offset).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segMu.RLock()
	leo := l.leo
	l.segMu.RUnlock()
	return l.epochs.endOffsetFor(epoch, leo)
}

func (c *leaderEpochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	n := len(c.entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if c.entries[n-1].Epoch == epoch {
		return epoch, leo
	}
	higher := -1
	for i, e := range c.entries {
		if e.Epoch > epoch {
			higher = i
			break
		}
	}
	if higher < 0 {
		return -1, -1
	}
	if higher == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}
