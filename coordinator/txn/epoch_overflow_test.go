package txn

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/coordinator/runtime"
)

// Under transaction version 2 every EndTxn bumps the epoch; the producer
// whose epochs are exhausted moves to a new producer id at epoch 0, which
// EndTxn v5 answers (Kafka's nextProducerId, KAFKA-18660). These tests
// start the producer just below the exhaustion instead of running 32,000
// transactions.

const lastClientEpoch = math.MaxInt16 - 1 // the last epoch a client is given

// setEpoch moves id's producer (Empty or completed) to epoch and a
// transaction timeout, as if it had run that many transactions, through a
// record of __transaction_state, so that a reload keeps it.
func (h *harness) setEpoch(id string, epoch int16, timeoutMs int32) {
	h.t.Helper()
	err := await(h.t, func(done func(error)) {
		runtime.Write(h.svc.rt, "test-set-epoch", 0, func(sh *Shard) (runtime.Result[runtime.Void], error) {
			var res runtime.Result[runtime.Void]
			m := sh.txns[id]
			if m == nil || !m.state.expirationAllowed() {
				return res, errors.New("no idle transactional id " + id)
			}
			t := transit{
				producerID: m.producerID, prevProducerID: m.producerID, nextProducerID: noProducerID,
				producerEpoch: epoch, lastProducerEpoch: noProducerEpoch, timeoutMs: timeoutMs,
				state: Empty, startTimestamp: -1, lastUpdate: sh.nowMs(), clientTV: tv2,
			}
			res.Records, res.NoReplay = []runtime.Record{sh.write(m, t)}, true
			return res, nil
		}, func(_ runtime.Void, err error) { done(err) })
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// nearExhaustion is a TV2 producer of "tx" at epoch Short.MaxValue - 2
// whose next EndTxn gives it the last epoch, Short.MaxValue - 1.
func nearExhaustion(t *testing.T, mutate ...func(*Config)) (*harness, InitProducerIDResult) {
	h := newHarness(t, mutate...)
	h.tv = 2
	r := h.initOK("tx")
	h.setEpoch("tx", lastClientEpoch-1, 60000)
	r.ProducerEpoch = lastClientEpoch - 1
	if err := h.add("tx", r, 5, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 5)
	if e.Err != nil || e.ProducerID != r.ProducerID || e.ProducerEpoch != lastClientEpoch {
		t.Fatalf("EndTxn v5 below the exhaustion: %+v, want producer %d at epoch %d", e, r.ProducerID, lastClientEpoch)
	}
	h.waitState("tx", CompleteCommit)
	r.ProducerEpoch = lastClientEpoch
	return h, r
}

func (h *harness) waitMarkers(n int) {
	h.t.Helper()
	h.eventually(func() error {
		if len(h.sender.markers()) < n {
			return errors.New("markers not sent yet")
		}
		return nil
	})
}

// The EndTxn that exhausts the epochs answers the next producer id at
// epoch 0; its markers carry the old id at Short.MaxValue; the next
// transaction's AddPartitionsToTxn under the new id waits for them (it is
// not INVALID_PRODUCER_ID_MAPPING), also across a reload of the partition
// in the middle of the rotation; the transaction after it bumps the new
// id's epoch.
func TestEpochOverflowMovesToTheNextProducerID(t *testing.T) {
	h, r := nearExhaustion(t, func(c *Config) { c.ConcurrentWait = time.Minute })
	if err := h.add("tx", r, 5, tp("a", 0), tp("b", 0)); err != nil {
		t.Fatal(err)
	}
	before := len(h.sender.markers())
	h.sender.setHold(true)
	e := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 5)
	if e.Err != nil || e.ProducerID < 0 || e.ProducerID == r.ProducerID || e.ProducerEpoch != 0 {
		t.Fatalf("EndTxn v5 exhausting the epochs: %+v, want a new producer id at epoch 0 (old id %d)", e, r.ProducerID)
	}
	next := InitProducerIDResult{ProducerID: e.ProducerID, ProducerEpoch: 0}
	h.waitMarkers(before + 1)
	// The retry while the markers are written: CONCURRENT_TRANSACTIONS.
	if e2 := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 5); code(e2.Err) != kerr.ConcurrentTransactions {
		t.Fatalf("EndTxn retried during the markers: %+v", e2)
	}
	// A reload in the middle of the rotation: PrepareCommit with the
	// next producer id is read back and its markers are sent again.
	h.elect()
	added := make(chan error, 1)
	go func() { added <- h.add("tx", next, 5, tp("b", 0)) }()
	select {
	case err := <-added:
		t.Fatalf("AddPartitionsToTxn under the new id answered %v while the markers were held", err)
	case <-time.After(50 * time.Millisecond):
	}
	h.sender.setHold(false)
	if err := <-added; err != nil {
		t.Fatalf("AddPartitionsToTxn under the new id: %v", err)
	}
	for _, m := range h.sender.markers()[before:] {
		if m.pid != r.ProducerID || m.epoch != math.MaxInt16 || !m.commit {
			t.Fatalf("marker of the exhausting transaction %+v, want commit by producer %d at epoch %d", m, r.ProducerID, math.MaxInt16)
		}
	}
	if ms := h.sender.markers(); ms[len(ms)-1].coordinatorEpoch != h.epoch {
		t.Fatalf("last marker %+v, want one sent by the reload, at coordinator epoch %d", ms[len(ms)-1], h.epoch)
	}
	if st := h.describe("tx"); st.State != "Ongoing" || st.ProducerID != next.ProducerID || st.ProducerEpoch != 0 {
		t.Fatalf("next transaction: %+v", st)
	}
	before = len(h.sender.markers())
	e3 := h.end("tx", next.ProducerID, 0, true, 5)
	if e3.Err != nil || e3.ProducerID != next.ProducerID || e3.ProducerEpoch != 1 {
		t.Fatalf("EndTxn v5 under the new id: %+v", e3)
	}
	h.waitState("tx", CompleteCommit)
	for _, m := range h.sender.markers()[before:] {
		if m.pid != next.ProducerID || m.epoch != 1 {
			t.Fatalf("marker under the new id %+v, want producer %d at epoch 1", m, next.ProducerID)
		}
	}
}

// After the rotation, and after a reload, the retried EndTxn that caused
// it answers the new id and epoch; InitProducerId naming the old id at
// its last epoch is a retry (KIP-360) and answers them too, unbumped; one
// naming an older epoch of the old id is fenced.
func TestEpochOverflowRetries(t *testing.T) {
	h, r := nearExhaustion(t)
	if err := h.add("tx", r, 5, tp("a", 1)); err != nil {
		t.Fatal(err)
	}
	e := h.end("tx", r.ProducerID, r.ProducerEpoch, false, 5)
	if e.Err != nil || e.ProducerID == r.ProducerID || e.ProducerEpoch != 0 {
		t.Fatalf("EndTxn v5 (abort) exhausting the epochs: %+v", e)
	}
	h.waitState("tx", CompleteAbort)
	check := func(what string) {
		t.Helper()
		if e2 := h.end("tx", r.ProducerID, r.ProducerEpoch, false, 5); e2.Err != nil || e2.ProducerID != e.ProducerID || e2.ProducerEpoch != 0 {
			t.Fatalf("%s: retried EndTxn %+v, want %+v", what, e2, e)
		}
		if e2 := h.end("tx", r.ProducerID, r.ProducerEpoch, true, 5); code(e2.Err) != kerr.InvalidTxnState {
			t.Fatalf("%s: a commit naming the aborted transaction: %+v", what, e2)
		}
	}
	check("after the rotation")
	h.elect()
	check("after a reload")
	if st := h.describe("tx"); st.State != "CompleteAbort" || st.ProducerID != e.ProducerID || st.ProducerEpoch != 0 {
		t.Fatalf("after a reload: %+v", st)
	}
	if got := h.init("tx", 60000, &ProducerIDAndEpoch{ProducerID: r.ProducerID, Epoch: lastClientEpoch - 1}, 5); code(got.Err) != kerr.ProducerFenced {
		t.Fatalf("InitProducerId with an older epoch of the old id: %+v", got)
	}
	got := h.init("tx", 60000, &ProducerIDAndEpoch{ProducerID: r.ProducerID, Epoch: r.ProducerEpoch}, 5)
	if got.Err != nil || got.ProducerID != e.ProducerID || got.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId with the old id and epoch: %+v, want producer %d at epoch 0", got, e.ProducerID)
	}
	if err := h.add("tx", got, 5, tp("b", 0)); err != nil {
		t.Fatal(err)
	}
	if e3 := h.end("tx", got.ProducerID, 0, true, 5); e3.Err != nil || e3.ProducerID != got.ProducerID || e3.ProducerEpoch != 1 {
		t.Fatalf("EndTxn under the new id: %+v", e3)
	}
}

// A transaction at the last epoch aborted by the coordinator (timed out)
// moves the producer to a new id as well (KAFKA-20090): the producer's
// own late abort is then a retry of it and learns the new id, instead of
// being handed epoch Short.MaxValue, which no later EndTxn could bump.
func TestEpochOverflowOnTimeoutAbort(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AbortTimedOutInterval = 10 * time.Millisecond })
	h.tv = 2
	r := h.initOK("tx")
	h.setEpoch("tx", lastClientEpoch, 1)
	r.ProducerEpoch = lastClientEpoch
	if err := h.add("tx", r, 5, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
	st := h.waitState("tx", CompleteAbort)
	if st.ProducerID == r.ProducerID || st.ProducerEpoch != 0 {
		t.Fatalf("after the timeout abort: %+v, want a new producer id at epoch 0", st)
	}
	e := h.end("tx", r.ProducerID, r.ProducerEpoch, false, 5)
	if e.Err != nil || e.ProducerID != st.ProducerID || e.ProducerEpoch != 0 {
		t.Fatalf("the producer's abort after the timeout abort: %+v, want producer %d at epoch 0", e, st.ProducerID)
	}
	if err := h.add("tx", InitProducerIDResult{ProducerID: e.ProducerID}, 5, tp("a", 0)); err != nil {
		t.Fatal(err)
	}
}
