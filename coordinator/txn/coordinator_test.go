package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/log"
)

func TestInitProducerIDBumpsAndFences(t *testing.T) {
	h := newHarness(t)
	r := h.init("tx", 60000, nil, 5)
	if r.Err != nil || r.ProducerEpoch != 0 {
		t.Fatalf("first InitProducerId: %+v", r)
	}
	pid := r.ProducerID
	if r = h.init("tx", 60000, nil, 5); r.Err != nil || r.ProducerID != pid || r.ProducerEpoch != 1 {
		t.Fatalf("second InitProducerId: %+v", r)
	}
	// KIP-360: naming the current epoch bumps it; naming it again is a
	// retry of that bump and gets the same epoch; an older one is fenced.
	if r = h.init("tx", 60000, &ProducerIDAndEpoch{pid, 1}, 5); r.Err != nil || r.ProducerEpoch != 2 {
		t.Fatalf("KIP-360 bump: %+v", r)
	}
	if r = h.init("tx", 60000, &ProducerIDAndEpoch{pid, 1}, 5); r.Err != nil || r.ProducerEpoch != 2 {
		t.Fatalf("KIP-360 retry: %+v", r)
	}
	if r = h.init("tx", 60000, &ProducerIDAndEpoch{pid, 0}, 5); code(r.Err) != kerr.ProducerFenced || r.ProducerID != -1 {
		t.Fatalf("stale epoch: %+v", r)
	}
	if r = h.init("tx", 60000, &ProducerIDAndEpoch{pid, 0}, 3); code(r.Err) != kerr.InvalidProducerEpoch {
		t.Fatalf("stale epoch, v3: %+v", r)
	}
	if r = h.init("tx", 60000, &ProducerIDAndEpoch{pid + 7, 2}, 5); code(r.Err) != kerr.ProducerFenced {
		t.Fatalf("another producer id: %+v", r)
	}
	// Checks without state.
	if r = h.init("", 60000, nil, 5); code(r.Err) != kerr.InvalidRequest {
		t.Fatalf("empty id: %+v", r)
	}
	if r = h.init("tx", 0, nil, 5); code(r.Err) != kerr.InvalidTransactionTimeout {
		t.Fatalf("zero timeout: %+v", r)
	}
	if r = h.init("tx", 900001, nil, 5); code(r.Err) != kerr.InvalidTransactionTimeout {
		t.Fatalf("timeout above transaction.max.timeout.ms: %+v", r)
	}
	// A new id gets a new producer id; without a transactional id too.
	if r2 := h.init("other", 60000, nil, 5); r2.Err != nil || r2.ProducerID == pid {
		t.Fatalf("other id: %+v", r2)
	}
	idem := await(t, func(done func(InitProducerIDResult)) {
		h.svc.InitProducerID(context.Background(), nil, 0, -1, -1, 5, done)
	})
	if idem.Err != nil || idem.ProducerEpoch != 0 || idem.ProducerID == pid {
		t.Fatalf("idempotent: %+v", idem)
	}
	// The state survives a reload.
	h.elect()
	if st := h.describe("tx"); st.ErrorCode != 0 || st.ProducerID != pid || st.ProducerEpoch != 2 || st.State != "Empty" {
		t.Fatalf("after reload: %+v", st)
	}
}

func TestCommitWritesMarkersThenCompletes(t *testing.T) {
	h := newHarness(t)
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0), tp("a", 1), tp("b", 0)); err != nil {
		t.Fatal(err)
	}
	st := h.describe("tx")
	if st.State != "Ongoing" || len(st.Topics) != 2 || st.StartTimestamp <= 0 {
		t.Fatalf("after AddPartitions: %+v", st)
	}
	// Adding partitions already in the transaction is answered at once.
	if err := h.add("tx", r, 3, tp("a", 1)); err != nil {
		t.Fatal(err)
	}
	h.sender.setHold(true)
	e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3)
	if e.Err != nil || e.ProducerID != r.ProducerID || e.ProducerEpoch != r.ProducerEpoch {
		t.Fatalf("EndTxn: %+v", e)
	}
	// Markers in flight: the producer must wait.
	h.eventually(func() error {
		if len(h.sender.markers()) < 2 {
			return errors.New("markers not sent")
		}
		return nil
	})
	if err := h.add("tx", r, 3, tp("a", 0)); code(err) != kerr.ConcurrentTransactions {
		t.Fatalf("AddPartitions while committing: %v", err)
	}
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); code(e.Err) != kerr.ConcurrentTransactions {
		t.Fatalf("EndTxn while committing: %+v", e)
	}
	if r2 := h.init("tx", 60000, nil, 5); code(r2.Err) != kerr.ConcurrentTransactions {
		t.Fatalf("InitProducerId while committing: %+v", r2)
	}
	if st := h.describe("tx"); st.State != "PrepareCommit" {
		t.Fatalf("while committing: %+v", st)
	}
	h.sender.setHold(false)
	h.waitState("tx", CompleteCommit)
	// One marker per leader, with the partition's epoch as coordinator
	// epoch.
	byBroker := map[int32][]log.TopicPartition{}
	for _, m := range h.sender.markers() {
		if !m.commit || m.pid != r.ProducerID || m.epoch != r.ProducerEpoch || m.coordinatorEpoch != h.epoch {
			t.Fatalf("marker %+v", m)
		}
		byBroker[m.broker] = append(byBroker[m.broker], m.partitions...)
	}
	if len(byBroker[1]) != 2 || len(byBroker[2]) != 1 {
		t.Fatalf("markers by broker: %v", byBroker)
	}
	// A retried commit succeeds; an abort is invalid now.
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); e.Err != nil {
		t.Fatalf("retried commit: %+v", e)
	}
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, false, 3); code(e.Err) != kerr.InvalidTxnState {
		t.Fatalf("abort after commit: %+v", e)
	}
	// A new transaction starts from CompleteCommit.
	if err := h.add("tx", r, 3, tp("b", 0)); err != nil {
		t.Fatal(err)
	}
	if st := h.describe("tx"); st.State != "Ongoing" || len(st.Topics) != 1 {
		t.Fatalf("second transaction: %+v", st)
	}
}

func TestAddPartitionsErrors(t *testing.T) {
	h := newHarness(t)
	r := h.initOK("tx")
	bad := r
	bad.ProducerEpoch--
	if err := h.add("tx", bad, 3, tp("a", 0)); code(err) != kerr.ProducerFenced {
		t.Fatalf("stale epoch: %v", err)
	}
	if err := h.add("tx", bad, 1, tp("a", 0)); code(err) != kerr.InvalidProducerEpoch {
		t.Fatalf("stale epoch, v1: %v", err)
	}
	other := r
	other.ProducerID++
	if err := h.add("tx", other, 3, tp("a", 0)); code(err) != kerr.InvalidProducerIDMapping {
		t.Fatalf("wrong producer id: %v", err)
	}
	if err := h.add("nobody", r, 3, tp("a", 0)); code(err) != kerr.InvalidProducerIDMapping {
		t.Fatalf("unknown transactional id: %v", err)
	}
	if err := h.add("", r, 3, tp("a", 0)); code(err) != kerr.InvalidRequest {
		t.Fatalf("empty transactional id: %v", err)
	}
	errs := await(t, func(done func(map[log.TopicPartition]error)) {
		h.svc.AddPartitions("tx", r.ProducerID, r.ProducerEpoch, []log.TopicPartition{tp("a", 0), tp("nope", 0), tp("a", 9)}, 3,
			func(errs map[log.TopicPartition]error, err error) { done(errs) })
	})
	if code(errs[tp("a", 0)]) != kerr.OperationNotAttempted || code(errs[tp("nope", 0)]) != kerr.UnknownTopicOrPartition || code(errs[tp("a", 9)]) != kerr.UnknownTopicOrPartition {
		t.Fatalf("unknown partitions: %v", errs)
	}
	if st := h.describe("tx"); st.State != "Empty" {
		t.Fatalf("nothing added: %+v", st)
	}
	// EndTxn with nothing begun is INVALID_TXN_STATE.
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); code(e.Err) != kerr.InvalidTxnState || e.ProducerID != -1 {
		t.Fatalf("EndTxn in Empty: %+v", e)
	}
	// AddOffsetsToTxn adds the group's partition of __consumer_offsets.
	if err := await(t, func(done func(error)) { h.svc.AddOffsets("tx", r.ProducerID, r.ProducerEpoch, "g", 3, done) }); err != nil {
		t.Fatal(err)
	}
	if st := h.describe("tx"); len(st.Topics) != 1 || st.Topics[0].Topic != metadata.ConsumerOffsetsTopic || st.Topics[0].Partitions[0] != 2 {
		t.Fatalf("after AddOffsetsToTxn: %+v", st)
	}
}

func TestSecondProducerFencesAndAbortsTheFirst(t *testing.T) {
	h := newHarness(t)
	first := h.initOK("tx")
	if err := h.add("tx", first, 3, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	// The second producer is told to retry while the open transaction
	// is aborted at a bumped epoch.
	r := h.init("tx", 60000, nil, 5)
	if code(r.Err) != kerr.ConcurrentTransactions {
		t.Fatalf("InitProducerId with an open transaction: %+v", r)
	}
	second := h.initOK("tx")
	if second.ProducerID != first.ProducerID || second.ProducerEpoch != first.ProducerEpoch+2 {
		t.Fatalf("second producer: %+v, first %+v", second, first)
	}
	ms := h.sender.markers()
	if len(ms) != 1 || ms[0].commit || ms[0].epoch != first.ProducerEpoch+1 || ms[0].partitions[0] != tp("a", 0) {
		t.Fatalf("abort markers: %+v", ms)
	}
	if st := h.describe("tx"); st.State != "Empty" {
		t.Fatalf("after fencing: %+v", st)
	}
	// The first producer is fenced everywhere.
	if e := h.end("tx", first.ProducerID, first.ProducerEpoch, true, 3); code(e.Err) != kerr.ProducerFenced {
		t.Fatalf("EndTxn of the fenced producer: %+v", e)
	}
	if e := h.end("tx", first.ProducerID, first.ProducerEpoch, true, 1); code(e.Err) != kerr.InvalidProducerEpoch {
		t.Fatalf("EndTxn v1 of the fenced producer: %+v", e)
	}
	if err := h.add("tx", first, 3, tp("a", 0)); code(err) != kerr.ProducerFenced {
		t.Fatalf("AddPartitions of the fenced producer: %v", err)
	}
}

func TestTimedOutTransactionIsAborted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AbortTimedOutInterval = 10 * time.Millisecond })
	var r InitProducerIDResult
	h.eventually(func() error {
		r = h.init("tx", 1, nil, 5)
		return r.Err
	})
	if err := h.add("tx", r, 3, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	st := h.waitState("tx", CompleteAbort)
	if st.ProducerEpoch != r.ProducerEpoch+1 {
		t.Fatalf("aborted at epoch %d, want %d (fenced)", st.ProducerEpoch, r.ProducerEpoch+1)
	}
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); code(e.Err) != kerr.ProducerFenced {
		t.Fatalf("commit after the timeout: %+v", e)
	}
}

func TestMarkersRetryOnRetriableErrors(t *testing.T) {
	h := newHarness(t)
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0), tp("a", 1)); err != nil {
		t.Fatal(err)
	}
	h.sender.failPartition(tp("a", 1), kerr.NotLeaderForPartition.Code, kerr.RequestTimedOut.Code)
	h.setLeader("a", 1, 2) // the new leader
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, false, 3); e.Err != nil {
		t.Fatal(e.Err)
	}
	h.waitState("tx", CompleteAbort)
	var toA1 []int32
	for _, m := range h.sender.markers() {
		if slices.Contains(m.partitions, tp("a", 1)) {
			toA1 = append(toA1, m.broker)
		}
	}
	if len(toA1) != 3 || toA1[2] != 2 {
		t.Fatalf("markers for a-1 went to %v, want three sends ending at broker 2", toA1)
	}
}

func TestTransportErrorsAndDeletedTopics(t *testing.T) {
	h := newHarness(t)
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0), tp("b", 0)); err != nil {
		t.Fatal(err)
	}
	h.sender.setFail(errors.New("connection refused"))
	h.setLeader("a", 0, -1) // no leader for a while
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); e.Err != nil {
		t.Fatal(e.Err)
	}
	h.eventually(func() error {
		if len(h.sender.markers()) < 2 {
			return errors.New("no retries yet")
		}
		return nil
	})
	h.deleteTopic("b") // markers for a deleted topic are skipped
	h.sender.setFail(nil)
	h.setLeader("a", 0, 1)
	h.waitState("tx", CompleteCommit)
}

func TestLoadCompletesTransactionsInFlight(t *testing.T) {
	h := newHarness(t)
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	h.sender.setFail(errors.New("leader down"))
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); e.Err != nil {
		t.Fatal(e.Err)
	}
	h.eventually(func() error {
		if len(h.sender.markers()) == 0 {
			return errors.New("no marker yet")
		}
		return nil
	})
	// A new coordinator epoch (a failover, or a restart) loads
	// PrepareCommit and sends the markers again, at its epoch.
	h.elect()
	h.sender.setFail(nil)
	h.waitState("tx", CompleteCommit)
	ms := h.sender.markers()
	if last := ms[len(ms)-1]; last.coordinatorEpoch != h.epoch || !last.commit {
		t.Fatalf("last marker %+v, want commit at coordinator epoch %d", last, h.epoch)
	}
}

func TestRefusedMarkersAreAbandoned(t *testing.T) {
	h := newHarness(t)
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	h.sender.failPartition(tp("a", 0), kerr.TransactionCoordinatorFenced.Code)
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); e.Err != nil {
		t.Fatal(e.Err)
	}
	h.eventually(func() error {
		if len(h.sender.markers()) == 0 {
			return errors.New("no marker yet")
		}
		return nil
	})
	// Kafka gives up: another coordinator owns the transaction now.
	h.eventually(func() error {
		var m dto.Metric
		if err := h.svc.metrics.abandonedTxns.Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
			return errors.New("not abandoned yet")
		}
		return nil
	})
	h.svc.markers.mu.Lock()
	queued := 0
	for _, q := range h.svc.markers.queues {
		queued += len(q)
	}
	h.svc.markers.mu.Unlock()
	if n := len(h.sender.markers()); n != 1 || queued != 0 {
		t.Fatalf("%d markers sent and %d queued, want 1 and none", n, queued)
	}
	if st := h.describe("tx"); st.State != "PrepareCommit" {
		t.Fatalf("state %s", st.State)
	}
}

func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t)
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	type out struct {
		errs map[log.TopicPartition]error
		err  error
	}
	verify := func(pid int64, epoch int16, tps ...log.TopicPartition) out {
		return await(t, func(done func(out)) {
			h.svc.VerifyPartitions("tx", pid, epoch, tps, func(errs map[log.TopicPartition]error, err error) { done(out{errs, err}) })
		})
	}
	o := verify(r.ProducerID, r.ProducerEpoch, tp("a", 0), tp("a", 1))
	if o.err != nil || o.errs[tp("a", 0)] != nil || code(o.errs[tp("a", 1)]) != kerr.TransactionAbortable {
		t.Fatalf("verify: %+v", o)
	}
	if o = verify(r.ProducerID, r.ProducerEpoch-1, tp("a", 0)); code(o.err) != kerr.ProducerFenced {
		t.Fatalf("verify stale epoch: %+v", o)
	}
	if o = verify(r.ProducerID+1, r.ProducerEpoch, tp("a", 0)); code(o.err) != kerr.InvalidProducerIDMapping {
		t.Fatalf("verify wrong producer: %+v", o)
	}
}

func TestTransactionVersion2(t *testing.T) {
	h := newHarness(t)
	h.tv = 2
	r := h.initOK("tx")
	if err := h.add("tx", r, 5, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	// EndTxn v5 bumps the epoch and returns it.
	e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 5)
	if e.Err != nil || e.ProducerEpoch != r.ProducerEpoch+1 {
		t.Fatalf("EndTxn v5: %+v", e)
	}
	st := h.waitState("tx", CompleteCommit)
	if st.ProducerEpoch != e.ProducerEpoch {
		t.Fatalf("complete at epoch %d, want %d", st.ProducerEpoch, e.ProducerEpoch)
	}
	for _, m := range h.sender.markers() {
		if m.epoch != e.ProducerEpoch {
			t.Fatalf("marker at epoch %d, want the bumped %d", m.epoch, e.ProducerEpoch)
		}
	}
	// A retry names the old epoch and succeeds; the new epoch's commit
	// of nothing is invalid; an abort of nothing bumps the epoch.
	if e2 := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 5); e2.Err != nil || e2.ProducerEpoch != e.ProducerEpoch {
		t.Fatalf("retried EndTxn v5: %+v", e2)
	}
	if e2 := h.end("tx", r.ProducerID, e.ProducerEpoch, true, 5); code(e2.Err) != kerr.InvalidTxnState {
		t.Fatalf("empty commit: %+v", e2)
	}
	e3 := h.end("tx", r.ProducerID, e.ProducerEpoch, false, 5)
	if e3.Err != nil || e3.ProducerEpoch != e.ProducerEpoch+1 {
		t.Fatalf("empty abort: %+v", e3)
	}
	h.waitState("tx", CompleteAbort)
	// The value is written flexible (v1) at transaction.version 2, and
	// the state reloads.
	h.elect()
	if st := h.describe("tx"); st.State != "CompleteAbort" || st.ProducerEpoch != e3.ProducerEpoch {
		t.Fatalf("after reload: %+v", st)
	}
}

func TestListAndDescribe(t *testing.T) {
	h := newHarness(t)
	var rs []InitProducerIDResult
	for i := range 3 {
		rs = append(rs, h.initOK(fmt.Sprintf("tx-%d", i)))
	}
	if err := h.add("tx-1", rs[1], 3, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	list := func(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
		return await(t, func(done func(*kmsg.ListTransactionsResponse)) { h.svc.ListTransactions(req, done) })
	}
	req := kmsg.NewPtrListTransactionsRequest()
	req.Version = 1
	if resp := list(req); resp.ErrorCode != 0 || len(resp.TransactionStates) != 3 {
		t.Fatalf("list all: %+v", resp)
	}
	req.StateFilters = []string{"Ongoing", "Bogus"}
	resp := list(req)
	if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != "tx-1" || !slices.Equal(resp.UnknownStateFilters, []string{"Bogus"}) {
		t.Fatalf("list Ongoing: %+v", resp)
	}
	req.StateFilters = nil
	req.ProducerIDFilters = []int64{rs[2].ProducerID}
	if resp := list(req); len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != "tx-2" {
		t.Fatalf("list by producer id: %+v", resp)
	}
	req.ProducerIDFilters = nil
	// Open longer than an hour: not the Ongoing one. Transactional ids
	// with no transaction (start time -1) pass the filter, as in
	// Kafka's listTransactionStates.
	req.DurationFilterMillis = time.Hour.Milliseconds()
	if resp := list(req); len(resp.TransactionStates) != 2 || resp.TransactionStates[0].TransactionState != "Empty" {
		t.Fatalf("list open longer than an hour: %+v", resp)
	}

	req.DurationFilterMillis = -1
	req.Version = 2
	pat := "tx-[02]"
	req.TransactionalIDPattern = &pat
	if resp := list(req); len(resp.TransactionStates) != 2 {
		t.Fatalf("list by pattern: %+v", resp)
	}
	bad := "("
	req.TransactionalIDPattern = &bad
	if resp := list(req); resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad pattern: %+v", resp)
	}
	sts := await(t, func(done func([]kmsg.DescribeTransactionsResponseTransactionState)) {
		h.svc.DescribeTransactions([]string{"tx-1", "nope", ""}, done)
	})
	if sts[0].ErrorCode != 0 || sts[0].State != "Ongoing" || sts[0].TimeoutMillis != 60000 ||
		sts[1].ErrorCode != kerr.TransactionalIDNotFound.Code || sts[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("describe: %+v", sts)
	}
}

func TestTransactionalIDExpiration(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.TransactionalIDExpiration = time.Millisecond
		c.RemoveExpiredInterval = 10 * time.Millisecond
	})
	h.initOK("tx")
	h.eventually(func() error {
		if st := h.describe("tx"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
			return errors.New("not expired yet")
		}
		return nil
	})
	// The tombstone keeps it gone across a reload.
	h.elect()
	if st := h.describe("tx"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("after reload: %+v", st)
	}
}

func TestNotCoordinator(t *testing.T) {
	h := newHarness(t)
	h.svc.OnResignation(0, -1)
	if r := h.init("tx", 60000, nil, 5); code(r.Err) != kerr.NotCoordinator {
		t.Fatalf("after resignation: %+v", r)
	}
	if st := h.describe("tx"); st.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("describe after resignation: %+v", st)
	}
}

func TestAddPartitionsWaitsForTheTransactionToComplete(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ConcurrentWait = time.Minute })
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	h.sender.setHold(true)
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); e.Err != nil {
		t.Fatal(e.Err)
	}
	// The next transaction's first partition: answered once the markers
	// of the previous one are written, not CONCURRENT_TRANSACTIONS.
	added := make(chan error, 1)
	go func() { added <- h.add("tx", r, 3, tp("b", 0)) }()
	h.eventually(func() error {
		if len(h.sender.markers()) == 0 {
			return errors.New("no marker yet")
		}
		return nil
	})
	select {
	case err := <-added:
		t.Fatalf("AddPartitions answered %v while the markers were held", err)
	default:
	}
	h.sender.setHold(false)
	if err := <-added; err != nil {
		t.Fatalf("AddPartitions after the commit completed: %v", err)
	}
	if st := h.describe("tx"); st.State != "Ongoing" || len(st.Topics) != 1 || st.Topics[0].Topic != "b" {
		t.Fatalf("second transaction: %+v", st)
	}
}

// The marker latency (EndTxn to the last marker written) is observed once
// per transaction whose markers this load sent, when they are all
// written: a transaction whose markers are held is not observed until
// they are released.
func TestMarkerLatencyMetric(t *testing.T) {
	h := newHarness(t)
	count := func() uint64 {
		mfs, err := h.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == ns+"marker_latency_ms" {
				return mf.GetMetric()[0].GetSummary().GetSampleCount()
			}
		}
		t.Fatal("no marker_latency_ms")
		return 0
	}
	r := h.initOK("tx")
	if err := h.add("tx", r, 3, tp("a", 0), tp("b", 0)); err != nil {
		t.Fatal(err)
	}
	h.sender.setHold(true)
	if e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 3); e.Err != nil {
		t.Fatal(e.Err)
	}
	h.eventually(func() error {
		if len(h.sender.markers()) < 2 {
			return errors.New("markers not sent")
		}
		return nil
	})
	if n := count(); n != 0 {
		t.Fatalf("%d observations while the markers are held", n)
	}
	h.sender.setHold(false)
	h.waitState("tx", CompleteCommit)
	if n := count(); n != 1 {
		t.Fatalf("%d observations after the commit completed, want 1", n)
	}
}
