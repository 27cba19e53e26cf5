package share

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
)

// testService is a Service over a MemLog with every partition of
// __share_group_state led here.
type testService struct {
	*Service
	t     *testing.T
	log   *runtimetest.MemLog
	parts int32
	epoch int32
}

func newTestService(t *testing.T, cfg Config, parts int32) *testService {
	t.Helper()
	return newTestServiceOn(t, cfg, parts, runtimetest.NewMemLog())
}

func newTestServiceOn(t *testing.T, cfg Config, parts int32, l *runtimetest.MemLog) *testService {
	t.Helper()
	s := NewService(Options{
		Config:        cfg,
		Log:           l,
		NumPartitions: func() int32 { return parts },
		Topics:        func([16]byte) (int32, bool) { return 8, true },
	})
	ts := &testService{Service: s, t: t, log: l, parts: parts, epoch: 1}
	t.Cleanup(s.Close)
	ts.elect()
	return ts
}

// elect loads every partition at the next epoch and waits until a read
// of each is served.
func (ts *testService) elect() {
	ts.t.Helper()
	ts.epoch++
	for p := range ts.parts {
		ts.OnElection(p, ts.epoch)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p := range ts.parts {
		for {
			k := keyOnPartition(ts.Service, p)
			_, err := ts.summary(k, -1)
			if !errors.Is(err, kerr.CoordinatorLoadInProgress) && !errors.Is(err, kerr.NotCoordinator) {
				break
			}
			if time.Now().After(deadline) {
				ts.t.Fatalf("partition %d not loaded: %v", p, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// keyOnPartition is a key that hashes to partition p.
func keyOnPartition(s *Service, p int32) Key {
	for i := int32(0); ; i++ {
		k := Key{GroupID: "probe", TopicID: [16]byte{1}, Partition: i}
		if s.PartitionFor(k) == p {
			return k
		}
	}
}

type result[T any] struct {
	v   T
	err error
}

func wait[T any](t *testing.T, run func(done func(T, error))) (T, error) {
	t.Helper()
	ch := make(chan result[T], 1)
	run(func(v T, err error) { ch <- result[T]{v, err} })
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	var zero T
	return zero, nil
}

func (ts *testService) initialize(k Key, stateEpoch int32, start int64) error {
	_, err := wait(ts.t, func(done func(struct{}, error)) {
		ts.InitializeState(k, stateEpoch, start, func(err error) { done(struct{}{}, err) })
	})
	return err
}

func (ts *testService) write(k Key, st PartitionState) error {
	_, err := wait(ts.t, func(done func(struct{}, error)) {
		ts.WriteState(k, st, func(err error) { done(struct{}{}, err) })
	})
	return err
}

func (ts *testService) read(k Key, leaderEpoch int32) (PartitionState, error) {
	return wait(ts.t, func(done func(PartitionState, error)) { ts.ReadState(k, leaderEpoch, done) })
}

func (ts *testService) summary(k Key, leaderEpoch int32) (PartitionState, error) {
	return wait(ts.t, func(done func(PartitionState, error)) { ts.ReadStateSummary(k, done) })
}

func (ts *testService) remove(k Key) error {
	_, err := wait(ts.t, func(done func(struct{}, error)) {
		ts.DeleteState(k, func(err error) { done(struct{}{}, err) })
	})
	return err
}

// states is a copy of every shard's merged states, read on the shards.
func (ts *testService) states() map[Key]shareValue {
	ts.t.Helper()
	out := map[Key]shareValue{}
	for p := range ts.parts {
		m, err := wait(ts.t, func(done func(map[Key]shareValue, error)) {
			readShard(ts.Service, p, func(sh *Shard) map[Key]shareValue {
				c := map[Key]shareValue{}
				for k, v := range sh.states {
					c[k] = *v
				}
				return c
			}, done)
		})
		if err != nil {
			ts.t.Fatalf("reading partition %d: %v", p, err)
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
