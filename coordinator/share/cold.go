package share

import (
	"cmp"
	"slices"

	"github.com/moldau/moldau/coordinator/runtime"
)

// Snapshots of cold share-partitions (Kafka's
// ShareCoordinatorShard.snapshotColdPartitions, run by its service every
// share.coordinator.cold.partition.snapshot.interval.ms): a key not
// snapshotted for that long, a share-partition that went quiet, is
// written again as a ShareSnapshot (the same state at the next snapshot
// epoch, write timestamp now), so that its old records stop holding the
// prune job back. When every key's last snapshot already is such a
// rewrite (its write timestamp differs from its create timestamp), the
// partition is quiet and nothing is written.

const coldSnapshotTimer = "snapshot-cold-partitions"

func (s *Shard) scheduleColdSnapshots() {
	if s.cfg.ColdPartitionSnapshotInterval <= 0 {
		return
	}
	s.timer.Schedule(coldSnapshotTimer, s.cfg.ColdPartitionSnapshotInterval, func() (runtime.Result[runtime.Void], error) {
		s.scheduleColdSnapshots()
		return runtime.Result[runtime.Void]{Records: s.coldSnapshots()}, nil
	})
}

// coldSnapshots are the snapshot records of the keys gone cold, in key
// order.
func (s *Shard) coldSnapshots() []runtime.Record {
	rewritten := 0
	for _, v := range s.states {
		if v.CreateTimestamp != v.WriteTimestamp {
			rewritten++
		}
	}
	if rewritten == len(s.states) {
		return nil
	}
	now := s.now().UnixMilli()
	var records []runtime.Record
	for _, k := range s.sortedKeys() {
		v := *s.states[k]
		if now-v.WriteTimestamp < s.cfg.ColdPartitionSnapshotInterval.Milliseconds() {
			continue
		}
		v.SnapshotEpoch++
		v.WriteTimestamp = now
		records = append(records, snapshotRecord(k, v))
	}
	return records
}

func (s *Shard) sortedKeys() []Key {
	keys := make([]Key, 0, len(s.states))
	for k := range s.states {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(a.GroupID, b.GroupID); c != 0 {
			return c
		}
		if c := slices.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return keys
}
