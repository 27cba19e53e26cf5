package share

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config is what a share partition needs of its group's configuration.
type Config struct {
	// MaxInFlightRecords bounds the records between the start offset and
	// the end offset: group.share.partition.max.record.locks. New records
	// are not acquired past it; released ones still are.
	MaxInFlightRecords int
	// MaxDeliveryCount is group.share.delivery.count.limit: a record
	// released or timed out after that many deliveries is archived.
	MaxDeliveryCount int16
	// RecordLockDuration is the acquisition lock:
	// share.record.lock.duration.ms or group.share.record.lock.duration.ms.
	RecordLockDuration time.Duration
}

// Validate checks the bounds Kafka's configs guarantee.
func (c Config) Validate() error {
	switch {
	case c.MaxInFlightRecords < 1:
		return fmt.Errorf("share partition: max in-flight records %d < 1", c.MaxInFlightRecords)
	case c.MaxDeliveryCount < 1:
		return fmt.Errorf("share partition: max delivery count %d < 1", c.MaxDeliveryCount)
	case c.RecordLockDuration <= 0:
		return fmt.Errorf("share partition: record lock duration %v <= 0", c.RecordLockDuration)
	}
	return nil
}

// LoadedState is a share partition's persisted state as the share
// coordinator returns it, with the start offset already resolved (an
// uninitialized partition starts where share.auto.offset.reset says).
type LoadedState struct {
	StateEpoch  int32
	StartOffset int64
	Batches     []StateBatch
}

// Batch is the offset range of one record batch read from the log, all a
// share partition needs of it to hand out whole batches.
type Batch struct {
	BaseOffset, LastOffset int64
	// pos and size place the batch in the read's file slice.
	pos, size int64
	// producerID, transactional and control are the header's, for
	// read_committed (abortedOffsets).
	producerID             int64
	transactional, control bool
}

// SharePartition is the in-flight state of one partition for one share
// group on the partition's leader: Kafka's SharePartition. Records from
// the start offset (the SPSO) to the end offset are in flight, each
// available, acquired by a member under a lock, acknowledged or archived;
// every record before the start offset is done with, and no record at or
// past the end offset has been delivered. The start offset moves past the
// leading records once they are acknowledged or archived.
//
// A SharePartition only keeps the state: the SharePartitionManager reads
// the log, persists the changes each method returns (as the delta
// WriteShareGroupState carries) and answers the member once they are
// durable. All methods are safe for concurrent use.
type SharePartition struct {
	cfg Config

	mu          sync.Mutex
	stateEpoch  int32
	startOffset int64
	// endOffset is the first offset never acquired (Kafka keeps the last
	// one acquired, endOffset+1 here).
	endOffset int64
	// runs cover [startOffset, endOffset) exactly, in order, without gaps
	// or overlaps; the first is never terminal.
	runs []run
	// logStart is the log start offset last seen past the start offset:
	// a record before it that is released is archived, not delivered
	// again.
	logStart int64
}

// NewSharePartition builds a share partition from its persisted state.
// Offsets between persisted batches were never delivered: they are
// available with no delivery yet (Kafka's gap window), as are offsets not
// covered at all. Batches must be ordered and may not overlap.
func NewSharePartition(cfg Config, st LoadedState) (*SharePartition, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st.StartOffset < 0 {
		return nil, fmt.Errorf("share partition: start offset %d not resolved", st.StartOffset)
	}
	p := &SharePartition{cfg: cfg, stateEpoch: st.StateEpoch, startOffset: st.StartOffset, endOffset: st.StartOffset}
	next := st.StartOffset
	for _, b := range st.Batches {
		if b.LastOffset < b.FirstOffset || b.FirstOffset < next {
			return nil, fmt.Errorf("share partition: persisted batch %d-%d out of order or before %d", b.FirstOffset, b.LastOffset, next)
		}
		if b.DeliveryState != Available && b.DeliveryState != Acknowledged && b.DeliveryState != Archived {
			// An acquisition does not survive the leader that made it.
			b.DeliveryState = Available
		}
		if b.FirstOffset > next {
			p.runs = append(p.runs, run{first: next, last: b.FirstOffset - 1, state: Available})
		}
		p.runs = append(p.runs, run{first: b.FirstOffset, last: b.LastOffset, state: b.DeliveryState, deliveryCount: b.DeliveryCount})
		next = b.LastOffset + 1
	}
	p.endOffset = next
	p.normalize()
	return p, nil
}

// StartOffset is the share partition start offset.
func (p *SharePartition) StartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startOffset
}

// EndOffset is the first offset never acquired.
func (p *SharePartition) EndOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endOffset
}

// StateEpoch is the state epoch the partition was loaded at.
func (p *SharePartition) StateEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateEpoch
}

// NextFetchOffset is where the next share fetch reads the log: the first
// available in-flight record, else the end offset.
func (p *SharePartition) NextFetchOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.runs {
		if r.state == Available {
			return r.first
		}
	}
	return p.endOffset
}

// CanAcquire reports whether a fetch could acquire anything: a record to
// deliver again, or room for new records under MaxInFlightRecords.
func (p *SharePartition) CanAcquire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.runs {
		if r.state == Available {
			return true
		}
	}
	return p.endOffset-p.startOffset < int64(p.cfg.MaxInFlightRecords)
}

// Acquire gives member the available records of the batches read from
// fetchOffset, whole batches at a time, until at least maxRecords are
// acquired: records in flight and available are delivered again (their
// delivery count goes up), records past the end offset are delivered for
// the first time while fewer than MaxInFlightRecords are in flight. Each
// acquired record is locked to member until now plus the lock duration.
// Available records between fetchOffset and the first batch no longer
// exist (compaction removed them): they are archived.
//
// In record-limit mode (ShareFetch v2's ShareAcquireMode 1, KIP-1206) no
// more than maxRecords are acquired, cutting a batch if need be.
func (p *SharePartition) Acquire(member string, fetchOffset int64, batches []Batch, maxRecords int, recordLimit bool, now time.Time) []AcquiredRecords {
	if len(batches) == 0 || maxRecords <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if first := batches[0].BaseOffset; fetchOffset < first {
		p.transition(fetchOffset, min(first, p.endOffset)-1, func(r run) (run, bool) {
			if r.state != Available {
				return r, false
			}
			r.state = Archived
			return r, true
		})
	}
	deadline := now.Add(p.cfg.RecordLockDuration)
	var acquired []AcquiredRecords
	add := func(first, last int64, dc int16) {
		if n := len(acquired); n > 0 && acquired[n-1].LastOffset+1 == first && acquired[n-1].DeliveryCount == dc {
			acquired[n-1].LastOffset = last
			return
		}
		acquired = append(acquired, AcquiredRecords{FirstOffset: first, LastOffset: last, DeliveryCount: dc})
	}
	count := int64(0)
	for _, b := range batches {
		if count >= int64(maxRecords) {
			break
		}
		first := max(b.BaseOffset, p.startOffset)
		if b.LastOffset < first {
			continue
		}
		// The part of the batch already in flight: redeliver what is
		// available.
		if first < p.endOffset {
			last := min(b.LastOffset, p.endOffset-1)
			stop := last
			if recordLimit {
				stop = p.lastWithin(first, last, int64(maxRecords)-count)
			}
			p.transition(first, stop, func(r run) (run, bool) {
				if r.state != Available {
					return r, false
				}
				r.state, r.member, r.deadline = Acquired, member, deadline
				r.deliveryCount++
				add(r.first, r.last, r.deliveryCount)
				count += r.count()
				return r, true
			})
			first = last + 1
		}
		// The rest is new, if there is room for it.
		if first <= b.LastOffset {
			if p.endOffset-p.startOffset >= int64(p.cfg.MaxInFlightRecords) || (recordLimit && count >= int64(maxRecords)) {
				break
			}
			if first > p.endOffset {
				// Offsets the log does not have (a gap before this
				// batch) were never delivered and never will be.
				p.appendRun(run{first: p.endOffset, last: first - 1, state: Archived})
			}
			last := b.LastOffset
			if recordLimit {
				last = min(last, first+int64(maxRecords)-count-1)
			}
			p.appendRun(run{first: first, last: last, state: Acquired, deliveryCount: 1, member: member, deadline: deadline})
			add(first, last, 1)
			count += last - first + 1
		}
	}
	p.normalize()
	return acquired
}

// lastWithin is the last offset in [first, last] such that at most budget
// available records lie from first to it (last if fewer do).
func (p *SharePartition) lastWithin(first, last, budget int64) int64 {
	for i := p.find(first); i < len(p.runs) && p.runs[i].first <= last; i++ {
		r := p.runs[i]
		if r.state != Available {
			continue
		}
		from, to := max(r.first, first), min(r.last, last)
		if n := to - from + 1; n >= budget {
			return from + budget - 1
		} else {
			budget -= n
		}
	}
	return last
}

// ArchiveAcquired archives the records of ranges that member holds: the
// records of aborted transactions a read_committed share fetch acquired
// with their batches (Kafka's maybeFilterAbortedTransactionalAcquiredRecords).
// It returns the changes to persist.
func (p *SharePartition) ArchiveAcquired(member string, ranges []AcquiredRecords) []StateBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed []StateBatch
	for _, a := range ranges {
		p.transition(a.FirstOffset, a.LastOffset, func(r run) (run, bool) {
			if r.state != Acquired || r.member != member {
				return r, false
			}
			r.state, r.member, r.deadline = Archived, "", time.Time{}
			changed = appendStateBatch(changed, r)
			return r, true
		})
	}
	p.normalize()
	return changed
}

// ErrInvalidRecordState is returned for an acknowledgement of records the
// member does not hold (Kafka's InvalidRecordStateException).
var ErrInvalidRecordState = kerr.InvalidRecordState

// Acknowledge applies member's acknowledgements: accepted records are
// acknowledged, released ones available again (archived past the delivery
// limit), rejected ones and gaps archived, renewed ones locked for another
// lock duration from now. Every record acknowledged must
// be acquired by member, else nothing changes and the error is
// INVALID_RECORD_STATE; a malformed batch is INVALID_REQUEST. Ranges
// wholly before the start offset are done with already and skipped. It
// returns the changed ranges to persist.
func (p *SharePartition) Acknowledge(member string, acks []AcknowledgementBatch, now time.Time) ([]StateBatch, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range acks {
		if err := p.validateAck(member, b); err != nil {
			return nil, err
		}
	}
	var changed []StateBatch
	for _, b := range acks {
		if b.LastOffset < p.startOffset {
			continue
		}
		first := max(b.FirstOffset, p.startOffset)
		// Per-offset types split the range into runs of one type each.
		for first <= b.LastOffset {
			typ, last := b.typeAt(first), first
			if len(b.Types) > 1 {
				for last < b.LastOffset && b.typeAt(last+1) == typ {
					last++
				}
			} else {
				last = b.LastOffset
			}
			p.transition(first, last, func(r run) (run, bool) {
				if typ == AckRenew {
					// Nothing persisted changes: the lock only.
					r.deadline = now.Add(p.cfg.RecordLockDuration)
					return r, true
				}
				r = p.acknowledged(r, typ)
				changed = appendStateBatch(changed, r)
				return r, true
			})
			first = last + 1
		}
	}
	p.normalize()
	return changed, nil
}

// validateAck checks one acknowledgement batch against the state.
func (p *SharePartition) validateAck(member string, b AcknowledgementBatch) error {
	n := b.LastOffset - b.FirstOffset + 1
	if n <= 0 || (len(b.Types) != 1 && int64(len(b.Types)) != n) {
		return kerr.InvalidRequest
	}
	for _, t := range b.Types {
		if t < AckGap || t > AckRenew {
			return kerr.InvalidRequest
		}
	}
	if b.LastOffset < p.startOffset {
		return nil
	}
	if b.LastOffset >= p.endOffset {
		return ErrInvalidRecordState
	}
	from := max(b.FirstOffset, p.startOffset)
	for i := p.find(from); i < len(p.runs) && p.runs[i].first <= b.LastOffset; i++ {
		if r := p.runs[i]; r.state != Acquired || r.member != member {
			return ErrInvalidRecordState
		}
	}
	return nil
}

// acknowledged is r after an acknowledgement of type t.
func (p *SharePartition) acknowledged(r run, t AcknowledgeType) run {
	switch t {
	case AckAccept:
		r.state = Acknowledged
	case AckRelease:
		r = p.released(r)
	default: // reject, gap
		r.state = Archived
	}
	r.member, r.deadline = "", time.Time{}
	return r
}

// released is an acquired run given back: available for another delivery,
// or archived once it has had MaxDeliveryCount of them.
func (p *SharePartition) released(r run) run {
	r.state = Available
	if r.deliveryCount >= p.cfg.MaxDeliveryCount || r.last < p.logStart {
		r.state = Archived
	}
	r.member, r.deadline = "", time.Time{}
	return r
}

// ReleaseMember gives back every record member holds, as when its share
// session closes or it leaves the group, and returns the changes to
// persist.
func (p *SharePartition) ReleaseMember(member string) []StateBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed []StateBatch
	p.transition(p.startOffset, p.endOffset-1, func(r run) (run, bool) {
		if r.state != Acquired || r.member != member {
			return r, false
		}
		r = p.released(r)
		changed = appendStateBatch(changed, r)
		return r, true
	})
	p.normalize()
	return changed
}

// ExpireLocks releases every record whose acquisition lock ran out by now
// (Kafka's acquisition lock timeout) and returns the changes to persist.
func (p *SharePartition) ExpireLocks(now time.Time) []StateBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed []StateBatch
	p.transition(p.startOffset, p.endOffset-1, func(r run) (run, bool) {
		if r.state != Acquired || r.deadline.After(now) {
			return r, false
		}
		r = p.released(r)
		changed = appendStateBatch(changed, r)
		return r, true
	})
	p.normalize()
	return changed
}

// NextLockDeadline is when the earliest acquisition lock runs out, if any
// record is acquired.
func (p *SharePartition) NextLockDeadline() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var next time.Time
	for _, r := range p.runs {
		if r.state == Acquired && (next.IsZero() || r.deadline.Before(next)) {
			next = r.deadline
		}
	}
	return next, !next.IsZero()
}

// UpdateLogStartOffset follows the log start offset when retention or
// DeleteRecords moves it past the start offset: records before it that are
// available are archived and the start offset moves to it. Acquired ones
// keep their lock and are archived when it is released. As with Kafka the
// move is persisted with the next change.
func (p *SharePartition) UpdateLogStartOffset(logStart int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if logStart <= p.startOffset {
		return
	}
	p.transition(p.startOffset, min(logStart, p.endOffset)-1, func(r run) (run, bool) {
		if r.state != Available {
			return r, false
		}
		r.state = Archived
		return r, true
	})
	if logStart >= p.endOffset {
		p.runs, p.startOffset, p.endOffset = nil, logStart, logStart
		return
	}
	// What is left before logStart is acquired: it stays in flight until
	// its member acknowledges it or its lock goes (then it is archived,
	// see released), and the start offset waits for it.
	p.logStart = logStart
	p.normalize()
}

// Summary is the state as ReadShareGroupStateSummary and
// DescribeShareGroupOffsets report it.
type Summary struct {
	StartOffset, EndOffset int64
	InFlight               int64 // records between start and end that are not terminal
}

// Summary reports the offsets and the count of undelivered in-flight
// records.
func (p *SharePartition) Summary() Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Summary{StartOffset: p.startOffset, EndOffset: p.endOffset}
	for _, r := range p.runs {
		if !r.state.terminal() {
			s.InFlight += r.count()
		}
	}
	return s
}

// StateBatches is the whole in-flight state as persisted batches, for a
// snapshot or a test.
func (p *SharePartition) StateBatches() []StateBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []StateBatch
	for _, r := range p.runs {
		out = appendStateBatch(out, r)
	}
	return out
}

// appendStateBatch appends r as persisted, merging it into the last batch
// when they are alike. An acquired run persists as available: its
// acquisition does not survive this leader.
func appendStateBatch(bs []StateBatch, r run) []StateBatch {
	st := r.state
	if st == Acquired {
		st = Available
	}
	if n := len(bs); n > 0 {
		l := &bs[n-1]
		if l.LastOffset+1 == r.first && l.DeliveryState == st && l.DeliveryCount == r.deliveryCount {
			l.LastOffset = r.last
			return bs
		}
	}
	return append(bs, StateBatch{FirstOffset: r.first, LastOffset: r.last, DeliveryState: st, DeliveryCount: r.deliveryCount})
}

// ---- runs ----

// find is the index of the run holding offset o, or len(runs).
func (p *SharePartition) find(o int64) int {
	lo, hi := 0, len(p.runs)
	for lo < hi {
		m := (lo + hi) / 2
		if p.runs[m].last < o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// transition calls f on each run within [first, last], split at first and
// last so f sees only offsets inside; f returns the run's new value and
// whether it changed. Offsets outside [startOffset, endOffset) are
// ignored.
func (p *SharePartition) transition(first, last int64, f func(run) (run, bool)) {
	first, last = max(first, p.startOffset), min(last, p.endOffset-1)
	if first > last {
		return
	}
	p.split(first)
	p.split(last + 1)
	if p.logStart > first && p.logStart <= last {
		p.split(p.logStart) // so that released sees runs wholly on one side
	}
	for i := p.find(first); i < len(p.runs) && p.runs[i].first <= last; i++ {
		if r, ok := f(p.runs[i]); ok {
			p.runs[i] = r
		}
	}
}

// split makes o the first offset of a run, if a run holds it.
func (p *SharePartition) split(o int64) {
	i := p.find(o)
	if i == len(p.runs) || p.runs[i].first == o {
		return
	}
	r := p.runs[i]
	left, right := r, r
	left.last, right.first = o-1, o
	p.runs = append(p.runs, run{})
	copy(p.runs[i+2:], p.runs[i+1:])
	p.runs[i], p.runs[i+1] = left, right
}

// appendRun adds r at the end offset.
func (p *SharePartition) appendRun(r run) {
	if r.first != p.endOffset {
		panic(errors.New("share partition: run appended away from the end offset"))
	}
	p.runs = append(p.runs, r)
	p.endOffset = r.last + 1
}

// normalize merges alike neighbours and moves the start offset past
// leading terminal runs (Kafka's maybeUpdateCachedStateAndOffsets).
func (p *SharePartition) normalize() {
	drop := 0
	for drop < len(p.runs) && p.runs[drop].state.terminal() {
		drop++
	}
	if drop > 0 {
		p.startOffset = p.runs[drop-1].last + 1
		p.runs = append(p.runs[:0], p.runs[drop:]...)
	}
	if len(p.runs) == 0 {
		p.startOffset = p.endOffset
		p.runs = nil
		return
	}
	out := p.runs[:1]
	for _, r := range p.runs[1:] {
		if l := &out[len(out)-1]; l.alike(r) {
			l.last = r.last
			continue
		}
		out = append(out, r)
	}
	p.runs = out
}
