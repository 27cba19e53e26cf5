package kapi

// CreatePartitions, versions 0 to 3.
//
//   - v0: topics with the new total count and optional assignments of the
//     new partitions; timeout_ms; validate_only.
//   - v1: no change on the wire.
//   - v2: flexible.
//   - v3: no change on the wire (quota errors carry throttle time).
//
// Semantics are Kafka's ControllerApis.createPartitions and
// ReplicationControlManager.createPartitions: a topic given twice is
// INVALID_REQUEST ("Duplicate topic name."); an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; the count must grow (INVALID_PARTITIONS,
// "Topic already has N partition(s)." or "... would not be an increase.");
// assignments, if given, must cover exactly the new partitions, on
// registered brokers, with the topic's replication factor
// (INVALID_REPLICA_ASSIGNMENT). validate_only creates nothing.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
)

func (h *Handler) handleCreatePartitions(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)

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
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if count[rt.Topic] > 1 {
			err = apierr.Errorf(kerr.InvalidRequest, "Duplicate topic name.")
		} else {
			err = h.createPartitions(rt, req.ValidateOnly)
		}
		st.ErrorCode = ErrorCode(err)
		st.ErrorMessage = ErrorMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (h *Handler) createPartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	t, ok := h.cfg.Metadata.Topic(rt.Topic)
	if !ok {
		return apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	}
	cur := int32(len(t.Partitions))
	switch {
	case rt.Count == cur:
		return apierr.Errorf(kerr.InvalidPartitions, "Topic already has %d partition(s).", cur)
	case rt.Count < cur:
		return apierr.Errorf(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, cur, rt.Count)
	case rt.Count-cur > maxPartitionsPerRequest:
		return apierr.Errorf(kerr.InvalidPartitions, "Cannot create more than %d partitions in one request.", maxPartitionsPerRequest)
	}
	additional := rt.Count - cur
	rf := 1
	if cur > 0 {
		rf = len(t.Partitions[0].Replicas)
	}
	var assignment [][]int32
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != additional {
			return apierr.Errorf(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			assignment = append(assignment, a.Replicas)
		}
		if err := validateAssignment(assignment, h.liveBrokers(), rf); err != nil {
			return err
		}
	} else if rf > len(h.liveBrokers()) {
		return apierr.Errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(h.liveBrokers()))
	}
	if validateOnly {
		return nil
	}
	if _, err := h.cfg.Metadata.CreatePartitions(rt.Topic, rt.Count, assignment); err != nil {
		return err
	}
	h.log.Info("created partitions", "topic", rt.Topic, "from", cur, "to", rt.Count)
	return nil
}
