package kapi

// CreatePartitions, versions 0 to 3.
//
//   - v1: no change on the wire; v2: flexible.
//   - v3: no change on the wire (KIP-599 quota errors).
//
// The controller decides (the count must grow; assignments, if given, cover
// exactly the new partitions on registered brokers with the topic's
// replication factor; validate_only creates nothing) and places the new
// partitions. The broker waits until its own metadata has them.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleCreatePartitions(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	// ALTER on each topic (Kafka's handleCreatePartitionsRequest).
	var denied []string
	if h.cfg.Authorizer != nil {
		kept := req.Topics[:0:0]
		for _, rt := range req.Topics {
			if h.authorize(rc, az.Alter, az.Topic, rt.Topic) {
				kept = append(kept, rt)
			} else {
				denied = append(denied, rt.Topic)
			}
		}
		req.Topics = kept
	}
	fwd, refused, q := h.createPartitionsQuota(rc, req)
	var resp *kmsg.CreatePartitionsResponse
	if len(fwd.Topics) > 0 || len(refused)+len(denied) == 0 {
		resp = h.createPartitions(rc, fwd).(*kmsg.CreatePartitionsResponse)
	} else {
		resp = req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	}
	for _, rt := range refused {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic, st.ErrorCode, st.ErrorMessage = rt.Topic, kerr.ThrottlingQuotaExceeded.Code, ErrorMessage(errThrottled())
		resp.Topics = append(resp.Topics, st)
	}
	for _, name := range denied {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic, st.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
		st.ErrorMessage = kmsg.StringPtr("The topic authorization is failed.")
		resp.Topics = append(resp.Topics, st)
	}
	resp.ThrottleMillis = throttleMillis(q, resp.ThrottleMillis)
	return resp
}

func (h *Handler) createPartitions(rc *RequestContext, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	r, err := h.forward(rc.Context(), req, timeout)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := r.(*kmsg.CreatePartitionsResponse)
	if !req.ValidateOnly {
		asked := map[string]int32{}
		for _, rt := range req.Topics {
			asked[rt.Topic] = rt.Count
		}
		want := map[string]int32{}
		for _, st := range resp.Topics {
			if st.ErrorCode == 0 {
				want[st.Topic] = asked[st.Topic]
				h.log.Info("created partitions", "topic", st.Topic, "count", asked[st.Topic])
			}
		}
		h.waitForMetadata(rc.Context(), timeout, func(im *metadata.Image) bool {
			for name, n := range want {
				if t, ok := im.Topic(name); !ok || int32(len(t.Partitions)) < n {
					return false
				}
			}
			return true
		})
	}
	return resp
}
