package kapi

// CreateTopics, versions 0 to 7.
//
//   - v0: topics with num_partitions, replication_factor, assignments and
//     configs; timeout_ms.
//   - v1: validate_only; error_message in the response.
//   - v2: throttle_time_ms.
//   - v3: no change on the wire.
//   - v4: num_partitions and replication_factor may be -1 (the broker's
//     num.partitions and default.replication.factor; accepted at every
//     version, as Kafka's controller does).
//   - v5: flexible; the response carries num_partitions,
//     replication_factor and the topic's resulting configs (KIP-525).
//   - v6: no change on the wire (quota errors carry throttle time).
//   - v7: the response carries the topic id (KIP-516).
//
// Semantics are Kafka's ControllerApis.createTopics and
// ReplicationControlManager.createTopics: a name given twice is
// INVALID_REQUEST ("Duplicate topic name.") for each; __cluster_metadata
// is INVALID_REQUEST; then createTopic's checks (topics.go). A null config
// value is INVALID_CONFIG. validate_only runs every check and creates
// nothing. timeout_ms is ignored: creation is synchronous.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/metadata"
)

func (h *Handler) handleCreateTopics(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	done := map[string]bool{}
	for _, rt := range req.Topics {
		if done[rt.Topic] {
			continue
		}
		done[rt.Topic] = true
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		if count[rt.Topic] > 1 {
			h.setCreateTopicError(req.Version, &st, apierr.Errorf(kerr.InvalidRequest, "Duplicate topic name."))
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t, err := h.createTopicFromRequest(rt, req.ValidateOnly)
		if err != nil {
			h.setCreateTopicError(req.Version, &st, err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.NumPartitions = int32(len(t.Partitions))
		if len(t.Partitions) > 0 {
			st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
		}
		for _, e := range h.cfg.Broker.DescribeTopic(t.Configs, nil) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name = e.Name
			c.Value = e.Value
			c.ReadOnly = e.ReadOnly
			c.Source = int8(e.Source)
			c.IsSensitive = e.Sensitive
			st.Configs = append(st.Configs, c)
		}
		if req.ValidateOnly {
			h.log.Info("validated topic creation", "topic", rt.Topic)
		} else {
			h.log.Info("created topic", "topic", rt.Topic, "partitions", st.NumPartitions, "replication_factor", st.ReplicationFactor)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (h *Handler) setCreateTopicError(version int16, st *kmsg.CreateTopicsResponseTopic, err error) {
	st.ErrorCode = ErrorCode(err)
	if version >= 1 {
		st.ErrorMessage = ErrorMessage(err)
	}
}

// createTopicFromRequest converts one request topic and creates it.
func (h *Handler) createTopicFromRequest(rt kmsg.CreateTopicsRequestTopic, validateOnly bool) (metadata.Topic, error) {
	var topic metadata.Topic
	configs := make(map[string]string, len(rt.Configs))
	var nulls []string
	for _, c := range rt.Configs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return topic, apierr.Errorf(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(nulls, ","))
	}
	var assignment [][]int32
	if len(rt.ReplicaAssignment) > 0 {
		byIndex := map[int32][]int32{}
		for _, a := range rt.ReplicaAssignment {
			if _, dup := byIndex[a.Partition]; dup {
				return topic, apierr.Errorf(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
			}
			byIndex[a.Partition] = a.Replicas
		}
		for i := range int32(len(byIndex)) {
			r, ok := byIndex[i]
			if !ok {
				return topic, apierr.Errorf(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
			}
			assignment = append(assignment, r)
		}
	}
	return h.createTopic(rt.Topic, rt.NumPartitions, rt.ReplicationFactor, assignment, configs, validateOnly)
}
