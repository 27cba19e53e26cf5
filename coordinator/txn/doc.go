// Package txn is Moldau's transaction coordinator (Kafka's
// TransactionCoordinator, TransactionStateManager, TransactionMetadata and
// TransactionMarkerChannelManager) on the coordinator runtime (package
// runtime) over __transaction_state.
//
// # Layout
//
//   - coordinator.go, end_txn.go, admin.go: Service, Kafka's
//     TransactionCoordinator: routes a transactional id to the shard of
//     its partition (abs(javaHashCode(id)) % partitions of
//     __transaction_state), checks what needs no state, runs the
//     operation: InitProducerId, AddPartitionsToTxn (the clients' form
//     and the brokers' verification, KIP-890 part 1), AddOffsetsToTxn,
//     EndTxn, DescribeTransactions, ListTransactions.
//   - shard.go: Shard, the transactions of one partition: load, timers
//     (aborting timed-out transactions, expiring transactional ids),
//     completing transactions once their markers are written.
//   - metadata.go: TransactionMetadata and its transitions: Kafka's state
//     machine (Empty, Ongoing, PrepareCommit, PrepareAbort,
//     CompleteCommit, CompleteAbort, PrepareEpochFence, Dead).
//   - records.go: the records, in Kafka's schemas.
//   - markers.go: the marker channel: WriteTxnMarkers requests to the
//     partitions' leaders through a MarkerSender.
//   - producer_ids.go: producer id blocks from the controller.
//
// # On disk
//
// __transaction_state holds one record per transition, keyed by the
// transactional id (TransactionLogKey v0); the value is TransactionLogValue
// v0, or v1 (flexible, with the previous and next producer ids and the
// client's transaction version) once the cluster's transaction.version is
// 1 or more, as Kafka writes them. Expired ids get a tombstone. The topic
// is compacted, so it keeps every id's latest state.
//
// # Transitions and durability
//
// An operation computes a transition from the current state, applies it
// to the shard's memory at once and writes its record (Result.NoReplay):
// the runtime answers nobody before the record is committed, and reloads
// the shard from the log if the write fails, so no client ever sees state
// that the log might not hold. Where Kafka keeps a "pending state" while
// an append is in flight and answers CONCURRENT_TRANSACTIONS, the next
// operation here sees the applied state and its answer waits for the
// commit before it; a transaction in PrepareCommit or PrepareAbort (its
// markers being written) is answered CONCURRENT_TRANSACTIONS, as in Kafka.
//
// Ending a transaction: EndTxn writes PrepareCommit or PrepareAbort and
// answers the producer; once that record is committed the markers go to
// every partition's leader (WriteTxnMarkers, with the shard's leader
// epoch as coordinator epoch); as partitions answer they leave the
// transaction, and when none is left CompleteCommit or CompleteAbort is
// written. After a restart or a change of coordinator, loading a
// partition sends the markers of every transaction found in
// PrepareCommit or PrepareAbort again (they are idempotent), so whatever
// was in flight completes. Markers that outlive their shard's load are
// dropped; the next load sends its own.
//
// Fencing: InitProducerId for a transactional id with an open transaction
// bumps the epoch, aborts the transaction at it (the markers fence the old
// producer on every partition) and answers CONCURRENT_TRANSACTIONS until
// the abort is complete; the retry bumps the epoch again. The same abort
// runs for transactions open longer than their timeout, every
// transaction.abort.timed.out.transaction.cleanup.interval.ms.
//
// # Transaction versions
//
// The cluster's finalized transaction.version decides the value version
// written (1+: flexible) and how the coordinator's own aborts end; the
// client's is its EndTxn version: from v5, transaction version 2 (KIP-890
// part 2), where every EndTxn bumps the epoch and returns it, a retry is
// told apart from the next EndTxn by its epoch, an abort of an empty
// transaction is legal, and exhausted epochs move the producer to a new id
// once the markers are written.
//
// Epoch exhaustion: the EndTxn that ends a transaction at epoch
// Short.MaxValue - 1 takes the next producer id, writes PrepareCommit or
// PrepareAbort at Short.MaxValue with it (NextProducerId), and answers the
// next id at epoch 0, the state the completion will hold; the markers
// carry the old id at Short.MaxValue, and the completion moves to the
// next id (PreviousProducerId: the old one). Until then the producer's
// AddPartitionsToTxn and EndTxn under the new id wait or are answered
// CONCURRENT_TRANSACTIONS (the Prepare check comes before the producer id
// check, KAFKA-18660); afterwards its EndTxn retry at the old id and last
// epoch, and InitProducerId naming them (KIP-360), answer the new id. A
// fence by the coordinator at the last epoch rotates as well (KAFKA-20090).
// Kafka's later fixes are also in: the pending check before the epoch
// check (KAFKA-18464) and no second epoch bump when a fence aborts
// (KAFKA-19367).
//
// # Where Moldau differs
//
// Kafka's pending states and its retry queue for completions are not
// needed (see above). The last producer epoch is not stored (Kafka stores
// it from KAFKA-20357, in a tag kmsg does not know yet); loading a
// rotation (PrepareCommit or PrepareAbort with a next producer id, or its
// completion under the new id at epoch 0) restores it as Short.MaxValue -
// 1, the only epoch it can have there, so the KIP-360 retry above also
// works after a restart; Kafka answers DescribeTransactions with the
// partitions still waiting for markers, as here. Producer ids come from
// ProducerIDManager, which answers COORDINATOR_LOAD_IN_PROGRESS when no
// id is at hand, as Kafka's RPCProducerIdManager does; the service first
// waits for a block when it has none.
//
// # Marker latency
//
// The time from PrepareCommit or PrepareAbort to the last marker written
// is what a producer under transaction version 2 waits for when its next
// transaction starts at once: its first produce's add is held back
// until then (AddPartitions, at most Config.ConcurrentWait). It is
// kafka_server_transaction_coordinator_metrics_marker_latency_ms; on a
// quiet three-node cluster its p50 is about half a millisecond and its
// p99 a few. The MarkerSender must not queue markers behind anything the
// coordinator may hold back: the broker sends them on a channel of their
// own, apart from AddPartitionsToTxn (a shared connection once made every
// marker behind a held add wait for that wait to expire).
//
// # Concurrency
//
// A Shard is used only from its runtime goroutine. Service is safe for
// concurrent use. The marker channel has one goroutine per destination
// broker, at most one request in flight to each, tracked by a
// routine.Group; its lock is a leaf. Results reach a shard as runtime
// operations, never by touching its memory.
package txn
