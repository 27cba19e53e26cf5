package kapi

// Metadata, versions 0 to 13.
//
//   - v0: brokers (node id, host, port) and topics with partitions
//     (leader, replicas, isr); an empty topic list means all topics.
//   - v1: brokers carry the rack; controller_id; topics carry is_internal;
//     a null topic list means all topics and an empty one means none.
//   - v2: cluster_id.
//   - v3: throttle_time_ms.
//   - v4: allow_auto_topic_creation (v0-v3 always allow it).
//   - v5: partitions carry offline_replicas.
//   - v6: no change on the wire (a leader without an endpoint on the
//     request's listener is LISTENER_NOT_FOUND instead of
//     LEADER_NOT_AVAILABLE).
//   - v7: partitions carry leader_epoch.
//   - v8: include_cluster_authorized_operations and
//     include_topic_authorized_operations (KIP-430).
//   - v9: flexible.
//   - v10: topics carry topic_id in the response (KIP-516).
//   - v11: cluster authorized operations removed (DescribeCluster has them).
//   - v12: topics may be asked for by topic_id (name null); unknown ids
//     are UNKNOWN_TOPIC_ID.
//   - v13: top-level error_code (KIP-1102).
//
// The brokers listed are this node's advertised endpoint for the listener
// the request came in on (Kafka's getAliveBrokerNodes(listenerName)). The
// controller id is this node, as KRaft reports a live broker.
//
// Auto-creation (auto.create.topics.enable and the request allowing it, not
// for a request for all topics): a missing topic with a valid name is
// created with num.partitions and default.replication.factor and answered
// with LEADER_NOT_AVAILABLE, the retriable error Kafka gives for a topic it
// has just created (Kafka in KRaft mode answers UNKNOWN_TOPIC_OR_PARTITION
// because its creation is asynchronous; here it is done, so
// LEADER_NOT_AVAILABLE is the accurate "retry now"). If the creation fails,
// its error is returned (e.g. INVALID_REPLICATION_FACTOR). Internal topics
// are not auto-created here: the coordinators create them (FindCoordinator).
// Without auto-creation a missing topic is UNKNOWN_TOPIC_OR_PARTITION, or
// INVALID_TOPIC_EXCEPTION for an invalid name.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/metadata"
)

func (h *Handler) handleMetadata(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	v := req.Version

	ep, haveEndpoint := h.endpointFor(rc.Listener)
	if haveEndpoint {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = h.cfg.NodeID, ep.Host, ep.Port, h.cfg.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
	clusterID := h.cfg.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = h.cfg.NodeID
	if v >= 8 && v <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = clusterAuthorizedOperations
	}

	allTopics := req.Topics == nil || v == 0 && len(req.Topics) == 0
	allowAuto := v < 4 || req.AllowAutoTopicCreation
	allowAuto = allowAuto && h.cfg.Broker.AutoCreateTopicsEnable && !allTopics

	describe := func(t metadata.Topic) kmsg.MetadataResponseTopic {
		return h.metadataTopic(v, t, haveEndpoint)
	}
	if allTopics {
		for _, t := range h.cfg.Metadata.Topics() {
			resp.Topics = append(resp.Topics, describe(t))
		}
	} else {
		seenName := map[string]bool{}
		seenID := map[metadata.TopicID]bool{}
		for _, rt := range req.Topics {
			if v >= 12 && rt.Topic == nil {
				id := metadata.TopicID(rt.TopicID)
				if id.IsZero() || seenID[id] {
					continue
				}
				seenID[id] = true
				t, ok := h.cfg.Metadata.TopicByID(id)
				if !ok {
					mt := kmsg.NewMetadataResponseTopic()
					mt.ErrorCode = kerr.UnknownTopicID.Code
					mt.TopicID = rt.TopicID
					resp.Topics = append(resp.Topics, mt)
					continue
				}
				resp.Topics = append(resp.Topics, describe(t))
				continue
			}
			if rt.Topic == nil || seenName[*rt.Topic] {
				continue
			}
			name := *rt.Topic
			seenName[name] = true
			if t, ok := h.cfg.Metadata.Topic(name); ok {
				resp.Topics = append(resp.Topics, describe(t))
				continue
			}
			resp.Topics = append(resp.Topics, h.missingTopic(name, allowAuto))
		}
	}
	if v >= 8 && req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			resp.Topics[i].AuthorizedOperations = topicAuthorizedOperations
		}
	}
	return resp
}

// endpointFor returns this node's advertised endpoint for a listener.
func (h *Handler) endpointFor(listener string) (Endpoint, bool) {
	for _, ep := range h.cfg.Endpoints() {
		if ep.Listener == listener {
			return ep, true
		}
	}
	return Endpoint{}, false
}

// metadataTopic describes an existing topic.
func (h *Handler) metadataTopic(v int16, t metadata.Topic, haveEndpoint bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal || metadata.IsInternalTopic(t.Name)
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = append([]int32{}, p.Replicas...)
		mp.ISR = append([]int32{}, p.ISR...)
		mp.OfflineReplicas = []int32{}
		if p.Leader == h.cfg.NodeID && !haveEndpoint {
			// The leader has no endpoint on the request's listener.
			if v >= 6 {
				mp.ErrorCode = kerr.ListenerNotFound.Code
			} else {
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// missingTopic answers for a topic that does not exist, auto-creating it
// when allowed.
func (h *Handler) missingTopic(name string, allowAuto bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.IsInternal = metadata.IsInternalTopic(name)
	if err := validateTopicName(name); err != nil {
		mt.ErrorCode = kerr.InvalidTopicException.Code
		return mt
	}
	if !allowAuto || metadata.IsInternalTopic(name) {
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return mt
	}
	t, err := h.createTopic(name, -1, -1, nil, nil, false)
	switch {
	case err == nil:
		h.log.Info("auto-created topic on metadata request", "topic", name, "partitions", len(t.Partitions))
		mt.TopicID = t.ID
		mt.ErrorCode = kerr.LeaderNotAvailable.Code
	case errors.Is(err, kerr.TopicAlreadyExists):
		// Created concurrently: it exists now, but answer as for a
		// topic just created.
		mt.ErrorCode = kerr.LeaderNotAvailable.Code
	default:
		h.log.Info("auto-creating topic failed", "topic", name, "err", err)
		mt.ErrorCode = ErrorCode(err)
	}
	return mt
}
