// Package share is Moldau's share coordinator, the state side of KIP-932
// share groups (Kafka's ShareCoordinatorService and ShareCoordinatorShard)
// on the coordinator runtime (package runtime) over __share_group_state.
// It keeps, for every share-partition (a share group's view of one topic
// partition, Key), the state its share-partition leader persists: the
// share-partition start offset, the state and leader epochs, the
// delivery-complete count and the delivery state and count of the
// in-flight offsets as non-overlapping batches. Persister is the interface
// the share-partition leader and the group coordinator keep it through;
// the broker implements it (broker.SharePersister).
//
// # Layout
//
//   - types.go: Key, StateBatch, PartitionState, Persister.
//   - service.go: Service, routing a key to the shard of its partition,
//     abs(javaHashCode("groupId:topicId:partition")) % partitions, the
//     topic id in Kafka's base64 (PartitionFor); one operation per key.
//   - shard.go: Shard, the states of one partition: the checks and
//     records of each operation, and Replay.
//   - combine.go: combineStateBatches, Kafka's
//     PersisterStateBatchCombiner.
//   - records.go: the records, in Kafka's schemas.
//   - prune.go: the job that deletes the records no key needs; cold.go:
//     the snapshots of keys gone quiet, which let it move on.
//
// # On disk
//
// ShareSnapshot records (key type 0) hold a key's whole state;
// ShareUpdate records (key type 1) the batches one write changed (see
// records.go for the schemas). A tombstone of the snapshot key deletes
// the state. A key's state is its latest snapshot with every later
// update merged in, in log order, which is why the topic must keep every
// record after a key's latest snapshot: Kafka creates it with
// cleanup.policy=delete and retention.ms=-1 and deletes the records
// before the oldest latest snapshot of all keys itself (the prune job,
// prune.go, every share.coordinator.state.topic.prune.interval.ms);
// compaction would drop all but the last ShareUpdate of a key and lose
// state.
//
// # Guarantees
//
// Every operation runs on its shard's goroutine and changes memory only
// through Replay of the records it writes, so the state a load replays is
// the state that was served; an answer is sent once its records are
// committed (the high watermark passed them), and a failed write reloads
// the shard from the log. Kafka's checks and error codes, per key:
//
//   - InitializeShareGroupState writes a snapshot at the next snapshot
//     epoch with the given state epoch and start offset, leader epoch 0
//     and no batches; an older state epoch than recorded is
//     FENCED_STATE_EPOCH.
//   - WriteShareGroupState on a key never initialized is INVALID_REQUEST;
//     an older leader or state epoch than recorded (-1: unchecked) is
//     FENCED_LEADER_EPOCH or FENCED_STATE_EPOCH. It writes a ShareUpdate
//     with the request's batches merged among themselves, or, once the
//     key has had share.coordinator.snapshot.update.records.per.snapshot
//     updates since its snapshot, a ShareSnapshot with the whole merged
//     state. A write keeps the recorded leader epoch.
//   - ReadShareGroupState answers the merged state; a key never
//     initialized is INVALID_REQUEST (Kafka 4.1+), an older leader epoch
//     FENCED_LEADER_EPOCH (even -1, once one is recorded, as Kafka does);
//     a newer one is recorded with a ShareUpdate (or snapshot) before the
//     answer, as Kafka's read is a write operation.
//   - ReadShareGroupStateSummary answers start offset, epochs and the
//     delivery-complete count, and for a key never initialized start
//     offset -1 and epochs 0, without error. It writes nothing.
//   - DeleteShareGroupState writes the tombstone (nothing for a key with
//     no state).
//   - A key whose topic or partition the metadata image does not have is
//     UNKNOWN_TOPIC_OR_PARTITION; a negative partition INVALID_REQUEST.
//   - Without a shard for the key's partition: NOT_COORDINATOR, and while
//     it loads COORDINATOR_LOAD_IN_PROGRESS; failed appends become
//     COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR as Kafka maps them.
//
// # Where Moldau differs
//
// Batches are written uncompressed
// (share.coordinator.state.topic.compression.codec is not applied), as the
// coordinator runtime writes every batch. DeliveryCompleteCount (KIP-1226,
// Kafka 4.2) is stored as tag 0 of both values, Moldau's reading of the
// 4.2 schemas (Kafka 4.1's records, without it, read the same); a write's
// count replaces the recorded one. Kafka's share coordinator runs its
// periodic jobs only while the cluster's share.version enables share
// groups; Moldau's always run.
//
// As in Kafka, the states of a deleted topic are tombstoned
// (OnTopicsDeleted, from the broker's metadata publisher); quiet keys are
// snapshotted again (cold.go) and the records no key needs pruned
// (prune.go).
//
// # Concurrency
//
// A Shard is used only from its runtime goroutine; Service is safe for
// concurrent use and its callbacks run on shard goroutines and must not
// block.
package share
