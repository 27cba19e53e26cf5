package kapi

// DescribeTopicPartitions, version 0 (KIP-966).
//
//   - v0: flexible; topics by name (none: every topic), a
//     response_partition_limit and a cursor (topic, partition) to start
//     from; the answer carries each partition's leader, leader epoch,
//     replicas, ISR, eligible leader replicas, last known ELR and offline
//     replicas, and a next_cursor when the limit was reached.
//
// Served by any broker from its metadata image, as Kafka's
// DescribeTopicPartitionsRequestHandler with
// KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse: the topics
// (those named, or all) from the cursor's topic on, sorted by name; the
// cursor's topic starts at the cursor's partition, the others at 0; at
// most min(response_partition_limit, max.request.partition.size.limit),
// and at least 1, partitions are answered. When a topic is cut short the
// next cursor names its next partition; when the limit is used up exactly,
// it names the next topic at partition 0 (which need not exist). A named
// topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION
// (INVALID_TOPIC_EXCEPTION for an invalid name); with no names, topics are
// only those that exist. A cursor whose topic is not among the named
// ones, or whose partition is negative, fails the request with
// INVALID_REQUEST in every named topic.
//
// A partition's error is always NONE; a leader that is fenced or has no
// endpoint on the request's listener is reported as -1. Offline replicas
// are those on unregistered or fenced brokers or brokers without the
// listener, and this broker's own offline replicas (as Metadata).
// Eligible leader replicas and the last known ELR are the image's (KIP-966),
// empty lists when there are none. Topic authorized operations are those the
// principal has (every topic operation without an authorizer; this API
// has no flag to leave them out). All topics lists those the principal may
// describe; a named topic it may not is TOPIC_AUTHORIZATION_FAILED.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/metadata"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDescribeTopicPartitions(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	im := h.image()
	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	names := map[string]bool{}
	if all {
		for _, t := range im.Topics() {
			if t.Name >= cursorTopic && h.authorizeQuiet(rc, az.Describe, az.Topic, t.Name) {
				names[t.Name] = true
			}
		}
	} else {
		for _, rt := range req.Topics {
			if rt.Topic >= cursorTopic {
				names[rt.Topic] = true
			}
		}
		if req.Cursor != nil && !names[req.Cursor.Topic] {
			return describeTopicPartitionsError(req, kerr.InvalidRequest.Code)
		}
	}
	if req.Cursor != nil && req.Cursor.Partition < 0 {
		return describeTopicPartitionsError(req, kerr.InvalidRequest.Code)
	}
	limit := min(req.ResponsePartitionLimit, h.cfg.Broker.GetInt("max.request.partition.size.limit"))
	remaining := int64(max(limit, 1))
	endpoints := h.aliveEndpoints(im, rc.Listener)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if remaining == 0 {
			// The limit is used up at a topic's end: go on at the
			// next one.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		if !all && !h.authorize(rc, az.Describe, az.Topic, name) {
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			st.Topic, st.ErrorCode, st.Partitions = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code, []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t, ok := im.Topic(name)
		if !ok {
			if !all {
				resp.Topics = append(resp.Topics, missingDescribedTopic(name))
			}
			continue
		}
		start := int64(0)
		if name == cursorTopic {
			start = int64(req.Cursor.Partition)
		}
		upper := min(int64(len(t.Partitions)), start+remaining)
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic, st.TopicID, st.IsInternal = kmsg.StringPtr(name), t.ID, metadata.IsInternalTopic(name)
		st.AuthorizedOperations = h.authorizedOperations(rc, az.Topic, name)
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for i := start; i < upper; i++ {
			st.Partitions = append(st.Partitions, h.describedPartition(im, t, t.Partitions[i], endpoints, rc.Listener))
		}
		resp.Topics = append(resp.Topics, st)
		if upper < int64(len(t.Partitions)) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(upper)}
			break
		}
		remaining -= int64(len(st.Partitions))
	}
	return resp
}

func (h *Handler) describedPartition(im *metadata.Image, t *metadata.Topic, p metadata.Partition,
	endpoints map[int32]metadata.BrokerEndpoint, listener string) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	sp.Partition, sp.LeaderID, sp.LeaderEpoch = p.Index, -1, p.LeaderEpoch
	if _, ok := endpoints[p.Leader]; ok {
		sp.LeaderID = p.Leader
	}
	sp.Replicas, sp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
	if sp.Replicas == nil {
		sp.Replicas = []int32{}
	}
	if sp.ISR == nil {
		sp.ISR = []int32{}
	}
	// Kafka's Replicas.toList: empty lists, never null.
	sp.EligibleLeaderReplicas = append([]int32{}, p.ELR...)
	sp.LastKnownELR = append([]int32{}, p.LastKnownELR...)
	sp.OfflineReplicas = []int32{}
	for _, r := range p.Replicas {
		b := im.Brokers[r]
		offline := b == nil || b.Fenced || !b.HasOnlineDir(p.Directory(r))
		if !offline {
			_, onListener := b.Endpoint(listener)
			offline = !onListener
		}
		if offline || r == h.cfg.NodeID && h.offlineHere(t.Name, p.Index) {
			sp.OfflineReplicas = append(sp.OfflineReplicas, r)
		}
	}
	return sp
}

// missingDescribedTopic answers for a named topic that does not exist.
func missingDescribedTopic(name string) kmsg.DescribeTopicPartitionsResponseTopic {
	st := kmsg.NewDescribeTopicPartitionsResponseTopic()
	st.Topic, st.IsInternal = kmsg.StringPtr(name), metadata.IsInternalTopic(name)
	st.ErrorCode = kerr.UnknownTopicOrPartition.Code
	if controller.ValidateTopicName(name) != nil {
		st.ErrorCode = kerr.InvalidTopicException.Code
	}
	st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	return st
}

// describeTopicPartitionsError is Kafka's getErrorResponse: every named
// topic with the code.
func describeTopicPartitionsError(req *kmsg.DescribeTopicPartitionsRequest, code int16) *kmsg.DescribeTopicPartitionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic, st.ErrorCode = kmsg.StringPtr(rt.Topic), code
		st.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
