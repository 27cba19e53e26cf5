// Package share is the partition side of share groups (KIP-932): Kafka's
// SharePartition, the in-flight delivery state of one partition for one
// share group, kept by the partition's leader.
//
// # State
//
// A share partition has a start offset (the SPSO) and an end offset.
// Every record before the start offset is done with; every record from
// the start offset up to the end offset is in flight, in one of Kafka's
// RecordStates:
//
//	AVAILABLE    may be delivered (again)
//	ACQUIRED     delivered to one member, under an acquisition lock
//	ACKNOWLEDGED accepted: done
//	ARCHIVED     rejected, a gap, or past the delivery limit: done
//
// and no record at or past the end offset has been delivered. A delivery
// acquires whole log batches (a batch reaching the fetch's record limit is
// taken whole, as Kafka does) and counts up each record's delivery count.
// Acknowledgement is per range or per offset: ACCEPT acknowledges,
// RELEASE makes a record available again, REJECT and GAP archive it. A
// record released, given back when its member's session closes, or whose
// lock runs out (share.record.lock.duration.ms) after
// group.share.delivery.count.limit deliveries is archived instead of
// delivered again. At most group.share.partition.max.record.locks records
// are in flight: past that only released records are delivered. The start
// offset moves past the leading records once they are done with, and past
// records the log no longer has (retention, DeleteRecords, compaction).
//
// Moldau keeps the in-flight records as runs, ranges of consecutive
// offsets alike in state, delivery count and lock holder (where Kafka has
// a map of batches, each with an optional map of offsets): acquiring or
// acknowledging part of a run splits it and alike neighbours are merged
// again, so the state's size follows the number of distinct ranges, not
// the number of records. A randomised test checks it against a per-offset
// model of the rules.
//
// # Durability
//
// The state is durable in the share coordinator (__share_group_state):
// every change a method makes is returned as state batches, the delta
// WriteShareGroupState carries, and the caller answers the member only
// once the coordinator has written it. An acquisition is not persisted
// (nor is it in Kafka): after a leader change or a crash, acquired
// records are available again with the delivery count last persisted,
// and offsets past the last persisted batch are read again as new. So a
// record is delivered at least once, and an accepted record whose
// acknowledgement was answered is never delivered again. An
// acknowledgement of records done with already is answered only after a
// write too (the write that made them done may still be in flight), and
// the changes of a write that failed go again with the next one, so the
// durable state never stays behind the one served.
//
// An acknowledgement names offsets, not a delivery: after a crash, a
// member that acks records of a delivery made before it acks the new
// broker's acquisition of the same offsets if it holds one (Kafka's
// share fetch protocol has nothing to tell them apart). Clients drop
// acks of a share session that ended.
//
// A partition loaded from persisted state treats offsets between persisted
// batches as never delivered (Kafka's gap window): available with a
// delivery count of zero.
//
// # The manager
//
// Manager is Kafka's SharePartitionManager. It hosts the share partitions
// of the partitions this broker leads (a new leader epoch loads a share
// partition anew from the persisted state), keeps the share sessions
// (SessionCache: epoch 0 opens one, -1 closes it and gives back what its
// member holds, any other epoch must be the session's next), and serves
// ShareFetch and ShareAcknowledge: acknowledgements first, answered once
// persisted, then a read of each session partition from where its next
// delivery starts (one share fetch at a time per share partition, Kafka's
// fetch lock), acquiring whole batches up to max_records and max_bytes.
// A read_committed group (share.isolation.level) reads up to the last
// stable offset, and the records of aborted transactions it acquires with
// their batches are archived at once, never delivered. A fetch that
// acquires nothing waits, as Kafka's DelayedShareFetch, until
// new data arrives in one of its partitions (a DelayedFetch of the
// ReplicaManager), records are released or their locks expire, or its
// max wait passes. Each request runs on a goroutine of its own: a share
// fetch may wait on the persister and the log, never on the handler pool.
//
// A group's share partitions are dropped from the cache when its last
// share session here closes (Kafka's onGroupEmpty), or is evicted: a full
// cache (group.share.max.share.sessions) makes room by evicting the
// session used least recently if it has been idle for longer than
// group.share.max.session.timeout.ms (its member was killed, say). The
// next fetch loads them again from the share coordinator, so that
// AlterShareGroupOffsets and DeleteShareGroupOffsets, which only an empty
// group takes, are seen; a write fenced for its state epoch drops the
// share partition too.
//
// # A session ends with its connection
//
// As in Kafka 4.1 (ShareSessionCache's connection disconnect listener), a
// share session belongs to the connection whose ShareFetch opened it
// (epoch 0): the socket server calls SessionCache.OnDisconnect for every
// connection that closes, and the sessions opened on it are removed and
// their members' acquired records given back at once, as when the member
// closes its session with the final epoch, so other members get them
// without waiting for the acquisition lock to run out. Later requests
// of the session on other connections change nothing: only the opening
// connection counts. A session re-opened (epoch 0) on another connection
// belongs to that one, and the old connection's close leaves it alone
// (Kafka's KAFKA-19950 fix); so does one closed already. Such removals
// count in kafka_server_sharesessioncache_sharesessionevictions_total,
// with the idle evictions.
//
// OnDisconnect runs on the closing connection's goroutine: it only takes
// the sessions out under the cache's lock; the release (and the group's
// share partitions dropped if it was its last session here) runs on a
// goroutine of the manager's. A share fetch of the session in flight on
// another connection may acquire records after that release: a fetch
// that acquired anything looks at its member's session afterwards, and if
// the member has none any more, gives them back and answers
// SHARE_SESSION_NOT_FOUND. The fetch acquires before it looks and the
// session is removed before its release, so one of the two always gives
// the records back. Acknowledgements in flight are applied or refused as
// for any session that ended (records given back are no longer held).
//
// The writes of one share partition never overtake each other: one is in
// flight at a time, and the changes made meanwhile go in the next, the
// newer state of an offset overriding the older (overlay). So the
// coordinator's state only moves forward, and the start offset each
// write carries covers only records done with in memory.
//
// # Concurrency
//
// A SharePartition's methods are safe for concurrent use; each holds the
// partition's mutex for its whole run and calls nothing outside the
// package while holding it.
//
// Lock order: SessionCache.mu is never held while calling out
// (onGroupEmpty and onMemberLeave run after it is released), and
// the manager takes it only on its own, never inside Manager.mu or a
// share partition's mutex.
package share
