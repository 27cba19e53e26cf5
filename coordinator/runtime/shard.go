package runtime

import (
	"log/slog"
	"time"

	"github.com/moldau/moldau/log"
)

// Shard is a coordinator's state machine for one partition of its internal
// topic (Kafka's CoordinatorShard). The runtime calls its methods only from
// the shard's goroutine (or, while loading, from the loader's), never
// concurrently.
type Shard interface {
	// Replay applies one record of the partition: the only way durable
	// state changes. value nil is a tombstone. producerID is -1 unless
	// the record was written in a transaction, which a later
	// ReplayEndTransactionMarker commits or aborts. An error fails the
	// write (and reloads the shard) or the load.
	Replay(offset, producerID int64, producerEpoch int16, key, value []byte) error
	// ReplayEndTransactionMarker applies a transaction marker (a control
	// record) of producerID: commit or abort.
	ReplayEndTransactionMarker(producerID int64, producerEpoch int16, commit bool) error
	// OnLoaded is called once the partition has been replayed and the
	// shard becomes active: the moment to schedule timers (session
	// timeouts, offset expiry).
	OnLoaded()
	// OnUnloaded is called when the shard stops being active (resignation,
	// shutdown, or a reload after a failed write): answer whatever
	// responses it still holds.
	OnUnloaded()
}

// ShardContext is what a shard is built with.
type ShardContext struct {
	TopicPartition log.TopicPartition
	// Epoch is the partition leader epoch the shard was elected at.
	Epoch int32
	// Timer schedules operations on the shard's goroutine.
	Timer  Timer
	Now    func() time.Time
	Logger *slog.Logger
}

// State is a shard's state (Kafka's CoordinatorState).
type State int8

const (
	// StateNone: no shard (for Metrics transitions).
	StateNone State = iota
	// StateInitial: created, not yet loading.
	StateInitial
	// StateLoading: replaying the partition; operations fail with
	// COORDINATOR_LOAD_IN_PROGRESS.
	StateLoading
	// StateActive: serving operations.
	StateActive
	// StateFailed: the load failed and is retried after a back-off;
	// operations fail with COORDINATOR_LOAD_IN_PROGRESS meanwhile.
	StateFailed
	// StateClosed: unloaded; operations fail with NOT_COORDINATOR.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateInitial:
		return "initial"
	case StateLoading:
		return "loading"
	case StateActive:
		return "active"
	case StateFailed:
		return "failed"
	case StateClosed:
		return "closed"
	}
	return "none"
}

// Record is one record of the internal topic: key and value exactly as
// written. A nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Void is the response type of operations that answer nothing (timers).
type Void struct{}

// Result is what a write operation returns (Kafka's CoordinatorResult).
type Result[T any] struct {
	// Records to append, in one batch with the records of the
	// operations around it; they are replayed into the shard before the
	// next operation runs.
	Records []Record
	// Response goes to the caller once Records are committed.
	Response T
	// NoReplay: the operation already changed the shard's memory, so the
	// records are only written (Kafka's replayRecords=false; the classic
	// group protocol works this way, its in-memory state being richer
	// than its records).
	NoReplay bool
	// OnWritten, if set, runs on the shard's goroutine once Records are
	// committed (nil) or have failed (the error), before the response is
	// sent (Kafka's appendFuture).
	OnWritten func(err error)
}
