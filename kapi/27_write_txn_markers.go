package kapi

// WriteTxnMarkers, versions 0 to 2: a transaction coordinator asks the
// leader of each partition of a transaction to append its COMMIT or ABORT
// marker (KafkaApis.handleWriteTxnMarkersRequest).
//
//   - v0: markers (producer id and epoch, result, topics and partitions,
//     coordinator epoch).
//   - v1: flexible versions.
//   - v2: transaction_version per marker (KIP-1228): from 2 the marker's
//     epoch must be newer than the producer's (the coordinator bumped it
//     when the transaction ended, KIP-890).
//
// Each marker is appended, as a control batch built here, to each of its
// partitions with AppendOrigin.COORDINATOR and acks=all, waiting at most
// request.timeout.ms; the response comes when every append committed or
// failed. Errors per partition are Kafka's: UNKNOWN_TOPIC_OR_PARTITION
// (no log here), NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED, KAFKA_STORAGE_ERROR,
// REQUEST_TIMED_OUT. Markers for __consumer_offsets go to the group
// coordinator when one is wired (Config.CompleteGroupTransaction, Kafka
// 4's GroupCoordinator.completeTransaction), with its
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and
// NOT_COORDINATOR answered as NOT_LEADER_OR_FOLLOWER, as Kafka does. A
// partition named twice in one marker is answered once.
//
// The transaction coordinator sends this request to each partition
// leader over the network, or calls WriteTxnMarkers when the leader is
// this broker; both take the same path from here on.

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/replica"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

// GroupTxnCompleter completes a transaction on a __consumer_offsets
// partition: the group coordinator writes the marker and applies the
// pending offset commits (Kafka 4's GroupCoordinator.completeTransaction).
// It calls done once, possibly later and from another goroutine.
type GroupTxnCompleter func(tp replica.TopicPartition, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, timeout time.Duration, done func(error))

func (h *Handler) handleWriteTxnMarkers(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	if !h.authorizeQuiet(rc, az.Alter, az.Cluster, az.ClusterName) {
		if err := h.authorizeCluster(rc, az.ClusterAction); err != nil {
			rc.finish(writeTxnMarkersRefused(req, err))
			return
		}
	}
	h.WriteTxnMarkers(rc.Context(), req, func(resp *kmsg.WriteTxnMarkersResponse) {
		rc.finish(resp)
	})
}

// markerOutcome is one partition's answer to one marker.
type markerOutcome struct {
	tp  replica.TopicPartition
	err error
}

// WriteTxnMarkers serves a WriteTxnMarkers request (see the file comment)
// and calls done exactly once with the response, possibly from another
// goroutine, once every marker is appended or failed. It is what the
// transaction coordinator calls for markers to partitions this broker
// leads; the request's Version decides the response's.
func (h *Handler) WriteTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest, done func(*kmsg.WriteTxnMarkersResponse)) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	outcomes := make([][]markerOutcome, len(req.Markers))
	timeout := h.cfg.Broker.RequestTimeout
	if timeout <= 0 {
		timeout = defaultForwardTimeout
	}
	var pending atomic.Int64
	pending.Store(int64(len(req.Markers)) + 1)
	finish := func() {
		if pending.Add(-1) == 0 {
			done(buildWriteTxnMarkersResponse(resp, req, outcomes))
		}
	}
	for i := range req.Markers {
		h.writeMarker(req.Markers[i], timeout, &outcomes[i], finish)
	}
	finish()
}

// writeMarker appends one marker to its partitions and calls finish once
// out holds every partition's outcome.
func (h *Handler) writeMarker(m kmsg.WriteTxnMarkersRequestMarker, timeout time.Duration, out *[]markerOutcome, finish func()) {
	var tps []replica.TopicPartition
	seen := make(map[replica.TopicPartition]bool)
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			tp := replica.TopicPartition{Topic: t.Topic, Partition: p}
			if !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	// Outcomes in request order; each is written once, before the
	// counter that publishes them is decremented.
	*out = make([]markerOutcome, len(tps))
	index := make(map[replica.TopicPartition]int, len(tps))
	for k, tp := range tps {
		(*out)[k].tp = tp
		index[tp] = k
	}
	record := func(tp replica.TopicPartition, err error) { (*out)[index[tp]].err = err }
	var viaLog []replica.TopicPartition
	var groupTPs []replica.TopicPartition
	for _, tp := range tps {
		if tp.Topic == metadata.ConsumerOffsetsTopic && h.cfg.CompleteGroupTransaction != nil {
			groupTPs = append(groupTPs, tp)
		} else {
			viaLog = append(viaLog, tp)
		}
	}
	var left atomic.Int64
	left.Store(int64(len(groupTPs)) + 1)
	part := func() {
		if left.Add(-1) == 0 {
			finish()
		}
	}
	for _, tp := range groupTPs {
		h.cfg.CompleteGroupTransaction(tp, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed, timeout, func(err error) {
			var ke *kerr.Error
			if errors.As(err, &ke) && (ke == kerr.CoordinatorNotAvailable || ke == kerr.CoordinatorLoadInProgress || ke == kerr.NotCoordinator) {
				err = kerr.NotLeaderForPartition // the transaction coordinator retries it
			}
			record(tp, err)
			part()
		})
	}
	mk := replica.TxnMarker{
		ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Committed,
		CoordinatorEpoch: m.CoordinatorEpoch, TransactionVersion: int16(m.TransactionVersion), Partitions: viaLog,
	}
	h.cfg.Replicas.WriteTxnMarkers(timeout, mk, h.now(), func(rs []replica.TxnMarkerResult) {
		for _, r := range rs {
			record(r.TopicPartition, r.Err)
		}
		part()
	})
}

// buildWriteTxnMarkersResponse groups the outcomes by producer id, as
// Kafka's response does (markers of one producer are merged), in the
// order the request named them.
func buildWriteTxnMarkersResponse(resp *kmsg.WriteTxnMarkersResponse, req *kmsg.WriteTxnMarkersRequest, outcomes [][]markerOutcome) *kmsg.WriteTxnMarkersResponse {
	byPid := make(map[int64]int)
	for i, m := range req.Markers {
		j, ok := byPid[m.ProducerID]
		if !ok {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			resp.Markers = append(resp.Markers, rm)
			j = len(resp.Markers) - 1
			byPid[m.ProducerID] = j
		}
		rm := &resp.Markers[j]
		for _, o := range outcomes[i] {
			var rt *kmsg.WriteTxnMarkersResponseMarkerTopic
			for k := range rm.Topics {
				if rm.Topics[k].Topic == o.tp.Topic {
					rt = &rm.Topics[k]
					break
				}
			}
			if rt == nil {
				t := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				t.Topic = o.tp.Topic
				rm.Topics = append(rm.Topics, t)
				rt = &rm.Topics[len(rm.Topics)-1]
			}
			rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
			rp.Partition, rp.ErrorCode = o.tp.Partition, ErrorCode(o.err)
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	return resp
}
