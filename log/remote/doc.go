// Package remote is Moldau's tiered storage below the log (KIP-405): the
// remote storage interface with its implementations (a local directory,
// and S3 and S3-compatible stores), the remote segment metadata kept in
// the internal topic __remote_log_metadata, and the cache that answers
// which remote segment holds an offset. The leader-side tasks that copy
// and expire segments (Kafka's RemoteLogManager) live in package replica,
// next to the partition state they read.
package remote
