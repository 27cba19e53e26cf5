// Package log is Moldau's storage layer: one partition's log (Log, Kafka's
// UnifiedLog), its segments (Segment, LogSegment), their indexes
// (OffsetIndex, TimeIndex), the Manager of every log in log.dirs
// (LogManager + LogLoader): checkpoints, recovery, retention, flushing,
// and the LogCleaner that compacts logs with cleanup.policy=compact.
// It knows nothing of the network; replica and coordinator use it.
//
// # Files
//
// Per log dir (each entry of log.dirs):
//
//	.kafka_cleanshutdown              {"version":0,"brokerEpoch":N}; present only after a clean Close
//	recovery-point-offset-checkpoint  offset below which data is fsynced
//	replication-offset-checkpoint     high watermarks
//	log-start-offset-checkpoint       log start offsets
//	cleaner-offset-checkpoint         per compacted log, the first dirty
//	                                  offset (where the cleaner got)
//	<topic>-<partition>/              one log
//	<topic>-<partition>.<hex>-delete  a deleted log waiting for removal
//	<topic>-<partition>.<id>-stray    a log of an older topic of that name
//
// The four checkpoints use Kafka's text format: a line "0" (version), a
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
//	                                (an entry per epoch that wrote data;
//	                                EndOffsetForEpoch answers
//	                                OffsetForLeaderEpoch from it,
//	                                leader_epoch.go)
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
// reader still sending from them is not cut off. The cleaner writes a
// segment as "<base>.log.cleaned" (and .index.cleaned, .timeindex.cleaned)
// and renames it ".swap" then final while swapping it in (see Compaction).
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
//   - Cleaning never changes an offset: it removes records and batches
//     and rewrites batches with their base offset, last offset, producer
//     id, epoch and base sequence; it never touches the active segment or
//     anything at or past the last stable offset (today the high
//     watermark).
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
// Transaction verification (KIP-890, verification.go): a leader that
// asked the transaction coordinator before a producer's first
// transactional batch on the log brings the VerificationGuard the log gave
// when it asked; a marker written in between retires the guard and the
// append fails with INVALID_TXN_STATE, so a late batch never opens a
// transaction the coordinator does not know (a hanging transaction).
// Appends that were not verified (transaction.partition.verification.enable
// off, Produce before v12) are not checked.
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
// Log.replaceMu serialises what replaces or removes non-active segments:
// the cleaner's swap, retention, DeleteRecords, truncation (TruncateTo,
// TruncateFullyAndStartAt), Close and DeleteLog. It is
// taken before Log.mu and held across their renames and fsyncs, so the
// cleaner's swap never holds Log.mu (which appends need) during I/O: it
// takes Log.mu only to check the segments it replaces are unchanged and to
// publish the new list. The cleaner reads segments with no log lock at all
// (they are immutable below the active segment); it reads a log's config
// under Log.mu, and segment state under Log.segMu.RLock, briefly.
//
// Lock order: cleanerManager.mu → Manager.mu → Log.replaceMu → Log.mu →
// Log.segMu. A log being moved between log dirs adds, after the current
// Log.mu: futureLog.mu → the future Log's replaceMu → mu → segMu
// (future.go); Log.pathMu is read-held by flushTo's lock-free fsyncs and
// write-held only by the move's swap, under Log.mu. A Log never takes Manager.mu or cleanerManager.mu. An I/O
// error is reported to the Manager (dir_failure.go) from whatever
// goroutine met it, with any log lock held: the report only sets the dir's
// failure (an atomic) and starts a goroutine that does the rest.
// logDir.ckptMu (checkpoint writes) is taken with no other lock; the
// cleaner offset checkpoint is written under cleanerManager.mu, as Kafka
// does.
//
// Goroutines (retention every log.retention.check.interval.ms, flush
// scheduler for flush.ms, checkpoints every
// log.flush.offset.checkpoint.interval.ms, delayed deletions, flush of a
// segment after it rolled) are started by Manager.Start and the roll path
// through one tracker that refuses new ones once Close began; Close waits
// for them. The log.cleaner.threads cleaner goroutines have their own
// routine.Group, started by Manager.Start and stopped first by Close (a
// cleaning stops at its next read; a swap under way finishes), so no swap
// runs while logs close. On Linux each cleaner goroutine is locked to its
// OS thread, which runs at nice 19: compaction takes the CPU the request
// path leaves rather than an equal share of it (threads the runtime starts
// from a locked thread do not inherit that priority).
//
// # Start-up and recovery
//
// NewManager loads every "<topic>-<partition>" dir of each log dir (other
// files and dirs are ignored; "-delete" dirs are removed; with TopicIDFor, a
// log whose partition.metadata names another topic ID is renamed "-stray";
// a "<topic>-<partition>.<id>-future" dir of a move between log dirs is
// removed, and the move restarted by Start, if the current log exists, and
// promoted to the partition's log if not: see future.go),
// num.recovery.threads.per.data.dir at a time. A cleaner's swap cut short
// by a crash is first completed or rolled back (completeInterruptedSwaps,
// Kafka's LogLoader: see Compaction). Leftover .deleted and .tmp files and
// index files without a .log are removed.
//
// If .kafka_cleanshutdown is present, recovery is skipped: indexes are
// trusted after a sanity check and only the active segment's tail after its
// last index entry is scanned (headers only) to find the LEO. The marker is
// then removed, so a later crash is not mistaken for a clean shutdown. It
// holds the broker epoch of the shutdown (Kafka 4's format; an empty one,
// as Kafka 3 writes, is clean too): the broker names it in its next
// registration, and the controller keeps a cleanly restarted broker among
// its partitions' eligible leader replicas (KIP-966).
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
//
// # File systems
//
// Every file goes through FS (fs.go): OSFS in production; FaultFS
// (faultfs.go) fails chosen operations and models a crash that drops
// un-synced appends, for tests; DelayFS (delayfs.go) makes every write,
// truncate and fsync wait a delay that can change at run time, the slow
// disk of `moldau dev` (only its nodes get one).
//
// # Storage errors
//
// No I/O error panics: every open, read, write, sync, truncate and rename
// error is returned (a load that fails closes what it opened). The
// Manager does its I/O through an FS that reports every error under a log
// dir (dir_failure.go, Kafka's LogDirFailureChannel). One that says the
// disk is failing — any error but a missing or existing file, a closed
// file, the end of a file, or running out of a resource (EMFILE, ENFILE,
// ENOSPC, EDQUOT, ENOMEM) on anything but an fsync — takes the whole dir
// offline until restart: its logs answer KAFKA_STORAGE_ERROR at once
// (Log.Offline, lock-free), are closed and leave the Manager (no
// retention, flush, checkpoint or cleaning touches them), the replica
// manager is told (OnDirFailure), DirInfos and OfflineDirs report the dir
// and kafka_log_logmanager_offlinelogdirectorycount counts it. Running out
// of a resource fails only the operation; a failed roll or creation leaves
// no file behind, so the next attempt, or a restart, finds the log as it
// was. A partition of an offline dir is not created anew in another dir
// (its data is in the offline one); nor is any new log while a dir whose
// partitions could not even be listed is offline.
//
// OnDirOffline tells the broker of each failed dir with the dirs still
// online: with none left, or when the failed dir holds the metadata log,
// the broker stops (Kafka's LogManager and ReplicaManager halt then).
//
// At start-up a dir that cannot be loaded is offline with its partitions;
// if every dir is, NewManager fails, naming each dir's cause. Too many open
// files fails it at once with a *FileLimitError giving the segments (one
// open file each), the descriptors needed and the open-file limit.
//
// # Scrubbing
//
// The log scrubber (scrubber.go; moldau.log.scrub.*, not in Kafka) reads
// every closed segment in the background, throttled, a pass at start-up
// and then every interval, and checks each batch as recovery does: header,
// length, CRC-32C, offsets within the segment. A corrupt batch is logged
// once (partition, segment file, offset, position, reason), counted in
// moldau_log_scrubber_corrupt_batches_total and remembered by its log
// while the segment exists (Log.CorruptBatches, CorruptBatchIn), so that
// the replica manager does not serve it.
//
// # Tiered storage
//
// A log with remote.storage.enable (KIP-405) has a log start offset and a
// local log start offset below which its records are only in remote
// storage; local.retention.* delete only segments the RemoteLogManager
// (package replica) reported copied, and a read between the two starts
// fails with OFFSET_MOVED_TO_TIERED_STORAGE for the caller to serve from
// remote storage. A follower starting over past its leader's local start
// takes the leader epochs and producer state below it from a remote
// segment's indexes (RestoreRemoteLogAuxState). Loading keeps the leader
// epochs down to the checkpointed log start (none: 0, as Kafka's
// LogLoader), not the first local offset: a restart that lost the
// checkpoint entry, or loads a log before its topic's config says tiered,
// still answers OffsetForLeaderEpoch below the local start once the log
// start is known again (SetConfig, RestoreLogStartFromRemote, which cut
// the epochs there). tiered.go has the rules.
//
// # Compaction
//
// The LogCleaner (cleaner.go; Kafka's LogCleaner, LogCleanerManager and
// Cleaner) compacts the logs whose cleanup.policy has compact, keeping
// the newest record of every key. Each of log.cleaner.threads goroutines
// repeatedly takes the log with the highest cleanable ratio (dirty bytes
// over total) above min.cleanable.dirty.ratio, or one whose oldest dirty
// segment is older than max.compaction.lag.ms, and cleans
// [first dirty offset, first uncleanable offset): the first dirty offset
// comes from cleaner-offset-checkpoint (the log start if none or invalid);
// the first uncleanable offset is the lowest of the last stable offset,
// the active segment's base and the base of the first segment whose newest
// record is within min.compaction.lag.ms of now, rounded down to a segment
// base. A partition is cleaned by one thread at a time; it can be paused
// (AbortAndPauseCleaning) and is aborted when its log is deleted or its
// policy loses compact. A truncation under a pass makes the pass give up
// (the segments it read changed); one below the checkpoint lowers it.
//
// A pass (cleaner_clean.go) first maps the MD5 of each key in the dirty
// range to its last offset (the offset map, skimpyOffsetMap: 24 bytes an
// entry, log.cleaner.dedupe.buffer.size split between the threads, filled
// to log.cleaner.io.buffer.load.factor; if it fills, the pass stops there
// and the next one goes on). Then every segment from the log's first to
// the end of the mapped range is rewritten, in groups whose data and
// indexes fit one segment, each group into one new segment. Segments are
// read in chunks of log.cleaner.io.buffer.size / threads / 2 (grown up to
// message.max.bytes, or to a larger batch); reads and writes of all
// threads together are throttled to log.cleaner.io.max.bytes.per.second.
// A record is kept if the map does not cover it, or it is the newest of
// its key and has a value, or it is a tombstone whose batch has no delete
// horizon yet or one that has not passed. A batch that keeps all its
// records (and needs no horizon) is copied byte for byte; one that lost
// records is rebuilt with the same codec, base offset, last offset,
// producer id, epoch and base sequence; a batch holding a kept tombstone
// gets the delete horizon now + delete.retention.ms as its base timestamp
// (KIP-534), so a tombstone survives one cleaning and goes at the first
// one after its horizon. Empty batches are dropped, except the last batch
// of an active producer (its sequence and epoch must survive, Kafka's
// isBatchLastRecordOfProducer), the last batch before the first
// uncleanable offset (Kafka), and the last batch of each group (ours: the
// cleaned segment then always reaches the end of the segments it
// replaces, which start-up relies on; Kafka misses segments replaced by a
// segment that ends early if it crashes mid-swap).
//
// Transactions follow Kafka's CleanedTransactionMetadata: the aborted
// transactions of the range come from the transaction index
// (Log.collectAbortedTransactions); their data batches are dropped at once
// (and not mapped); an ABORT marker stays while a batch of its
// transaction was seen in the pass, a COMMIT marker while batches of its
// transaction remain, then the marker gets a delete horizon and goes after
// it, like a tombstone (two passes). The aborted transactions come from
// the .txnindex files (Log.AbortedTransactions).
//
// The swap (Log.replaceSegments, Kafka's replaceSegments) is crash safe:
// the cleaned files are fsynced, renamed .cleaned → .swap (log file
// first) and the dir fsynced; the old segments' files are renamed
// .deleted (they stay open for readers); the .swap files are renamed to
// their final names and the dir fsynced; only then is the segment list
// changed, and the old files closed and removed after
// file.delete.delay.ms, so fetches reading them go on. At start-up, .swap
// files at or above the lowest .cleaned one are deleted with every
// .cleaned file (the swap is rolled back: the old segments are whole);
// the other .swap files are complete: every segment file in the offset
// range of a .log.swap is deleted and the .swap files renamed (the swap
// is completed). A failure in the middle of a swap takes the log offline
// until restart, as Kafka takes its log dir offline. A cleaning that fails
// otherwise marks its partition uncleanable until it is deleted or the
// broker restarts.
//
// Where this differs from Kafka on purpose: cleaner threads run at the
// lowest CPU priority (above); the offset map is sized for
// the offsets of the dirty range (within the budget) rather than always
// allocated and cleared whole; the cleaned segment keeps the last batch
// of its group (above); a cleaning with a corrupt batch (bad CRC, records
// not matching the header) fails instead of copying it; a panic in a
// cleaning marks the partition uncleanable instead of killing the thread;
// segment modification times are not carried over (they matter to Kafka
// only for magic < 2 tombstones).
package log
