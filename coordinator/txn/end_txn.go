package txn

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// EndTxnResult is EndTxn's answer: the producer id and epoch the producer
// continues with (v5+: bumped at every transaction under transaction
// version 2), or an error with -1 and -1.
type EndTxnResult struct {
	ProducerID    int64
	ProducerEpoch int16
	Err           error
}

// EndTxn commits or aborts a producer's transaction (Kafka's
// handleEndTransaction): once PrepareCommit or PrepareAbort is durable
// the producer is answered and the markers go to the partitions' leaders;
// when every marker is written the transaction is CompleteCommit or
// CompleteAbort. version is the request's: from 5 the client uses
// transaction version 2 (the epoch is bumped at every end, KIP-890 part
// 2); below 2 PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH.
func (s *Service) EndTxn(transactionalID string, producerID int64, producerEpoch int16, commit bool, version int16, done func(EndTxnResult)) {
	fail := func(err error) {
		if version < 2 && apierr.CodeOf(err) == kerr.ProducerFenced {
			err = apierr.Errorf(kerr.InvalidProducerEpoch, "%v", err)
		}
		done(EndTxnResult{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch, Err: err})
	}
	if transactionalID == "" {
		fail(errInvalidRequest("The transactional id is empty."))
		return
	}
	tv := tv0
	if version > 4 {
		tv = tv2
	}
	runtime.Write(s.rt, "end-txn", s.PartitionFor(transactionalID), func(sh *Shard) (runtime.Result[EndTxnResult], error) {
		return sh.endTxn(transactionalID, producerID, producerEpoch, commit, tv)
	}, func(r EndTxnResult, err error) {
		if err != nil {
			fail(operationError(err))
			return
		}
		done(r)
	})
}

// endTxn is the shard's part of EndTxn from a client (Kafka's
// endTransaction with isFromClient; the coordinator's own aborts go
// through fenceAndAbort). A transaction in PrepareCommit or PrepareAbort
// is still writing its markers: CONCURRENT_TRANSACTIONS, before the epoch
// is checked (KAFKA-18464). Under transaction version 2 a retry is told
// apart from the next EndTxn by its epoch, one below the bumped one; an
// abort with nothing in the transaction is legal and bumps the epoch
// (KAFKA-14563):
//
//	state           abort retry  abort current  commit retry  commit current
//	Empty           fenced       bump           invalid       invalid
//	CompleteAbort   none         bump           invalid       invalid
//	CompleteCommit  invalid      bump           none          invalid
func (s *Shard) endTxn(id string, pid int64, epoch int16, commit bool, tv int16) (runtime.Result[EndTxnResult], error) {
	var res runtime.Result[EndTxnResult]
	m := s.txns[id]
	if m == nil {
		return res, errUnknownTransactionalID(id)
	}
	current := EndTxnResult{ProducerID: m.producerID, ProducerEpoch: m.producerEpoch}
	v2 := supportsEpochBump(m.clientTV)
	retryOnOverflow := v2 && m.prevProducerID == pid && epoch == math.MaxInt16-1 && m.producerEpoch == 0
	retryOnEpochBump := v2 && m.producerEpoch == epoch+1
	retry := retryOnEpochBump || retryOnOverflow
	validEpoch := epoch == m.producerEpoch
	if v2 && (m.state == CompleteCommit || m.state == CompleteAbort) {
		validEpoch = validEpoch || retry
	}
	// Markers being written come first under transaction version 2
	// (KAFKA-18660): after an epoch overflow the producer already holds
	// the next producer id, which becomes the current one only when the
	// markers are written; until then it must retry, not be told its id
	// is unknown.
	preparing := m.state == PrepareCommit || m.state == PrepareAbort
	switch {
	case preparing && supportsEpochBump(tv):
		return res, errConcurrent(m)
	case m.producerID != pid && !retryOnOverflow:
		return res, errProducerIDMapping(id, pid)
	case preparing:
		return res, errConcurrent(m)
	case !validEpoch:
		return res, errProducerFenced(m, epoch)
	}
	emptyAbort := !commit && supportsEpochBump(tv) && !retry
	switch m.state {
	case Ongoing:
		return s.endOngoing(m, commit, tv)
	case Empty:
		if emptyAbort {
			return s.endOngoing(m, false, tv)
		}
	case CompleteCommit:
		switch {
		case emptyAbort:
			return s.endOngoing(m, false, tv)
		case commit && (retry || !supportsEpochBump(m.clientTV)):
			res.Response = current // a retry of a commit that succeeded
			return res, nil
		}
	case CompleteAbort:
		switch {
		case emptyAbort:
			return s.endOngoing(m, false, tv)
		case !commit:
			res.Response = current // a retry of an abort that succeeded
			return res, nil
		}
	}
	return res, errInvalidTxnState(m, commit)
}

// endOngoing writes PrepareCommit or PrepareAbort; under transaction
// version 2 the epoch is bumped, and a producer whose epochs are
// exhausted moves to a new producer id once the markers are written.
func (s *Shard) endOngoing(m *txnMetadata, commit bool, tv int16) (runtime.Result[EndTxnResult], error) {
	var res runtime.Result[EndTxnResult]
	next := noProducerID
	if supportsEpochBump(tv) && epochExhausted(m.producerEpoch) {
		var ok bool
		if next, ok = s.svc.opts.ProducerIDs.TryGenerate(); !ok {
			return res, errNoProducerID
		}
	}
	rec, err := s.prepareEnd(m, commit, tv, next, false)
	if err != nil {
		return res, err
	}
	res.Records, res.NoReplay = []runtime.Record{rec}, true
	res.OnWritten = s.markersAfterWrite([]*txnMetadata{m})
	// The producer continues with what the completion will hold
	// (Kafka answers with the transit of prepareComplete): the bumped
	// epoch, or after an overflow the next producer id at epoch 0.
	pidAfter, epochAfter := m.afterComplete()
	res.Response = EndTxnResult{ProducerID: pidAfter, ProducerEpoch: epochAfter}
	return res, nil
}
