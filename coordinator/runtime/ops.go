package runtime

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
)

// Write runs op on partition's shard, on the shard's goroutine with
// exclusive access to it (Kafka's scheduleWriteOperation). The records op
// returns are replayed into the shard (unless Result.NoReplay) and appended
// to the partition in one batch; done gets the response once that batch is
// committed, or an error: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// op's own error, or the append's. An op that returns no records completes
// once every write before it is committed. done runs on the shard's
// goroutine (or the caller's, if the partition has no shard here) and must
// not block.
func Write[S Shard, T any](rt *Runtime[S], name string, partition int32, op func(S) (Result[T], error), done func(T, error)) {
	var zero T
	c := rt.context(partition)
	if c == nil || !c.enqueue(func() { runWrite(c, name, op, done) }) {
		done(zero, notCoordinator(rt.tp(partition)))
	}
}

// WriteTransactional is Write for an operation whose records belong to a
// producer's transaction (Kafka's scheduleTransactionalWriteOperation, for
// TxnOffsetCommit): they are replayed with producerID and appended in a
// transactional batch of their own with the producer's id and epoch, which
// a later CompleteTransaction commits or aborts. Result.NoReplay is not
// honoured: transactional records are always replayed.
func WriteTransactional[S Shard, T any](rt *Runtime[S], name string, partition int32, producerID int64, producerEpoch int16, op func(S) (Result[T], error), done func(T, error)) {
	var zero T
	c := rt.context(partition)
	if c == nil || !c.enqueue(func() { runWriteAs(c, name, producerID, producerEpoch, op, done) }) {
		done(zero, notCoordinator(rt.tp(partition)))
	}
}

// CompleteTransaction writes a producer's COMMIT (commit) or ABORT marker to
// partition (Kafka's scheduleTransactionCompletion, which WriteTxnMarkers
// calls for the coordinators' own partitions): the shard replays it
// (Shard.ReplayEndTransactionMarker) and done gets nil once the marker is
// committed, or an error: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// or the log's (a stale producer epoch, TRANSACTION_COORDINATOR_FENCED).
// done runs on the shard's goroutine (or the caller's) and must not block.
func CompleteTransaction[S Shard](rt *Runtime[S], partition int32, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, done func(error)) {
	c := rt.context(partition)
	run := func() {
		if err := c.activeErr(); err != nil {
			done(err)
			return
		}
		c.completeTransaction(producerID, producerEpoch, coordinatorEpoch, commit, waiter{complete: done})
	}
	if c == nil || !c.enqueue(run) {
		done(notCoordinator(rt.tp(partition)))
	}
}

func runWrite[S Shard, T any](c *shardContext[S], name string, op func(S) (Result[T], error), done func(T, error)) {
	runWriteAs(c, name, -1, -1, op, done)
}

func runWriteAs[S Shard, T any](c *shardContext[S], name string, producerID int64, producerEpoch int16, op func(S) (Result[T], error), done func(T, error)) {
	var zero T
	if err := c.activeErr(); err != nil {
		done(zero, err)
		return
	}
	var res Result[T]
	err := c.guard(name, func() error {
		var err error
		res, err = op(c.shard)
		return err
	})
	if err != nil {
		done(zero, err)
		return
	}
	c.writeAs(name, producerID, producerEpoch, res.Records, !res.NoReplay || producerID >= 0, waiter{
		onWritten: res.OnWritten,
		complete: func(err error) {
			if err != nil {
				done(zero, err)
				return
			}
			done(res.Response, nil)
		},
	})
}

// Read runs op on partition's shard, on the shard's goroutine, and sends
// its response once every write before it is committed, so a reader never
// sees state that could still be lost (Kafka reads the last committed
// state instead; what a client can observe is the same). op must not
// change the shard.
func Read[S Shard, T any](rt *Runtime[S], name string, partition int32, op func(S) (T, error), done func(T, error)) {
	var zero T
	c := rt.context(partition)
	if c == nil || !c.enqueue(func() { runRead(c, name, op, done) }) {
		done(zero, notCoordinator(rt.tp(partition)))
	}
}

func runRead[S Shard, T any](c *shardContext[S], name string, op func(S) (T, error), done func(T, error)) {
	var zero T
	if err := c.activeErr(); err != nil {
		done(zero, err)
		return
	}
	var resp T
	err := c.guard(name, func() error {
		var err error
		resp, err = op(c.shard)
		return err
	})
	if err != nil {
		done(zero, err)
		return
	}
	c.deferUntilCommitted(waiter{complete: func(err error) {
		if err != nil {
			done(zero, err)
			return
		}
		done(resp, nil)
	}})
}

// PartitionResult is one shard's answer to ReadAll or WriteAll.
type PartitionResult[T any] struct {
	Partition int32
	Response  T
	Err       error
}

// ReadAll runs op as a Read on every shard hosted here and calls done once
// with every shard's result, in partition order (Kafka's
// scheduleReadAllOperation).
func ReadAll[S Shard, T any](rt *Runtime[S], name string, op func(S) (T, error), done func([]PartitionResult[T])) {
	forAll(rt, done, func(p int32, cb func(T, error)) { Read(rt, name, p, op, cb) })
}

// WriteAll runs op as a Write on every shard hosted here and calls done
// once with every shard's result, in partition order (Kafka's
// scheduleWriteAllOperation).
func WriteAll[S Shard, T any](rt *Runtime[S], name string, op func(S) (Result[T], error), done func([]PartitionResult[T])) {
	forAll(rt, done, func(p int32, cb func(T, error)) { Write(rt, name, p, op, cb) })
}

// WriteAllWhenLoaded is WriteAll for the coordinator's own clean-up (the
// offsets of deleted topics): on a shard that is loading it waits for the
// load instead of failing with COORDINATOR_LOAD_IN_PROGRESS, as no client
// will retry it.
func WriteAllWhenLoaded[S Shard, T any](rt *Runtime[S], name string, op func(S) (Result[T], error), done func([]PartitionResult[T])) {
	forAll(rt, done, func(p int32, cb func(T, error)) {
		var zero T
		c := rt.context(p)
		if c == nil || !c.enqueue(func() { c.whenLoaded(func() { runWrite(c, name, op, cb) }) }) {
			cb(zero, notCoordinator(rt.tp(p)))
		}
	})
}

func forAll[S Shard, T any](rt *Runtime[S], done func([]PartitionResult[T]), run func(int32, func(T, error))) {
	parts := rt.Partitions()
	if len(parts) == 0 {
		done(nil)
		return
	}
	results := make([]PartitionResult[T], len(parts))
	var n atomic.Int64
	for i, p := range parts {
		run(p, func(resp T, err error) {
			results[i] = PartitionResult[T]{Partition: p, Response: resp, Err: err}
			if n.Add(1) == int64(len(parts)) {
				done(results)
			}
		})
	}
}

// guard runs fn, turning a panic (a bug in the shard) into an
// UNKNOWN_SERVER_ERROR for this operation and a reload of the shard, whose
// memory may be half-changed; the broker keeps running, as Kafka's event
// processor catches what an operation throws.
func (c *shardContext[S]) guard(name string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.rt.log.Error("coordinator operation panicked; reloading the shard", "op", name,
				"partition", c.partition, "panic", r, "stack", string(debug.Stack()))
			err = apierr.Errorf(kerr.UnknownServerError, "operation %s failed: %v", name, r)
			c.reload(fmt.Sprintf("operation %s panicked", name))
		}
	}()
	return fn()
}
