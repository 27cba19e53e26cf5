package config

// Conversion turns a broker synonym's value into the topic config's unit.
type conversion int8

const (
	sameUnit conversion = iota
	hoursToMs
	minutesToMs
)

// Synonym is a broker config that supplies a topic config's default
// (Kafka's ConfigSynonym).
type synonym struct {
	name string
	conv conversion
}

// TopicDef is a topic config definition and its broker synonyms, in
// Kafka's order of precedence (ServerTopicConfigSynonyms).
type TopicDef struct {
	*Def
	synonyms []synonym
}

// Synonyms returns the names of the broker configs that supply the topic
// config's default, highest precedence first.
func (t *TopicDef) Synonyms() []string {
	names := make([]string, len(t.synonyms))
	for i, s := range t.synonyms {
		names[i] = s.name
	}
	return names
}

func tdef(d *Def, syns ...synonym) *TopicDef { return &TopicDef{Def: d, synonyms: syns} }
func syn(name string) synonym                { return synonym{name: name} }

// topicDefs are Kafka 4.0's topic configs (LogConfig), sorted by name.
var topicDefs = []*TopicDef{
	tdef(def("cleanup.policy", TypeList, "delete", Medium, "This config designates the retention policy to use on log segments. The \"delete\" policy will discard old segments when their retention time or size limit has been reached. The \"compact\" policy will enable log compaction, which retains the latest value for each key.", oneOf("compact", "delete")), syn("log.cleanup.policy")),
	tdef(def("compression.gzip.level", TypeInt, -1, Medium, "The compression level to use if compression.type is set to gzip.", gzipLevel), syn("compression.gzip.level")),
	tdef(def("compression.lz4.level", TypeInt, 9, Medium, "The compression level to use if compression.type is set to lz4.", between(1, 17)), syn("compression.lz4.level")),
	tdef(def("compression.type", TypeString, "producer", Medium, "Specify the final compression type for a given topic: uncompressed, zstd, lz4, snappy, gzip, or producer to retain the original compression codec set by the producer.", oneOf(compressionTypes...)), syn("compression.type")),
	tdef(def("compression.zstd.level", TypeInt, 3, Medium, "The compression level to use if compression.type is set to zstd.", between(-131072, 22)), syn("compression.zstd.level")),
	tdef(def("delete.retention.ms", TypeLong, 86400000, Medium, "The amount of time to retain delete tombstone markers for log compacted topics.", atLeast(0)), syn("log.cleaner.delete.retention.ms")),
	tdef(def("file.delete.delay.ms", TypeLong, 60000, Medium, "The time to wait before deleting a file from the filesystem.", atLeast(0)), syn("log.segment.delete.delay.ms")),
	tdef(def("flush.messages", TypeLong, maxInt64, Medium, "This setting allows specifying an interval at which we will force an fsync of data written to the log.", atLeast(1)), syn("log.flush.interval.messages")),
	tdef(def("flush.ms", TypeLong, maxInt64, Medium, "This setting allows specifying a time interval at which we will force an fsync of data written to the log.", atLeast(0)), syn("log.flush.interval.ms"), syn("log.flush.scheduler.interval.ms")),
	tdef(def("follower.replication.throttled.replicas", TypeList, "", Medium, "A list of replicas for which log replication should be throttled on the follower side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic.")),
	tdef(def("index.interval.bytes", TypeInt, 4096, Medium, "This setting controls how frequently Kafka adds an index entry to its offset index.", atLeast(0)), syn("log.index.interval.bytes")),
	tdef(def("leader.replication.throttled.replicas", TypeList, "", Medium, "A list of replicas for which log replication should be throttled on the leader side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic.")),
	tdef(def("local.retention.bytes", TypeLong, -2, Medium, "The maximum size of local log segments that can grow for a partition before it deletes the old segments (tiered storage). Default -2 means retention.bytes.", atLeast(-2)), syn("log.local.retention.bytes")),
	tdef(def("local.retention.ms", TypeLong, -2, Medium, "The number of milliseconds to keep the local log segment before it gets deleted (tiered storage). Default -2 means retention.ms.", atLeast(-2)), syn("log.local.retention.ms")),
	tdef(def("max.compaction.lag.ms", TypeLong, maxInt64, Medium, "The maximum time a message will remain ineligible for compaction in the log.", atLeast(1)), syn("log.cleaner.max.compaction.lag.ms")),
	tdef(def("max.message.bytes", TypeInt, 1048588, Medium, "The largest record batch size allowed by Kafka (after compression if compression is enabled).", atLeast(0)), syn("message.max.bytes")),
	tdef(def("message.timestamp.after.max.ms", TypeLong, 3600000, Medium, "The maximum difference allowed between the timestamp specified in the message and the time the broker receives it, for timestamps in the future (CreateTime only).", atLeast(0)), syn("log.message.timestamp.after.max.ms")),
	tdef(def("message.timestamp.before.max.ms", TypeLong, maxInt64, Medium, "The maximum difference allowed between the timestamp when a broker receives a message and the timestamp specified in the message, for timestamps in the past (CreateTime only).", atLeast(0)), syn("log.message.timestamp.before.max.ms")),
	tdef(def("message.timestamp.type", TypeString, "CreateTime", Medium, "Define whether the timestamp in the message is message create time or log append time.", oneOf("CreateTime", "LogAppendTime")), syn("log.message.timestamp.type")),
	tdef(def("min.cleanable.dirty.ratio", TypeDouble, 0.5, Medium, "This configuration controls how frequently the log compactor will attempt to clean the log.", between(0, 1)), syn("log.cleaner.min.cleanable.ratio")),
	tdef(def("min.compaction.lag.ms", TypeLong, 0, Medium, "The minimum time a message will remain uncompacted in the log.", atLeast(0)), syn("log.cleaner.min.compaction.lag.ms")),
	tdef(def("min.insync.replicas", TypeInt, 1, Medium, "When a producer sets acks to all (-1), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful.", atLeast(1)), syn("min.insync.replicas")),
	tdef(def("preallocate", TypeBoolean, false, Medium, "True if we should preallocate the file on disk when creating a new log segment."), syn("log.preallocate")),
	tdef(def("remote.log.copy.disable", TypeBoolean, false, Medium, "Determines whether tiered data for a topic should become read only: no more segments are copied to remote storage.")),
	tdef(def("remote.log.delete.on.disable", TypeBoolean, false, Medium, "Determines whether tiered data for a topic should be deleted after tiered storage is disabled: remote.storage.enable may be turned off only with it set to true, and the remote data is then deleted.")),
	tdef(def("remote.storage.enable", TypeBoolean, false, Medium, "To enable tiered storage for a topic, set this configuration to true. Accepted only when the broker has remote.log.storage.system.enable=true.")),
	tdef(def("retention.bytes", TypeLong, -1, Medium, "This configuration controls the maximum size a partition can grow to before we will discard old log segments to free up space if we are using the \"delete\" retention policy. By default there is no size limit."), syn("log.retention.bytes")),
	tdef(def("retention.ms", TypeLong, 604800000, Medium, "This configuration controls the maximum time we will retain a log before we will discard old log segments to free up space if we are using the \"delete\" retention policy. -1 means no time limit.", atLeast(-1)), syn("log.retention.ms"), synonym{"log.retention.minutes", minutesToMs}, synonym{"log.retention.hours", hoursToMs}),
	tdef(def("segment.bytes", TypeInt, 1073741824, Medium, "This configuration controls the segment file size for the log.", atLeast(1048576)), syn("log.segment.bytes")),
	tdef(def("segment.index.bytes", TypeInt, 10485760, Medium, "This configuration controls the size of the index that maps offsets to file positions.", atLeast(4)), syn("log.index.size.max.bytes")),
	tdef(def("segment.jitter.ms", TypeLong, 0, Medium, "The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds of segment rolling.", atLeast(0)), syn("log.roll.jitter.ms"), synonym{"log.roll.jitter.hours", hoursToMs}),
	tdef(def("segment.ms", TypeLong, 604800000, Medium, "This configuration controls the period of time after which Kafka will force the log to roll even if the segment file isn't full.", atLeast(1)), syn("log.roll.ms"), synonym{"log.roll.hours", hoursToMs}),
	tdef(def("unclean.leader.election.enable", TypeBoolean, false, Medium, "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss."), syn("unclean.leader.election.enable")),
}
