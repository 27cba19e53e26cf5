package kapi

// DeleteTopics, versions 0 to 6.
//
//   - v0: topic_names, timeout_ms.
//   - v1: throttle_time_ms.
//   - v2, v3: no change on the wire; from v3 disabled deletion is
//     TOPIC_DELETION_DISABLED instead of INVALID_REQUEST.
//   - v4: flexible.
//   - v5: error_message in the response.
//   - v6: topics given by name or by topic id (KIP-516); the response
//     carries the topic id.
//
// Semantics are Kafka's ControllerApis.deleteTopics: with
// delete.topic.enable=false every topic gets TOPIC_DELETION_DISABLED (v3+)
// or INVALID_REQUEST; a name or id given twice is INVALID_REQUEST for it; a
// topic with both a name and an id, or neither, is INVALID_REQUEST; an
// unknown name is UNKNOWN_TOPIC_OR_PARTITION and an unknown id
// UNKNOWN_TOPIC_ID. As in KRaft, internal topics may be deleted (the
// coordinators re-create them). The metadata store's listeners delete the
// logs.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/metadata"
)

func (h *Handler) handleDeleteTopics(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	v := req.Version

	type ask struct {
		name *string
		id   metadata.TopicID
	}
	var asks []ask
	if v < 6 {
		for _, n := range req.TopicNames {
			asks = append(asks, ask{name: &n})
		}
	} else {
		for _, t := range req.Topics {
			asks = append(asks, ask{name: t.Topic, id: t.TopicID})
		}
	}

	add := func(name *string, id metadata.TopicID, err error) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = name
		rt.TopicID = id
		rt.ErrorCode = ErrorCode(err)
		if v >= 5 {
			rt.ErrorMessage = ErrorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}

	if !h.cfg.Broker.DeleteTopicEnable {
		err := apierr.Errorf(kerr.TopicDeletionDisabled, "Topic deletion is disabled.")
		if v < 3 {
			err = apierr.Errorf(kerr.InvalidRequest, "Topic deletion is disabled.")
		}
		for _, a := range asks {
			add(a.name, a.id, err)
		}
		return resp
	}

	nameCount := map[string]int{}
	idCount := map[metadata.TopicID]int{}
	for _, a := range asks {
		switch {
		case a.name != nil && a.id.IsZero():
			nameCount[*a.name]++
		case a.name == nil && !a.id.IsZero():
			idCount[a.id]++
		}
	}
	// Resolve everything first, so that a name and an id of the same
	// topic are caught before anything is deleted.
	type target struct {
		name *string
		id   metadata.TopicID
		err  error
	}
	var targets []target
	doneName := map[string]bool{}
	doneID := map[metadata.TopicID]bool{}
	idOwner := map[metadata.TopicID]int{} // topic id -> index in targets
	for _, a := range asks {
		switch {
		case a.name == nil && a.id.IsZero():
			targets = append(targets, target{err: apierr.Errorf(kerr.InvalidRequest, "Neither topic name nor id were specified.")})
		case a.name != nil && !a.id.IsZero():
			targets = append(targets, target{name: a.name, id: a.id, err: apierr.Errorf(kerr.InvalidRequest, "You may not specify both topic name and topic id.")})
		case a.name != nil:
			if doneName[*a.name] {
				continue
			}
			doneName[*a.name] = true
			if nameCount[*a.name] > 1 {
				targets = append(targets, target{name: a.name, err: apierr.Errorf(kerr.InvalidRequest, "Duplicate topic name.")})
				continue
			}
			t, ok := h.cfg.Metadata.Topic(*a.name)
			if !ok {
				targets = append(targets, target{name: a.name, err: apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")})
				continue
			}
			if i, dup := idOwner[t.ID]; dup {
				targets[i].err = apierr.Errorf(kerr.InvalidRequest, "The provided topic name maps to an ID that was already supplied.")
				targets = append(targets, target{name: a.name, id: t.ID, err: targets[i].err})
				continue
			}
			idOwner[t.ID] = len(targets)
			targets = append(targets, target{name: a.name, id: t.ID})
		default:
			if doneID[a.id] {
				continue
			}
			doneID[a.id] = true
			if idCount[a.id] > 1 {
				targets = append(targets, target{id: a.id, err: apierr.Errorf(kerr.InvalidRequest, "Duplicate topic id.")})
				continue
			}
			t, ok := h.cfg.Metadata.TopicByID(a.id)
			if !ok {
				targets = append(targets, target{id: a.id, err: apierr.Errorf(kerr.UnknownTopicID, "This server does not host this topic ID.")})
				continue
			}
			name := t.Name
			if i, dup := idOwner[t.ID]; dup {
				targets[i].err = apierr.Errorf(kerr.InvalidRequest, "The provided topic name maps to an ID that was already supplied.")
				targets = append(targets, target{name: &name, id: t.ID, err: targets[i].err})
				continue
			}
			idOwner[t.ID] = len(targets)
			targets = append(targets, target{name: &name, id: t.ID})
		}
	}
	for _, t := range targets {
		if t.err == nil {
			if _, err := h.cfg.Metadata.DeleteTopic(*t.name); err != nil {
				t.err = err
			} else {
				h.log.Info("deleted topic", "topic", *t.name, "topic_id", t.id.String())
			}
		}
		add(t.name, t.id, t.err)
	}
	return resp
}
