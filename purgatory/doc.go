// Package purgatory holds requests that wait for a condition or a deadline: Kafka's
// DelayedOperation, DelayedOperationPurgatory, and the hierarchical timing wheel behind them
// (TimingWheel, TimerTaskList, SystemTimer).
//
// # Model
//
// A DelayedOperation (DelayedProduce, DelayedFetch, DelayedJoin, ...) embeds Operation and
// implements TryComplete, OnComplete and OnExpiration. The operations live with the state
// they wait on (replica.DelayedFetch and replica.DelayedProduce next to the ReplicaManager);
// this package is only the mechanism. A request handler calls
// Purgatory.TryCompleteElseWatch(op, keys); whoever changes the state an operation waits on
// (an append moving the high watermark, a follower fetch, a member joining) calls
// Purgatory.CheckAndComplete(key) afterwards. If nothing completes the operation, the timer
// expires it after its timeout.
//
// # Guarantees
//
//   - Exactly once: an operation completes once, whichever of TryComplete (from any number of
//     goroutines), ForceComplete and expiry gets there first; OnComplete runs once, and
//     ForceComplete returns true only to the caller that completed it.
//   - Expiry calls OnExpiration, then OnComplete, on an expiration worker goroutine, never on
//     a caller's goroutine. (Kafka runs onComplete first; see DelayedOperation.OnExpiration.)
//   - TryComplete calls for one operation are serialized by the operation's lock (private, or
//     shared via InitWithLock). Expiry and ForceComplete do not take that lock.
//   - No lost wake-up: TryCompleteElseWatch tries, watches on every key, and tries again, all
//     under the operation's lock; a state change followed by CheckAndComplete on any key
//     either is seen by the second try or finds the operation watched.
//   - Deadlines: an operation never expires before its timeout; it expires within about one
//     tick (1ms) after it when the expiration workers keep up.
//   - Memory: an operation completing early is removed from the timer at once (its timer
//     entry is cancelled). Completed operations leave the watcher list of a key when
//     CheckAndComplete visits it, and all lists are purged when more than PurgeInterval
//     completed operations may remain on them; the reaper checks at least every 200ms.
//   - Close stops every goroutine it started and returns when they have exited; it is
//     idempotent. Like Kafka's shutdown it does not complete waiting operations; an owner
//     that wants them answered first makes their TryComplete say so and calls
//     CheckAndCompleteAll (the replica manager does at shutdown).
//
// # Goroutines
//
// Each Purgatory (through its SystemTimer) runs one reaper goroutine, which sleeps until the
// earliest bucket of the timing wheel is due (or 200ms), advances the wheel and purges
// watcher lists when due, and ExpirationWorkers goroutines (default 1, as Kafka's single-thread
// executor) that run expired operations. The reaper hands them work through an unbounded FIFO,
// so a slow OnComplete (a DelayedFetch reading the log) delays other expirations but never
// the clock. A panic in OnExpiration or OnComplete on a worker is recovered and logged.
//
// # Lock order
//
// A lock may be held while taking a lock to its right, never the reverse:
//
//	caller's state locks (partition, group) → [released before calling into the purgatory]
//	operation lock (Operation.Init/InitWithLock) → watcher shard lock (one of 512)
//	wheelTimer lock → TimerTask lock → timer bucket lock
//
// CheckAndComplete snapshots a key's list under the shard lock, releases it, then takes each
// operation's lock in turn. Therefore:
//
//   - Never call CheckAndComplete or TryCompleteElseWatch while holding a partition lock, a
//     group lock, or any lock that TryComplete or OnComplete takes: it runs TryComplete (and
//     maybe OnComplete) on the calling goroutine. Kafka's ReplicaManager completes delayed
//     requests after releasing the partition's leaderIsrUpdateLock for this reason.
//   - Go mutexes are not reentrant: with InitWithLock(self, d, groupLock), the caller must not
//     hold groupLock when calling into the purgatory (Kafka's ReentrantLock allowed it).
//   - TryComplete and OnComplete must not call TryCompleteElseWatch or CheckAndComplete for a
//     key the operation is watched on, and must not block for long.
//
// # Thread-safety
//
// All exported methods of Purgatory, SystemTimer, TimerTask and Operation are safe for
// concurrent use once Init has returned. The package has no global state: purgatories and
// timers are independent, so several brokers can run in one process; gauges go to the
// Registerer given in Options.
package purgatory
