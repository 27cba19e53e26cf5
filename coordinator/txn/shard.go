package txn

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/moldau/moldau/coordinator/runtime"
	"github.com/moldau/moldau/log"
)

// Shard is the transaction state of one partition of __transaction_state
// (Kafka's TransactionStateManager for one partition, with the parts of
// the TransactionCoordinator that change it): the transactional ids that
// hash to the partition. It is used only from its runtime goroutine.
//
// Operations compute a transition (metadata.go), apply it to the memory at
// once and write it with Result.NoReplay: the runtime answers nobody
// until the record is committed, and reloads the shard from the log if it
// is not, so memory never stays ahead of the log. Replay is only used to
// load the partition.
type Shard struct {
	svc       *Service
	partition int32
	// epoch is the partition's leader epoch: the coordinator epoch the
	// markers carry.
	epoch int32
	// gen tells this load apart from any other of the partition, so that
	// marker results of an earlier load are ignored.
	gen   uint64
	timer runtime.Timer
	now   func() time.Time
	log   *slog.Logger

	txns map[string]*txnMetadata
	// waiters are operations waiting for a transaction in PrepareCommit
	// or PrepareAbort to complete, by transactional id (one request per
	// client connection at most).
	waiters   map[string][]*completionWaiter
	waiterSeq uint64
}

// completionWaiter runs an operation again once a transaction completed,
// or once its deadline passed, or the shard unloaded; exactly once.
type completionWaiter struct {
	key   string // its timer
	retry func()
}

// Timer keys (Kafka's scheduler task names).
const (
	abortTimedOutKey = "transaction-abort"
	expireIDsKey     = "transactionalId-expiration"
)

func newShard(svc *Service, ctx runtime.ShardContext, gen uint64) *Shard {
	return &Shard{
		svc: svc, partition: ctx.TopicPartition.Partition, epoch: ctx.Epoch, gen: gen,
		timer: ctx.Timer, now: ctx.Now, log: ctx.Logger, txns: map[string]*txnMetadata{},
		waiters: map[string][]*completionWaiter{},
	}
}

func (s *Shard) nowMs() int64 { return s.now().UnixMilli() }

// Replay loads one record of __transaction_state (Kafka's
// loadTransactionMetadata): the latest value of a transactional id wins,
// a tombstone removes it.
func (s *Shard) Replay(_ int64, _ int64, _ int16, key, value []byte) error {
	id, ok, err := parseKey(key)
	if err != nil {
		return err
	}
	if !ok {
		s.log.Warn("unknown key version in __transaction_state; ignoring it", "partition", s.partition)
		return nil
	}
	if value == nil {
		delete(s.txns, id)
		return nil
	}
	t, err := parseValue(value)
	if err != nil {
		return err
	}
	s.txns[id] = fromTransit(id, t)
	return nil
}

// ReplayEndTransactionMarker: __transaction_state has no transactional
// records.
func (s *Shard) ReplayEndTransactionMarker(int64, int16, bool) error { return nil }

// OnLoaded starts the periodic aborts and expiry, and completes every
// transaction that was preparing to commit or abort: its markers are sent
// again (Kafka's loadTransactionsForTxnTopicPartition).
func (s *Shard) OnLoaded() {
	s.scheduleAbortTimedOut()
	s.scheduleExpiration()
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		if m.state == PrepareCommit || m.state == PrepareAbort {
			s.log.Info("completing a transaction after loading", "transactional_id", id, "state", m.state, "producer_id", m.producerID)
			s.sendMarkers(m)
		}
	}
}

// OnUnloaded drops the markers still queued for this partition's
// transactions (Kafka's removeMarkersForTxnTopicPartition); waiting
// operations run again, and learn that the partition is gone.
func (s *Shard) OnUnloaded() {
	s.svc.markers.removeForPartition(s.partition, s.gen)
	for _, id := range s.sortedWaiterIDs() {
		s.wake(id)
	}
}

func (s *Shard) sortedWaiterIDs() []string {
	ids := make([]string, 0, len(s.waiters))
	for id := range s.waiters {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// awaitCompletion parks retry until the transaction of id completes, or
// until deadline; it reports false (nothing parked) when the deadline has
// passed.
func (s *Shard) awaitCompletion(id string, deadline time.Time, retry func()) bool {
	wait := deadline.Sub(s.now())
	if wait <= 0 {
		return false
	}
	s.waiterSeq++
	w := &completionWaiter{key: fmt.Sprintf("await-completion-%d", s.waiterSeq), retry: retry}
	s.waiters[id] = append(s.waiters[id], w)
	s.timer.Schedule(w.key, wait, func() (runtime.Result[runtime.Void], error) {
		ws := s.waiters[id]
		for i, x := range ws {
			if x == w {
				s.waiters[id] = append(ws[:i:i], ws[i+1:]...)
				if len(s.waiters[id]) == 0 {
					delete(s.waiters, id)
				}
				w.retry() // past its deadline: answered, not parked again
				break
			}
		}
		return runtime.Result[runtime.Void]{}, nil
	})
	return true
}

// wake runs the operations waiting for id's transaction again.
func (s *Shard) wake(id string) {
	ws := s.waiters[id]
	delete(s.waiters, id)
	for _, w := range ws {
		s.timer.Cancel(w.key)
		w.retry()
	}
}

func (s *Shard) sortedIDs() []string {
	ids := make([]string, 0, len(s.txns))
	for id := range s.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// write applies t to m and returns its record.
func (s *Shard) write(m *txnMetadata, t transit) runtime.Record {
	m.apply(t)
	return txnRecord(m.id, t, s.svc.transactionVersion())
}

// sendMarkers hands the transaction's markers to the marker channel, or,
// with no partition left, writes its completion at once.
func (s *Shard) sendMarkers(m *txnMetadata) {
	commit := m.state == PrepareCommit
	if len(m.partitions) == 0 {
		s.svc.markersDone(s.partition, s.gen, m.id, m.producerID, m.producerEpoch, nil)
		return
	}
	s.svc.markers.add(&markerTxn{
		txnPartition: s.partition, gen: s.gen, transactionalID: m.id,
		producerID: m.producerID, producerEpoch: m.producerEpoch, commit: commit,
		coordinatorEpoch: s.epoch, partitions: m.sortedPartitions(),
	})
}

// markersWritten removes the partitions whose markers are written from a
// transaction and, once none is left, writes its completion (Kafka's
// TransactionMarkerRequestCompletionHandler and maybeWriteTxnCompletion).
// Results for another load of the partition, or a transaction that moved
// on, are ignored.
func (s *Shard) markersWritten(gen uint64, id string, pid int64, epoch int16, written []log.TopicPartition) (runtime.Result[runtime.Void], error) {
	var res runtime.Result[runtime.Void]
	m := s.txns[id]
	if gen != s.gen || m == nil || m.producerID != pid || m.producerEpoch != epoch || (m.state != PrepareCommit && m.state != PrepareAbort) {
		return res, nil
	}
	for _, tp := range written {
		delete(m.partitions, tp)
	}
	if len(m.partitions) > 0 {
		return res, nil
	}
	t, err := m.prepareComplete(s.nowMs())
	if err != nil {
		return res, err
	}
	res.Records = []runtime.Record{s.write(m, t)}
	res.NoReplay = true
	res.OnWritten = func(error) { s.wake(id) }
	s.svc.metrics.transactionCompleted(t.state == CompleteCommit)
	if !m.ended.IsZero() {
		s.svc.metrics.markersCompleted(s.now().Sub(m.ended))
	}
	return res, nil
}

// prepareEnd moves an ongoing transaction to PrepareCommit or
// PrepareAbort and returns the record; once it is committed the markers go
// out (markersAfterWrite).
func (s *Shard) prepareEnd(m *txnMetadata, commit bool, tv int16, nextProducerID int64, fenced bool) (runtime.Record, error) {
	to := PrepareAbort
	if commit {
		to = PrepareCommit
	}
	t, err := m.prepareAbortOrCommit(to, tv, nextProducerID, s.nowMs(), fenced)
	if err != nil {
		return runtime.Record{}, err
	}
	m.ended = s.now()
	return s.write(m, t), nil
}

// markersAfterWrite is the OnWritten of writes that end transactions: once
// the PrepareCommit or PrepareAbort records are committed, their markers
// are sent.
func (s *Shard) markersAfterWrite(ms []*txnMetadata) func(error) {
	type sent struct {
		m     *txnMetadata
		pid   int64
		epoch int16
	}
	snap := make([]sent, len(ms))
	for i, m := range ms {
		snap[i] = sent{m, m.producerID, m.producerEpoch}
	}
	return func(err error) {
		if err != nil {
			return // the shard reloads; loading sends them
		}
		for _, x := range snap {
			m := x.m
			if s.txns[m.id] == m && m.producerID == x.pid && m.producerEpoch == x.epoch && (m.state == PrepareCommit || m.state == PrepareAbort) {
				s.sendMarkers(m)
			}
		}
	}
}

// fenceAndAbort bumps the epoch of an ongoing transaction's producer and
// aborts the transaction at that epoch (Kafka's prepareFenceProducerEpoch
// followed by endTransaction(ABORT) from the coordinator itself, at the
// cluster's transaction version). Under transaction version 2 a fence
// that exhausts the epochs also moves the producer to a new id once the
// abort is written (KAFKA-20090): otherwise the producer's late EndTxn
// would be taken for a retry and handed epoch Short.MaxValue, which no
// later EndTxn can bump.
func (s *Shard) fenceAndAbort(m *txnMetadata) (runtime.Record, error) {
	bumped, err := m.prepareFenceProducerEpoch()
	if err != nil {
		return runtime.Record{}, err
	}
	tv := s.svc.transactionVersion()
	next := noProducerID
	if supportsEpochBump(tv) && epochExhausted(m.producerEpoch) {
		var ok bool
		if next, ok = s.svc.opts.ProducerIDs.TryGenerate(); !ok {
			return runtime.Record{}, errNoProducerID
		}
	}
	// The last epoch: none under transaction version 1 (Kafka's
	// endTransaction for a fence); under 2 the epoch before the fence, as
	// Kafka's prepareAbortOrCommit leaves it.
	last := noProducerEpoch
	if supportsEpochBump(tv) {
		last = m.producerEpoch
	}
	m.producerEpoch, m.lastProducerEpoch = bumped, last
	return s.prepareEnd(m, false, tv, next, true)
}

func (s *Shard) scheduleAbortTimedOut() {
	s.timer.Schedule(abortTimedOutKey, s.svc.cfg.AbortTimedOutInterval, s.abortTimedOutTransactions)
}

func (s *Shard) scheduleExpiration() {
	s.timer.Schedule(expireIDsKey, s.svc.cfg.RemoveExpiredInterval, s.removeExpiredTransactionalIDs)
}

// abortTimedOutTransactions aborts, fencing their producers, the
// transactions open longer than their timeout (Kafka's
// abortTimedOutTransactions), then runs again after the interval.
func (s *Shard) abortTimedOutTransactions() (runtime.Result[runtime.Void], error) {
	defer s.scheduleAbortTimedOut()
	var res runtime.Result[runtime.Void]
	now := s.nowMs()
	var aborted []*txnMetadata
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		if m.state != Ongoing || m.startTimestamp+int64(m.timeoutMs) >= now {
			continue
		}
		rec, err := s.fenceAndAbort(m)
		if err != nil {
			s.log.Error("aborting a timed-out transaction failed", "transactional_id", id, "err", err)
			continue
		}
		s.log.Info("aborting a timed-out transaction", "transactional_id", id, "producer_id", m.producerID,
			"open_ms", now-m.startTimestamp, "timeout_ms", m.timeoutMs)
		res.Records = append(res.Records, rec)
		aborted = append(aborted, m)
		s.svc.metrics.timedOut()
	}
	if len(aborted) > 0 {
		res.NoReplay = true
		res.OnWritten = s.markersAfterWrite(aborted)
	}
	return res, nil
}

// removeExpiredTransactionalIDs writes tombstones for the transactional ids
// idle for transactional.id.expiration.ms in a state that allows it (Kafka's
// removeExpiredTransactionalIds), then runs again after the interval.
func (s *Shard) removeExpiredTransactionalIDs() (runtime.Result[runtime.Void], error) {
	defer s.scheduleExpiration()
	var res runtime.Result[runtime.Void]
	cutoff := s.nowMs() - s.svc.cfg.TransactionalIDExpiration.Milliseconds()
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		if m.state.expirationAllowed() && m.lastUpdate <= cutoff {
			delete(s.txns, id)
			res.Records = append(res.Records, tombstone(id))
		}
	}
	if len(res.Records) > 0 {
		res.NoReplay = true
		s.log.Info("expired transactional ids", "partition", s.partition, "count", len(res.Records))
		s.svc.metrics.expired(len(res.Records))
	}
	return res, nil
}

// partitionsIn reports whether every partition of tps is in the
// transaction.
func (m *txnMetadata) hasAll(tps []log.TopicPartition) bool {
	return !slices.ContainsFunc(tps, func(tp log.TopicPartition) bool {
		_, ok := m.partitions[tp]
		return !ok
	})
}
