package log

// Config is a partition log's configuration: Kafka's topic-level configs
// (LogConfig), resolved from the topic's overrides and the broker's log.*
// defaults by broker/config.
type Config struct {
	SegmentBytes          int32 // segment.bytes (log.segment.bytes), default 1 GiB
	SegmentMs             int64 // segment.ms (log.roll.ms / log.roll.hours), default 7 days
	SegmentJitterMs       int64 // segment.jitter.ms, default 0
	SegmentIndexBytes     int32 // segment.index.bytes (log.index.size.max.bytes), default 10 MiB
	IndexIntervalBytes    int32 // index.interval.bytes (log.index.interval.bytes), default 4096
	FlushIntervalMessages int64 // flush.messages (log.flush.interval.messages), default MaxInt64
	FlushIntervalMs       int64 // flush.ms (log.flush.interval.ms), default MaxInt64
	RetentionMs           int64 // retention.ms (log.retention.ms/minutes/hours), default 7 days; -1 unlimited
	RetentionBytes        int64 // retention.bytes (log.retention.bytes), default -1
	FileDeleteDelayMs     int64 // file.delete.delay.ms (log.segment.delete.delay.ms), default 60000
	MaxMessageBytes       int32 // max.message.bytes (message.max.bytes), default 1048588
	// MessageTimestampType is "CreateTime" or "LogAppendTime"
	// (message.timestamp.type / log.message.timestamp.type).
	MessageTimestampType string
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms
	// (KIP-937); defaults MaxInt64 and 3600000.
	MessageTimestampBeforeMaxMs int64
	MessageTimestampAfterMaxMs  int64
	// CompressionType is compression.type: "producer", "uncompressed",
	// "gzip", "snappy", "lz4" or "zstd".
	CompressionType string
	// CleanupPolicy is cleanup.policy: "delete", "compact" or both.
	CleanupPolicy []string
	// MinInSyncReplicas is min.insync.replicas; used by acks=all.
	MinInSyncReplicas int32
	// Preallocate is preallocate (log.preallocate).
	Preallocate bool

	// Tiered storage (KIP-405, see tiered.go). RemoteStorageEnable is
	// remote.storage.enable (only ever true when the broker's
	// remote.log.storage.system.enable is). Local retention bounds what
	// stays on disk once copied: local.retention.ms and
	// local.retention.bytes, -2 meaning retention.ms / retention.bytes.
	// RemoteLogCopyDisable is remote.log.copy.disable (KIP-950).
	RemoteStorageEnable  bool
	LocalRetentionMs     int64
	LocalRetentionBytes  int64
	RemoteLogCopyDisable bool

	// Compaction (cleanup.policy=compact), read by the log cleaner.
	// Unlike the fields above, their zero values are meaningful (a ratio
	// of 0 cleans as soon as anything is dirty, a retention of 0 drops a
	// tombstone at its second cleaning), so a Config that is not built
	// from DefaultConfig or broker/config sets them explicitly.
	DeleteRetentionMs      int64   // delete.retention.ms (log.cleaner.delete.retention.ms), default 1 day
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio (log.cleaner.min.cleanable.ratio), default 0.5
	MinCompactionLagMs     int64   // min.compaction.lag.ms (log.cleaner.min.compaction.lag.ms), default 0
	MaxCompactionLagMs     int64   // max.compaction.lag.ms (log.cleaner.max.compaction.lag.ms), default MaxInt64; 0 means the default

	// Memory, if set, counts the memory validation takes beyond the
	// request's own bytes (a decompressed batch) in the broker's request
	// memory budget (queued.max.request.bytes).
	Memory MemoryAccount
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:                1 << 30,
		SegmentMs:                   7 * 24 * 3600 * 1000,
		SegmentIndexBytes:           10 << 20,
		IndexIntervalBytes:          4096,
		FlushIntervalMessages:       1<<63 - 1,
		FlushIntervalMs:             1<<63 - 1,
		RetentionMs:                 7 * 24 * 3600 * 1000,
		RetentionBytes:              -1,
		FileDeleteDelayMs:           60000,
		MaxMessageBytes:             1048588,
		MessageTimestampType:        "CreateTime",
		MessageTimestampBeforeMaxMs: 1<<63 - 1,
		MessageTimestampAfterMaxMs:  3600000,
		CompressionType:             "producer",
		CleanupPolicy:               []string{"delete"},
		MinInSyncReplicas:           1,
		DeleteRetentionMs:           24 * 3600 * 1000,
		MinCleanableDirtyRatio:      0.5,
		MaxCompactionLagMs:          1<<63 - 1,
		LocalRetentionMs:            -2,
		LocalRetentionBytes:         -2,
	}
}
