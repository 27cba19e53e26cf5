package kapi

// Authorization of the transaction APIs, as Kafka's KafkaApis: WRITE on
// the transactional id for every client request of a transaction, READ on
// the group for its offsets, WRITE (AddPartitionsToTxn) or READ
// (TxnOffsetCommit) on its topics; the brokers' own AddPartitionsToTxn
// (v4+) and WriteTxnMarkers need CLUSTER_ACTION (or, for the markers,
// ALTER) on the cluster.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/log"
)

// authorizeAddPartitions is the check of a client's AddPartitionsToTxn
// (v0-3): nil when it may go ahead, else every partition's answer (the
// refused topics TOPIC_AUTHORIZATION_FAILED, the others
// OPERATION_NOT_ATTEMPTED, or all TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func (h *Handler) authorizeAddPartitions(rc *RequestContext, req *kmsg.AddPartitionsToTxnRequest) []kmsg.AddPartitionsToTxnResponseTopic {
	if h.cfg.Authorizer == nil {
		return nil
	}
	if !h.authorize(rc, az.Write, az.TransactionalID, req.TransactionalID) {
		return addPartitionsResults(req.Topics, nil, errTxnIDAuthorization)
	}
	errs := map[log.TopicPartition]error{}
	refused := false
	for _, t := range req.Topics {
		e := error(kerr.OperationNotAttempted)
		if !h.authorize(rc, az.Write, az.Topic, t.Topic) {
			e, refused = errTopicAuthorization, true
		}
		for _, p := range t.Partitions {
			errs[log.TopicPartition{Topic: t.Topic, Partition: p}] = e
		}
	}
	if !refused {
		return nil
	}
	return addPartitionsResults(req.Topics, errs, nil)
}

// writeTxnMarkersRefused answers every marker's partitions with err.
func writeTxnMarkersRefused(req *kmsg.WriteTxnMarkersRequest, err error) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, ErrorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// authorizeTxnOffsetCommit is authorizeOffsetCommit for TxnOffsetCommit:
// the refused topics' answers (taken out of req), or every topic's when
// the transactional id or the group is refused.
func (h *Handler) authorizeTxnOffsetCommit(rc *RequestContext, req *kmsg.TxnOffsetCommitRequest) []kmsg.TxnOffsetCommitResponseTopic {
	if h.cfg.Authorizer == nil {
		return nil
	}
	var all error
	switch {
	case !h.authorize(rc, az.Write, az.TransactionalID, req.TransactionalID):
		all = errTxnIDAuthorization
	case !h.authorize(rc, az.Read, az.Group, req.Group):
		all = errGroupAuthorization
	}
	var denied []kmsg.TxnOffsetCommitResponseTopic
	kept := req.Topics[:0:0]
	for _, t := range req.Topics {
		e := all
		if e == nil && !h.mayUseTopic(rc, az.Read, t.Topic, t.TopicID) {
			e = errTopicAuthorization
		}
		if e == nil {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, ErrorCode(e)
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	req.Topics = kept
	return denied
}
