// Package controller makes every cluster decision (Kafka's QuorumController
// with its ReplicationControlManager, ClusterControlManager,
// ConfigurationControlManager, ProducerIdControlManager and
// FeatureControlManager): topic and partition creation with placement over
// the registered brokers (StripedReplicaPlacer, rack-aware), deletes,
// configs, producer-id blocks, broker registration, heartbeats and fencing,
// leader election when brokers are fenced and unfenced. Its API takes
// Kafka's own requests (kmsg) and answers Kafka's responses, so a broker
// forwards a client's CreateTopics to the active controller unchanged.
//
// # Model
//
// One goroutine, the event loop, owns the state: the committed image (the
// replay of the committed metadata log) and the latest image (committed
// plus this controller's own uncommitted writes). A write runs against the
// latest image, returns records and a response, the records are replayed
// into the latest image and appended to the log through RaftClient, and
// the response waits until the quorum has committed them. A request is
// never answered before its records are durable on a majority.
//
// Only the active controller writes. When the quorum makes this node the
// leader of an epoch, the controller claims it by appending a record at
// that epoch; once that record is committed every earlier record has been
// replayed, and the controller activates (Kafka's claim). On losing the
// leadership it resigns: the latest image falls back to the committed one
// and writes waiting for their commit fail with NOT_CONTROLLER (their
// records may still commit under the next leader, as with Kafka; a client
// retrying then sees TOPIC_ALREADY_EXISTS or the like). Every other node
// answers NOT_CONTROLLER.
//
// # Brokers
//
// A broker registers (BrokerRegistration) and is fenced until its
// heartbeats (BrokerHeartbeat) show that its metadata has reached its own
// registration record; then it is unfenced, and partitions that had no
// leader and have it in their ISR get it as leader with a new leader epoch.
// A broker without a heartbeat for broker.session.timeout.ms is fenced: the
// partitions it led move to another in-sync unfenced replica, or to no
// leader. A new incarnation of a registered broker (a restart) gets a new
// broker epoch, and what the old one led is led by no one until the new one
// is unfenced. Sessions live only on the active controller and start afresh
// when a controller activates.
//
// A heartbeat names the broker's offline log dirs (OfflineLogDirs,
// KIP-858); the session records them and a change is logged.
//
// # Limits
//
// max.broker.partitions (the name KIP-578 proposed; Kafka has no such
// limit) caps the partitions one broker may host; by default it is derived
// from the open-file limit of the active controller's process, assuming
// brokers alike. A creation that would pass it is POLICY_VIOLATION, naming
// the broker, the count and the limit.
//
// # Differences from Kafka
//
//   - Until partitions are replicated between brokers,
//     Config.MaxReplicationFactor (1) refuses larger replication factors
//     with INVALID_REPLICATION_FACTOR and a message that says why; internal
//     topics are capped to it (and to the registered brokers) so that a
//     single node creates __consumer_offsets.
//   - Offline log dirs move no leadership. Kafka's controller moves the
//     partitions of an offline dir to other replicas (or to no leader),
//     knowing each replica's dir from PartitionRecord.Directories; Moldau
//     has no directory assignments in its metadata and one replica per
//     partition, so the broker itself answers KAFKA_STORAGE_ERROR for them
//     until it restarts with the dir repaired (a leaderless partition
//     would tell clients less: LEADER_NOT_AVAILABLE).
//   - No periodic NoOpRecord (metadata.max.idle.interval.ms): brokers
//     learn they are caught up from their registration offset.
//   - A new cluster finalizes this software's default feature levels, and
//     an existing one is upgraded to them when a controller activates, with
//     no kafka-features.sh step.
package controller
