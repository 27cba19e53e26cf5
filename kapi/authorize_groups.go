package kapi

// Authorization of the group APIs, as Kafka's KafkaApis: READ on the group
// to join, sync, heartbeat, leave and commit; DESCRIBE to fetch offsets,
// describe and find its coordinator; DELETE to delete it or its offsets.
// Topics in a commit need READ, in a fetch DESCRIBE; a topic the principal
// may not use answers TOPIC_AUTHORIZATION_FAILED for its partitions and is
// not passed to the coordinator. The share-group offset APIs (90-92) do
// the same in their own files: DESCRIBE on the group and topics to
// describe, READ on the group and topics to alter, DELETE on the group and
// READ on the topics to delete.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/broker/uuid"
)

// topicName is the name a request's topic goes by: the name, or the
// name of its id (v10+ of the offset APIs); "" for an unknown id, which
// the coordinator answers UNKNOWN_TOPIC_ID.
func (h *Handler) topicName(name string, id [16]byte) string {
	if name != "" || id == [16]byte{} {
		return name
	}
	if t, ok := h.image().TopicByID(uuid.UUID(id)); ok {
		return t.Name
	}
	return ""
}

// mayUseTopic: the principal may perform op on the topic (an unresolved
// id is let through for the coordinator to refuse).
func (h *Handler) mayUseTopic(rc *RequestContext, op kmsg.ACLOperation, name string, id [16]byte) bool {
	n := h.topicName(name, id)
	return n == "" || h.authorize(rc, op, az.Topic, n)
}

// splitGroups returns, of the groups named, those the request may perform
// op on, and refuse's answer for each of the others (Kafka's
// DescribeGroups, ConsumerGroupDescribe and DeleteGroups: the refused ones
// are not passed to the coordinator).
func splitGroups[T any](h *Handler, rc *RequestContext, op kmsg.ACLOperation, groups []string, refuse func(group string) T) (allowed []string, denied []T) {
	for _, g := range groups {
		if h.authorize(rc, op, az.Group, g) {
			allowed = append(allowed, g)
		} else {
			denied = append(denied, refuse(g))
		}
	}
	return allowed, denied
}

// authorizeOffsetCommit splits the commit: it leaves in req the topics
// the principal may read and returns the answers for those it may not
// (every topic's GROUP_AUTHORIZATION_FAILED when the group is refused).
func (h *Handler) authorizeOffsetCommit(rc *RequestContext, req *kmsg.OffsetCommitRequest) (denied []kmsg.OffsetCommitResponseTopic) {
	if h.cfg.Authorizer == nil {
		return nil
	}
	allowGroup := h.authorize(rc, az.Read, az.Group, req.Group)
	kept := req.Topics[:0:0]
	for _, t := range req.Topics {
		var code int16
		switch {
		case !allowGroup:
			code = kerr.GroupAuthorizationFailed.Code
		case !h.mayUseTopic(rc, az.Read, t.Topic, t.TopicID):
			code = kerr.TopicAuthorizationFailed.Code
		default:
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	req.Topics = kept
	return denied
}

// filterOffsetFetch applies DESCRIBE on the groups and topics to an
// OffsetFetch answer: a refused group answers GROUP_AUTHORIZATION_FAILED;
// of the topics asked for, those refused answer TOPIC_AUTHORIZATION_FAILED
// per partition; of all topics (none asked for), those refused are left
// out.
func (h *Handler) filterOffsetFetch(rc *RequestContext, asked []kmsg.OffsetFetchRequestGroup, gs []kmsg.OffsetFetchResponseGroup) {
	if h.cfg.Authorizer == nil {
		return
	}
	for gi := range gs {
		g := &gs[gi]
		if !h.authorize(rc, az.Describe, az.Group, g.Group) {
			g.ErrorCode, g.Topics = kerr.GroupAuthorizationFailed.Code, nil
			continue
		}
		all := gi < len(asked) && asked[gi].Topics == nil
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if h.mayUseTopic(rc, az.Describe, t.Topic, t.TopicID) {
				kept = append(kept, t)
				continue
			}
			if all {
				continue
			}
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
			}
			kept = append(kept, t)
		}
		g.Topics = kept
	}
}

// authorizeOffsetDelete is authorizeOffsetCommit for OffsetDelete (DELETE
// on the group, READ on the topics); a refused group is the top-level
// error.
func (h *Handler) authorizeOffsetDelete(rc *RequestContext, req *kmsg.OffsetDeleteRequest) (groupErr int16, denied []kmsg.OffsetDeleteResponseTopic) {
	if h.cfg.Authorizer == nil {
		return 0, nil
	}
	if !h.authorize(rc, az.Delete, az.Group, req.Group) {
		return kerr.GroupAuthorizationFailed.Code, nil
	}
	kept := req.Topics[:0:0]
	for _, t := range req.Topics {
		if h.authorize(rc, az.Read, az.Topic, t.Topic) {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	req.Topics = kept
	return 0, denied
}
