package log

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// numBatchesToRetain is how many batches per producer are remembered for
// duplicate detection (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// matching max.in.flight.requests.per.connection <= 5).
const numBatchesToRetain = 5

type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// producerEntry is one idempotent producer's state (Kafka's
// ProducerStateEntry): its epoch and its last batches, oldest first.
type producerEntry struct {
	epoch   int16
	n       int
	batches [numBatchesToRetain]batchMeta
}

func (e *producerEntry) push(m batchMeta) {
	if e.n == numBatchesToRetain {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
}

func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].lastSeq
}

func (e *producerEntry) findDuplicate(epoch int16, first, last int32) (batchMeta, bool) {
	if epoch != e.epoch {
		return batchMeta{}, false
	}
	for i := 0; i < e.n; i++ {
		if b := e.batches[i]; b.firstSeq == first && b.lastSeq == last {
			return b, true
		}
	}
	return batchMeta{}, false
}

type pendingProducer struct {
	pid   int64
	entry producerEntry
}

// producerStateManager is the basic part of Kafka's ProducerStateManager:
// per producer id the epoch and last batches, to detect duplicates and
// sequence errors. Guarded by Log.mu.
type producerStateManager struct {
	producers map[int64]*producerEntry
	pending   []pendingProducer // reused between appends
}

func newProducerStateManager() producerStateManager {
	return producerStateManager{producers: make(map[int64]*producerEntry)}
}

func (m *producerStateManager) pendingFor(pid int64) *producerEntry {
	for i := range m.pending {
		if m.pending[i].pid == pid {
			return &m.pending[i].entry
		}
	}
	p := pendingProducer{pid: pid, entry: producerEntry{epoch: -1}}
	if e, ok := m.producers[pid]; ok {
		p.entry = *e
	}
	m.pending = append(m.pending, p)
	return &m.pending[len(m.pending)-1].entry
}

func inSequence(lastSeq, nextSeq int32) bool {
	return int64(nextSeq) == int64(lastSeq)+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// prepare checks the batches' producer state without changing it (Kafka's
// analyzeAndValidateProducerState for a client append). If a batch
// duplicates one already in the log it returns that batch. The updates
// are kept pending until commit.
func (m *producerStateManager) prepare(batches []ValidatedBatch) (batchMeta, bool, error) {
	m.pending = m.pending[:0]
	for i := range batches {
		b := &batches[i]
		if b.ProducerID < 0 || b.Control || b.BaseSequence < 0 {
			continue
		}
		e := m.pendingFor(b.ProducerID)
		if dup, ok := e.findDuplicate(b.ProducerEpoch, b.BaseSequence, b.LastSequence); ok {
			return dup, true, nil
		}
		if b.ProducerEpoch < e.epoch {
			return batchMeta{}, false, fmt.Errorf("%w: producer %d epoch %d is older than the current %d", kerr.InvalidProducerEpoch, b.ProducerID, b.ProducerEpoch, e.epoch)
		}
		if b.ProducerEpoch != e.epoch {
			// A new epoch must start at sequence 0, unless the producer
			// is unknown (KIP-360: its state may have expired).
			if b.BaseSequence != 0 && e.epoch != -1 {
				return batchMeta{}, false, fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d, not 0", kerr.OutOfOrderSequenceNumber, b.ProducerID, b.ProducerEpoch, b.BaseSequence)
			}
			e.epoch, e.n = b.ProducerEpoch, 0
		} else if e.n > 0 && !inSequence(e.lastSeq(), b.BaseSequence) {
			return batchMeta{}, false, fmt.Errorf("%w: producer %d epoch %d: sequence %d does not follow %d", kerr.OutOfOrderSequenceNumber, b.ProducerID, b.ProducerEpoch, b.BaseSequence, e.lastSeq())
		}
		e.push(batchMeta{firstSeq: b.BaseSequence, lastSeq: b.LastSequence, firstOffset: b.BaseOffset, lastOffset: b.LastOffset, timestamp: b.MaxTimestamp})
	}
	return batchMeta{}, false, nil
}

// commit applies the updates of the last prepare.
func (m *producerStateManager) commit([]ValidatedBatch) {
	for i := range m.pending {
		p := &m.pending[i]
		if e, ok := m.producers[p.pid]; ok {
			*e = p.entry
		} else {
			e := p.entry
			m.producers[p.pid] = &e
		}
	}
	m.pending = m.pending[:0]
}

// replay updates the state from a batch header read from the log, without
// checks (used to rebuild the state at load).
func (m *producerStateManager) replay(h *BatchHeader) {
	if h.ProducerID < 0 || h.IsControl() || h.BaseSequence < 0 {
		return
	}
	e, ok := m.producers[h.ProducerID]
	if !ok {
		e = &producerEntry{epoch: -1}
		m.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.epoch {
		e.epoch, e.n = h.ProducerEpoch, 0
	}
	last := h.BaseSequence + h.LastOffsetDelta
	if last < h.BaseSequence { // wrapped
		last = h.LastOffsetDelta - (math.MaxInt32 - h.BaseSequence) - 1
	}
	e.push(batchMeta{firstSeq: h.BaseSequence, lastSeq: last, firstOffset: h.BaseOffset, lastOffset: h.LastOffset(), timestamp: h.MaxTimestamp})
}

// numProducers is the number of producers tracked.
func (m *producerStateManager) numProducers() int { return len(m.producers) }
