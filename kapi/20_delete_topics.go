package kapi

// DeleteTopics, versions 0 to 6.
//
//   - v1: throttle_time_ms.
//   - v2, v3: no change on the wire (v3: TOPIC_DELETION_DISABLED).
//   - v4: flexible.
//   - v5: error_message per topic.
//   - v6: topics by name or topic_id (KIP-516); the response carries
//     topic_id.
//
// The controller decides (duplicates, unknown names and IDs,
// delete.topic.enable) and writes RemoveTopicRecords; every broker then
// deletes its logs as it applies them. This broker answers once its own
// metadata no longer has the deleted topics.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDeleteTopics(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	denied := h.authorizeDeleteTopics(rc, req)
	fwd, refusedTopics, refusedNames, q := h.deleteTopicsQuota(rc, req)
	var resp *kmsg.DeleteTopicsResponse
	if len(fwd.Topics)+len(fwd.TopicNames) > 0 || len(refusedTopics)+len(refusedNames)+len(denied) == 0 {
		resp = h.deleteTopics(rc, fwd).(*kmsg.DeleteTopicsResponse)
	} else {
		resp = req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	}
	add := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, kerr.ThrottlingQuotaExceeded.Code
		if req.Version >= 5 {
			rt.ErrorMessage = ErrorMessage(errThrottled())
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for _, n := range refusedNames {
		add(&n, [16]byte{})
	}
	for _, t := range refusedTopics {
		add(t.Topic, t.TopicID)
	}
	for _, t := range denied {
		if req.Version >= 5 {
			t.ErrorMessage = ErrorMessage(errTopicAuthorization)
		}
		resp.Topics = append(resp.Topics, t)
	}
	resp.ThrottleMillis = throttleMillis(q, resp.ThrottleMillis)
	return resp
}

// authorizeDeleteTopics takes out of req the topics the principal may not
// delete (Kafka's handleDeleteTopicsRequest: DELETE on the topic, and
// for one named by id DESCRIBE too, else its name is not told) and
// returns their answers.
func (h *Handler) authorizeDeleteTopics(rc *RequestContext, req *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsResponseTopic {
	if h.cfg.Authorizer == nil {
		return nil
	}
	var denied []kmsg.DeleteTopicsResponseTopic
	deny := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		denied = append(denied, rt)
	}
	keptNames := req.TopicNames[:0:0]
	for _, n := range req.TopicNames {
		if h.authorize(rc, az.Delete, az.Topic, n) {
			keptNames = append(keptNames, n)
		} else {
			deny(&n, [16]byte{})
		}
	}
	req.TopicNames = keptNames
	kept := req.Topics[:0:0]
	for _, t := range req.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		} else {
			name = h.topicName("", t.TopicID)
		}
		switch {
		case name == "":
			kept = append(kept, t) // an unknown id: the controller answers it
		case t.Topic == nil && !h.authorize(rc, az.Describe, az.Topic, name):
			deny(nil, t.TopicID)
		case !h.authorize(rc, az.Delete, az.Topic, name):
			deny(&name, t.TopicID)
		default:
			kept = append(kept, t)
		}
	}
	req.Topics = kept
	return denied
}

func (h *Handler) deleteTopics(rc *RequestContext, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	r, err := h.forward(rc.Context(), req, timeout)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := r.(*kmsg.DeleteTopicsResponse)
	var deleted [][16]byte
	for _, rt := range resp.Topics {
		if rt.ErrorCode == 0 {
			deleted = append(deleted, rt.TopicID)
			name := ""
			if rt.Topic != nil {
				name = *rt.Topic
			}
			h.log.Info("deleted topic", "topic", name)
		}
	}
	h.waitForMetadata(rc.Context(), timeout, func(im *metadata.Image) bool {
		for _, id := range deleted {
			if _, ok := im.TopicByID(id); ok {
				return false
			}
		}
		return true
	})
	return resp
}
