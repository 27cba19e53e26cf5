package runtime

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log"
)

func (h *harness) incrTxn(p int32, pid int64, epoch int16, key string) chan outcome[int32] {
	return call(func(done func(int32, error)) {
		WriteTransactional(h.rt, "incr-txn", p, pid, epoch, func(s *counterShard) (Result[int32], error) { return incr(s, key) }, done)
	})
}

func (h *harness) complete(p int32, pid int64, epoch int16, commit bool) chan outcome[struct{}] {
	return call(func(done func(struct{}, error)) {
		CompleteTransaction(h.rt, p, pid, epoch, 3, commit, func(err error) { done(struct{}{}, err) })
	})
}

func TestTransactionalWritesAndMarkers(t *testing.T) {
	h := newHarness(t)
	if _, err := wait(t, h.complete(0, 7, 1, true)); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("marker before election: %v, want NOT_COORDINATOR", err)
	}
	h.rt.OnElection(0, 2)
	h.waitActive(0)

	// A plain write, then two transactional ones of producer 7 and one of
	// producer 8: the plain one is flushed first, each transactional
	// write is a batch of its own.
	plain := h.incr(0, "a")
	t1 := h.incrTxn(0, 7, 1, "b")
	t2 := h.incrTxn(0, 7, 1, "c")
	t3 := h.incrTxn(0, 8, 0, "b")
	for _, ch := range []chan outcome[int32]{plain, t1, t2, t3} {
		if _, err := wait(t, ch); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := wait(t, h.get(0, "b")); v != 0 {
		t.Fatalf("uncommitted transactional write visible: b = %d", v)
	}
	if _, err := wait(t, h.complete(0, 7, 1, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := wait(t, h.complete(0, 8, 0, false)); err != nil {
		t.Fatal(err)
	}
	if v, _ := wait(t, h.get(0, "b")); v != 1 {
		t.Fatalf("after commit b = %d, want 1", v)
	}
	if v, _ := wait(t, h.get(0, "c")); v != 1 {
		t.Fatalf("after commit c = %d, want 1", v)
	}

	h.log.mu.Lock()
	batches := append([][]byte(nil), h.log.batches[0]...)
	h.log.mu.Unlock()
	type want struct {
		pid           int64
		txn, control  bool
		records       int32
		controlCommit bool
	}
	exp := []want{{-1, false, false, 1, false}, {7, true, false, 1, false}, {7, true, false, 1, false}, {8, true, false, 1, false}, {7, true, true, 1, true}, {8, true, true, 1, false}}
	if len(batches) != len(exp) {
		t.Fatalf("%d batches, want %d", len(batches), len(exp))
	}
	for i, b := range batches {
		hdr, err := log.CheckBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		e := exp[i]
		if hdr.ProducerID != e.pid || hdr.IsTransactional() != e.txn || hdr.IsControl() != e.control || hdr.NumRecords != e.records || hdr.PartitionLeaderEpoch != 2 {
			t.Fatalf("batch %d: %+v, want %+v", i, hdr, e)
		}
		if e.control {
			it := log.NewRecordIter(b[log.BatchHeaderSize:])
			var r log.Record
			if ok, err := it.Next(&r); !ok || err != nil {
				t.Fatalf("control batch %d: %v", i, err)
			}
			typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
			if (typ == log.ControlCommit) != e.controlCommit || binary.BigEndian.Uint32(r.Value[2:]) != 3 {
				t.Fatalf("control record %d: key %x value %x", i, r.Key, r.Value)
			}
		}
	}

	// A reload replays the same state from the log.
	h.rt.OnElection(0, 3)
	h.waitActive(0)
	if v, _ := wait(t, h.get(0, "b")); v != 1 {
		t.Fatalf("after reload b = %d, want 1", v)
	}
}

func TestRefusedMarkerReloadsTheShard(t *testing.T) {
	h := newHarness(t)
	h.rt.OnElection(0, 1)
	h.waitActive(0)
	if _, err := wait(t, h.incrTxn(0, 7, 1, "b")); err != nil {
		t.Fatal(err)
	}
	h.log.mu.Lock()
	h.log.failAppends = kerr.InvalidProducerEpoch
	h.log.mu.Unlock()
	if _, err := wait(t, h.complete(0, 7, 1, true)); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("refused marker: %v", err)
	}
	h.log.mu.Lock()
	h.log.failAppends = nil
	h.log.mu.Unlock()
	h.waitActive(0)
	// The shard forgot the commit the log refused: b is still pending.
	if v, _ := wait(t, h.get(0, "b")); v != 0 {
		t.Fatalf("b = %d after a refused marker, want 0", v)
	}
	if _, err := wait(t, h.complete(0, 7, 1, true)); err != nil {
		t.Fatal(err)
	}
	if v, _ := wait(t, h.get(0, "b")); v != 1 {
		t.Fatalf("b = %d, want 1", v)
	}
}
