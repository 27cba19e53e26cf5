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
// registration record; then it is unfenced. A broker without a heartbeat
// for broker.session.timeout.ms is fenced. A new incarnation of a
// registered broker (a restart) gets a new broker epoch. Sessions live only
// on the active controller and start afresh when a controller activates.
//
// # Replication
//
// Every change of a partition's leader or ISR is built as Kafka's
// PartitionChangeBuilder builds it (elections.go) and written as one
// PartitionChangeRecord; a change of the ISR alone bumps only the
// partition epoch, a change of leader also the leader epoch. What is
// guaranteed:
//
//   - A new partition's ISR is its active replicas (unfenced, not shutting
//     down), its leader the first of them; one with no active replica is
//     refused. Placement (placement.go) puts an unfenced broker first and
//     spreads a partition's replicas over racks.
//   - The ISR changes only by AlterPartition from the partition's leader
//     (alter_partition.go: Kafka's checks, codes and order), and by the
//     controller when a broker is fenced, shuts down in a controlled way
//     or re-registers: the broker leaves every ISR where another member
//     remains. Without eligible leader replicas the ISR is never empty:
//     its last member keeps its place.
//   - Eligible leader replicas (KIP-966, eligible.leader.replicas.version
//     1, a new cluster's default): while an ISR is smaller than the
//     topic's min.insync.replicas (at most its replication factor), the
//     members it loses join the partition's ELR, and the ISR may become
//     empty; the leader does not advance the high watermark meanwhile, so
//     they hold every committed record. An ISR back at
//     min.insync.replicas clears the ELR. A broker re-registering without
//     naming the epoch of its previous incarnation as that of a clean
//     shutdown (BrokerRegistration's PreviousBrokerEpoch, read from the
//     .kafka_cleanshutdown markers) leaves every ELR. When the ISR is
//     empty the first qualifying ELR member leads and becomes the ISR;
//     when the ELR is empty too, the partition's last leader
//     (LastKnownElr) leads again when it qualifies (Kafka's balanced
//     recovery: RECOVERING, logged and counted as unclean). Kafka 4.0
//     treats every new incarnation as an unclean shutdown; Moldau uses
//     the previous epoch as KIP-966 designed it, so a rolling restart
//     keeps brokers eligible.
//   - A leader is always an ISR member (or, the ISR empty, an ELR member)
//     that is registered, unfenced and not shutting down; the current
//     leader is kept while it qualifies, else the first qualifying replica
//     in replica order leads, else no one (leader -1). Unfencing a broker
//     elects again every leaderless partition. A re-registering broker
//     keeps the leadership of the partitions it alone hosts (nobody else
//     could lead them).
//   - Unclean election, only where unclean.leader.election.enable holds
//     for the topic (its override, then this controller's and the
//     cluster's dynamic broker config, then the static one): when no ISR
//     member qualifies, the first live replica leads, the ISR becomes just
//     it and its LeaderRecoveryState RECOVERING until the leader's
//     AlterPartition says RECOVERED. Each is logged at WARN and counted
//     (kafka_controller_controllerstats_uncleanleaderelectionspersec_total).
//   - min.insync.replicas is accepted as a topic config; the controller
//     only validates it (the leader enforces it on acks=all).
//
// Reassignment (reassignment.go, KIP-455, Kafka's
// changePartitionReassignment): AlterPartitionReassignments writes the
// target replicas followed by those it removes, with AddingReplicas and
// RemovingReplicas; the new replicas follow the leader and join the ISR
// by AlterPartition, and the ISR change that holds every target replica
// completes the move in the same record (replicas become the target, the
// removed replicas leave the ISR, a removed leader is replaced and the
// leader that asked gets NEW_LEADER_ELECTED). The leader epoch moves
// whenever a replica leaves. Cancelling reverts to the original replicas
// (unclean election needed if only added replicas were in the ISR).
// ListPartitionReassignments reports the moves in progress.
//
// A BROKER config resource naming another node (its broker forwarded it:
// a broker's configs are sent to it) is checked as far as the controller
// can, as Kafka's ControllerConfigurationValidator: the keys may be set
// dynamically and the values parse; that node checks the rest (its
// Reconfigurables) when it applies them.
//
// Elections on request and leader balance (elect_leaders.go,
// leader_balance.go): ElectLeaders runs Kafka's PREFERRED election (the
// first replica of the assignment leads if it is in the ISR and active)
// or UNCLEAN one (a leaderless partition gets a leader, from outside the
// ISR if need be, whatever the topic's config), with Kafka's per-partition
// codes. With auto.leader.rebalance.enable the active controller runs the
// PREFERRED election itself, leader.imbalance.check.interval.seconds after
// a change leaves partitions off their preferred replica (Kafka 4's
// schedule); leader.imbalance.per.broker.percentage is not used, as in
// Kafka's KRaft controller.
//
// # Features
//
// UpdateFeatures (features.go) is Kafka's FeatureControlManager: levels
// within this controller's and every registered broker's supported range,
// upgrade types, validate_only, metadata.version downgrades refused across
// versions that changed the metadata, Kafka's messages; one
// FeatureLevelRecord per feature, level 0 removing it.
//
// Directory assignments (directories.go, KIP-858): a broker registers
// the directory ids of its online log dirs (Broker.LogDirs) and reports
// the dir of each replica (AssignReplicasToDirs, kept in the partition's
// Directories). A heartbeat that names registered dirs offline
// (OfflineLogDirs) takes the broker out of the ISR and leadership of its
// replicas there, as when it is fenced, and registers only its online
// dirs; a replica in a dir its broker does not have online may not lead
// (newChange) nor rejoin the ISR (AlterPartition: INELIGIBLE_REPLICA).
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
//   - On combined nodes, internal topics' replication factors
//     (offsets.topic.replication.factor, ...) are capped to the size of the
//     configured quorum (controller.quorum.voters, else the bootstrap
//     servers), so that a single node with no configuration creates
//     __consumer_offsets; a controller-only quorum uses the configured
//     factor, as Kafka. Config.MaxReplicationFactor, a cap the unit tests
//     set, is 0 (none) in the broker.
//   - No ELR update when
//     min.insync.replicas changes (neither has Kafka 4.0: the lists follow
//     at the partition's next change); no periodic unclean election
//     (Kafka's unclean.leader.election.interval.ms): a leaderless
//     partition whose topic allows unclean election is elected again when
//     a broker is unfenced.
//   - An AlterPartition naming an unknown LeaderRecoveryState is
//     INVALID_REQUEST for that partition (Kafka fails the request).
//   - The unclean election counter counts what the active controller
//     decided, not what every controller replayed.
//   - Offline log dirs move no leadership. Kafka's controller moves the
//     partitions of an offline dir to other replicas (or to no leader),
//     knowing each replica's dir from PartitionRecord.Directories; Moldau
//     has no directory assignments in its metadata, so it cannot tell
//     which partitions to move, and the broker itself answers
//     KAFKA_STORAGE_ERROR for them until it restarts with the dir repaired
//     (a leaderless partition would tell clients less:
//     LEADER_NOT_AVAILABLE). With replicated partitions this wants
//     directory assignments first.
//   - No periodic NoOpRecord (metadata.max.idle.interval.ms): brokers
//     learn they are caught up from their registration offset.
//   - UpdateFeatures checks controllers only as brokers (Moldau's
//     controllers are combined nodes, registered as brokers; Kafka also
//     checks ControllerRegistrations), and takes v0's allow_downgrade as
//     SAFE_DOWNGRADE (Kafka's controller reads only upgrade_type, which v0
//     lacks, so it refuses a v0 downgrade).
package controller
