package replica

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/log"
)

// ProduceEntry is one partition's records in a produce request.
type ProduceEntry struct {
	TopicPartition
	Records []byte
	// VerifyTransaction and VerificationGuard: the entry's transactional
	// batch was verified with the transaction coordinator under this
	// guard (see MaybeStartTransactionVerification).
	VerifyTransaction bool
	VerificationGuard log.VerificationGuard
}

// ProduceResult is one partition's outcome.
type ProduceResult struct {
	TopicPartition
	Err            error
	BaseOffset     int64
	LogAppendTime  int64
	LogStartOffset int64
}

// AppendRecords appends each entry to its partition's log, as the leader,
// and calls done with the results (Kafka's appendRecords). With acks=-1
// (all) done waits in the produce purgatory until the high watermark
// reaches each partition's last appended offset or the timeout passes
// (REQUEST_TIMED_OUT); with acks 0 or 1, done is called before returning.
// Acks other than -1, 0 and 1 are INVALID_REQUIRED_ACKS for every
// partition.
func (m *Manager) AppendRecords(timeout time.Duration, acks int16, entries []ProduceEntry, done func([]ProduceResult)) {
	m.appendRecords(timeout, acks, log.AppendOptions{Origin: log.AppendOriginClient}, entries, done)
}

// appendRecords is AppendRecords for an origin (Kafka's appendRecords with
// AppendOrigin): a coordinator may write internal topics and control
// batches.
func (m *Manager) appendRecords(timeout time.Duration, acks int16, opts log.AppendOptions, entries []ProduceEntry, done func([]ProduceResult)) {
	results := make([]ProduceResult, len(entries))
	if acks != -1 && acks != 0 && acks != 1 {
		for i, e := range entries {
			results[i] = ProduceResult{TopicPartition: e.TopicPartition, Err: kerr.InvalidRequiredAcks, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
		}
		done(results)
		return
	}
	required := make([]int64, len(entries)) // offset the HW must reach; -1 if nothing to wait for
	for i, e := range entries {
		results[i], required[i] = m.appendToLocalLog(e, acks, opts)
	}
	if m.afterLocalAppend != nil {
		m.afterLocalAppend()
	}
	// New data: waiting fetches may now complete. appendToLocalLog moved
	// each high watermark first, so a DelayedFetch tried from here sees
	// the new data. Never under a partition lock (the log released its
	// own before returning).
	for i, e := range entries {
		if results[i].Err == nil {
			m.fetchP.CheckAndComplete(e.TopicPartition)
		}
	}
	var status []produceStatus
	if acks == -1 {
		for i, e := range entries {
			if required[i] < 0 {
				continue
			}
			// The common case, and always so on one node: the high
			// watermark has passed the append already, so nothing
			// waits and no delayed operation is built. Done may also
			// be an error: the partition was deleted, or this broker
			// stopped leading it since the append (a controlled
			// shutdown moves leaderships under produce traffic), and
			// then the append is not acknowledged: its records may be
			// on no other replica.
			s := produceStatus{tp: e.TopicPartition, requiredOffset: required[i], acksPending: true}
			if s.check(m) {
				results[i].Err = s.err
				continue
			}
			status = append(status, s)
		}
	}
	if len(status) == 0 {
		done(results)
		return
	}
	op := newDelayedProduce(m, timeout, status, func(status []produceStatus) {
		for _, s := range status {
			if s.err == nil {
				continue
			}
			for i := range results {
				if results[i].TopicPartition == s.tp && required[i] >= 0 {
					results[i].Err = s.err
				}
			}
		}
		done(results)
	})
	keys := make([]TopicPartition, len(status))
	for i, s := range status {
		keys[i] = s.tp
	}
	m.produceP.TryCompleteElseWatch(op, keys)
}

func (m *Manager) appendToLocalLog(e ProduceEntry, acks int16, opts log.AppendOptions) (ProduceResult, int64) {
	res := ProduceResult{TopicPartition: e.TopicPartition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
	if opts.Origin == log.AppendOriginClient && metadata.IsInternalTopic(e.Topic) {
		// Clients may not write to internal topics (Kafka:
		// INVALID_TOPIC_EXCEPTION via the internal-topic check in
		// appendToLocalLog).
		res.Err = fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, e.Topic)
		return res, -1
	}
	p, err := m.getPartition(e.TopicPartition)
	if err != nil {
		res.Err = err
		return res, -1
	}
	opts.VerifyTransaction, opts.VerificationGuard = e.VerifyTransaction, e.VerificationGuard
	info, err := m.appendAsLeader(p, e.Records, acks, opts)
	if err != nil {
		res.Err = err
		res.LogStartOffset = p.Log.LogStartOffset()
		p.stats.failedProduces.Inc()
		if !isExpectedAppendError(err) {
			if ok, n := m.errLog.allow(time.Now()); ok {
				m.log.Error("append failed", "topic", e.Topic, "partition", e.Partition, "err", err, "failures_not_logged", n)
			}
		}
		return res, -1
	}
	if !info.Duplicate {
		p.stats.bytesIn.Add(float64(info.ValidBytes))
		p.stats.messagesIn.Add(float64(info.NumRecords))
	}
	// The high watermark moves at once when the ISR is the leader alone;
	// otherwise the followers' fetches move it.
	if m.maybeIncrementHighWatermark(p) {
		m.produceP.CheckAndComplete(e.TopicPartition)
	}
	res.BaseOffset = info.FirstOffset
	res.LogAppendTime = info.LogAppendTime
	res.LogStartOffset = info.LogStartOffset
	return res, info.LastOffset + 1
}

// appendAsLeader appends as the partition's leader (Kafka's
// Partition.appendRecordsToLeader): under the replication state's read
// lock, so that leadership does not change during the append, and for
// acks=all only while the ISR has min.insync.replicas members
// (NOT_ENOUGH_REPLICAS otherwise, nothing appended).
func (m *Manager) appendAsLeader(p *Partition, records []byte, acks int16, opts log.AppendOptions) (log.AppendInfo, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.IsLeader() {
		return log.AppendInfo{}, apierr.Errorf(kerr.NotLeaderForPartition, "Broker %d is no longer the leader of %s.", m.cfg.NodeID, p.TopicPartition)
	}
	if acks == -1 {
		if minISR := p.effectiveMinISRLocked(); len(p.isr) < minISR {
			return log.AppendInfo{}, apierr.Errorf(kerr.NotEnoughReplicas, "The size of the current ISR %v is insufficient to satisfy the min.isr requirement of %d for partition %s", p.isr, minISR, p.TopicPartition)
		}
	}
	return p.Log.AppendAsLeader(records, p.LeaderEpoch(), opts)
}

// isExpectedAppendError reports errors that are the producer's fault and
// so not worth an error line in the broker log.
func isExpectedAppendError(err error) bool {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke {
	case kerr.CorruptMessage, kerr.InvalidRecord, kerr.MessageTooLarge, kerr.RecordListTooLarge,
		kerr.InvalidTimestamp, kerr.OutOfOrderSequenceNumber, kerr.InvalidProducerEpoch,
		kerr.DuplicateSequenceNumber, kerr.UnsupportedForMessageFormat, kerr.InvalidProducerIDMapping,
		kerr.UnsupportedCompressionType, kerr.UnsupportedVersion, kerr.InvalidTxnState,
		kerr.TransactionCoordinatorFenced, kerr.NotEnoughReplicas, kerr.NotLeaderForPartition:
		return true
	}
	return false
}

// MaybeStartTransactionVerification starts (or joins) the verification of
// a producer's transaction on a partition this broker leads and returns
// the guard its append must bring; log.SentinelGuard when the transaction
// is already open there and needs no verification (Kafka's
// ReplicaManager.maybeStartTransactionVerificationForPartition).
func (m *Manager) MaybeStartTransactionVerification(tp TopicPartition, producerID int64, sequence int32, epoch int16) (log.VerificationGuard, error) {
	p, err := m.getPartition(tp)
	if err != nil {
		return log.SentinelGuard, err
	}
	return p.Log.MaybeStartTransactionVerification(producerID, sequence, epoch), nil
}

// TransactionVerificationCurrent reports whether guard is still the
// producer's verification guard on the partition (see
// log.Log.TransactionVerificationCurrent).
func (m *Manager) TransactionVerificationCurrent(tp TopicPartition, producerID int64, guard log.VerificationGuard) bool {
	p := m.Partition(tp)
	return p != nil && p.Log.TransactionVerificationCurrent(producerID, guard)
}

// AbandonTransactionVerification drops a verification the coordinator
// refused (see log.Log.AbandonTransactionVerification).
func (m *Manager) AbandonTransactionVerification(tp TopicPartition, producerID int64, guard log.VerificationGuard) {
	if p := m.Partition(tp); p != nil {
		p.Log.AbandonTransactionVerification(producerID, guard)
	}
}
