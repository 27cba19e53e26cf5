package replica

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
)

// ListOffsetsPartition is one partition of a ListOffsets request.
type ListOffsetsPartition struct {
	TopicPartition
	CurrentLeaderEpoch int32
	Timestamp          int64
}

// ListOffsetsResult answers one ListOffsetsPartition.
type ListOffsetsResult struct {
	log.TimestampOffset
	Err error
}

// ListOffsets answers the partitions of a ListOffsets request (Kafka's
// ReplicaManager.fetchOffset). What the local logs answer is answered at
// once; a search by timestamp that must look in remote storage runs on a
// goroutine of its own, at most remote.log.reader.threads reading at
// once, and respond gets every result once the searches ended or timeout
// passed, a search still running then answering REQUEST_TIMED_OUT
// (Kafka's DelayedRemoteListOffsets; timeout <= 0 is
// remote.list.offsets.request.timeout.ms). So a slow store never holds a
// request handler. respond runs on the caller's goroutine when nothing
// is searched remotely, else on another.
func (m *Manager) ListOffsets(parts []ListOffsetsPartition, isolation int8, replicaID int32, timeout time.Duration, respond func([]ListOffsetsResult)) {
	results := make([]ListOffsetsResult, len(parts))
	var searches []int
	queries := make([]*remoteListOffset, len(parts))
	for i, lp := range parts {
		to, q, err := m.prepareListOffset(lp.TopicPartition, lp.CurrentLeaderEpoch, lp.Timestamp, isolation, replicaID)
		results[i] = ListOffsetsResult{TimestampOffset: to, Err: err}
		if q != nil {
			queries[i] = q
			searches = append(searches, i)
		}
	}
	if len(searches) == 0 {
		respond(results)
		return
	}
	if timeout <= 0 {
		timeout = queries[searches[0]].rl.cfg.ListOffsetsTimeout
	}
	d := &delayedRemoteListOffsets{results: results, pending: map[int]bool{}, all: make(chan struct{})}
	for _, i := range searches {
		d.pending[i] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	for _, i := range searches {
		q := queries[i]
		if !m.bg.Go(func(<-chan struct{}) { d.complete(i)(q.search(ctx)) }) {
			d.complete(i)(log.TimestampOffset{}, fmt.Errorf("%w: the broker is shutting down", kerr.NotLeaderForPartition))
		}
	}
	if !m.bg.Go(func(stop <-chan struct{}) {
		sctx, scancel := routine.Context(stop)
		defer scancel()
		select {
		case <-d.all:
		case <-ctx.Done():
		case <-sctx.Done():
		}
		cancel()
		respond(d.expire(timeout))
	}) {
		cancel()
		respond(d.expire(timeout))
	}
}

// delayedRemoteListOffsets gathers the remote searches of one request.
type delayedRemoteListOffsets struct {
	mu      sync.Mutex
	results []ListOffsetsResult
	pending map[int]bool  // the searches not finished
	all     chan struct{} // closed when none is pending
	expired bool
}

// complete returns the setter of search i's result; after expire it
// does nothing.
func (d *delayedRemoteListOffsets) complete(i int) func(log.TimestampOffset, error) {
	return func(to log.TimestampOffset, err error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.expired || !d.pending[i] {
			return
		}
		d.results[i] = ListOffsetsResult{TimestampOffset: to, Err: err}
		delete(d.pending, i)
		if len(d.pending) == 0 {
			close(d.all)
		}
	}
}

// expire ends the gathering: a search not finished answers
// REQUEST_TIMED_OUT. It returns the results, which no search changes
// afterwards.
func (d *delayedRemoteListOffsets) expire(timeout time.Duration) []ListOffsetsResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expired = true
	for i := range d.pending {
		d.results[i] = ListOffsetsResult{Err: fmt.Errorf("%w: the search in remote storage did not end within %v", kerr.RequestTimedOut, timeout)}
	}
	return d.results
}
