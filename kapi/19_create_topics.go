package kapi

// CreateTopics, versions 0 to 7.
//
//   - v1: validate_only; error_message per topic.
//   - v2: no change on the wire; v3: no change (KIP-313 policy).
//   - v4: no change on the wire (default partitions and replication
//     factor, -1, allowed).
//   - v5: flexible; the response carries the topic's configs,
//     num_partitions and replication_factor (KIP-525).
//   - v6: no change on the wire (KIP-599 quota errors).
//   - v7: the response carries topic_id (KIP-516).
//
// The controller decides (broker/controller: Kafka's checks in Kafka's
// order, placement); the broker forwards and then waits until its own
// metadata has the created topics. The client's controller mutation quota
// applies first (quotas.go).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleCreateTopics(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreateTopicsRequest)
	// CREATE on the cluster, or else on each topic (Kafka's
	// handleCreateTopicsRequest); a refused topic is not forwarded.
	var denied []string
	if h.cfg.Authorizer != nil && !h.authorizeQuiet(rc, az.Create, az.Cluster, az.ClusterName) {
		kept := req.Topics[:0:0]
		for _, rt := range req.Topics {
			if h.authorize(rc, az.Create, az.Topic, rt.Topic) {
				kept = append(kept, rt)
			} else {
				denied = append(denied, rt.Topic)
			}
		}
		req.Topics = kept
	}
	fwd, refused, q := h.createTopicsQuota(rc, req)
	var resp *kmsg.CreateTopicsResponse
	if len(fwd.Topics) > 0 || len(refused) == 0 && len(denied) == 0 {
		resp = h.createTopics(rc, fwd).(*kmsg.CreateTopicsResponse)
	} else {
		resp = req.ResponseKind().(*kmsg.CreateTopicsResponse)
	}
	for _, rt := range refused {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.ErrorCode = rt.Topic, kerr.ThrottlingQuotaExceeded.Code
		st.ErrorMessage = ErrorMessage(errThrottled())
		resp.Topics = append(resp.Topics, st)
	}
	for _, name := range denied {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
		st.ErrorMessage = ErrorMessage(errTopicAuthorization)
		resp.Topics = append(resp.Topics, st)
	}
	// The created topic's configs are told only with DESCRIBE_CONFIGS.
	for i := range resp.Topics {
		st := &resp.Topics[i]
		if st.ErrorCode == 0 && req.Version >= 5 && !h.authorizeQuiet(rc, az.DescribeConfigs, az.Topic, st.Topic) {
			st.ConfigErrorCode, st.Configs = kerr.TopicAuthorizationFailed.Code, nil
		}
	}
	resp.ThrottleMillis = throttleMillis(q, resp.ThrottleMillis)
	return resp
}

func (h *Handler) createTopics(rc *RequestContext, req *kmsg.CreateTopicsRequest) kmsg.Response {
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	r, err := h.forward(rc.Context(), req, timeout)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := r.(*kmsg.CreateTopicsResponse)
	if !req.ValidateOnly {
		created := map[string][16]byte{}
		for _, st := range resp.Topics {
			if st.ErrorCode == 0 {
				created[st.Topic] = st.TopicID
				h.log.Info("created topic", "topic", st.Topic, "partitions", st.NumPartitions, "replication_factor", st.ReplicationFactor)
			}
		}
		h.waitForMetadata(rc.Context(), timeout, func(im *metadata.Image) bool {
			for name := range created {
				if _, ok := im.Topic(name); !ok {
					return false
				}
			}
			return true
		})
	}
	return resp
}
