package kapi

// Client quotas (Kafka's ClientQuotaManager, KIP-13, KIP-55, KIP-124,
// KIP-219), enforced here with broker/quota's managers:
//
//   - producer_byte_rate: a Produce request's size (the frame, as Kafka's
//     request.sizeInBytes), recorded when its response is ready, acks=0
//     included.
//   - consumer_byte_rate: a consumer Fetch response's record bytes; a
//     follower's fetch is not counted. A consumer fetch reads at most the
//     quota over quota.window.num-1 windows; a fetch that would be
//     throttled is answered at once with no records (its bytes unrecorded,
//     the session left as it was) and the throttle time, as Kafka's
//     getThrottledResponse.
//   - request_percentage: the request's handler time in percent of one
//     thread per second, for every request but the inter-broker ones
//     (Kafka's cluster actions) and acks=0 Produce. Handler time is from
//     Handle's start to the response, or to Handle's return for a request
//     answered later (a delayed produce or fetch, a forwarded request):
//     the time a handler goroutine spent. Kafka adds the network thread's
//     time; Moldau's connection goroutines are not measured.
//
// The response carries the largest throttle of the request's quotas (and
// of the controller mutation quota, set by the handler) in
// throttle_time_ms when its version has the field, and the connection is
// muted for that long after it is sent (Response.Throttle), acks=0
// Produce with no response. The throttle-time metric is recorded for the
// quota that throttled most, as Kafka's KafkaApis does.

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/quota"
)

// quotaState is a request's use of the client quotas.
type quotaState struct {
	start time.Time
	// handled is how long Handle ran (ns), once it returned.
	handled atomic.Int64
	// noRequestQuota: the request is exempt from request_percentage.
	noRequestQuota bool
	// bandwidth is the throttle of the byte-rate quota recorded (by).
	bandwidth time.Duration
	by        *quota.ClientQuotaManager
	// decided: the throttle is known (throttle), the quotas recorded.
	decided  bool
	throttle time.Duration
}

// exemptFromRequestQuota are the inter-broker APIs, Kafka's cluster
// actions, which Kafka exempts from the request quota.
func exemptFromRequestQuota(key int16) bool {
	switch key {
	case 27, // WriteTxnMarkers
		56,                 // AlterPartition
		83, 84, 85, 86, 87: // share-group state (from brokers)
		return true
	}
	return false
}

// quotaUser is the request's user for quotas: the principal's name,
// ANONYMOUS when unauthenticated.
func (rc *RequestContext) quotaUser() string { return quota.UserOf(rc.Principal) }

// recordBandwidth records v against a byte-rate quota and keeps its
// throttle time for the response.
func (rc *RequestContext) recordBandwidth(m *quota.ClientQuotaManager, v float64) time.Duration {
	if m == nil {
		return 0
	}
	d := m.Record(rc.quotaUser(), rc.ClientID, v)
	rc.q.bandwidth, rc.q.by = d, m
	return d
}

// recordRequestTime records the request's handler time against
// request_percentage and returns its throttle time.
func (rc *RequestContext) recordRequestTime() time.Duration {
	m := rc.h.cfg.ClientQuotas.request()
	if m == nil || rc.q.noRequestQuota || exemptFromRequestQuota(rc.APIKey) {
		return 0
	}
	nanos := rc.q.handled.Load()
	if nanos == 0 {
		nanos = int64(rc.h.now().Sub(rc.q.start))
	}
	return m.Record(rc.quotaUser(), rc.ClientID, float64(max(nanos, 0))*100/float64(time.Second))
}

// decideThrottle records the request quota and settles the request's
// throttle: the largest of the byte-rate quota's, the request quota's and
// other (the controller mutation quota's, from the response). Called once;
// later calls return the first answer.
func (rc *RequestContext) decideThrottle(other time.Duration) time.Duration {
	if rc.q.decided {
		return rc.q.throttle
	}
	rc.q.decided = true
	req := rc.recordRequestTime()
	d := max(rc.q.bandwidth, req, other)
	switch {
	case d <= 0:
	case rc.q.bandwidth > req && rc.q.bandwidth >= other:
		rc.q.by.Throttled(rc.quotaUser(), rc.ClientID, rc.q.bandwidth)
	case req > 0 && req >= other:
		rc.h.cfg.ClientQuotas.request().Throttled(rc.quotaUser(), rc.ClientID, req)
	}
	rc.q.throttle = d
	return d
}

// encode encodes a handler's response with the request's throttle in
// throttle_time_ms and on the Response, to mute the connection.
func (rc *RequestContext) encode(resp kmsg.Response) *Response {
	var other time.Duration
	tr, hasThrottle := resp.(kmsg.ThrottleResponse)
	if hasThrottle {
		ms, _ := tr.Throttle()
		other = time.Duration(ms) * time.Millisecond
	}
	d := rc.decideThrottle(other)
	if st, ok := resp.(kmsg.SetThrottleResponse); ok && hasThrottle && d > other {
		st.SetThrottle(int32(min(d.Milliseconds(), 1<<31-1)))
	}
	out := rc.h.encode(rc.Request, resp)
	out.Throttle = d
	return out
}

// ClientQuotas are the client quota managers kapi enforces (Kafka's
// QuotaManagers.produce, fetch and request).
type ClientQuotas struct {
	Produce, Fetch, Request *quota.ClientQuotaManager
}

func (q *ClientQuotas) produce() *quota.ClientQuotaManager {
	if q == nil {
		return nil
	}
	return q.Produce
}

func (q *ClientQuotas) fetch() *quota.ClientQuotaManager {
	if q == nil {
		return nil
	}
	return q.Fetch
}

func (q *ClientQuotas) request() *quota.ClientQuotaManager {
	if q == nil {
		return nil
	}
	return q.Request
}
