// Package replica is Moldau's ReplicaManager: the partitions this broker
// hosts, their leader state, the high watermark, and the produce and fetch
// paths on top of the partition logs.
//
// Today a broker is a single node, so every partition is led here, the ISR
// is this node, and the high watermark moves to the log end offset right
// after each append. The paths are built for followers all the same: an
// acks=all produce waits in the DelayedProduce purgatory until the high
// watermark passes its last offset, and a fetch waits in the DelayedFetch
// purgatory until fetch.min.bytes are available below the high watermark or
// fetch.max.wait.ms passes.
//
// Thread-safety: a Manager is safe for concurrent use. Partitions are held
// in a sync.Map, so the produce and fetch paths find them without a lock,
// and appends to different partitions never contend (each log has its own
// lock). The Manager holds no lock of its own on these paths;
// purgatory.CheckAndComplete is never called while a log's lock is held.
package replica
