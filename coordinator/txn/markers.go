package txn

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
)

// MarkerSender sends a WriteTxnMarkers request to a broker, the leader of
// the partitions it names, and returns the response (Kafka's
// TransactionMarkerChannelManager sends through an inter-broker
// NetworkClient). The broker implements it over its inter-broker
// listener, and in-process when the leader is this broker, so that both
// take the same path. An error means no response: the markers are sent
// again.
type MarkerSender interface {
	SendWriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// writeTxnMarkersVersion is the version Kafka 4 sends
// (MetadataVersion.writeTxnMarkersRequestVersion: 1 since 2.8).
const writeTxnMarkersVersion = 1

// markerTxn is one transaction's markers still to be written (Kafka's
// PendingCompleteTxn with its TxnMarkerEntry).
type markerTxn struct {
	txnPartition     int32
	gen              uint64 // the shard load that sent it
	transactionalID  string
	producerID       int64
	producerEpoch    int16
	commit           bool
	coordinatorEpoch int32
	partitions       []log.TopicPartition
}

// queuedMarker is a marker for some of a transaction's partitions, waiting
// for its destination broker.
type queuedMarker struct {
	txn        *markerTxn
	partitions []log.TopicPartition
	notBefore  time.Time
}

// unknownBroker queues markers whose partitions have no leader now.
const unknownBroker int32 = -1

// markerChannel is Kafka's TransactionMarkerChannelManager: markers are
// queued by destination broker (the partition's leader) and sent by one
// goroutine per broker, at most one request in flight to each, as many
// markers per request as are queued (up to MaxMarkersPerRequest).
// Partitions whose marker is written, or whose partition no longer exists,
// are reported to their shard, which completes the transaction once none
// is left. Retriable errors send the marker again, to the partition's
// leader then, after MarkerRetryBackoff; INVALID_PRODUCER_EPOCH and
// TRANSACTION_COORDINATOR_FENCED give up on the transaction (a newer
// producer or coordinator owns it).
//
// Memory: one queued marker per transaction and destination, for the
// transactions in PrepareCommit or PrepareAbort on this coordinator.
//
// Lock order: markerChannel.mu is a leaf; nothing is called with it held.
type markerChannel struct {
	svc    *Service
	ctx    context.Context // cancelled by close: in-flight sends stop
	cancel context.CancelFunc

	mu     sync.Mutex
	queues map[int32][]*queuedMarker // by destination broker
	wake   map[int32]chan struct{}   // one worker per destination
	// live is the shard load that owns each partition's markers; markers
	// of another load are dropped instead of being sent again.
	live    map[int32]uint64
	closed  bool
	workers routine.Group
}

func newMarkerChannel(svc *Service) *markerChannel {
	ctx, cancel := context.WithCancel(context.Background())
	return &markerChannel{svc: svc, ctx: ctx, cancel: cancel, queues: map[int32][]*queuedMarker{},
		wake: map[int32]chan struct{}{}, live: map[int32]uint64{}}
}

// add queues a transaction's markers (Kafka's addTxnMarkersToSend).
func (c *markerChannel) add(t *markerTxn) {
	c.mu.Lock()
	if c.live[t.txnPartition] < t.gen {
		c.live[t.txnPartition] = t.gen
	}
	c.mu.Unlock()
	c.enqueue(t, t.partitions, time.Time{})
}

// enqueue groups partitions by their leader and queues a marker for each
// destination; partitions that no longer exist are reported written
// (Kafka skips them: the topic was deleted).
func (c *markerChannel) enqueue(t *markerTxn, tps []log.TopicPartition, notBefore time.Time) {
	byLeader := map[int32][]log.TopicPartition{}
	var gone []log.TopicPartition
	for _, tp := range tps {
		leader, exists := c.svc.opts.Leader(tp)
		switch {
		case !exists:
			gone = append(gone, tp)
		case leader < 0:
			byLeader[unknownBroker] = append(byLeader[unknownBroker], tp)
		default:
			byLeader[leader] = append(byLeader[leader], tp)
		}
	}
	if len(gone) > 0 {
		c.svc.log.Info("skipping transaction markers for partitions that no longer exist", "transactional_id", t.transactionalID, "partitions", gone)
		c.svc.markersDone(t.txnPartition, t.gen, t.transactionalID, t.producerID, t.producerEpoch, gone)
	}
	if len(byLeader) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.live[t.txnPartition] != t.gen {
		return
	}
	for broker, parts := range byLeader {
		if broker == unknownBroker && notBefore.IsZero() {
			notBefore = c.svc.opts.Now().Add(c.svc.cfg.MarkerRetryBackoff)
		}
		c.queues[broker] = append(c.queues[broker], &queuedMarker{txn: t, partitions: parts, notBefore: notBefore})
		c.startWorkerLocked(broker)
	}
}

// removeForPartition drops the queued markers of a partition's load
// (Kafka's removeMarkersForTxnTopicPartition); markers in flight finish,
// and their results are ignored by the next load.
func (c *markerChannel) removeForPartition(txnPartition int32, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[txnPartition] == gen {
		delete(c.live, txnPartition)
	}
	for b, q := range c.queues {
		kept := q[:0]
		for _, m := range q {
			if m.txn.txnPartition != txnPartition || m.txn.gen != gen {
				kept = append(kept, m)
			}
		}
		clear(q[len(kept):])
		c.queues[b] = kept
	}
}

// unknownDestinationSize is Kafka's UnknownDestinationQueueSize gauge.
func (c *markerChannel) unknownDestinationSize() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queues[unknownBroker])
}

func (c *markerChannel) close() {
	c.mu.Lock()
	c.closed = true
	c.queues = map[int32][]*queuedMarker{}
	c.mu.Unlock()
	c.cancel()
	c.workers.StopAndWait()
}

// startWorkerLocked starts the broker's worker if it has none, else wakes
// it.
func (c *markerChannel) startWorkerLocked(broker int32) {
	if ch, ok := c.wake[broker]; ok {
		select {
		case ch <- struct{}{}:
		default:
		}
		return
	}
	ch := make(chan struct{}, 1)
	c.wake[broker] = ch
	if !c.workers.Go(func(done <-chan struct{}) { c.work(broker, ch, done) }) {
		delete(c.wake, broker)
	}
}

// take removes the markers due now for broker, at most
// MaxMarkersPerRequest and one per producer, and returns them with when
// the next one is due (zero: none left).
func (c *markerChannel) take(broker int32, now time.Time) ([]*queuedMarker, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queues[broker]
	var batch []*queuedMarker
	var next time.Time
	seen := map[int64]bool{}
	kept := q[:0]
	for _, m := range q {
		due := !m.notBefore.After(now)
		if due && len(batch) < c.svc.cfg.MaxMarkersPerRequest && !seen[m.txn.producerID] {
			seen[m.txn.producerID] = true
			batch = append(batch, m)
			continue
		}
		kept = append(kept, m)
		if next.IsZero() || m.notBefore.Before(next) {
			next = m.notBefore
		}
	}
	clear(q[len(kept):])
	c.queues[broker] = kept
	return batch, next
}

// work sends broker's markers until the channel closes.
func (c *markerChannel) work(broker int32, wake <-chan struct{}, done <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		batch, next := c.take(broker, c.svc.opts.Now())
		if len(batch) > 0 {
			if broker == unknownBroker {
				// Look for the leaders again.
				for _, m := range batch {
					c.enqueue(m.txn, m.partitions, time.Time{})
				}
			} else {
				c.send(broker, batch)
			}
			continue
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(c.svc.opts.Now()), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-done:
			return
		case <-wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// send writes one request's markers and handles the response (Kafka's
// TransactionMarkerRequestCompletionHandler).
func (c *markerChannel) send(broker int32, batch []*queuedMarker) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = writeTxnMarkersVersion
	for _, m := range batch {
		rm := kmsg.NewWriteTxnMarkersRequestMarker()
		rm.ProducerID, rm.ProducerEpoch, rm.Committed = m.txn.producerID, m.txn.producerEpoch, m.txn.commit
		rm.CoordinatorEpoch = m.txn.coordinatorEpoch
		for _, tp := range m.partitions {
			if n := len(rm.Topics); n == 0 || rm.Topics[n-1].Topic != tp.Topic {
				rm.Topics = append(rm.Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: tp.Topic})
			}
			t := &rm.Topics[len(rm.Topics)-1]
			t.Partitions = append(t.Partitions, tp.Partition)
		}
		req.Markers = append(req.Markers, rm)
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.svc.cfg.RequestTimeout)
	start := c.svc.opts.Now()
	resp, err := c.svc.opts.Markers.SendWriteTxnMarkers(ctx, broker, req)
	cancel()
	c.svc.metrics.markerRequest(c.svc.opts.Now().Sub(start), err)
	retryAt := c.svc.opts.Now().Add(c.svc.cfg.MarkerRetryBackoff)
	if err != nil {
		c.svc.log.Info("sending transaction markers failed; retrying", "broker", broker, "markers", len(batch), "err", err)
		for _, m := range batch {
			c.enqueue(m.txn, m.partitions, retryAt)
		}
		return
	}
	errs := markerErrors(resp)
	for _, m := range batch {
		c.handle(broker, m, errs[m.txn.producerID], retryAt)
	}
}

// markerErrors indexes a response's errors by producer id and partition.
func markerErrors(resp *kmsg.WriteTxnMarkersResponse) map[int64]map[log.TopicPartition]int16 {
	out := map[int64]map[log.TopicPartition]int16{}
	for _, m := range resp.Markers {
		e := out[m.ProducerID]
		if e == nil {
			e = map[log.TopicPartition]int16{}
			out[m.ProducerID] = e
		}
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				e[log.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	return out
}

// handle sorts one marker's partitions by outcome.
func (c *markerChannel) handle(broker int32, m *queuedMarker, errs map[log.TopicPartition]int16, retryAt time.Time) {
	var written, retry []log.TopicPartition
	for _, tp := range m.partitions {
		code, ok := errs[tp]
		if !ok {
			retry = append(retry, tp) // not answered: send again
			continue
		}
		switch err := kerr.ErrorForCode(code); err {
		case nil, kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
			// UNSUPPORTED_*: the producer could not have written
			// there either (Kafka removes the partition).
			written = append(written, tp)
		case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
			c.svc.log.Info("transaction markers refused: a newer producer or coordinator owns the transaction; giving up on it",
				"transactional_id", m.txn.transactionalID, "partition", tp, "err", err)
			c.svc.metrics.markersAbandoned()
			return
		case kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition, kerr.NotEnoughReplicas,
			kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut, kerr.KafkaStorageError:
			retry = append(retry, tp)
		default:
			// Kafka treats these as fatal (an IllegalStateException in
			// its sender thread); retrying keeps the transaction alive
			// and the error visible.
			c.svc.log.Error("unexpected error writing a transaction marker; retrying",
				"transactional_id", m.txn.transactionalID, "partition", tp, "broker", broker, "err", err)
			retry = append(retry, tp)
		}
	}
	if len(written) > 0 {
		c.svc.markersDone(m.txn.txnPartition, m.txn.gen, m.txn.transactionalID, m.txn.producerID, m.txn.producerEpoch, written)
	}
	if len(retry) > 0 {
		sort.Slice(retry, func(i, j int) bool { return retry[i].Topic < retry[j].Topic })
		c.enqueue(m.txn, retry, retryAt)
	}
}
