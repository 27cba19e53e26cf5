package txn

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/moldau/moldau/broker/routine"
)

// ProducerIDBlockSize is how many producer ids a broker asks the
// controller for at a time (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// ProducerIDManager hands out producer ids from blocks the controller
// allocates durably in the cluster metadata (AllocateProducerIds, a
// ProducerIdsRecord), so no id is ever handed out twice, across restarts
// and brokers (Kafka's RPCProducerIdManager). The next block is fetched in
// the background once 90% of the current one is used. Safe for concurrent
// use.
type ProducerIDManager struct {
	allocate func(ctx context.Context, n int) (int64, error)
	log      *slog.Logger
	timeout  time.Duration
	ctx      context.Context // cancelled by Close
	cancel   context.CancelFunc

	mu        sync.Mutex
	next, end int64 // current block, end exclusive
	start     int64
	prefetch  int64 // first id of the fetched next block; -1: none
	fetching  chan struct{}
	lastErr   error // of the last fetch that failed

	routines routine.Group
}

// NewProducerIDManager returns a manager that gets blocks from allocate
// (which asks the active controller for n ids and returns the first).
func NewProducerIDManager(allocate func(ctx context.Context, n int) (int64, error), logger *slog.Logger) *ProducerIDManager {
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ProducerIDManager{allocate: allocate, log: logger, prefetch: -1, timeout: 30 * time.Second, ctx: ctx, cancel: cancel}
}

// TryGenerate returns the next producer id if one is at hand, without
// waiting; otherwise it makes sure a block is being fetched and returns
// false (Kafka answers COORDINATOR_LOAD_IN_PROGRESS then).
func (m *ProducerIDManager) TryGenerate() (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next >= m.end && m.prefetch >= 0 {
		m.start, m.next, m.end, m.prefetch = m.prefetch, m.prefetch, m.prefetch+ProducerIDBlockSize, -1
	}
	if m.next < m.end {
		id := m.next
		m.next++
		if m.prefetch < 0 && m.next-m.start >= ProducerIDBlockSize*9/10 {
			m.fetchLocked()
		}
		return id, true
	}
	m.fetchLocked()
	return -1, false
}

// Generate returns the next producer id, waiting for a block from the
// controller if none is at hand.
func (m *ProducerIDManager) Generate(ctx context.Context) (int64, error) {
	for {
		if id, ok := m.TryGenerate(); ok {
			return id, nil
		}
		m.mu.Lock()
		wait := m.fetching
		m.mu.Unlock()
		if wait == nil {
			// The fetch could not start: the manager is closed.
			return -1, errNoProducerID
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return -1, errNoProducerID
		}
		m.mu.Lock()
		err := m.lastErr
		m.mu.Unlock()
		if err != nil {
			return -1, err
		}
	}
}

// WaitAvailable waits (within ctx) until a producer id is at hand, so that
// a following TryGenerate succeeds unless others took the block meanwhile.
func (m *ProducerIDManager) WaitAvailable(ctx context.Context) error {
	for {
		m.mu.Lock()
		if m.next < m.end || m.prefetch >= 0 {
			m.mu.Unlock()
			return nil
		}
		m.fetchLocked()
		wait, err := m.fetching, m.lastErr
		m.mu.Unlock()
		if wait == nil {
			return err
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
		m.mu.Lock()
		err = m.lastErr
		m.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// fetchLocked starts fetching the next block unless a fetch is running.
func (m *ProducerIDManager) fetchLocked() {
	if m.fetching != nil {
		return
	}
	done := make(chan struct{})
	m.fetching = done
	ok := m.routines.Go(func(<-chan struct{}) {
		ctx, cancel := context.WithTimeout(m.ctx, m.timeout)
		defer cancel()
		first, err := m.allocate(ctx, ProducerIDBlockSize)
		m.mu.Lock()
		m.lastErr = err
		if err == nil {
			m.prefetch = first
		} else {
			m.log.Warn("allocating a block of producer ids failed", "err", err)
		}
		m.fetching = nil
		m.mu.Unlock()
		close(done)
	})
	if !ok {
		m.fetching = nil
	}
}

// Close stops a fetch in progress. Idempotent.
func (m *ProducerIDManager) Close() {
	m.cancel()
	m.routines.StopAndWait()
}
