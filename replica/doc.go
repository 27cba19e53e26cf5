// Package replica is Moldau's ReplicaManager: the partitions this broker
// hosts, their leader state, the high watermark, and the produce and fetch
// paths on top of the partition logs.
//
// The metadata decides what is hosted here: the Manager is a metadata
// publisher (publisher.go, Kafka's applyDelta). A partition whose replicas
// include this broker gets a log; it serves produce and consumer fetches
// only while the metadata names this broker its leader, at the leader
// epoch the metadata gives; otherwise clients get NOT_LEADER_OR_FOLLOWER
// (UNKNOWN_TOPIC_OR_PARTITION if the cluster has no such partition).
// Deleted topics and partitions moved away lose their logs; logs the
// metadata does not know are deleted once the broker has caught up
// (DeleteStrayLogs). Every such decision is taken from the image the
// update brings, which is the present: at start-up the metadata loader
// publishes the replayed log as one update (metadata.Loader.
// HoldUntilCaughtUp), so the manager never sees an older topic of a name
// that was deleted and created again, and a log whose partition.metadata
// names the image's topic id is never deleted. A delete renames the
// partition's dir aside ("-delete", with a unique suffix) at once and
// removes it after file.delete.delay.ms, never touching a newer dir of
// the same name.
//
// # Replication
//
// Each partition has the replicas the metadata assigns (Kafka's
// Partition). As leader (leader.go, partition.go) the broker keeps every
// follower's fetch state (Kafka's Replica: log end, last caught-up time),
// and the high watermark is the least log end offset over the ISR the
// controller committed, plus what an expansion in flight adds (Kafka's
// maximal ISR), plus followers that are caught up and eligible; it never
// moves back, and it does not move at all while the committed ISR is
// smaller than min.insync.replicas (at most the replication factor, as
// Kafka's effectiveMinIsr): the replicas that left the ISR meanwhile then
// hold every committed record, which is what lets the controller elect
// them (KIP-966's eligible leader replicas). An acks=all produce waits in the produce purgatory as a
// DelayedProduce until the high watermark passes its last offset; it is
// refused with NOT_ENOUGH_REPLICAS before the append while the ISR is
// smaller than that, and answered
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below it while it
// waited. A follower joins the ISR once its log end has reached the high
// watermark and the start of the leader's epoch, and leaves it when it has
// not caught up for replica.lag.time.max.ms; both go to the controller as
// AlterPartition (v3, with broker epochs, KIP-903) and count only once the
// controller has answered or its PartitionChangeRecord arrives, one
// proposal at a time. Only registered, unfenced brokers that are not
// shutting down may join (KIP-841). Appends as leader hold the partition's
// replication lock for reading, so leadership does not change under one.
//
// As follower (fetcher.go) a partition is fetched by one of
// num.replica.fetchers ReplicaFetcherThreads per leader, each with its own
// connection to the leader's inter-broker listener, in sessionless Fetch
// v17 requests that carry this broker's id and epoch (replica_state). The
// batches are appended as the leader wrote them (offsets, leader epochs,
// producer state kept: log.AppendAsFollower), the high watermark follows
// the leader's, and the log start follows the leader's once below the
// high watermark. A log that diverged is told where by the leader's
// diverging_epoch (KIP-320: the leader compares the fetcher's last fetched
// epoch with its leader-epoch cache, for consumers too) and truncated there
// (Kafka's getOffsetTruncationState); a fetch offset the leader does not
// have (OFFSET_OUT_OF_RANGE) truncates to the leader's end or starts over
// at its log start. A fetch from a replica the partition does not have,
// or from a broker epoch that is not the registered one, is refused with
// NOT_LEADER_OR_FOLLOWER and moves nothing.
//
// Fetch from the closest replica (KIP-392, replica_selector.go): a
// consumer's fetch of v11 or later (it has client metadata, the rack it
// names) may be served by a follower, up to the follower's high watermark,
// and a follower whose high watermark moves completes the delayed fetches
// waiting on it. With replica.selector.class set to Kafka's
// RackAwareReplicaSelector, a leader answers a consumer in another
// replica's rack with no records and preferred_read_replica: the most
// caught-up in-sync, unfenced replica in that rack that holds the fetch
// offset.
//
// A fetch waits in the fetch purgatory as a DelayedFetch until
// fetch.min.bytes are available below the high watermark (below the log
// end for a follower) or fetch.max.wait.ms passes. Both delayed types live
// here (delayed_fetch.go, delayed_produce.go), next to the state they
// read; the purgatory package is only the mechanism. A follower's fetch
// that moves the high watermark completes the delayed produces and
// fetches of its partition, never under the partition's lock.
//
// # Transactions
//
// A read_committed fetch (FetchParams.ReadCommitted) reads up to the last
// stable offset and returns the aborted transactions overlapping what it
// read; its DelayedFetch counts the bytes below the LSO, so a COMMIT or
// ABORT marker that moves the LSO wakes it. Every fetch reports the LSO;
// ListOffsets "latest" is the LSO for read_committed. Markers come from the
// transaction coordinator through WriteTxnMarkers (txn.go): a control
// batch per partition appended with log.AppendOriginCoordinator and
// acks=all, so internal topics are allowed and the producer and
// coordinator epochs are checked by the log. DescribeProducers reads each
// partition's producer state (ActiveProducers).
//
// # No missed wake-up
//
// A DelayedFetch records where each fetch offset is in the log (Kafka's
// LogOffsetMetadata: segment and byte position, from the first read) and
// TryComplete compares it with the high watermark's position as it is
// then (log.Log.FetchOffsetSnapshot), never with counters taken at
// another moment. An append moves the high watermark before it calls
// CheckAndComplete on the fetch purgatory, and the purgatory tries an
// operation again after watching it, so every append is seen either by
// the fetch's own tries or by the append's CheckAndComplete.
//
// # Offline partitions and corrupt batches
//
// A partition whose log dir failed, or whose log could not be created
// (too many open files, a full disk, its dir offline), is offline here:
// produce, fetch, ListOffsets and DeleteRecords answer KAFKA_STORAGE_ERROR
// and the waiting fetches and produces on it are answered at once, while
// the other partitions serve. A failed creation is retried every
// Config.RetryInterval until it succeeds (offline.go), logged once per
// metadata update and once when partitions come back;
// kafka_server_replicamanager_offlinereplicacount counts the offline
// partitions, and IsOffline tells Metadata to list this broker in their
// offline_replicas. Metadata updates and retries are serialised by stateMu
// (Kafka's replicaStateChangeLock); produce and fetch never take it.
//
// A fetch never returns a batch the log scrubber found corrupt: it stops
// before it, and a fetch from it answers CORRUPT_MESSAGE naming its offset
// (Kafka serves it and leaves the client's CRC check to fail, which
// librdkafka does not make by default). Damage not found yet is served,
// as Kafka serves it: fetch data goes by sendfile, unread.
//
// # Tiered storage
//
// remote_log_manager.go is Kafka's RemoteLogManager for a tiered log (see
// package log's "Tiered storage" and package log/remote): it copies the
// closed segments below the last stable offset to remote storage, each
// registered COPY_SEGMENT_STARTED before and COPY_SEGMENT_FINISHED after,
// and only then tells the log the highest offset copied, so local
// retention never deletes what the store does not hold; it expires remote
// segments by the total retention and the log start offset, cleaning up
// copies that never finished (wherever they are among the segments
// retention keeps) and deletions cut short; and it reads batches back from
// the store.
//
// remote_log_metadata.go is Kafka's TopicBasedRemoteLogMetadataManager:
// events go to __remote_log_metadata (created on first use: 50 partitions,
// replication factor 3 capped to the brokers registered, cleanup.policy
// delete, retention.ms -1; the rlmm.config. properties
// remote.log.metadata.topic.*), placed by remote.MetadataPartition. A
// write is appended with acks=all and returns once the local replica's
// events up to the high watermark are applied to the store; reads apply
// what the log holds beyond that first, and after a restart the first
// read replays the partition, rebuilding the store. A replica neither led
// here nor fetched from its leader yet is not read (its high watermark may
// predate a restart).
//
// remote_log_tasks.go runs it (StartRemoteLog, called by the broker with
// remote.log.storage.system.enable): every
// remote.log.manager.task.interval.ms, and at once after a metadata
// update makes this broker lead a tiered partition (as Kafka schedules a
// new leader's copy task with no delay), for each partition led here whose
// topic has remote.storage.enable, at most remote.log.manager.thread.pool.size
// at once, a new leader first sets the highest offset copied (and the log
// start, if the checkpoint lacked it after a crash) from the remote
// metadata, then copies and expires, stopping as soon as its leadership at
// that epoch goes. A consumer fetch below the local log start is read from
// the store on a goroutine (at most remote.log.reader.threads at once,
// remote.log.reader.max.pending.tasks waiting; over that the partition
// answers empty), one remote partition per fetch as Kafka's
// DelayedRemoteFetch, the others empty; a read that outlasts
// remote.fetch.max.wait.ms is given up and answers empty. The quotas
// (Kafka's RLMQuotaManager): over remote.log.manager.copy.max.bytes.per.second
// the next copy waits, over remote.log.manager.fetch.max.bytes.per.second
// a consumer fetch gets nothing from the store until the rate is under it. Remote reads
// keep the segments' offset and time indexes in an in-memory cache
// (remote_index_cache.go, 64 MiB), and the stream of each remote segment
// a consumer reads in order (remote_read_ahead.go, a RemoteLogInputStream
// kept between fetches): keyed by segment id and the offset where the
// last fetch ended, so the consumer's next fetch continues it without
// opening the object, looking up the index or reading a byte twice (a
// batch past maxBytes stays buffered); after each fetch it reads ahead,
// on a goroutine of the RemoteLogManager's, up to that fetch's size (1
// MiB at most). Streams are opened on the RemoteLogManager's context,
// which its Close (from the Manager's) ends, never a request's; a
// request that ends mid-read drops the stream it was reading. At most 64
// idle streams are kept, least recently used closed first; one idle 30 s
// is closed (within 45 s), one whose segment is deleted at once, one whose read fails
// is dropped and the fetch read again from a new stream. The records go
// to the socket from the stream's buffer: the part returned is never
// written again (later reads land past it, or in a new buffer). The
// read-ahead's lock is a leaf: the store is never called under it, and a
// fetch waits for a running read-ahead of its stream outside it. ListOffsets -2 answers the log start
// below the local one, -4 the local start, -5 the highest offset copied,
// and a timestamp is searched in the remote segments below the local
// start first (their time and offset indexes, then the batches). A
// deleted topic's partitions led here, and those of a topic whose
// remote.storage.enable was turned off (with remote.log.delete.on.disable,
// KIP-950), are deleted from the store in the background
// (DELETE_PARTITION_MARKED ... FINISHED); what a broker stopped before
// it finished is swept, every task round, by the leader of the metadata
// partition, once the topic has been gone ten intervals (at least 2 s),
// and only after the broker caught up with the metadata log. A copy
// whose leadership or tiering went while its data was copied is cleaned
// up, not finished. The meters are
// kafka_server_brokertopicmetrics_remote{copy,fetch}{bytes,requests,errors}_total
// and remotedelete{requests,errors}_total, per topic (and, counted by
// followers, buildremotelogauxstate{requests,errors}_total); the gauges
// kafka_server_brokertopicmetrics_remotecopylag{bytes,segments},
// remotelogsizebytes and remotelogmetadatacount sum, per topic, the
// partitions led here at the last task round.
//
// On several brokers: an event for a metadata partition led elsewhere is
// produced to its leader (acks=all over the inter-broker listener, see
// the broker's wiring) and the write returns once the local follower has
// applied it; followers of a tiered partition learn the highest offset
// copied from the metadata, so their local retention deletes it too; a
// follower whose log ends before the leader's local log start gets
// OFFSET_MOVED_TO_TIERED_STORAGE and starts over past that local start,
// at the end of the remote segment holding the offset below it, with its
// leader epochs and producer state below rebuilt from that segment's
// LEADER_EPOCH and PRODUCER_SNAPSHOT indexes (tier_state_machine.go,
// Kafka's TierStateMachine.buildRemoteLogAuxState; retried after
// replica.fetch.backoff.ms while the remote metadata lacks the segment). A broker that hosts no replica of a metadata partition
// (more brokers than the topic's replication factor, 3) reads it from
// its leader with a consumer's Fetch (the broker's wiring) whenever it
// needs it caught up.
//
// A ListOffsets by timestamp that must search the store (a tiered log
// with records below its local start) is Kafka's DelayedRemoteListOffsets
// (ListOffsets, list_offsets.go): each such partition is searched on a
// goroutine of its own, holding a reader slot (remote.log.reader.threads)
// while it reads, and the request is answered once every search ended or
// its timeout passed (v10's timeout_ms, else
// remote.list.offsets.request.timeout.ms), an unfinished one as
// REQUEST_TIMED_OUT; the handler pool is never held. ListOffset, for the
// broker's own callers, searches on the caller's goroutine.
//
// # Shutdown
//
// BeginShutdown (called by the broker before it drains its connections)
// answers every waiting fetch with what is there and makes new fetches
// answer at once; acks=all produces still waiting answer
// NOT_LEADER_OR_FOLLOWER.
//
// Thread-safety: a Manager is safe for concurrent use. Partitions are held
// in a sync.Map, so the produce and fetch paths find them without a lock,
// and appends to different partitions never contend (each log has its own
// lock). The Manager holds no lock of its own on these paths;
// purgatory.CheckAndComplete is never called while a log's lock is held.
package replica
