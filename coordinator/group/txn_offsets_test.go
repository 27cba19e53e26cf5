package group

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
	"github.com/moldau/moldau/log"
)

// newTestService is a Service on an in-memory __consumer_offsets of one
// partition, coordinated here.
func newTestService(t *testing.T, verify TxnVerifier) (*Service, *runtimetest.MemLog) {
	t.Helper()
	ml := runtimetest.NewMemLog()
	s := NewService(Options{
		Config:            DefaultConfig(),
		Log:               ml,
		Metadata:          newFakeTopics(TopicInfo{Name: "foo", Partitions: 3}),
		NumPartitions:     func() int32 { return 1 },
		Logger:            slog.New(slog.DiscardHandler),
		VerifyTransaction: verify,
	})
	t.Cleanup(s.Close)
	s.OnElection(0, 1)
	waitLoaded(t, s)
	return s, ml
}

func waitLoaded(t *testing.T, s *Service) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := fetchStable(t, s, "probe", false)
		if g.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("shard did not load")
		}
		time.Sleep(time.Millisecond)
	}
}

func fetchStable(t *testing.T, s *Service, group string, requireStable bool) kmsg.OffsetFetchResponseGroup {
	t.Helper()
	ch := make(chan []kmsg.OffsetFetchResponseGroup, 1)
	req := kmsg.OffsetFetchRequestGroup{Group: group, MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "foo", Partitions: []int32{0}}}}
	s.OffsetFetch(RequestContext{APIVersion: 8}, []kmsg.OffsetFetchRequestGroup{req}, requireStable, func(g []kmsg.OffsetFetchResponseGroup) { ch <- g })
	select {
	case g := <-ch:
		return g[0]
	case <-time.After(10 * time.Second):
		t.Fatal("OffsetFetch did not answer")
	}
	panic("unreachable")
}

func txnCommit(t *testing.T, s *Service, version int16, group string, pid int64, epoch int16, offset int64, topic string) *kmsg.TxnOffsetCommitResponse {
	t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = version
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", group, pid, epoch
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
	ch := make(chan *kmsg.TxnOffsetCommitResponse, 1)
	s.TxnOffsetCommit(RequestContext{APIVersion: version}, req, func(r *kmsg.TxnOffsetCommitResponse) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("TxnOffsetCommit did not answer")
	}
	panic("unreachable")
}

func completeTxn(t *testing.T, s *Service, pid int64, epoch int16, commit bool) error {
	t.Helper()
	ch := make(chan error, 1)
	s.CompleteTransaction(0, pid, epoch, 0, commit, time.Second, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("CompleteTransaction did not answer")
	}
	panic("unreachable")
}

func TestTxnOffsetCommitPendingUntilMarker(t *testing.T) {
	s, ml := newTestService(t, nil)
	if r := txnCommit(t, s, 3, "g", 5, 0, 42, "foo"); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %+v", r)
	}
	if r := txnCommit(t, s, 3, "g", 5, 0, 1, "nope"); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", r)
	}
	if g := fetchStable(t, s, "g", false); g.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("pending offset visible: %+v", g)
	}
	if g := fetchStable(t, s, "g", true); g.Topics[0].Partitions[0].ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable: %+v", g)
	}
	if err := completeTxn(t, s, 5, 0, true); err != nil {
		t.Fatal(err)
	}
	if g := fetchStable(t, s, "g", true); g.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("after commit: %+v", g)
	}
	// An aborted one never shows.
	txnCommit(t, s, 3, "g", 6, 0, 99, "foo")
	if err := completeTxn(t, s, 6, 0, false); err != nil {
		t.Fatal(err)
	}
	if g := fetchStable(t, s, "g", true); g.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("after abort: %+v", g)
	}
	// The log holds a transactional batch and a marker per transaction,
	// and a reload replays the same state.
	var txnBatches, markers int
	for _, b := range ml.Batches(log.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: 0}) {
		h, _ := log.ParseBatchHeader(b)
		switch {
		case h.IsControl():
			markers++
		case h.IsTransactional():
			txnBatches++
		}
	}
	if txnBatches != 2 || markers != 2 {
		t.Fatalf("%d transactional batches and %d markers, want 2 and 2", txnBatches, markers)
	}
	s.OnElection(0, 2)
	waitLoaded(t, s)
	if g := fetchStable(t, s, "g", true); g.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("after reload: %+v", g)
	}
}

func TestTxnOffsetCommitValidation(t *testing.T) {
	var asked []int16
	verify := func(txnID string, pid int64, epoch int16, partition int32, version int16, done func(error)) {
		asked = append(asked, version)
		if pid == 13 {
			done(kerr.TransactionAbortable)
			return
		}
		done(nil)
	}
	s, _ := newTestService(t, verify)
	// A generation for a group that does not exist.
	req := func(version int16, gen int32, member string) *kmsg.TxnOffsetCommitResponse {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.Version = version
		r.TransactionalID, r.Group, r.ProducerID, r.Generation, r.MemberID = "tx", "g2", 5, gen, member
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "foo", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
		ch := make(chan *kmsg.TxnOffsetCommitResponse, 1)
		s.TxnOffsetCommit(RequestContext{APIVersion: version}, r, func(resp *kmsg.TxnOffsetCommitResponse) { ch <- resp })
		return <-ch
	}
	if r := req(3, 4, "m"); r.Topics[0].Partitions[0].ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("unknown group with a generation: %+v", r)
	}
	if r := req(5, -1, ""); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("simple commit: %+v", r)
	}
	if r := txnCommit(t, s, 4, "g3", 13, 0, 1, "foo"); r.Topics[0].Partitions[0].ErrorCode != kerr.TransactionAbortable.Code {
		t.Fatalf("refused verification: %+v", r)
	}
	if !slices.Equal(asked, []int16{3, 5, 4}) {
		t.Fatalf("verification asked for versions %v", asked)
	}
	if r := txnCommit(t, s, 3, "", 5, 0, 1, "foo"); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group: %+v", r)
	}
}

func TestCompleteTransactionNotCoordinator(t *testing.T) {
	s, _ := newTestService(t, nil)
	s.OnResignation(0, -1)
	if err := completeTxn(t, s, 5, 0, true); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("after resignation: %v", err)
	}
}
