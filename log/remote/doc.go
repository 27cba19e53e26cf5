// Package remote is Moldau's tiered storage below the log (KIP-405): the
// remote storage interface with its implementations (a local directory,
// and S3 and S3-compatible stores), the remote segment metadata kept in
// the internal topic __remote_log_metadata, and the cache that answers
// which remote segment holds an offset. The leader-side tasks that copy
// and expire segments (Kafka's RemoteLogManager) live in package replica,
// next to the partition state they read.
//
// The stores: LocalTieredStorage (a directory; the default) and S3Storage,
// on the AWS SDK for Go v2 — the maintained S3 client with multipart
// uploads, ranged reads, and the usual credential chain (environment,
// ~/.aws files, instance roles), which we would otherwise write and keep
// up ourselves. It is tested against a real S3-compatible server
// (versitygw), which test.sh installs. The metadata: the record values of
// __remote_log_metadata in Kafka's serialized form (metadata_serde.go),
// the partitioner that places a user partition's events
// (metadata_partitioner.go), and the per-partition cache they build
// (metadata_cache.go, metadata_store.go).
//
// A stream from FetchLogSegment may be read over many fetches: package
// replica keeps the stream of the segment a consumer reads in order open
// between its fetches (up to 30 s idle) and reads it to the segment's
// end, so a segment is fetched once per consumer pass (one ranged GET on
// S3, whose connection is then reused). Its context is the
// RemoteLogManager's, not a request's; cancelling it, or Close, must end
// a read in progress and release the stream (a file, an HTTP body).
//
// The topic-based metadata manager that writes and applies
// __remote_log_metadata is replica.TopicBasedRemoteLogMetadataManager (it
// appends through the ReplicaManager and reads the metadata partitions'
// local replicas), and the broker wires it all when
// remote.log.storage.system.enable is set (broker/tiered.go): see package
// replica's "Tiered storage" for what runs and what does not yet.
package remote
