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
// The brokers listed are the registered, unfenced brokers that have an
// endpoint on the listener the request came in on, with their rack (Kafka's
// getAliveBrokerNodes(listenerName)). The controller id is the active
// controller when it is such a broker (combined mode), else this broker
// (Kafka in KRaft mode names a random live broker, which forwards). A
// partition without a leader is LEADER_NOT_AVAILABLE; one whose leader has
// no endpoint on the listener LISTENER_NOT_FOUND (v6+). offline_replicas
// are the replicas on fenced or unknown brokers, those whose assigned log
// dir (PartitionRecord.Directories, KIP-858) their broker reports offline
// (Kafka's KRaftMetadataCache.getOfflineReplicas), and this broker's own
// replicas that are offline (their log dir failed, or their log could not
// be created), which it knows before the controller does. As in Kafka,
// an offline replica does not change the partition's error: a partition
// whose leader is alive answers NONE with its leader (clients then get
// KAFKA_STORAGE_ERROR from it), one without a leader LEADER_NOT_AVAILABLE.
// Once the broker's heartbeat has named the dir, the controller moves the
// leadership of its replicas there (broker/controller's directories.go):
// a single replica is then LEADER_NOT_AVAILABLE with leader -1.
//
// Auto-creation (auto.create.topics.enable and the request allowing it, not
// for a request for all topics): a missing topic with a valid name is
// created through the controller with num.partitions and
// default.replication.factor and answered with LEADER_NOT_AVAILABLE, the
// retriable error Kafka gives for a topic it has just created (Kafka in
// KRaft mode answers UNKNOWN_TOPIC_OR_PARTITION because its creation is
// asynchronous; here it is done, so LEADER_NOT_AVAILABLE is the accurate
// "retry now"). If the creation fails,
// its error is returned (e.g. INVALID_REPLICATION_FACTOR). Internal topics
// are not auto-created here: the coordinators create them (FindCoordinator).
// Without auto-creation a missing topic is UNKNOWN_TOPIC_OR_PARTITION, or
// INVALID_TOPIC_EXCEPTION for an invalid name.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/metadata"
	az "github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/replica"
)

func (h *Handler) handleMetadata(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	v := req.Version
	im := h.image()

	endpoints := h.aliveEndpoints(im, rc.Listener)
	for _, b := range im.SortedBrokers() {
		if ep, ok := endpoints[b.ID]; ok {
			mb := kmsg.NewMetadataResponseBroker()
			mb.NodeID, mb.Host, mb.Port, mb.Rack = b.ID, ep.Host, int32(ep.Port), b.Rack
			resp.Brokers = append(resp.Brokers, mb)
		}
	}
	clusterID := h.cfg.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = h.controllerIDFor(endpoints)
	if v >= 8 && v <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0
		if h.authorize(rc, az.Describe, az.Cluster, az.ClusterName) {
			resp.AuthorizedOperations = h.authorizedOperations(rc, az.Cluster, az.ClusterName)
		}
	}

	allTopics := req.Topics == nil || v == 0 && len(req.Topics) == 0
	allowAuto := v < 4 || req.AllowAutoTopicCreation
	allowAuto = allowAuto && h.cfg.Broker.AutoCreateTopicsEnable && !allTopics

	describe := func(t *metadata.Topic) kmsg.MetadataResponseTopic {
		return metadataTopic(v, im, t, endpoints, h.cfg.NodeID, h.offlineHere)
	}
	// Authorization as Kafka's: all topics lists those the principal may
	// describe; a topic asked for by name or id that it may not describe
	// is TOPIC_AUTHORIZATION_FAILED whether it exists or not (by id, the
	// id is given back: ids are not secret).
	denied := func(name *string, id [16]byte) kmsg.MetadataResponseTopic {
		mt := kmsg.NewMetadataResponseTopic()
		mt.ErrorCode, mt.Topic, mt.TopicID = kerr.TopicAuthorizationFailed.Code, name, id
		return mt
	}
	if allTopics {
		for _, t := range im.Topics() {
			if h.authorizeQuiet(rc, az.Describe, az.Topic, t.Name) {
				resp.Topics = append(resp.Topics, describe(t))
			}
		}
	} else {
		seenName := map[string]bool{}
		seenID := map[uuid.UUID]bool{}
		for _, rt := range req.Topics {
			if v >= 12 && rt.Topic == nil {
				id := uuid.UUID(rt.TopicID)
				if id.IsZero() || seenID[id] {
					continue
				}
				seenID[id] = true
				t, ok := im.TopicByID(id)
				if !ok {
					mt := kmsg.NewMetadataResponseTopic()
					mt.ErrorCode = kerr.UnknownTopicID.Code
					mt.TopicID = rt.TopicID
					resp.Topics = append(resp.Topics, mt)
					continue
				}
				if !h.authorize(rc, az.Describe, az.Topic, t.Name) {
					resp.Topics = append(resp.Topics, denied(nil, rt.TopicID))
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
			if !h.authorize(rc, az.Describe, az.Topic, name) {
				resp.Topics = append(resp.Topics, denied(&name, [16]byte{}))
				continue
			}
			if t, ok := im.Topic(name); ok {
				resp.Topics = append(resp.Topics, describe(t))
				continue
			}
			resp.Topics = append(resp.Topics, h.missingTopic(rc, name, allowAuto))
		}
	}
	if v >= 8 && req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if mt := &resp.Topics[i]; mt.Topic != nil && mt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				mt.AuthorizedOperations = h.authorizedOperations(rc, az.Topic, *mt.Topic)
			}
		}
	}
	return resp
}

// aliveEndpoints returns, for every registered unfenced broker with an
// endpoint on listener, that endpoint.
func (h *Handler) aliveEndpoints(im *metadata.Image, listener string) map[int32]metadata.BrokerEndpoint {
	out := make(map[int32]metadata.BrokerEndpoint, len(im.Brokers))
	for id, b := range im.Brokers {
		if b.Fenced {
			continue
		}
		if ep, ok := b.Endpoint(listener); ok {
			out[id] = ep
		}
	}
	return out
}

// controllerIDFor is the controller id to report: the active controller if
// clients can reach it on this listener, else this broker.
func (h *Handler) controllerIDFor(endpoints map[int32]metadata.BrokerEndpoint) int32 {
	if id := h.cfg.Controller.ActiveController(); id >= 0 {
		if _, ok := endpoints[id]; ok {
			return id
		}
	}
	return h.cfg.NodeID
}

// offlineHere reports whether this broker's replica of a partition is
// offline.
func (h *Handler) offlineHere(topic string, partition int32) bool {
	return h.cfg.Replicas != nil && h.cfg.Replicas.IsOffline(replica.TopicPartition{Topic: topic, Partition: partition})
}

// metadataTopic describes an existing topic; offlineHere tells whether
// the replica of node self (this broker) is offline.
func metadataTopic(v int16, im *metadata.Image, t *metadata.Topic, endpoints map[int32]metadata.BrokerEndpoint,
	self int32, offlineHere func(topic string, partition int32) bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = append([]int32{}, p.Replicas...)
		mp.ISR = append([]int32{}, p.ISR...)
		mp.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			if b := im.Brokers[r]; b == nil || b.Fenced || !b.HasOnlineDir(p.Directory(r)) || r == self && offlineHere(t.Name, p.Index) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		switch _, reachable := endpoints[p.Leader]; {
		case p.Leader < 0:
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		case !reachable && im.Brokers[p.Leader] != nil && !im.Brokers[p.Leader].Fenced:
			// The leader has no endpoint on the request's listener.
			if v >= 6 {
				mp.ErrorCode = kerr.ListenerNotFound.Code
			} else {
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
		case !reachable:
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// missingTopic answers for a topic that does not exist, auto-creating it
// when allowed.
func (h *Handler) missingTopic(rc *RequestContext, name string, allowAuto bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.IsInternal = metadata.IsInternalTopic(name)
	if err := controller.ValidateTopicName(name); err != nil {
		mt.ErrorCode = kerr.InvalidTopicException.Code
		return mt
	}
	if !allowAuto || metadata.IsInternalTopic(name) {
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return mt
	}
	if !h.mayCreateTopic(rc, name) {
		mt.ErrorCode, mt.IsInternal = kerr.TopicAuthorizationFailed.Code, false
		return mt
	}
	t, err := h.autoCreateTopic(rc.Context(), name)
	switch {
	case err == nil:
		mt.TopicID = t.ID
		mt.ErrorCode = kerr.LeaderNotAvailable.Code
	default:
		h.log.Info("auto-creating topic failed", "topic", name, "err", err)
		mt.ErrorCode = ErrorCode(err)
	}
	return mt
}
