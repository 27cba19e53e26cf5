// Package log is Moldau's storage layer: one partition's log (Log, Kafka's
// UnifiedLog), its segments (Segment, LogSegment), their indexes
// (OffsetIndex, TimeIndex) and the Manager of every log in log.dirs
// (LogManager + LogLoader): checkpoints, recovery, retention, flushing.
// It knows nothing of the network; replica and coordinator use it.
//
// # Files
//
// Per log dir (each entry of log.dirs):
//
//	.kafka_cleanshutdown              empty; present only after a clean Close
//	recovery-point-offset-checkpoint  offset below which data is fsynced
//	replication-offset-checkpoint     high watermarks
//	log-start-offset-checkpoint       log start offsets
//	<topic>-<partition>/              one log
//	<topic>-<partition>.<hex>-delete  a deleted log waiting for removal
//	<topic>-<partition>.<id>-stray    a log of an older topic of that name
//
// The three checkpoints use Kafka's text format: a line "0" (version), a
// line with the entry count, then one "topic partition offset" line per
// partition. They are written atomically: a .tmp file is written and
// fsynced, renamed over the old one, and the dir fsynced.
//
// Per partition dir, segments are named by their base offset, "%020d":
//
//	00000000000000000000.log        record batches (magic 2), byte for byte
//	                                as producers sent them after offsets
//	                                were assigned; see batch.go for the
//	                                61-byte header
//	00000000000000000000.index      sparse offset index, big-endian entries
//	                                of 8 bytes: relative offset (uint32,
//	                                offset - base) of the last record of a
//	                                batch, and the batch's position (uint32)
//	                                in the .log; an entry every
//	                                index.interval.bytes
//	00000000000000000000.timeindex  sparse time index, 12-byte entries:
//	                                timestamp (int64, the largest so far) and
//	                                the relative offset (uint32) of the last
//	                                record of the batch that holds it;
//	                                appended with offset index entries when
//	                                the timestamp grew, and once more when
//	                                the segment stops being active
//	00000000000000000000.txnindex   aborted transactions whose ABORT marker
//	                                is in the segment, 34-byte entries
//	                                (txn_index.go); only if there is one
//	00000000000000000000.snapshot   producer state below that offset
//	                                (producer_snapshot.go): Kafka's
//	                                ProducerSnapshot v1 with CRC-32C
//	leader-epoch-checkpoint         "0", count, then "epoch startOffset" lines
//	partition.metadata              "version: 0\ntopic_id: <base64url uuid>\n"
//
// Index files of the active segment are preallocated to
// segment.index.bytes (rounded down to whole entries) and trimmed to their
// entries on roll and close; an all-zero entry ends an index when it is
// read. Index entries are kept in memory (8 or 12 bytes per
// index.interval.bytes of data) and written to the files on flush, roll and
// close; a crash loses at most entries of segments past the recovery point,
// which recovery rebuilds. Deleted segment files are renamed with a
// ".deleted" suffix and closed and removed after file.delete.delay.ms, so a
// reader still sending from them is not cut off.
//
// # Invariants
//
//   - Offsets grow strictly within and across batches and segments; a
//     segment's batches have offsets in [base, next segment's base).
//   - log start offset <= high watermark <= log end offset (LEO), where
//     LEO is the offset after the last appended record. Append moves the
//     LEO; the caller moves the high watermark (UpdateHighWatermark), which
//     is clamped to [log start, LEO].
//   - Every segment is made of whole, CRC-valid batches up to its committed
//     size: Append writes at the committed size and publishes the new size
//     only after the write succeeded; a failed write is truncated away.
//   - There is always at least one segment; the last is the active one.
//   - The recovery point is <= LEO; everything below it was fsynced.
//   - log start <= last stable offset (LSO) <= high watermark. The LSO is
//     the first offset of the earliest transaction that is open, or whose
//     marker is not yet below the high watermark; else the high watermark.
//
// # Transactions and producer state
//
// Producer state (producer_state.go, Kafka's ProducerStateManager) is per
// producer id: epoch, the last five batches' sequence and offset ranges,
// the coordinator epoch of its last marker, the first offset of its open
// transaction. A client append is checked against it (duplicates answer
// with the original offsets; OUT_OF_ORDER_SEQUENCE_NUMBER,
// INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE as Kafka gives them); a
// coordinator append (AppendOriginCoordinator) may add COMMIT and ABORT
// markers, checked for the producer epoch and coordinator epoch
// (TRANSACTION_COORDINATOR_FENCED). A marker ends its producer's
// transaction; an ABORT is recorded in the segment's .txnindex with the
// LSO it leaves. Producers with no open transaction and no write for
// producer.id.expiration.ms are forgotten (Manager, every
// producer.id.expiration.check.interval.ms).
//
// A snapshot of the producer state is written at each roll (named by the
// new segment's base offset, fsynced with the segment after the roll) and
// at Close (named by the log end, fsynced). Snapshots are deleted with
// their segments (retention, after file.delete.delay.ms), when they are
// past the log end (truncation) or below the log start, and at load when
// they match no segment base (except the newest, if it is past them all:
// Kafka's removeStraySnapshots). Where Moldau differs from Kafka: a
// snapshot at exactly the log start is kept (Kafka deletes it), so a
// producer whose data retention deleted keeps its sequence state across a
// crash; and with no snapshot at all the log is replayed from its start
// even after a clean shutdown (Kafka skips that scan, assuming an
// upgrade).
//
// Not implemented yet: KIP-890 transaction verification
// (transaction.partition.verification.enable, VerificationGuard), which
// needs the transaction coordinator; a transactional batch of a producer
// with no open transaction starts one, as in Kafka with verification off.
//
// # Concurrency and lock order
//
// All exported methods are safe for concurrent use. Each Log has two locks:
// Log.mu serialises writers (Append, roll, flush bookkeeping, retention,
// DeleteRecordsBefore, config changes) and is held across the append's
// write; Log.segMu (an RWMutex) guards what readers see — the segment
// list, each segment's committed size and in-memory indexes, log start,
// LEO, high watermark, size — and is write-held only to publish in-memory
// changes, never during I/O. Read and FetchOffsetByTimestamp take
// segMu.RLock to locate the position and capture the committed size, then
// read without any lock, so they never see a partially written batch and
// never wait for an append's I/O. fsync runs without locks. Appends to
// different logs never contend.
//
// Producer state and snapshot bookkeeping are guarded by Log.mu; the
// transaction index entries (in memory), the first undecided offset and
// the unreplicated transactions that give the LSO, by Log.segMu.
//
// Lock order: Manager.mu → Log.mu → Log.segMu. A Log never takes
// Manager.mu. logDir.ckptMu (checkpoint writes) is taken with no other lock.
//
// Goroutines (retention every log.retention.check.interval.ms, flush
// scheduler for flush.ms, checkpoints every
// log.flush.offset.checkpoint.interval.ms, delayed deletions, flush of a
// segment after it rolled) are started by Manager.Start and the roll path
// through one tracker that refuses new ones once Close began; Close waits
// for them.
//
// # Start-up and recovery
//
// NewManager loads every "<topic>-<partition>" dir of each log dir (other
// files and dirs are ignored; "-delete" dirs are removed; with TopicIDFor, a
// log whose partition.metadata names another topic ID is renamed "-stray"),
// num.recovery.threads.per.data.dir at a time. Leftover .deleted, .cleaned,
// .swap and .tmp files and index files without a .log are removed.
//
// If .kafka_cleanshutdown is present, recovery is skipped: indexes are
// trusted after a sanity check and only the active segment's tail after its
// last index entry is scanned (headers only) to find the LEO. The marker is
// then removed, so a later crash is not mistaken for a clean shutdown.
//
// Otherwise every segment from the one holding the recovery point on is
// recovered: each batch's header, length, CRC-32C and offsets are checked,
// the indexes rebuilt from the data, and the segment truncated at the first
// torn or corrupt batch; segments after a truncation are deleted, as is an
// empty segment left after a gap by lost un-synced data. The recovered data
// is fsynced and the recovery point moved to the LEO. Any segment whose
// index is missing or corrupt (size not a multiple of the entry size,
// entries not increasing, an entry past the data) is recovered the same
// way, clean shutdown or not. One line per log dir says which path ran, and
// one per truncated log how many bytes were dropped; LoadResults returns the
// same.
//
// The log start offset is max(checkpoint, first segment's base); the high
// watermark comes from replication-offset-checkpoint (clamped). Producer
// state is loaded from the newest valid snapshot at or below the log end
// (and at or below the first recovered segment, whose transaction indexes
// are rebuilt), then the batches after it are replayed (headers, and the
// records of control batches); a corrupt snapshot is deleted and the next
// older one used. After a clean shutdown the snapshot at the log end
// leaves nothing to replay. Snapshots are taken at the bases of the last
// two segments on the way and at the log end after a replay.
package log
