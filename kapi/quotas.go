package kapi

// Controller mutation quotas (KIP-599) on CreateTopics, CreatePartitions
// and DeleteTopics: each topic's partitions are taken from the client's
// controller_mutation_rate quota (broker/quota) before the request goes to
// the controller. A strict request (CreateTopics v6+, CreatePartitions v3+,
// DeleteTopics v5+) whose client is over its quota gets
// THROTTLING_QUOTA_EXCEEDED for the topics that did not fit, and every
// request carries the throttle time. Topics named twice and validate-only
// requests take nothing (the controller refuses the former). Throttled
// topics are answered after the others (clients match topics by name).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/quota"
)

// mutationQuota returns the request's quota, strict from strictFrom; nil
// when quotas are not wired.
func (h *Handler) mutationQuota(rc *RequestContext, strictFrom int16) *quota.Quota {
	if h.cfg.MutationQuotas == nil {
		return nil
	}
	return h.cfg.MutationQuotas.For(rc.quotaUser(), rc.ClientID, rc.APIVersion >= strictFrom)
}

func errThrottled() error {
	return apierr.Errorf(kerr.ThrottlingQuotaExceeded, "The throttling quota has been exceeded.")
}

// takeQuota takes each item's permits from q, in order; items whose name
// appears more than once take nothing. It returns, per item, whether it
// was refused.
func takeQuota(q *quota.Quota, n int, name func(i int) string, permits func(i int) float64) []bool {
	refused := make([]bool, n)
	if q == nil {
		return refused
	}
	count := map[string]int{}
	for i := range n {
		count[name(i)]++
	}
	for i := range n {
		if count[name(i)] == 1 && !q.Record(permits(i)) {
			refused[i] = true
		}
	}
	return refused
}

// splitRefused splits items into those to forward and those refused
// (refused[i]), each in request order.
func splitRefused[T any](items []T, refused []bool) (kept, out []T) {
	for i, it := range items {
		if refused[i] {
			out = append(out, it)
		} else {
			kept = append(kept, it)
		}
	}
	return kept, out
}

func throttleMillis(q *quota.Quota, cur int32) int32 {
	if q == nil {
		return cur
	}
	return max(cur, int32(q.ThrottleTime()/time.Millisecond))
}

// createTopicsQuota takes CreateTopics' partitions from the quota and
// returns the request to forward, the topics refused, and the quota.
func (h *Handler) createTopicsQuota(rc *RequestContext, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsRequest, []kmsg.CreateTopicsRequestTopic, *quota.Quota) {
	q := h.mutationQuota(rc, 6)
	if q == nil || req.ValidateOnly {
		return req, nil, q
	}
	refused := takeQuota(q, len(req.Topics), func(i int) string { return req.Topics[i].Topic }, func(i int) float64 {
		rt := req.Topics[i]
		switch {
		case len(rt.ReplicaAssignment) > 0:
			return float64(len(rt.ReplicaAssignment))
		case rt.NumPartitions > 0:
			return float64(rt.NumPartitions)
		}
		return float64(h.cfg.Broker.NumPartitions)
	})
	fwd := *req
	var out []kmsg.CreateTopicsRequestTopic
	fwd.Topics, out = splitRefused(req.Topics, refused)
	return &fwd, out, q
}

// createPartitionsQuota takes CreatePartitions' new partitions from the
// quota.
func (h *Handler) createPartitionsQuota(rc *RequestContext, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsRequest, []kmsg.CreatePartitionsRequestTopic, *quota.Quota) {
	q := h.mutationQuota(rc, 3)
	if q == nil || req.ValidateOnly {
		return req, nil, q
	}
	im := h.image()
	refused := takeQuota(q, len(req.Topics), func(i int) string { return req.Topics[i].Topic }, func(i int) float64 {
		cur := 0
		if t, ok := im.Topic(req.Topics[i].Topic); ok {
			cur = len(t.Partitions)
		}
		return float64(max(0, int(req.Topics[i].Count)-cur))
	})
	fwd := *req
	var out []kmsg.CreatePartitionsRequestTopic
	fwd.Topics, out = splitRefused(req.Topics, refused)
	return &fwd, out, q
}

// deleteTopicsQuota takes DeleteTopics' partitions from the quota: a
// topic's partition count from this broker's metadata (0 if unknown).
func (h *Handler) deleteTopicsQuota(rc *RequestContext, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsRequest, []kmsg.DeleteTopicsRequestTopic, []string, *quota.Quota) {
	q := h.mutationQuota(rc, 5)
	if q == nil {
		return req, nil, nil, q
	}
	im := h.image()
	fwd := *req
	if req.Version < 6 {
		refused := takeQuota(q, len(req.TopicNames), func(i int) string { return req.TopicNames[i] }, func(i int) float64 {
			if t, ok := im.Topic(req.TopicNames[i]); ok {
				return float64(len(t.Partitions))
			}
			return 0
		})
		var out []string
		fwd.TopicNames, out = splitRefused(req.TopicNames, refused)
		return &fwd, nil, out, q
	}
	key := func(t kmsg.DeleteTopicsRequestTopic) string {
		if t.Topic != nil {
			return "n:" + *t.Topic
		}
		return "i:" + string(t.TopicID[:])
	}
	refused := takeQuota(q, len(req.Topics), func(i int) string { return key(req.Topics[i]) }, func(i int) float64 {
		t := req.Topics[i]
		if t.Topic != nil {
			if tp, ok := im.Topic(*t.Topic); ok {
				return float64(len(tp.Partitions))
			}
		} else if tp, ok := im.TopicByID(t.TopicID); ok {
			return float64(len(tp.Partitions))
		}
		return 0
	})
	var out []kmsg.DeleteTopicsRequestTopic
	fwd.Topics, out = splitRefused(req.Topics, refused)
	return &fwd, out, nil, q
}
