// Package group is Moldau's group coordinator (Kafka's group-coordinator
// module): consumer groups of the classic protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup, static membership) and of the consumer protocol
// (KIP-848: ConsumerGroupHeartbeat, server-side assignors, regular
// expression subscriptions, online migration between the two), and their
// committed offsets, and share groups (KIP-932: ShareGroupHeartbeat,
// ShareGroupDescribe, the simple assignor), on the coordinator runtime
// (package runtime) over __consumer_offsets.
//
// # Layout
//
//   - service.go, service_admin.go, service_consumer.go: Service, Kafka's
//     GroupCoordinatorService: routes a group to its shard
//     (abs(javaHashCode(groupId)) % partitions of __consumer_offsets),
//     validates what needs no state, runs the operation and turns
//     failures into response error codes (Kafka's
//     CoordinatorOperationExceptionHelper).
//   - shard.go: Shard, Kafka's GroupCoordinatorShard: Replay, load,
//     unload, group metadata expiry. Its methods are grouped by file as
//     Kafka groups them by manager: classic_*.go and consumer_*.go are
//     the GroupMetadataManager, offsets.go the OffsetMetadataManager,
//     admin.go ListGroups, DescribeGroups and DeleteGroups.
//   - share_*.go, service_share.go, service_share_offsets.go: share
//     groups (Kafka 4.2's
//     GroupMetadataManager share paths, ShareGroup, ShareGroupMember,
//     SimpleAssignor): a third group type; a group id belongs to one type
//     (GROUP_ID_NOT_FOUND across types, INCONSISTENT_GROUP_PROTOCOL for a
//     classic JoinGroup). Partitions are assigned once their share-group
//     state is initialized through the persister
//     (Options.ShareState, ShareStateInitializer; none: at once, start
//     offset -1), tracked by ShareGroupStatePartitionMetadata
//     (initializing, initialized, deleting). Share groups never expire;
//     DeleteGroups deletes an empty one's state first.
//   - share_offsets.go, service_share_offsets.go: the share-group offset
//     APIs (GroupCoordinatorService's describeShareGroupOffsets,
//     describeShareGroupAllOffsets, alterShareGroupOffsets and
//     deleteShareGroupOffsets). Describe reads each partition's start
//     offset and leader epoch through ShareStateInitializer.ReadStateSummary
//     (no topics named: the group's initialized partitions), and the lag
//     from the high watermark (Options.LogEnd) and the delivery-complete
//     count. Alter, only on an empty group, writes the partitions as
//     initializing, has the persister initialize them at the group epoch
//     with the new start offsets, and writes them initialized before it
//     answers (Kafka answers before that write). Delete, only on an
//     empty group, moves initialized topics to deleting, deletes every
//     partition's state, and drops the topics it deleted.
//   - records.go, records_consumer.go, records_share.go: the record keys
//     and values.
//   - group_configs.go: the group configs of the metadata (KIP-848's GROUP
//     config resource, Kafka's GroupConfigManager): a group's
//     consumer.session.timeout.ms and consumer.heartbeat.interval.ms
//     override the broker's for its consumer-protocol members.
//
// # On disk
//
// Every durable change is a record of __consumer_offsets in Kafka's own
// schemas, so Kafka's tools could read the topic and a compacted topic
// keeps exactly the latest state: the key starts with an int16 record
// type (0-1 OffsetCommit, 2 GroupMetadata, 3 ConsumerGroupMetadata, 4
// ConsumerGroupPartitionMetadata, 5 ConsumerGroupMemberMetadata, 6
// ConsumerGroupTargetAssignmentMetadata, 7
// ConsumerGroupTargetAssignmentMember, 8
// ConsumerGroupCurrentMemberAssignment, 10 ShareGroupMemberMetadata, 11
// ShareGroupMetadata, 12 ShareGroupTargetAssignmentMetadata, 13
// ShareGroupTargetAssignmentMember, 14 ShareGroupCurrentMemberAssignment,
// 15 ShareGroupStatePartitionMetadata, 16
// ConsumerGroupRegularExpression; 9, Kafka 4.0's ShareGroupPartitionMetadata,
// is skipped), followed by the key's fields; the
// value starts with an int16 version. OffsetCommit and GroupMetadata
// values are kmsg's (OffsetCommitValue v3, or v1 when OffsetCommit v2-v4
// set a retention; GroupMetadataValue v3). The KIP-848 values are v0 and
// flexible (compact strings and arrays, tagged fields), encoded here with
// kbin from Kafka's JSON schemas. Deleting writes a tombstone (null
// value) for every key, as Kafka does. ShareGroupMetadataValue carries a
// hash of the subscribed topics' metadata, as Kafka 4.1 and later; Moldau
// computes it with FNV-1a rather than Kafka's XXH3 (share_group.go), so it
// is compared only with hashes Moldau computed.
//
// # State and records
//
// Consumer-protocol groups change only through Replay, as Kafka's do:
// an operation computes records, the runtime replays them and makes them
// durable before answering. Classic groups are Kafka's too: their
// in-memory state (members waiting in JoinGroup, pending syncs) is richer
// than their one GroupMetadata record, so their operations change memory
// directly and write that record with Result.NoReplay, at the points Kafka
// writes it (the leader's assignment, a static member replaced, a group
// emptied or created); loading rebuilds a classic group Stable or Empty
// from it, and its members' session timers restart.
//
// # Timers
//
// Session and rebalance timeouts, the classic initial rebalance delay,
// pending syncs and the periodic offset expiry (offsets.retention.*) are
// keyed timers of the shard (runtime.Timer), with Kafka's keys
// ("heartbeat-<group>-<member>", "join-<group>", "sync-<group>",
// "session-timeout-<group>-<member>", "rebalance-timeout-<group>-<member>",
// "expire-group-metadata"). Tests drive them with runtime.MockTimer.
//
// # Concurrency
//
// A Shard is used only from its runtime goroutine. Service is safe for
// concurrent use; its callbacks run on shard goroutines and must not
// block. Metadata (the cluster's topics) must be safe for concurrent use.
//
// # Transactions
//
// TxnOffsetCommit (txn_offsets.go) writes its offsets as records of the
// producer's transaction (runtime.WriteTransactional), after the
// transaction coordinator verified, or added, the group's partition
// (Options.VerifyTransaction). Replayed with a producer id they are kept
// pending (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT
// for them) until the producer's marker: WriteTxnMarkers hands markers
// for __consumer_offsets to CompleteTransaction, which writes the marker
// and commits or drops the pending offsets; a later plain commit of the
// same partition wins, by record offset, as in Kafka.
//
// # Where Moldau differs
//
// AlterShareGroupOffsets on a group id no group has creates an empty share
// group (its ShareGroupStatePartitionMetadata record does, when
// replayed), which a DeleteGroups deletes; Kafka 4.2's GroupMetadataManager
// answers GROUP_ID_NOT_FOUND. DescribeShareGroupOffsets with named topics
// is answered by the group's coordinator only (NOT_COORDINATOR elsewhere),
// as the all-topics form is in Kafka; Kafka reads the persister for named
// topics from any broker. Records are delivered by the partition side
// (ShareFetch and ShareAcknowledge, package replica/share). An altered
// start offset is seen by a share-partition leader that loads the state
// afterwards; one that still caches the partition from the group's
// earlier members keeps its own, as replica/share does not yet drop a
// group's share partitions when its last share session closes (Kafka's
// ShareGroupListener.onGroupEmpty).
package group
