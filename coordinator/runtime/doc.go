// Package runtime is Moldau's CoordinatorRuntime: the machinery shared by
// the coordinators whose state lives in an internal topic (the group
// coordinator on __consumer_offsets, the transaction coordinator on
// __transaction_state, later the share coordinator). It knows nothing of
// groups or transactions: a coordinator plugs in a Shard type.
//
// # Model
//
// A coordinator is a set of shards, one per partition of its internal
// topic that this broker leads. A shard is a state machine (Shard) whose
// durable state changes only through Replay(offset, producerID,
// producerEpoch, key, value), one record at a time. Operations run against
// a shard:
//
//   - Write(rt, name, partition, op, done): op returns a Result: records
//     plus a response. The records are replayed into the shard at once (so
//     the next operation sees them) and appended to the partition as part
//     of one record batch; done gets the response only once that batch is
//     committed, i.e. the partition's high watermark has passed it.
//   - Read(rt, name, partition, op, done): op only looks at the shard; its
//     response waits until every write before it is committed.
//   - ReadAll / WriteAll: the same on every shard hosted here.
//   - Timers (ShardContext.Timer): keyed, per shard, on the purgatory's
//     timing wheel; a timer's op runs as a Write.
//
// A Result may set NoReplay, for operations that change the shard's memory
// themselves and write records only to make it durable (Kafka's
// replayRecords=false: the classic group protocol, whose in-memory state of
// joining and syncing members has no records); and OnWritten, which runs
// once the records are committed or have failed (Kafka's appendFuture).
// Records are replayed, not NoReplay, whenever a shard is loaded.
//
// # Lifecycle
//
// The runtime does not know how leadership is decided. Whoever does (the
// metadata publisher) calls:
//
//   - OnElection(partition, epoch): the shard is built empty and loaded by
//     replaying the partition from its log start to its log end (Kafka's
//     loader does the same; on one node the log end is the high
//     watermark) on a loader goroutine. Meanwhile operations fail with
//     COORDINATOR_LOAD_IN_PROGRESS. Then Shard.OnLoaded runs and the shard
//     is active. A new election at a newer epoch reloads it; one at the
//     epoch loaded or loading is ignored, so the publisher may repeat
//     it. A load that fails (the partition's leadership not applied yet,
//     an I/O error) is retried with a back-off of 100 ms doubling to 5 s
//     for as long as the election stands, and operations meanwhile get
//     COORDINATOR_LOAD_IN_PROGRESS: a load is never dropped.
//   - OnResignation(partition, epoch): the shard is unloaded (timers
//     cancelled, Shard.OnUnloaded, waiting operations answered) and its
//     operations fail with NOT_COORDINATOR. An election that follows a
//     resignation always loads, even if both were queued before the
//     shard's goroutine ran either.
//
// # The log
//
// The runtime writes through PartitionLog, which replica.Manager
// implements: AppendAsCoordinator appends one batch as the leader, with the
// coordinator origin that may write internal topics (Kafka's
// AppendOrigin.COORDINATOR), and reports when the high watermark passed it
// (or an error, or offsets.commit.timeout.ms passing);
// ReadForCoordinator reads the partition for loading. Batches are magic v2,
// uncompressed, built with log.BatchBuilder, with the shard's leader epoch
// as partition leader epoch, no producer (-1) and the current time as
// every record's timestamp. Keys and values are whatever the shard's
// records are; a nil value is a tombstone, so a compacted topic keeps the
// latest record of every key, as Kafka's coordinators rely on.
//
// Transactional writes (WriteTransactional, for the group coordinator's
// TxnOffsetCommit) go in a batch of their own with the producer's id and
// epoch, the transactional attribute and base sequence 0 (the log checks
// sequences of clients' batches only), sent at once after the batch open
// before them; their records are replayed with the producer's id.
// CompleteTransaction writes a COMMIT or ABORT marker as a control batch
// of its own (the coordinator epoch in its value), replayed through
// ReplayEndTransactionMarker, as the loader replays control batches.
//
// # Goroutines and ordering
//
// Each shard has one goroutine (Kafka has a pool of event-processor
// threads with one shard at a time per thread; a goroutine per shard is the
// Go form of it). Operations are queued and run one at a time in the order
// queued, so a shard needs no lock. After each drain of its queue the
// shard appends the records of every operation just run as one batch (so
// under load one append serves many operations, like Kafka's
// group.coordinator.append.linger.ms with adaptive linger), at most
// Config.MaxBatchBytes; an operation whose records alone exceed that fails
// with RECORD_LIST_TOO_LARGE before anything is replayed. Responses go out
// in commit order. done and OnWritten run on the shard's goroutine and
// must not block. A loader goroutine per load; timers fire on the
// purgatory SystemTimer's expiration goroutine, which only queues the op.
// Every goroutine is tracked by a routine.Group and Close waits for them.
//
// # Failures
//
// Kafka reverts a shard to its last committed snapshot when a write fails.
// Moldau has no snapshots: when an append fails or is not committed, or a
// replay or an operation panics, the shard's memory may hold what the log
// does not, so the shard is reloaded from the log (operations in the
// failed batch get the error; those queued meanwhile get
// COORDINATOR_LOAD_IN_PROGRESS). Memory-only state (classic members
// waiting in JoinGroup) is answered NOT_COORDINATOR and the clients retry.
//
// # Memory
//
// A shard's queue holds at most one request per client connection (the
// socket server reads nothing more from a connection until its response
// is sent) plus its timers' firings. The batch is bounded by
// MaxBatchBytes.
//
// # Lock order
//
//	Runtime.mu → shardContext.mu → shardTimer.mu
//
// Only the enqueue and loop bookkeeping take shardContext.mu; no lock is
// held while an operation, Replay or a callback runs.
package runtime
