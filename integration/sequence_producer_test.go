package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sequenceProducer produces records whose values start with a growing
// big-endian uint64 sequence number, as fast as a 2-core machine allows
// (a millisecond's pause every pauseEvery records), and keeps what was
// acknowledged (in order, with partition and offset) and what failed.
type sequenceProducer struct {
	mu     sync.Mutex
	acked  []ackedRecord
	failed []error

	stop chan struct{}
	wg   sync.WaitGroup
}

type ackedRecord struct {
	seq       uint64
	partition int32
	offset    int64
}

func startSequenceProducer(ctx context.Context, cl *kgo.Client, valueSize, pauseEvery int) *sequenceProducer {
	p := &sequenceProducer{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for i := uint64(0); ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			v := make([]byte, max(valueSize, 8))
			binary.BigEndian.PutUint64(v, i)
			cl.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.failed = append(p.failed, err)
					return
				}
				p.acked = append(p.acked, ackedRecord{binary.BigEndian.Uint64(r.Value), r.Partition, r.Offset})
			})
			if pauseEvery > 0 && i%uint64(pauseEvery) == uint64(pauseEvery-1) {
				time.Sleep(time.Millisecond) // fast, but not a flood
			}
		}
	}()
	return p
}

// ackedCount is how many records were acknowledged so far.
func (p *sequenceProducer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// waitAcked waits until n more records are acknowledged.
func (p *sequenceProducer) waitAcked(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	from := p.ackedCount()
	eventually(t, timeout, func() error {
		if got := p.ackedCount() - from; got < n {
			return fmt.Errorf("%d acknowledged since", got)
		}
		return nil
	})
}

// stopAndFlush stops producing and waits for every record in flight.
func (p *sequenceProducer) stopAndFlush(t *testing.T, ctx context.Context, cl *kgo.Client) {
	t.Helper()
	close(p.stop)
	p.wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// results are the acknowledged records and the failures.
func (p *sequenceProducer) results() ([]ackedRecord, []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ackedRecord(nil), p.acked...), append([]error(nil), p.failed...)
}

// stopAndCheck stops producing, waits for every record in flight and
// returns the acknowledged records; it fails the test if any record was
// not acknowledged.
func (p *sequenceProducer) stopAndCheck(t *testing.T, ctx context.Context, cl *kgo.Client) []ackedRecord {
	t.Helper()
	p.stopAndFlush(t, ctx, cl)
	acked, failed := p.results()
	if len(failed) > 0 {
		t.Fatalf("%d records not acknowledged, the first: %v", len(failed), failed[0])
	}
	return acked
}
