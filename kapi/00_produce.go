package kapi

// Produce, versions 3 to 13.
//
//   - v3: transactional_id; record batches must be magic v2 (older
//     versions carried magic 0/1 message sets and are not served, as in
//     Kafka 4.0, KIP-896).
//   - v5: the response adds log_start_offset.
//   - v8: the response adds per-record errors and an error message
//     (KIP-467): when records of a batch fail the per-record checks
//     (a keyless record to a compacted topic, a timestamp out of range),
//     record_errors lists each one's batch_index and message and
//     error_message is Kafka's summary, so the client fails exactly those
//     records and retries the others (librdkafka:
//     _INVALID_DIFFERENT_RECORD).
//   - v9: flexible versions (KIP-482).
//   - v10: a partition answering NOT_LEADER_OR_FOLLOWER carries its
//     current leader and epoch, and node_endpoints that leader's endpoint
//     (KIP-951, leader_hints.go).
//   - v11: no change on the wire (KIP-890 part 1 client support:
//     TRANSACTION_ABORTABLE may be answered).
//   - v12: no change on the wire (KIP-890 part 2: the producer no longer
//     sends AddPartitionsToTxn; the partitions of a transactional produce
//     are added to its transaction here).
//   - v13: topics are named by topic ID instead of name (KIP-516).
//
// Transactional batches are first verified with the producer's
// transaction coordinator (transaction.partition.verification.enable), or
// from v12 added to the transaction (Config.VerifyTransactionalProduce);
// a partition the coordinator refuses gets its error and is not appended.
//
// Client quotas (client_quotas.go): the request's size counts against
// producer_byte_rate, and a throttled response carries the throttle time
// and mutes the connection after it; acks=0 mutes it with no response.
//
// acks=0 gets no response; if any partition failed, the connection is
// closed instead, as Kafka does, so the producer learns something is wrong.
// A missing topic is auto-created when auto.create.topics.enable is set.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	az "github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/replica"
)

func (h *Handler) handleProduce(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	type slot struct{ t, p int } // where a result goes in resp
	var entries []replica.ProduceEntry
	var slots []slot
	anyErr := false

	// Authorization as Kafka's: WRITE on the transactional id for the
	// whole request, then WRITE on each topic (before its existence is
	// told, and before auto-creation, which needs CREATE).
	var txnDenied bool
	if req.TransactionID != nil && !h.authorize(rc, az.Write, az.TransactionalID, *req.TransactionID) {
		txnDenied = true
	}
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var topic *metadata.Topic
		var err error
		switch {
		case txnDenied:
			err = errTxnIDAuthorization
		case req.Version < 13 && !h.authorize(rc, az.Write, az.Topic, rt.Topic):
			err = errTopicAuthorization
		default:
			topic, err = h.produceTopic(rc, req.Version, rt)
			if err == nil && req.Version >= 13 && !h.authorize(rc, az.Write, az.Topic, topic.Name) {
				topic, err = nil, errTopicAuthorization
			}
		}
		if err == nil {
			st.Topic = topic.Name
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			perr := err
			if perr == nil && (rp.Partition < 0 || int(rp.Partition) >= len(topic.Partitions)) {
				perr = kerr.UnknownTopicOrPartition
			}
			if perr != nil {
				sp.ErrorCode = ErrorCode(perr)
				anyErr = true
			} else {
				entries = append(entries, replica.ProduceEntry{
					TopicPartition: replica.TopicPartition{Topic: topic.Name, Partition: rp.Partition},
					Records:        rp.Records,
				})
				slots = append(slots, slot{ti, len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}

	finish := func(results []replica.ProduceResult) {
		for i, r := range results {
			sp := &resp.Topics[slots[i].t].Partitions[slots[i].p]
			sp.ErrorCode = ErrorCode(r.Err)
			if r.Err != nil {
				anyErr = true
				if req.Version >= 8 {
					sp.ErrorMessage = ErrorMessage(r.Err)
					setRecordErrors(sp, r.Err)
				}
				if sp.ErrorCode == kerr.UnknownServerError.Code {
					h.log.Error("produce failed", "topic", r.Topic, "partition", r.Partition, "err", r.Err)
				}
			}
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = r.BaseOffset, r.LogAppendTime, r.LogStartOffset
		}
		if anyErr && req.Version >= 10 {
			h.addProduceLeaderHints(rc.Listener, resp)
		}
		// producer_byte_rate counts the request's size, appended or
		// not, as Kafka's; acks=0 is exempt from the request quota.
		rc.recordBandwidth(h.cfg.ClientQuotas.produce(), float64(rc.Size))
		rc.q.noRequestQuota = req.Acks == 0
		if req.Acks == 0 {
			if anyErr {
				rc.closeAfter = "acks=0 produce failed for at least one partition"
			}
			rc.finish(nil)
			return
		}
		rc.finish(resp)
	}
	if len(entries) == 0 {
		finish(nil)
		return
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	h.verifyTransactional(req, entries, func(refused map[replica.TopicPartition]error) {
		if len(refused) == 0 {
			h.cfg.Replicas.AppendRecords(timeout, req.Acks, entries, finish)
			return
		}
		// Partitions the transaction coordinator refused are
		// answered with its error; the others are appended.
		results := make([]replica.ProduceResult, len(entries))
		var kept []replica.ProduceEntry
		var at []int
		for i, e := range entries {
			results[i] = replica.ProduceResult{TopicPartition: e.TopicPartition, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1, Err: refused[e.TopicPartition]}
			if results[i].Err == nil {
				kept = append(kept, e)
				at = append(at, i)
			}
		}
		if len(kept) == 0 {
			finish(results)
			return
		}
		h.cfg.Replicas.AppendRecords(timeout, req.Acks, kept, func(rs []replica.ProduceResult) {
			for j, r := range rs {
				results[at[j]] = r
			}
			finish(results)
		})
	})
}

// addProduceLeaderHints fills current_leader of the partitions that
// failed with NOT_LEADER_OR_FOLLOWER and node_endpoints with their
// leaders (KIP-951, see leader_hints.go).
func (h *Handler) addProduceLeaderHints(listener string, resp *kmsg.ProduceResponse) {
	lh := h.leaderHints(listener)
	for ti := range resp.Topics {
		st := &resp.Topics[ti]
		for pi := range st.Partitions {
			sp := &st.Partitions[pi]
			if wantsLeaderHint(sp.ErrorCode) {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = lh.leader(st.Topic, st.TopicID, sp.Partition)
			}
		}
	}
	for _, n := range lh.endpoints() {
		b := kmsg.NewProduceResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = n.id, n.host, n.port, n.rack
		resp.Brokers = append(resp.Brokers, b)
	}
}

// TxnPartition is a partition a transactional Produce writes, with the
// first sequence of its batch.
type TxnPartition struct {
	replica.TopicPartition
	FirstSequence int32
}

// TxnVerification is Config.VerifyTransactionalProduce's answer: the
// partitions verified, with the guard each append brings
// (log.SentinelGuard where the transaction was open already), and those
// refused. Both empty: verification is off for the request.
type TxnVerification struct {
	Guards  map[replica.TopicPartition]log.VerificationGuard
	Refused map[replica.TopicPartition]error
}

// verifyTransactional hands the partitions that get transactional batches
// to Config.VerifyTransactionalProduce (KIP-890), marks the entries it
// verified with their guards, and calls next with the ones refused; next
// runs at once when there is nothing to verify.
func (h *Handler) verifyTransactional(req *kmsg.ProduceRequest, entries []replica.ProduceEntry, next func(map[replica.TopicPartition]error)) {
	if req.TransactionID == nil || h.cfg.VerifyTransactionalProduce == nil {
		next(nil)
		return
	}
	var parts []TxnPartition
	var pid int64
	var epoch int16
	for _, e := range entries {
		hdr, err := log.ParseBatchHeader(e.Records)
		if err != nil || !hdr.IsTransactional() || hdr.ProducerID < 0 {
			continue // the append answers what is wrong with it
		}
		parts = append(parts, TxnPartition{TopicPartition: e.TopicPartition, FirstSequence: hdr.BaseSequence})
		pid, epoch = hdr.ProducerID, hdr.ProducerEpoch
	}
	if len(parts) == 0 {
		next(nil)
		return
	}
	h.cfg.VerifyTransactionalProduce(*req.TransactionID, pid, epoch, parts, req.Version, func(v TxnVerification) {
		for i := range entries {
			if g, ok := v.Guards[entries[i].TopicPartition]; ok {
				entries[i].VerifyTransaction, entries[i].VerificationGuard = true, g
			}
		}
		next(v.Refused)
	})
}

// produceTopic resolves a produce request's topic by name (v3-12) or ID
// (v13+), auto-creating a missing named topic when allowed.
func (h *Handler) produceTopic(rc *RequestContext, version int16, rt kmsg.ProduceRequestTopic) (*metadata.Topic, error) {
	im := h.image()
	if version >= 13 {
		t, ok := im.TopicByID(rt.TopicID)
		if !ok {
			return nil, kerr.UnknownTopicID
		}
		return t, nil
	}
	if t, ok := im.Topic(rt.Topic); ok {
		return t, nil
	}
	if !h.cfg.Broker.AutoCreateTopicsEnable || metadata.IsInternalTopic(rt.Topic) || !h.mayCreateTopic(rc, rt.Topic) {
		return nil, kerr.UnknownTopicOrPartition
	}
	t, err := h.autoCreateTopic(rc.Context(), rt.Topic)
	if err != nil {
		if ErrorCode(err) == kerr.InvalidTopicException.Code {
			return nil, err
		}
		return nil, fmt.Errorf("%w: auto-creating %q: %v", kerr.UnknownTopicOrPartition, rt.Topic, err)
	}
	return t, nil
}

// setRecordErrors fills record_errors and error_message from a per-record
// validation failure (Kafka's RecordValidationException), with Kafka's
// message: LogValidator.processRecordErrors, the list formatted as Java's
// List<RecordError>.toString.
func setRecordErrors(sp *kmsg.ProduceResponseTopicPartition, err error) {
	var rve *log.RecordValidationError
	if !errors.As(err, &rve) || len(rve.Records) == 0 {
		return
	}
	// kmsg's ErrorRecords is the schema's record_errors; RelativeOffset
	// is batch_index, ErrorMessage batch_index_error_message.
	sp.ErrorRecords = make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(rve.Records))
	for i, re := range rve.Records {
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset = re.BatchIndex
		msg := re.Message
		e.ErrorMessage = &msg
		sp.ErrorRecords[i] = e
	}
	var msg string
	if errors.Is(rve.Err, kerr.InvalidTimestamp) {
		msg = "One or more records have been rejected due to invalid timestamp"
	} else {
		first := make([]string, 0, 3)
		for _, re := range rve.Records[:min(len(rve.Records), 3)] {
			first = append(first, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", re.BatchIndex, re.Message))
		}
		msg = fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
			len(rve.Records), strings.Join(first, ", "))
	}
	sp.ErrorMessage = &msg
}
