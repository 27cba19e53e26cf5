// Package metadata holds the cluster metadata of a Moldau broker: topics,
// their IDs, partitions and replica assignments, topic configs, dynamic
// broker configs and producer-ID blocks. It is the home of what Kafka keeps
// in its KRaft metadata log (__cluster_metadata); today it is one node's
// durable store, and the Raft quorum will replace its persistence.
//
// # Persistence
//
// The whole state is one JSON file, cluster-metadata.json, in
// Options.Dir (metadata.log.dir, or the first of log.dirs). Every change
// rewrites it atomically: the new state is written to
// cluster-metadata.json.tmp, fsynced, renamed over the file, and the
// directory is fsynced, so a crash leaves either the old or the new state.
// Open loads the file; a missing file is an empty cluster, a file that does
// not parse is an error naming the file (the store never silently resets
// metadata). A file written by another node id is refused. Topic IDs are
// written as Kafka writes UUIDs (URL-safe base64 without padding).
//
// This persistence is a stand-in: the KRaft-style quorum (a replicated
// metadata log of records such as TopicRecord, PartitionRecord,
// ConfigRecord and ProducerIdsRecord, with snapshots) will replace the
// file, and the Store API is shaped so that its callers do not change.
//
// # Guarantees
//
// A mutating method returns only after its change is durable and after
// every listener (Subscribe) has been called with it. Listeners are called
// in the order of the changes, one change at a time, outside the store's
// lock, so they may read the store; they must not change it (that would
// deadlock) and should be quick. Errors wrap kerr sentinels
// (TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS,
// INVALID_REPLICA_ASSIGNMENT, ...) for kapi to turn into codes; a failed
// write leaves the in-memory state unchanged.
//
// # Concurrency
//
// A Store is safe for concurrent use. Lock order: Store.notifyMu before
// Store.mu; listeners run holding notifyMu only.
package metadata
