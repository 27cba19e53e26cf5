package share

import "time"

// Config is the share coordinator's configuration (Kafka's
// ShareCoordinatorConfig, from the broker's share.coordinator.* keys).
type Config struct {
	// SnapshotUpdateRecordsPerSnapshot: after this many ShareUpdate
	// records of a key the next write is a ShareSnapshot
	// (share.coordinator.snapshot.update.records.per.snapshot, 500).
	SnapshotUpdateRecordsPerSnapshot int
	// WriteTimeout bounds a write to __share_group_state
	// (share.coordinator.write.timeout.ms, 5 s).
	WriteTimeout time.Duration
	// LoadBufferBytes is read at a time when loading a partition
	// (share.coordinator.load.buffer.size, 5 MiB).
	LoadBufferBytes int32
	// PruneInterval: how often the records of __share_group_state that
	// no key needs any more are deleted
	// (share.coordinator.state.topic.prune.interval.ms, 5 minutes; 0:
	// never).
	PruneInterval time.Duration
	// ColdPartitionSnapshotInterval: a key whose last snapshot is older
	// than this gets a new one, so that it does not hold the prune back
	// (share.coordinator.cold.partition.snapshot.interval.ms, 5 minutes;
	// 0: never).
	ColdPartitionSnapshotInterval time.Duration
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{SnapshotUpdateRecordsPerSnapshot: 500, WriteTimeout: 5 * time.Second, LoadBufferBytes: 5 << 20, PruneInterval: 5 * time.Minute,
		ColdPartitionSnapshotInterval: 5 * time.Minute}
}

func (c *Config) withDefaults() {
	d := DefaultConfig()
	if c.SnapshotUpdateRecordsPerSnapshot < 0 {
		c.SnapshotUpdateRecordsPerSnapshot = d.SnapshotUpdateRecordsPerSnapshot
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.LoadBufferBytes <= 0 {
		c.LoadBufferBytes = d.LoadBufferBytes
	}
	if c.PruneInterval < 0 {
		c.PruneInterval = 0
	}
	if c.ColdPartitionSnapshotInterval < 0 {
		c.ColdPartitionSnapshotInterval = 0
	}
}
