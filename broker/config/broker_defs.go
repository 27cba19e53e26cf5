package config

import (
	"math"
	"strconv"
)

// def builds a definition. dflt is nil (no default), a string, or a
// number; opts are a Validator and/or a DynamicMode.
func def(name string, t Type, dflt any, imp Importance, doc string, opts ...any) *Def {
	d := &Def{Name: name, Type: t, Importance: imp, Doc: doc}
	switch v := dflt.(type) {
	case nil:
	case string:
		d.Default = ptr(v)
	case int:
		d.Default = ptr(strconv.Itoa(v))
	case int64:
		d.Default = ptr(strconv.FormatInt(v, 10))
	case float64:
		d.Default = ptr(formatValue(v))
	case bool:
		d.Default = ptr(strconv.FormatBool(v))
	default:
		panic("config: bad default for " + name)
	}
	for _, o := range opts {
		switch o := o.(type) {
		case Validator:
			d.Validator = o
		case DynamicMode:
			d.Dynamic = o
		default:
			panic("config: bad option for " + name)
		}
	}
	return d
}

const (
	maxInt32 = math.MaxInt32
	maxInt64 = int64(math.MaxInt64)
)

var gzipLevel = orValidator{between(1, 9), funcValidator{func(v any) bool { return v == int32(-1) }, "-1"}}

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// brokerDefs are the broker keys: Kafka's names, defaults and documentation
// (shortened), plus moldau.* keys. Dynamic modes follow Kafka's
// DynamicBrokerConfig for the keys Moldau applies at run time.
var brokerDefs = []*Def{
	// Node, roles and listeners.
	def("process.roles", TypeList, "broker,controller", High, "The roles this process plays: 'broker,controller' (combined mode: a voter of the metadata quorum that also serves clients), 'broker' (serves clients and follows the metadata log as an observer) or 'controller' (a voter of the metadata quorum that serves only the controller listener). Kafka requires it; Moldau defaults to a combined node.", oneOf("broker", "controller")),
	def("node.id", TypeInt, 1, High, "The node ID associated with the roles this process is playing. Kafka requires it; Moldau defaults to 1 so that a broker starts without a config.", atLeast(0)),
	def("broker.id", TypeInt, -1, High, "The broker id. If unset (-1), node.id is used; if both are set they must be equal.", atLeast(-1)),
	def("broker.rack", TypeString, nil, Medium, "Rack of the broker, returned in Metadata and DescribeCluster and used for rack-aware replica placement."),
	def("listeners", TypeString, "PLAINTEXT://localhost:9092", High, "Comma-separated list of URIs to listen on and the listener names, NAME://host:port. An empty host binds every interface; port 0 picks a free port. Listener names must be unique. Each listener's security protocol comes from listener.security.protocol.map: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. (Kafka's default is PLAINTEXT://:9092; Moldau binds loopback by default.)", PerBroker),
	def("advertised.listeners", TypeString, nil, High, "Listeners to publish to clients in Metadata and DescribeCluster if different from listeners; the names must be among the listeners. An empty host advertises the machine's host name; 0.0.0.0 is not allowed.", PerBroker),
	def("listener.security.protocol.map", TypeString, "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", Low, "Map between listener names and security protocols, NAME:PROTOCOL,... Every listener must be in the map.", PerBroker),
	def("inter.broker.listener.name", TypeString, nil, Medium, "Name of the listener used for communication between brokers. If unset, the listener of security.inter.broker.protocol (PLAINTEXT) or else the first listener."),
	def("security.inter.broker.protocol", TypeString, "PLAINTEXT", Medium, "Security protocol used to communicate between brokers: the inter-broker listener is then the one named after it. It is an error to set this and inter.broker.listener.name at the same time.", oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
	def("controller.listener.names", TypeString, nil, High, "Comma-separated list of the names of the listeners used by the controller: the metadata quorum's messages, broker registrations and heartbeats, and forwarded admin requests. The first is the one brokers use to reach the controllers."),
	def("controller.quorum.voters", TypeList, "", High, "Map of id/endpoint of the voters of the metadata quorum, id@host:port,... (the controller listener of each voter). Empty: this node alone is the quorum (a single-node cluster; Kafka requires the setting)."),
	def("controller.quorum.bootstrap.servers", TypeList, "", High, "Endpoints (host:port) of controllers, used to find the metadata quorum's leader when controller.quorum.voters is empty: by broker-only nodes, and by a controller joining the quorum (KIP-853), which follows the log as an observer until AddRaftVoter (moldau cluster quorum add-controller) adds it."),
	def("controller.quorum.election.timeout.ms", TypeInt, 1000, High, "Maximum time without a heartbeat from the leader before a voter starts an election.", atLeast(0)),
	def("controller.quorum.fetch.timeout.ms", TypeInt, 2000, High, "Maximum time without a successful fetch from the leader before a voter starts an election (Moldau's voters use controller.quorum.election.timeout.ms for that). A voter checks every three times this that the voter set holds its current controller endpoints, and asks the leader to update them if not (UpdateRaftVoter, KIP-853).", atLeast(0)),
	def("controller.quorum.request.timeout.ms", TypeInt, 2000, Medium, "Timeout of a request of the metadata quorum.", atLeast(0)),
	def("broker.session.timeout.ms", TypeInt, 9000, Medium, "A broker that sends no heartbeat to the active controller for this long is fenced: the partitions it leads move or go offline.", atLeast(1)),
	def("broker.heartbeat.interval.ms", TypeInt, 2000, Medium, "The interval between a broker's heartbeats to the active controller.", atLeast(1)),
	def("metadata.log.segment.bytes", TypeInt, 1073741824, High, "The size of a segment of the metadata log. At least 8 MiB, the largest metadata batch, as Kafka requires: a batch larger than a segment would stop the quorum. Tests may set smaller segments with the internal internal.metadata.log.segment.bytes.", atLeast(8<<20)),
	def("metadata.log.max.record.bytes.between.snapshots", TypeLong, int64(20971520), High, "The bytes of new records in the metadata log after which a new metadata snapshot is written.", atLeast(1)),
	def("metadata.max.retention.bytes", TypeLong, int64(104857600), High, "The size of the metadata log and snapshots beyond which old snapshots and segments are deleted (-1: no limit).", atLeast(-1)),
	def("metadata.max.retention.ms", TypeLong, int64(604800000), High, "How long old metadata snapshots and segments are kept (-1: no limit).", atLeast(-1)),

	// Network and request handling.
	def("num.network.threads", TypeInt, 3, High, "The number of threads that the server uses for receiving requests from the network and sending responses to the network.", atLeast(1), ClusterWide),
	def("num.io.threads", TypeInt, 8, High, "The number of threads that the server uses for processing requests, which may include disk I/O.", atLeast(1), ClusterWide),
	def("background.threads", TypeInt, 10, High, "The number of threads to use for various background processing tasks.", atLeast(1), ClusterWide),
	def("queued.max.requests", TypeInt, 500, High, "The number of queued requests allowed for the request handler threads before the network threads stop reading.", atLeast(1)),
	def("request.timeout.ms", TypeInt, 30000, High, "How long the broker waits for the requests it sends to other brokers, and for the transaction markers WriteTxnMarkers appends to commit.", atLeast(0)),
	def("socket.request.max.bytes", TypeInt, 104857600, High, "The maximum number of bytes in a socket request.", atLeast(1)),
	def("socket.send.buffer.bytes", TypeInt, 102400, High, "The SO_SNDBUF buffer of the socket server sockets. If the value is -1, the OS default will be used."),
	def("socket.receive.buffer.bytes", TypeInt, 102400, High, "The SO_RCVBUF buffer of the socket server sockets. If the value is -1, the OS default will be used."),
	def("socket.listen.backlog.size", TypeInt, 50, Medium, "The maximum number of pending connections on the socket.", atLeast(1)),
	def("connections.max.idle.ms", TypeLong, 600000, Medium, "Idle connections timeout: the server socket processor threads close the connections that idle more than this."),
	def("max.connections", TypeInt, maxInt32, Medium, "The maximum number of connections allowed in the broker at any time. A new connection waits (the acceptor stops accepting) while the limit is reached; lowering it closes the least recently used connections above it. Listener-level limits use the listener prefix, listener.name.<listener>.max.connections; the inter-broker listener, when there are several listeners, is limited only by its own. Applied to the broker listeners, not the controller listeners.", atLeast(0), ClusterWide),
	def("max.connections.per.ip", TypeInt, maxInt32, Medium, "The maximum number of connections allowed from each ip address; a new connection above it is closed at once. It can be set to 0 only if there are overrides in max.connections.per.ip.overrides.", atLeast(0), ClusterWide),
	def("message.max.bytes", TypeInt, 1048588, High, "The largest record batch size allowed by Kafka (after compression if compression is enabled). The topic-level max.message.bytes overrides it.", atLeast(0), ClusterWide),
	def("fetch.max.bytes", TypeInt, 57671680, Medium, "The maximum number of bytes returned for a fetch request. Must be at least 1024.", atLeast(1024)),
	def("max.request.partition.size.limit", TypeInt, 2000, Medium, "The maximum number of partitions can be served in one request (DescribeTopicPartitions answers at most this many).", atLeast(1)),
	def("max.incremental.fetch.session.cache.slots", TypeInt, 1000, Medium, "The maximum number of total incremental fetch sessions that we will maintain.", atLeast(0)),

	// Replication.
	def("num.replica.fetchers", TypeInt, 1, High, "Number of fetcher threads used to replicate records from each source broker.", atLeast(1), ClusterWide),
	def("replica.lag.time.max.ms", TypeLong, 30000, High, "If a follower hasn't sent any fetch requests or hasn't consumed up to the leader's log end offset for at least this time, the leader will remove the follower from the ISR."),
	def("replica.fetch.max.bytes", TypeInt, 1048576, Medium, "The number of bytes of messages to attempt to fetch for each partition.", atLeast(0)),
	def("replica.fetch.wait.max.ms", TypeInt, 500, Medium, "The maximum wait time for each fetcher request issued by follower replicas."),
	def("replica.fetch.min.bytes", TypeInt, 1, Medium, "Minimum bytes expected for each fetch response."),
	def("replica.fetch.backoff.ms", TypeInt, 1000, Medium, "The amount of time to sleep when fetch partition error occurs.", atLeast(0)),
	def("replica.fetch.response.max.bytes", TypeInt, 10485760, Medium, "Maximum bytes expected for the entire fetch response.", atLeast(0)),
	def("replica.socket.timeout.ms", TypeInt, 30000, High, "The socket timeout for network requests. Its value should be at least replica.fetch.wait.max.ms."),
	def("leader.replication.throttled.rate", TypeLong, maxInt64, Medium, "A long representing the upper bound (bytes/sec) on replication traffic for leaders enumerated in the property leader.replication.throttled.replicas (for each topic). This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour.", atLeast(0), ClusterWide),
	def("follower.replication.throttled.rate", TypeLong, maxInt64, Medium, "A long representing the upper bound (bytes/sec) on replication traffic for followers enumerated in the property follower.replication.throttled.replicas (for each topic). This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour.", atLeast(0), ClusterWide),
	def("replica.alter.log.dirs.io.max.bytes.per.second", TypeLong, maxInt64, Medium, "A long representing the upper bound (bytes/sec) on disk IO used for moving replica between log directories on the same broker. This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour.", atLeast(0), ClusterWide),
	def("replication.quota.window.num", TypeInt, 11, Low, "The number of samples to retain in memory for replication quotas.", atLeast(1)),
	def("replication.quota.window.size.seconds", TypeInt, 1, Low, "The time span of each sample for replication quotas.", atLeast(1)),
	def("replica.selector.class", TypeString, nil, Medium, "The fully qualified class name that implements ReplicaSelector, used by the broker to find the preferred read replica (KIP-392). Moldau implements org.apache.kafka.common.replica.RackAwareReplicaSelector; unset, consumers read from leaders."),
	def("replica.high.watermark.checkpoint.interval.ms", TypeLong, 5000, High, "The frequency with which the high watermark is saved out to disk."),
	def("unclean.leader.election.enable", TypeBoolean, false, High, "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss.", ClusterWide),
	def("auto.leader.rebalance.enable", TypeBoolean, true, High, "Enables auto leader balancing: the active controller periodically moves the leadership of each partition back to its preferred replica (the first of its assignment) when that replica is in the ISR and unfenced."),
	def("leader.imbalance.check.interval.seconds", TypeLong, 300, High, "The frequency with which the active controller checks for partitions not led by their preferred replica, when auto.leader.rebalance.enable is set.", atLeast(1)),
	def("min.insync.replicas", TypeInt, 1, High, "When a producer sets acks to all (-1), the minimum number of replicas that must acknowledge a write for the write to be considered successful.", atLeast(1), ClusterWide),

	// Topics.
	def("controller.quota.window.num", TypeInt, 11, Low, "The number of samples of the controller mutation quota (KIP-599): a client may burst controller_mutation_rate × controller.quota.window.num × controller.quota.window.size.seconds partition mutations.", atLeast(1)),
	def("controller.quota.window.size.seconds", TypeInt, 1, Low, "The time span of each sample of the controller mutation quota.", atLeast(1)),
	def("quota.window.num", TypeInt, 11, Low, "The number of samples to retain in memory for client quotas (producer_byte_rate, consumer_byte_rate, request_percentage): a client's rate is measured over this many windows of quota.window.size.seconds.", atLeast(1)),
	def("quota.window.size.seconds", TypeInt, 1, Low, "The time span of each sample for client quotas; request_percentage's throttle time is at most this long.", atLeast(1)),
	def("max.broker.partitions", TypeInt, -1, Medium, "The most partition replicas one broker may host (the name KIP-578 proposed). A CreateTopics or CreatePartitions that would put any broker over it is refused with POLICY_VIOLATION, so no request can push a broker past its open files (each partition holds at least one open segment). -1: derived from the open-file limit (ulimit -n) of the active controller's process: (limit - 1024) * 3/4, at least 100.", atLeast(-1), ClusterWide),
	def("auto.create.topics.enable", TypeBoolean, true, High, "Enable auto creation of topic on the server (by Metadata requests that allow it, and by Produce)."),
	def("delete.topic.enable", TypeBoolean, true, High, "Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off."),
	def("num.partitions", TypeInt, 1, Medium, "The default number of log partitions per topic.", atLeast(1)),
	def("default.replication.factor", TypeInt, 1, Medium, "The default replication factor for automatically created topics, and for topics created with a replication factor of -1."),
	def("compression.type", TypeString, "producer", High, "Specify the final compression type for a given topic: uncompressed, zstd, lz4, snappy, gzip, or producer to retain the codec set by the producer.", oneOf(compressionTypes...), ClusterWide),
	def("compression.gzip.level", TypeInt, -1, Medium, "The compression level to use if compression.type is set to gzip.", gzipLevel, ClusterWide),
	def("compression.lz4.level", TypeInt, 9, Medium, "The compression level to use if compression.type is set to lz4.", between(1, 17), ClusterWide),
	def("compression.zstd.level", TypeInt, 3, Medium, "The compression level to use if compression.type is set to zstd.", between(-131072, 22), ClusterWide),

	// Logs.
	def("log.dir", TypeString, "./moldau-data", High, "The directory in which the log data is kept (supplemental for log.dirs). Moldau's default is ./moldau-data, a folder in the working directory, so that a broker starts without a config; Kafka's is /tmp/kafka-logs."),
	def("log.dirs", TypeString, nil, High, "A comma-separated list of the directories where the log data is stored. If not set, the value in log.dir is used."),
	def("metadata.log.dir", TypeString, nil, High, "The directory of the metadata log (__cluster_metadata-0, its quorum-state and snapshots). If not set, the first of log.dirs is used."),
	def("log.segment.bytes", TypeInt, 1073741824, High, "The maximum size of a single log file.", atLeast(1048576), ClusterWide),
	def("log.roll.ms", TypeLong, nil, High, "The maximum time before a new log segment is rolled out (in milliseconds). If not set, the value in log.roll.hours is used.", ClusterWide),
	def("log.roll.hours", TypeInt, 168, High, "The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms.", atLeast(1)),
	def("log.roll.jitter.ms", TypeLong, nil, High, "The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not set, the value in log.roll.jitter.hours is used.", ClusterWide),
	def("log.roll.jitter.hours", TypeInt, 0, High, "The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms.", atLeast(0)),
	def("log.retention.ms", TypeLong, nil, High, "The number of milliseconds to keep a log file before deleting it. If not set, the value in log.retention.minutes is used. If set to -1, no time limit is applied.", ClusterWide),
	def("log.retention.minutes", TypeInt, nil, High, "The number of minutes to keep a log file before deleting it, secondary to log.retention.ms. If not set, the value in log.retention.hours is used."),
	def("log.retention.hours", TypeInt, 168, High, "The number of hours to keep a log file before deleting it, tertiary to log.retention.ms."),
	def("log.retention.bytes", TypeLong, -1, High, "The maximum size of the log before deleting it.", ClusterWide),
	def("log.retention.check.interval.ms", TypeLong, 300000, Medium, "The frequency in milliseconds that the log cleaner checks whether any log is eligible for deletion.", atLeast(1)),
	def("log.cleanup.policy", TypeList, "delete", Medium, "The default cleanup policy for segments beyond the retention window: delete and/or compact.", oneOf("compact", "delete"), ClusterWide),
	def("log.index.size.max.bytes", TypeInt, 10485760, Medium, "The maximum size in bytes of the offset index.", atLeast(4), ClusterWide),
	def("log.index.interval.bytes", TypeInt, 4096, Medium, "The interval with which we add an entry to the offset index.", atLeast(0), ClusterWide),
	def("log.flush.interval.messages", TypeLong, maxInt64, High, "The number of messages accumulated on a log partition before messages are flushed to disk.", atLeast(1), ClusterWide),
	def("log.flush.interval.ms", TypeLong, nil, High, "The maximum time in ms that a message in any topic is kept in memory before flushed to disk. If not set, the value in log.flush.scheduler.interval.ms is used.", ClusterWide),
	def("log.flush.scheduler.interval.ms", TypeLong, maxInt64, High, "The frequency in ms that the log flusher checks whether any log needs to be flushed to disk."),
	def("log.flush.offset.checkpoint.interval.ms", TypeInt, 60000, High, "The frequency with which we update the persistent record of the last flush which acts as the log recovery point.", atLeast(0)),
	def("log.flush.start.offset.checkpoint.interval.ms", TypeInt, 60000, High, "The frequency with which we update the persistent record of log start offset.", atLeast(0)),
	def("log.segment.delete.delay.ms", TypeLong, 60000, High, "The amount of time to wait before deleting a file from the filesystem.", atLeast(0), ClusterWide),
	def("log.preallocate", TypeBoolean, false, Medium, "Should pre allocate file when create new segment?", ClusterWide),
	def("log.message.timestamp.type", TypeString, "CreateTime", Medium, "Define whether the timestamp in the message is message create time or log append time.", oneOf("CreateTime", "LogAppendTime"), ClusterWide),
	def("log.message.timestamp.before.max.ms", TypeLong, maxInt64, Medium, "The maximum difference allowed between the timestamp when a broker receives a message and the timestamp specified in the message, for timestamps in the past (CreateTime only).", atLeast(0), ClusterWide),
	def("log.message.timestamp.after.max.ms", TypeLong, 3600000, Medium, "The maximum difference allowed between the timestamp specified in the message and the time the broker receives it, for timestamps in the future (CreateTime only).", atLeast(0), ClusterWide),
	def("log.local.retention.ms", TypeLong, -2, Medium, "The number of milliseconds to keep the local log segments before they get eligible for deletion (tiered storage); -2 means log.retention.ms.", atLeast(-2), ClusterWide),
	def("log.local.retention.bytes", TypeLong, -2, Medium, "The maximum size of local log segments before they are eligible for deletion (tiered storage); -2 means log.retention.bytes.", atLeast(-2), ClusterWide),
	// Tiered storage (KIP-405): what the broker acts on; the other
	// remote.log.* keys are stored only (kafka_broker_defs.go).
	def("remote.log.storage.system.enable", TypeBoolean, false, Medium, "Whether to enable tiered storage functionality in a broker. Valid values are `true` or `false` and the default value is false. When it is true, broker starts all the services required for the tiered storage functionality."),
	def("remote.log.storage.manager.class.name", TypeString, nil, Medium, "The remote storage manager: unset, LocalTieredStorage or org.apache.kafka.server.log.remote.storage.LocalTieredStorage for a directory (rsm.config.dir); S3Storage or io.aiven.kafka.tieredstorage.RemoteStorageManager for S3 and S3-compatible stores (the Aiven plugin's rsm.config.storage.s3.* properties). Moldau's own implementations, not loaded classes."),
	def("remote.log.storage.manager.impl.prefix", TypeString, "rsm.config.", Medium, "Prefix used for properties to be passed to the RemoteStorageManager implementation."),
	def("remote.log.metadata.manager.impl.prefix", TypeString, "rlmm.config.", Medium, "Prefix used for properties to be passed to the RemoteLogMetadataManager implementation (remote.log.metadata.topic.num.partitions, .replication.factor, .retention.ms)."),
	def("remote.log.manager.task.interval.ms", TypeLong, 30000, Low, "Interval at which the remote log manager runs the scheduled tasks like copy segments and clean up remote log segments.", atLeast(1)),
	def("remote.log.manager.thread.pool.size", TypeInt, 10, Medium, "How many partitions' copy and expiration tasks run at once.", atLeast(1)),
	def("remote.log.reader.threads", TypeInt, 10, Medium, "How many remote reads run at once.", atLeast(1)),
	def("remote.fetch.max.wait.ms", TypeInt, 500, Medium, "The maximum amount of time the server will wait before answering the remote fetch request (read at start-up).", atLeast(1), ClusterWide),
	def("remote.list.offsets.request.timeout.ms", TypeLong, 30000, Medium, "The maximum amount of time the server will wait for the remote list offsets request to complete (read at start-up).", atLeast(1), ClusterWide),
	def("remote.log.manager.copy.max.bytes.per.second", TypeLong, maxInt64, Medium, "The maximum number of bytes that can be copied from local storage to remote storage per second: over it, the next segment's copy waits.", atLeast(1), ClusterWide),
	def("remote.log.manager.copy.quota.window.num", TypeInt, 11, Medium, "The number of samples to retain in memory for remote copy quota management.", atLeast(1)),
	def("remote.log.manager.copy.quota.window.size.seconds", TypeInt, 1, Medium, "The time span of each sample for remote copy quota management.", atLeast(1)),
	def("remote.log.manager.fetch.max.bytes.per.second", TypeLong, maxInt64, Medium, "The maximum number of bytes that can be read from remote storage to local storage per second: over it, consumer fetches get nothing from remote storage until the rate is under it again.", atLeast(1), ClusterWide),
	def("remote.log.manager.fetch.quota.window.num", TypeInt, 11, Medium, "The number of samples to retain in memory for remote fetch quota management.", atLeast(1)),
	def("remote.log.manager.fetch.quota.window.size.seconds", TypeInt, 1, Medium, "The time span of each sample for remote fetch quota management.", atLeast(1)),
	def("remote.log.reader.max.pending.tasks", TypeInt, 100, Medium, "How many remote reads may wait or run; a fetch over that gets no remote data and asks again.", atLeast(1)),
	def("num.recovery.threads.per.data.dir", TypeInt, 2, High, "The number of threads per data directory to be used for log recovery at startup and flushing at shutdown.", atLeast(1), ClusterWide),

	// Log cleaner (compaction).
	def("log.cleaner.enable", TypeBoolean, true, Medium, "Enable the log cleaner process to run on the server. Should be enabled if using any topics with cleanup.policy=compact, including the internal offsets topic."),
	def("log.cleaner.threads", TypeInt, 1, Medium, "The number of background threads to use for log cleaning.", atLeast(0), ClusterWide),
	def("log.cleaner.io.max.bytes.per.second", TypeDouble, math.MaxFloat64, Medium, "The log cleaner will be throttled so that the sum of its read and write i/o will be less than this value on average.", ClusterWide),
	def("log.cleaner.dedupe.buffer.size", TypeLong, 134217728, Medium, "The total memory used for log deduplication across all cleaner threads.", ClusterWide),
	def("log.cleaner.io.buffer.size", TypeInt, 524288, Medium, "The total memory used for log cleaner I/O buffers across all cleaner threads.", atLeast(0), ClusterWide),
	def("log.cleaner.io.buffer.load.factor", TypeDouble, 0.9, Medium, "Log cleaner dedupe buffer load factor.", ClusterWide),
	def("log.cleaner.backoff.ms", TypeLong, 15000, Medium, "The amount of time to sleep when there are no logs to clean.", atLeast(0), ClusterWide),
	def("log.cleaner.min.cleanable.ratio", TypeDouble, 0.5, Medium, "The minimum ratio of dirty log to total log for a log to be eligible for cleaning.", between(0, 1), ClusterWide),
	def("log.cleaner.delete.retention.ms", TypeLong, 86400000, Medium, "The amount of time to retain tombstone markers for log compacted topics.", atLeast(0), ClusterWide),
	def("log.cleaner.min.compaction.lag.ms", TypeLong, 0, Medium, "The minimum time a message will remain uncompacted in the log.", atLeast(0), ClusterWide),
	def("log.cleaner.max.compaction.lag.ms", TypeLong, maxInt64, Medium, "The maximum time a message will remain ineligible for compaction in the log.", atLeast(1), ClusterWide),

	// Group coordinator.
	def("group.initial.rebalance.delay.ms", TypeInt, 3000, Medium, "The amount of time the group coordinator will wait for more consumers to join a new group before performing the first rebalance."),
	def("group.min.session.timeout.ms", TypeInt, 6000, Medium, "The minimum allowed session timeout for registered consumers."),
	def("group.max.session.timeout.ms", TypeInt, 1800000, Medium, "The maximum allowed session timeout for registered consumers."),
	def("group.max.size", TypeInt, maxInt32, Medium, "The maximum number of consumers that a single consumer group can accommodate.", atLeast(1)),
	def("group.coordinator.rebalance.protocols", TypeList, "classic,consumer", Medium, "The list of enabled rebalance protocols: classic, consumer (KIP-848).", oneOf("classic", "consumer", "share")),
	def("group.coordinator.threads", TypeInt, 4, Medium, "The number of threads used by the group coordinator. Accepted for compatibility: Moldau runs one goroutine per __consumer_offsets partition it coordinates.", atLeast(1)),
	def("group.coordinator.append.linger.ms", TypeInt, 10, Medium, "The duration in milliseconds that the coordinator will wait for writes to accumulate before flushing them to disk. Moldau flushes adaptively: the records of every operation queued on a partition go out in one batch as soon as the queue is drained.", atLeast(0)),
	def("group.consumer.session.timeout.ms", TypeInt, 45000, Medium, "The timeout to detect client failures when using the consumer group protocol.", atLeast(1)),
	def("group.consumer.min.session.timeout.ms", TypeInt, 45000, Medium, "The minimum allowed session timeout for registered consumers.", atLeast(1)),
	def("group.consumer.max.session.timeout.ms", TypeInt, 60000, Medium, "The maximum allowed session timeout for registered consumers.", atLeast(1)),
	def("group.consumer.heartbeat.interval.ms", TypeInt, 5000, Medium, "The heartbeat interval given to the members of a consumer group.", atLeast(1)),
	def("group.consumer.min.heartbeat.interval.ms", TypeInt, 5000, Medium, "The minimum heartbeat interval for registered consumers.", atLeast(1)),
	def("group.consumer.max.heartbeat.interval.ms", TypeInt, 15000, Medium, "The maximum heartbeat interval for registered consumers.", atLeast(1)),
	def("group.consumer.max.size", TypeInt, maxInt32, Medium, "The maximum number of consumers that a single consumer group can accommodate.", atLeast(1)),
	def("group.consumer.assignors", TypeList, "uniform,range", Medium, "The server-side assignors as a list of names; the first one is the default. Moldau has Kafka's uniform and range assignors.", oneOf("uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor", "org.apache.kafka.coordinator.group.assignor.RangeAssignor")),
	def("group.consumer.migration.policy", TypeString, "bidirectional", Medium, "The config that enables converting the non-empty classic group using the consumer embedded protocol to the non-empty consumer group using the consumer group protocol and vice versa; conversions of empty groups in both directions are always enabled regardless of this policy. bidirectional: both directions; upgrade: from classic to consumer; downgrade: from consumer to classic; disabled: neither.", oneOfIgnoreCase("disabled", "upgrade", "downgrade", "bidirectional")),
	def("offsets.topic.num.partitions", TypeInt, 50, High, "The number of partitions for the offset commit topic (should not change after deployment).", atLeast(1)),
	def("offsets.topic.replication.factor", TypeShort, 3, High, "The replication factor for the offsets topic. Kafka's default of 3 is kept; Moldau caps it to the size of the controller quorum, so a single node works without configuration. Internal topic creation fails until the cluster size meets this replication factor requirement.", atLeast(1)),
	def("offsets.topic.segment.bytes", TypeInt, 104857600, High, "The offsets topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads.", atLeast(1)),
	def("offsets.topic.compression.codec", TypeInt, 0, High, "Compression codec for the offsets topic."),
	def("offsets.retention.minutes", TypeInt, 10080, High, "For subscribed consumers, committed offset of a specific partition will be expired and discarded after this period once the group is empty.", atLeast(1)),
	def("offsets.retention.check.interval.ms", TypeLong, 600000, High, "Frequency at which to check for stale offsets.", atLeast(1)),
	def("offsets.commit.timeout.ms", TypeInt, 5000, High, "Offset commit will be delayed until all replicas for the offsets topic receive the commit or this timeout is reached.", atLeast(1)),
	def("offsets.load.buffer.size", TypeInt, 5242880, High, "Batch size for reading from the offsets segments when loading offsets into the cache.", atLeast(1)),
	def("offset.metadata.max.bytes", TypeInt, 4096, High, "The maximum size for a metadata entry associated with an offset commit."),

	// The share coordinator (the rest of share.coordinator.* is Kafka's, in kafka_broker_defs.go).
	def("share.coordinator.state.topic.prune.interval.ms", TypeInt, 300000, Medium, "The duration in milliseconds that the share coordinator will wait between pruning eligible records in share-group state topic.", atLeast(1)),
	def("share.coordinator.cold.partition.snapshot.interval.ms", TypeInt, 300000, Medium, "The duration in milliseconds that the share coordinator will wait between force snapshotting share partitions which are not being updated.", atLeast(1)),

	// Share sessions (Kafka 4.1+'s ShareGroupConfig; not in kafka_broker_defs.go, which is older).
	def("group.share.max.share.sessions", TypeInt, 2000, Medium, "The maximum number of share sessions per broker.", atLeast(1)),

	// Transactions and producer ids.
	def("transaction.state.log.num.partitions", TypeInt, 50, High, "The number of partitions for the transaction topic (should not change after deployment).", atLeast(1)),
	def("transaction.state.log.replication.factor", TypeShort, 3, High, "The replication factor for the transaction topic (capped to the size of the controller quorum, as for the offsets topic). Internal topic creation will fail until the cluster size meets this requirement.", atLeast(1)),
	def("transaction.state.log.min.isr", TypeInt, 2, High, "The minimum number of replicas that must acknowledge a write to the transaction topic.", atLeast(1)),
	def("transaction.state.log.segment.bytes", TypeInt, 104857600, High, "The transaction topic segment bytes.", atLeast(1)),
	def("transaction.max.timeout.ms", TypeInt, 900000, High, "The maximum allowed timeout for transactions.", atLeast(1)),
	def("transactional.id.expiration.ms", TypeInt, 604800000, High, "The time in ms that the transaction coordinator will wait without receiving any transaction status updates for the current transaction before expiring its transactional id.", atLeast(1)),
	def("transaction.abort.timed.out.transaction.cleanup.interval.ms", TypeInt, 10000, Low, "The interval at which to rollback transactions that have timed out.", atLeast(1)),
	def("transaction.remove.expired.transaction.cleanup.interval.ms", TypeInt, 3600000, Low, "The interval at which to remove transactions that have expired.", atLeast(1)),
	def("producer.id.expiration.ms", TypeInt, 86400000, Low, "The time in ms that a topic partition leader will wait before expiring producer IDs.", atLeast(1), ClusterWide),
	def("producer.id.expiration.check.interval.ms", TypeInt, 600000, Low, "The interval at which to remove producer IDs that have expired due to producer.id.expiration.ms passing.", atLeast(1)),
	def("transaction.partition.verification.enable", TypeBoolean, true, Low, "Enable verification that checks that the partition has been added to the transaction before writing transactional records to the partition.", ClusterWide),
	def("add.partitions.to.txn.retry.backoff.ms", TypeInt, 20, High, "The server-side retry backoff when the server attempts to add the partition to the transaction.", atLeast(1)),
	def("add.partitions.to.txn.retry.backoff.max.ms", TypeInt, 100, High, "The maximum allowed timeout for adding partitions to transactions on the server side. It only applies to the actual add partition operations, not the verification. It will not be effective if it is larger than request.timeout.ms.", atLeast(0)),

	// Moldau.
	def("moldau.metrics.listener", TypeString, "localhost:9404", Medium, "host:port of the HTTP listener serving Prometheus /metrics and /debug/pprof. Empty disables it. The default binds loopback only, since pprof must not be exposed to the network; use :9404 to bind every interface."),
	def("moldau.log.scrub.enable", TypeBoolean, true, Medium, "Run the log scrubber: a background thread that reads every closed segment and checks each batch's CRC and offsets, so that data damaged on disk (bit rot) is found, logged with its partition, segment and offset, counted in moldau_log_scrubber_corrupt_batches_total, and not served to consumers. Kafka has no such check."),
	def("moldau.log.scrub.interval.ms", TypeLong, 604800000, Medium, "How often a pass of the log scrubber over every closed segment starts (the first at start-up); a pass that takes longer is followed by the next at once. With moldau.log.scrub.bytes.per.second it bounds how long damage goes unnoticed.", atLeast(1)),
	def("moldau.log.scrub.bytes.per.second", TypeLong, 1048576, Medium, "The rate at which the log scrubber reads, for all log dirs together. The default (1 MiB/s) checks about 600 GB a week.", atLeast(1)),
}
