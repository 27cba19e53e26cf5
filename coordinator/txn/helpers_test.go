package txn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
	"github.com/moldau/moldau/log"
)

// fakeSender answers WriteTxnMarkers requests: by default every partition
// succeeds; errFor makes a partition fail with a code a number of times;
// hold keeps requests until release.
type fakeSender struct {
	mu       sync.Mutex
	requests []sentRequest
	errFor   map[log.TopicPartition][]int16 // codes to answer, in turn
	hold     bool
	held     []chan struct{}
	fail     error // a transport error for every request
}

type sentRequest struct {
	broker int32
	req    *kmsg.WriteTxnMarkersRequest
}

func newFakeSender() *fakeSender {
	return &fakeSender{errFor: map[log.TopicPartition][]int16{}}
}

func (f *fakeSender) SendWriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	f.mu.Lock()
	f.requests = append(f.requests, sentRequest{broker, req})
	if f.fail != nil {
		err := f.fail
		f.mu.Unlock()
		return nil, err
	}
	if f.hold {
		ch := make(chan struct{})
		f.held = append(f.held, ch)
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		f.mu.Lock()
	}
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				tp := log.TopicPartition{Topic: t.Topic, Partition: p}
				var code int16
				if codes := f.errFor[tp]; len(codes) > 0 {
					code, f.errFor[tp] = codes[0], codes[1:]
				}
				rt.Partitions = append(rt.Partitions, kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: p, ErrorCode: code})
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	f.mu.Unlock()
	return resp, nil
}

func (f *fakeSender) setHold(h bool) {
	f.mu.Lock()
	f.hold = h
	held := f.held
	if !h {
		f.held = nil
	}
	f.mu.Unlock()
	if !h {
		for _, ch := range held {
			close(ch)
		}
	}
}

func (f *fakeSender) setFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

func (f *fakeSender) failPartition(tp log.TopicPartition, codes ...int16) {
	f.mu.Lock()
	f.errFor[tp] = append(f.errFor[tp], codes...)
	f.mu.Unlock()
}

// markers returns every marker sent so far, with its destination.
func (f *fakeSender) markers() []sentMarker {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sentMarker
	for _, r := range f.requests {
		for _, m := range r.req.Markers {
			sm := sentMarker{broker: r.broker, pid: m.ProducerID, epoch: m.ProducerEpoch, commit: m.Committed, coordinatorEpoch: m.CoordinatorEpoch}
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					sm.partitions = append(sm.partitions, log.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
			out = append(out, sm)
		}
	}
	return out
}

type sentMarker struct {
	broker           int32
	pid              int64
	epoch            int16
	commit           bool
	coordinatorEpoch int32
	partitions       []log.TopicPartition
}

// harness is a Service coordinating the one partition of an in-memory
// __transaction_state, with topics "a" (2 partitions, leader 1) and "b" (1
// partition, leader 2).
type harness struct {
	t       *testing.T
	svc     *Service
	log     *runtimetest.MemLog
	sender  *fakeSender
	tv      int16
	epoch   int32
	mu      sync.Mutex
	leaders map[string][]int32 // topic -> leader per partition
	blocks  int
	reg     *prometheus.Registry
}

func newHarness(t *testing.T, mutate ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, log: runtimetest.NewMemLog(), sender: newFakeSender(), epoch: 1, reg: prometheus.NewRegistry(),
		leaders: map[string][]int32{"a": {1, 1}, "b": {2}, metadata.ConsumerOffsetsTopic: {1, 1, 1}}}
	cfg := DefaultConfig()
	cfg.MarkerRetryBackoff = 5 * time.Millisecond
	for _, m := range mutate {
		m(&cfg)
	}
	ids := NewProducerIDManager(func(ctx context.Context, n int) (int64, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.blocks++
		return int64(h.blocks-1) * int64(n), nil
	}, slog.New(slog.DiscardHandler))
	t.Cleanup(ids.Close)
	h.svc = NewService(Options{
		Config:         cfg,
		Log:            h.log,
		NumPartitions:  func() int32 { return 1 },
		ProducerIDs:    ids,
		Markers:        h.sender,
		Leader:         h.leader,
		GroupPartition: func(string) int32 { return 2 },
		TransactionVersion: func() int16 {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.tv
		},
		Logger:     slog.New(slog.DiscardHandler),
		Registerer: h.reg,
	})
	t.Cleanup(h.svc.Close)
	h.elect()
	return h
}

func (h *harness) leader(tp log.TopicPartition) (int32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ls, ok := h.leaders[tp.Topic]
	if !ok || tp.Partition < 0 || int(tp.Partition) >= len(ls) {
		return -1, false
	}
	return ls[tp.Partition], true
}

func (h *harness) setLeader(topic string, partition, leader int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leaders[topic][partition] = leader
}

func (h *harness) deleteTopic(topic string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.leaders, topic)
}

// elect (re)loads the partition at the next epoch and waits for it.
func (h *harness) elect() {
	h.t.Helper()
	h.epoch++
	h.svc.OnElection(0, h.epoch)
	h.eventually(func() error {
		st := h.describe("probe")
		if st.ErrorCode == kerr.CoordinatorLoadInProgress.Code || st.ErrorCode == kerr.NotCoordinator.Code {
			return kerr.ErrorForCode(st.ErrorCode)
		}
		return nil
	})
}

func (h *harness) eventually(cond func() error) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("condition not met: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func await[T any](t *testing.T, f func(done func(T))) T {
	t.Helper()
	ch := make(chan T, 1)
	f(func(v T) { ch <- v })
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("operation did not answer")
	}
	panic("unreachable")
}

func (h *harness) init(id string, timeoutMs int32, expected *ProducerIDAndEpoch, version int16) InitProducerIDResult {
	h.t.Helper()
	return await(h.t, func(done func(InitProducerIDResult)) {
		pid, epoch := int64(-1), int16(-1)
		if expected != nil {
			pid, epoch = expected.ProducerID, expected.Epoch
		}
		h.svc.InitProducerID(context.Background(), &id, timeoutMs, pid, epoch, version, done)
	})
}

// initOK initializes id, retrying CONCURRENT_TRANSACTIONS as clients do.
func (h *harness) initOK(id string) InitProducerIDResult {
	h.t.Helper()
	var r InitProducerIDResult
	h.eventually(func() error {
		r = h.init(id, 60000, nil, 5)
		return r.Err
	})
	return r
}

func (h *harness) add(id string, r InitProducerIDResult, version int16, tps ...log.TopicPartition) error {
	h.t.Helper()
	type out struct {
		errs map[log.TopicPartition]error
		err  error
	}
	o := await(h.t, func(done func(out)) {
		h.svc.AddPartitions(id, r.ProducerID, r.ProducerEpoch, tps, version, func(errs map[log.TopicPartition]error, err error) { done(out{errs, err}) })
	})
	if o.errs != nil {
		return errors.Join(mapErrs(o.errs)...)
	}
	return o.err
}

func mapErrs(m map[log.TopicPartition]error) []error {
	var out []error
	for _, e := range m {
		out = append(out, e)
	}
	return out
}

func (h *harness) end(id string, pid int64, epoch int16, commit bool, version int16) EndTxnResult {
	h.t.Helper()
	return await(h.t, func(done func(EndTxnResult)) { h.svc.EndTxn(id, pid, epoch, commit, version, done) })
}

func (h *harness) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	h.t.Helper()
	return await(h.t, func(done func([]kmsg.DescribeTransactionsResponseTransactionState)) {
		h.svc.DescribeTransactions([]string{id}, done)
	})[0]
}

// waitState polls until id is in state.
func (h *harness) waitState(id string, state State) kmsg.DescribeTransactionsResponseTransactionState {
	h.t.Helper()
	var st kmsg.DescribeTransactionsResponseTransactionState
	h.eventually(func() error {
		st = h.describe(id)
		if st.State != state.String() {
			return errors.New("state " + st.State + ", want " + state.String())
		}
		return nil
	})
	return st
}

func tp(topic string, p int32) log.TopicPartition {
	return log.TopicPartition{Topic: topic, Partition: p}
}

func code(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	if err != nil {
		return kerr.UnknownServerError
	}
	return nil
}
