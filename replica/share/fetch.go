package share

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
)

// FetchRequest is a ShareFetch once kapi has resolved its topic ids and
// authorized it.
type FetchRequest struct {
	Group, Member string
	SessionEpoch  int32
	// ConnID is the connection the request came on (Kafka's connection
	// id): a request opening a session ties the session to it.
	ConnID     string
	MaxWait    time.Duration
	MaxBytes   int32
	MaxRecords int
	// RecordLimit is ShareFetch v2's record-limit acquire mode.
	RecordLimit bool
	Add, Forget []TopicIDPartition
	Acks        map[TopicIDPartition][]AcknowledgementBatch
	// TopicName names a topic id in the current metadata.
	TopicName func([16]byte) (string, bool)
}

// AckRequest is a ShareAcknowledge.
type AckRequest struct {
	Group, Member string
	SessionEpoch  int32
	Acks          map[TopicIDPartition][]AcknowledgementBatch
	TopicName     func([16]byte) (string, bool)
}

// PartitionResult is one partition of a ShareFetch or ShareAcknowledge
// response.
type PartitionResult struct {
	TopicIDPartition
	Err error // the fetch's
	// HasAck: the request acknowledged records of the partition, with
	// AckErr the outcome.
	HasAck   bool
	AckErr   error
	Records  log.FileSlice
	Acquired []AcquiredRecords
}

// FetchResponse is a ShareFetch's or ShareAcknowledge's outcome.
type FetchResponse struct {
	Err         error // the request's (session errors)
	Partitions  []PartitionResult
	LockTimeout time.Duration
}

// Fetch serves a ShareFetch (Kafka's SharePartitionManager.fetchMessages
// with the acknowledgements it carries): the session is updated, the
// acknowledgements applied and persisted, then every partition of the
// session is read from where its share partition's next delivery starts
// and what is available is acquired for the member, until something is
// acquired or MaxWait passes (Kafka's DelayedShareFetch). done is called
// once, on another goroutine.
func (m *Manager) Fetch(req FetchRequest, done func(FetchResponse)) {
	m.metrics.fetches.Inc()
	m.metrics.acknowledged(req.Acks)
	done = m.countFailures(done, m.metrics.failedFetches)
	if req.SessionEpoch == InitialSessionEpoch && len(req.Acks) > 0 {
		done(FetchResponse{Err: kerr.InvalidRequest})
		return
	}
	parts, err := m.sessions.Update(SessionUpdate{Group: req.Group, Member: req.Member, Epoch: req.SessionEpoch, Add: req.Add, Forget: req.Forget, ConnID: req.ConnID})
	if err != nil {
		done(FetchResponse{Err: err})
		return
	}
	m.serve(done, func(ctx context.Context) FetchResponse {
		results := m.acknowledgeAll(ctx, req.Group, req.Member, req.Acks, req.TopicName)
		if req.SessionEpoch == FinalSessionEpoch {
			m.closeSession(ctx, req.Group, req.Member, parts, req.TopicName)
			return FetchResponse{Partitions: results, LockTimeout: m.opts.GroupConfig(req.Group).RecordLockDuration}
		}
		return m.fetchLoop(ctx, req, parts, results)
	})
}

// countFailures wraps done to count the requests answered with an error
// of their own or of a partition.
func (m *Manager) countFailures(done func(FetchResponse), failed prometheus.Counter) func(FetchResponse) {
	return func(r FetchResponse) {
		bad := r.Err != nil
		for _, p := range r.Partitions {
			bad = bad || p.Err != nil || p.AckErr != nil
		}
		if bad {
			failed.Inc()
		}
		done(r)
	}
}

// serve runs a request on a goroutine of the manager's (one that stops
// with it) and hands what it answers to done.
func (m *Manager) serve(done func(FetchResponse), fn func(ctx context.Context) FetchResponse) {
	ok := m.g.Go(func(stop <-chan struct{}) {
		ctx, cancel := routine.Context(stop)
		defer cancel()
		done(fn(ctx))
	})
	if !ok {
		done(FetchResponse{Err: kerr.NotLeaderForPartition})
	}
}

// Acknowledge serves a ShareAcknowledge; done is called once, on another
// goroutine.
func (m *Manager) Acknowledge(req AckRequest, done func(FetchResponse)) {
	m.metrics.ackRequests.Inc()
	m.metrics.acknowledged(req.Acks)
	done = m.countFailures(done, m.metrics.failedAckRequs)
	closed, err := m.sessions.Check(req.Group, req.Member, req.SessionEpoch)
	if err != nil {
		done(FetchResponse{Err: err})
		return
	}
	m.serve(done, func(ctx context.Context) FetchResponse {
		results := m.acknowledgeAll(ctx, req.Group, req.Member, req.Acks, req.TopicName)
		if req.SessionEpoch == FinalSessionEpoch {
			m.closeSession(ctx, req.Group, req.Member, closed, req.TopicName)
		}
		return FetchResponse{Partitions: results}
	})
}

// acknowledgeAll applies the acknowledgements of each partition and waits
// until their changes are durable.
func (m *Manager) acknowledgeAll(ctx context.Context, group, member string, acks map[TopicIDPartition][]AcknowledgementBatch, name func([16]byte) (string, bool)) []PartitionResult {
	if len(acks) == 0 {
		return nil
	}
	results := make([]PartitionResult, 0, len(acks))
	waits := make([]chan error, 0, len(acks))
	now := m.opts.Now()
	for tip, batches := range acks {
		r := PartitionResult{TopicIDPartition: tip, HasAck: true}
		wait := make(chan error, 1)
		e, sp, err := m.loaded(ctx, group, tip, name)
		if err == nil {
			var changes []StateBatch
			if changes, err = sp.Acknowledge(member, batches, now); err == nil {
				m.armTimer(e)
				// Even with nothing new to persist (records done with
				// already, an acknowledgement sent again after a
				// failed answer), the answer waits for a write: the
				// state that made them done may still be in flight, or
				// its write may have failed and be pending again.
				m.persist(e, changes, func(err error) { wait <- err })
				if len(changes) > 0 {
					m.wake()
				}
			}
		}
		if err != nil {
			wait <- err
		}
		results = append(results, r)
		waits = append(waits, wait)
	}
	for i, w := range waits {
		select {
		case err := <-w:
			results[i].AckErr = err
		case <-ctx.Done():
			results[i].AckErr = kerr.RequestTimedOut
		}
	}
	return results
}

// loaded is the loaded share partition of group on tip.
func (m *Manager) loaded(ctx context.Context, group string, tip TopicIDPartition, name func([16]byte) (string, bool)) (*partitionEntry, *SharePartition, error) {
	topic, ok := name(tip.TopicID)
	if !ok {
		return nil, nil, kerr.UnknownTopicID
	}
	e, err := m.entry(Key{GroupID: group, TopicID: tip.TopicID, Partition: tip.Partition}, log.TopicPartition{Topic: topic, Partition: tip.Partition})
	if err != nil {
		return nil, nil, err
	}
	sp, err := e.ready(ctx)
	return e, sp, err
}

// closeSession ends a member's closed session: what it holds is given back,
// and if it was its group's last session here the group's share
// partitions are dropped.
func (m *Manager) closeSession(ctx context.Context, group, member string, parts []TopicIDPartition, name func([16]byte) (string, bool)) {
	m.releaseMember(ctx, group, member, parts, name)
	if m.sessions.GroupSessions(group) == 0 {
		m.dropGroup(group)
	}
}

// releaseMember gives back what member holds in the partitions of its
// closed session, and returns once that is persisted (or failed: the
// records are available here anyway, and a new leader finds them so too).
// name, when not nil, must still name each partition's topic.
func (m *Manager) releaseMember(ctx context.Context, group, member string, parts []TopicIDPartition, name func([16]byte) (string, bool)) {
	var waits []chan error
	for _, tip := range parts {
		m.mu.Lock()
		e := m.parts[Key{GroupID: group, TopicID: tip.TopicID, Partition: tip.Partition}]
		m.mu.Unlock()
		if e == nil {
			continue
		}
		if name != nil {
			if topic, ok := name(tip.TopicID); !ok || e.tp.Topic != topic {
				continue
			}
		}
		select {
		case <-e.loaded:
		default:
			continue
		}
		if e.sp == nil {
			continue
		}
		if changes := e.sp.ReleaseMember(member); len(changes) > 0 {
			w := make(chan error, 1)
			m.persist(e, changes, func(err error) { w <- err })
			waits = append(waits, w)
			m.armTimer(e)
			m.wake()
		}
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
	}
}

// fetchLoop reads and acquires until something is acquired or the wait
// is over.
func (m *Manager) fetchLoop(ctx context.Context, req FetchRequest, parts []TopicIDPartition, acked []PartitionResult) FetchResponse {
	deadline := m.opts.Now().Add(req.MaxWait)
	gc := m.opts.GroupConfig(req.Group)
	for {
		wake := m.wakeChan()
		results, waitOn, n := m.fetchOnce(ctx, req, parts, gc)
		if n > 0 && !m.sessions.Has(req.Group, req.Member) {
			// The session ended while this fetch was acquiring (its
			// connection closed, or the member closed it on another):
			// its release may have run before these records were
			// acquired, so they are given back here, not left locked
			// for a response nobody reads. Acquiring before looking
			// at the session, and removing the session before
			// releasing, leaves no record behind either way.
			m.releaseMember(ctx, req.Group, req.Member, acquiredIn(results), req.TopicName)
			return FetchResponse{Err: kerr.ShareSessionNotFound}
		}
		if n > 0 || !m.opts.Now().Before(deadline) || ctx.Err() != nil || len(waitOn) == 0 || m.shuttingDown.Load() {
			return FetchResponse{Partitions: mergeResults(acked, results), LockTimeout: gc.RecordLockDuration}
		}
		// Kafka's DelayedShareFetch: wait for new data in any of the
		// partitions, or for records released in them.
		data := make(chan struct{})
		m.opts.Log.WaitForData(waitOn, deadline.Sub(m.opts.Now()), func() { close(data) })
		select {
		case <-data:
		case <-wake:
		case <-ctx.Done():
		}
	}
}

// acquiredIn is the partitions where results acquired records.
func acquiredIn(results []PartitionResult) []TopicIDPartition {
	var out []TopicIDPartition
	for _, r := range results {
		if len(r.Acquired) > 0 {
			out = append(out, r.TopicIDPartition)
		}
	}
	return out
}

// fetchOnce reads each partition once; it returns the results, where to
// wait for data, and how many records were acquired.
func (m *Manager) fetchOnce(ctx context.Context, req FetchRequest, parts []TopicIDPartition, gc GroupConfig) ([]PartitionResult, []WaitPartition, int) {
	var results []PartitionResult
	var waitOn []WaitPartition
	acquired := 0
	budget := int64(req.MaxBytes)
	for _, tip := range parts {
		maxRecords := req.MaxRecords - acquired
		if maxRecords <= 0 || budget <= 0 {
			break
		}
		e, sp, err := m.loaded(ctx, req.Group, tip, req.TopicName)
		if err != nil {
			results = append(results, PartitionResult{TopicIDPartition: tip, Err: err})
			continue
		}
		if !e.fetching.TryLock() {
			continue // another share fetch is reading it
		}
		r, n, wait := m.fetchPartition(e, sp, req, gc, maxRecords, budget)
		e.fetching.Unlock()
		r.TopicIDPartition = tip
		if r.Err != nil || n > 0 {
			results = append(results, r)
		}
		if wait != nil {
			waitOn = append(waitOn, *wait)
		}
		acquired += n
		budget -= r.Records.Size
	}
	return results, waitOn, acquired
}

// fetchPartition reads one share partition and acquires what it can;
// e.fetching held.
func (m *Manager) fetchPartition(e *partitionEntry, sp *SharePartition, req FetchRequest, gc GroupConfig, maxRecords int, budget int64) (PartitionResult, int, *WaitPartition) {
	if !sp.CanAcquire() {
		return PartitionResult{}, 0, nil
	}
	offset := sp.NextFetchOffset()
	rr, err := m.opts.Log.Read(e.tp, offset, int32(min(budget, 1<<31-1)), gc.ReadCommitted)
	if errors.Is(err, kerr.OffsetOutOfRange) {
		// Retention or DeleteRecords passed the start offset.
		if ls, lerr := m.opts.Log.OffsetForTimestamp(e.tp, -2); lerr == nil && ls > offset {
			sp.UpdateLogStartOffset(ls)
			offset = sp.NextFetchOffset()
			rr, err = m.opts.Log.Read(e.tp, offset, int32(min(budget, 1<<31-1)), gc.ReadCommitted)
		}
	}
	if err != nil {
		return PartitionResult{Err: err}, 0, nil
	}
	if rr.LogStartOffset > sp.StartOffset() {
		sp.UpdateLogStartOffset(rr.LogStartOffset)
	}
	acq := sp.Acquire(req.Member, offset, rr.Batches, maxRecords, req.RecordLimit, m.opts.Now())
	if gc.ReadCommitted && len(acq) > 0 {
		// Records of aborted transactions are never delivered: they
		// are archived as soon as their batches are acquired.
		if aborted := abortedOffsets(rr.Batches, rr.AbortedTransactions); len(aborted) > 0 {
			if changes := sp.ArchiveAcquired(req.Member, aborted); len(changes) > 0 {
				m.persist(e, changes, func(error) {})
			}
			acq = subtract(acq, aborted)
		}
	}
	if len(acq) == 0 {
		return PartitionResult{}, 0, &WaitPartition{TP: e.tp, Offset: sp.EndOffset()}
	}
	m.armTimer(e)
	n := 0
	for _, a := range acq {
		n += int(a.LastOffset - a.FirstOffset + 1)
	}
	return PartitionResult{Records: recordsFor(rr, acq), Acquired: acq}, n, nil
}

// recordsFor cuts the read to the batches holding acquired records.
func recordsFor(rr ReadResult, acq []AcquiredRecords) log.FileSlice {
	first, last := acq[0].FirstOffset, acq[len(acq)-1].LastOffset
	var from, to int64 = -1, 0
	for _, b := range rr.Batches {
		if b.LastOffset < first {
			continue
		}
		if b.BaseOffset > last {
			break
		}
		if from < 0 {
			from = b.pos
		}
		to = b.pos + b.size
	}
	if from < 0 {
		return log.FileSlice{}
	}
	return rr.Records.Sub(from, to-from)
}

// mergeResults puts a partition's acknowledgement outcome and its fetch
// in one result.
func mergeResults(acked, fetched []PartitionResult) []PartitionResult {
	out := append([]PartitionResult(nil), acked...)
	for _, f := range fetched {
		merged := false
		for i := range out {
			if out[i].TopicIDPartition == f.TopicIDPartition {
				out[i].Err, out[i].Records, out[i].Acquired = f.Err, f.Records, f.Acquired
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, f)
		}
	}
	return out
}

// wakeChan is closed by the next wake.
func (m *Manager) wakeChan() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wakeC == nil {
		m.wakeC = make(chan struct{})
	}
	return m.wakeC
}

// wake tells waiting share fetches that records became available.
func (m *Manager) wake() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wakeC != nil {
		close(m.wakeC)
		m.wakeC = nil
	}
}
