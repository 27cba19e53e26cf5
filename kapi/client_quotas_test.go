package kapi

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/quota"
)

// serveAs serves req for a client id and returns the raw Response and,
// unless there is none, the decoded one.
func serveAs(t *testing.T, h *Handler, clientID string, req kmsg.Request, version int16) (*Response, kmsg.Response) {
	t.Helper()
	req.SetVersion(version)
	body := req.AppendTo(nil)
	got := make(chan *Response, 1)
	h.Handle(context.Background(), &Request{APIKey: req.Key(), APIVersion: version, CorrelationID: 7, ClientID: clientID,
		Body: body, Size: len(body) + 20, Listener: "PLAINTEXT"}, func(r *Response) { got <- r })
	var r *Response
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no answer", kmsg.NameForKey(req.Key()))
	}
	if r.Close || r.NoResponse || len(r.Regions) > 0 {
		return r, nil
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	b := r.Buf[8:]
	if resp.IsFlexible() {
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	return r, resp
}

// A throttled Produce answers with throttle_time_ms and asks the socket
// server to mute for as long; acks=0 mutes without an answer; a throttled
// consumer Fetch is answered at once with no records; another client is
// not throttled.
func TestClientQuotasThrottleResponses(t *testing.T) {
	h := newAdminHandler(t)
	if _, err := h.createTopic("q", 1, 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	name := func(n string) metadata.QuotaName { return metadata.QuotaName{Set: true, Name: n} }
	im := &metadata.Image{ClientQuotas: map[metadata.QuotaEntity]map[string]float64{
		{ClientID: name("p")}: {quota.ProducerByteRateKey: 1},
		{ClientID: name("c")}: {quota.ConsumerByteRateKey: 1},
	}}
	image := func() *metadata.Image { return im }
	h.cfg.ClientQuotas = &ClientQuotas{
		Produce: quota.NewClientQuotaManager(quota.Config{Type: quota.Produce, Image: image}),
		Fetch:   quota.NewClientQuotaManager(quota.Config{Type: quota.Fetch, Image: image}),
		Request: quota.NewClientQuotaManager(quota.Config{Type: quota.Request, Image: image, MaxThrottle: time.Second}),
	}

	for range 2 {
		r, resp := serveAs(t, h, "other", produceReq("q", [16]byte{}, oneBatch(t)), 9)
		if pr := resp.(*kmsg.ProduceResponse); pr.ThrottleMillis != 0 || r.Throttle != 0 || pr.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("unquoted client: throttle %d ms, mute %v, error %d", pr.ThrottleMillis, r.Throttle, pr.Topics[0].Partitions[0].ErrorCode)
		}
	}
	r, resp := serveAs(t, h, "p", produceReq("q", [16]byte{}, oneBatch(t)), 9)
	pr := resp.(*kmsg.ProduceResponse)
	if pr.ThrottleMillis <= 0 || r.Throttle != time.Duration(pr.ThrottleMillis)*time.Millisecond || pr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("throttle %d ms, mute %v, error %d", pr.ThrottleMillis, r.Throttle, pr.Topics[0].Partitions[0].ErrorCode)
	}
	acks0 := produceReq("q", [16]byte{}, oneBatch(t))
	acks0.Acks = 0
	if r, _ := serveAs(t, h, "p", acks0, 9); !r.NoResponse || r.Throttle <= time.Duration(pr.ThrottleMillis)*time.Millisecond {
		t.Fatalf("acks=0: no response %v, mute %v (want more than %d ms)", r.NoResponse, r.Throttle, pr.ThrottleMillis)
	}

	fetch := fetchReq("q", [16]byte{}, -1)
	r, resp = serveAs(t, h, "c", fetch, 12)
	fr, _ := resp.(*kmsg.FetchResponse)
	if fr == nil || fr.ThrottleMillis <= 0 || r.Throttle != time.Duration(fr.ThrottleMillis)*time.Millisecond || len(fr.Topics) != 0 {
		t.Fatalf("throttled fetch: %+v, mute %v", fr, r.Throttle)
	}
	if r, _ := serveAs(t, h, "other", fetchReq("q", [16]byte{}, -1), 12); len(r.Regions) == 0 || r.Throttle != 0 {
		t.Fatalf("unquoted fetch: %d regions, mute %v", len(r.Regions), r.Throttle)
	}
}
