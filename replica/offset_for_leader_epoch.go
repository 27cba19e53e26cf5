package replica

// LastOffsetForLeaderEpoch answers one partition of OffsetForLeaderEpoch
// (Kafka's ReplicaManager.lastOffsetForLeaderEpoch and
// Partition.lastOffsetForLeaderEpoch with fetchOnlyFromLeader): the
// partition must be led here, as for a fetch (NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR), and
// currentLeaderEpoch, unless -1, must be its leader epoch
// (FENCED_LEADER_EPOCH if older, UNKNOWN_LEADER_EPOCH if newer). The
// answer is the log's leader-epoch cache (log.Log.EndOffsetForEpoch): the
// largest epoch at or below leaderEpoch and its end offset, or
// (log.UndefinedEpoch, log.UndefinedEpochOffset) when the cache knows
// nothing of it. Consumers (KIP-320) and followers are answered alike.
func (m *Manager) LastOffsetForLeaderEpoch(tp TopicPartition, currentLeaderEpoch, leaderEpoch int32) (epoch int32, endOffset int64, err error) {
	p, err := m.getPartition(tp)
	if err != nil {
		return -1, -1, err
	}
	if err := checkLeaderEpoch(p, currentLeaderEpoch); err != nil {
		return -1, -1, err
	}
	epoch, endOffset = p.Log.EndOffsetForEpoch(leaderEpoch)
	return epoch, endOffset, nil
}
