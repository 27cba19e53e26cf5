package kapi

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An envelope sealed by a broker opens on the controller plane to the same
// request and caller, for a flexible and a non-flexible inner version, and
// the sealed answer opens to the same response.
func TestEnvelopeRoundTrip(t *testing.T) {
	h := NewControllerHandler(1, nil, nil, nil)
	for _, v := range []int16{1, 2, 3} {
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.Version = v
		req.MaxLifetimeMillis = 1234
		req.Renewers = []kmsg.CreateDelegationTokenRequestRenewer{{PrincipalType: "User", PrincipalName: "bob"}}
		rc := &RequestContext{Request: &Request{CorrelationID: 77, ClientID: "cli", Principal: "User:alice", TokenAuthenticated: v == 3,
			ClientAddr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 9}}}
		env := sealEnvelope(rc, req)
		c, inner, corr, err := h.openEnvelope(env)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got, ok := inner.(*kmsg.CreateDelegationTokenRequest)
		if !ok || corr != 77 || got.Version != v || got.MaxLifetimeMillis != 1234 || len(got.Renewers) != 1 || got.Renewers[0].PrincipalName != "bob" {
			t.Fatalf("v%d: opened %+v corr %d", v, inner, corr)
		}
		if c.principal != "User:alice" || !c.forwarded || c.tokenAuth != (v == 3) {
			t.Fatalf("v%d: caller %+v", v, c)
		}
		resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		resp.TokenID, resp.HMAC, resp.ExpiryTimestamp = "tok", []byte{1, 2}, 99
		out := env.ResponseKind().(*kmsg.EnvelopeResponse)
		out.ResponseData = encodeResponse(&Request{APIKey: 38, APIVersion: v, CorrelationID: corr}, resp).Buf[4:]
		back, err := openEnvelopeResponse(req, out)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if b := back.(*kmsg.CreateDelegationTokenResponse); b.TokenID != "tok" || b.ExpiryTimestamp != 99 || len(b.HMAC) != 2 {
			t.Fatalf("v%d: response %+v", v, b)
		}
	}
	// An envelope's error is the request's.
	if _, err := openEnvelopeResponse(kmsg.NewPtrRenewDelegationTokenRequest(), &kmsg.EnvelopeResponse{ErrorCode: kerr.NotController.Code}); err != kerr.NotController {
		t.Fatalf("error envelope: %v", err)
	}
}

// The controller plane refuses to open an envelope around a request it
// does not serve, another envelope, or a principal it cannot read.
func TestEnvelopeRefusesWhatItCannotServe(t *testing.T) {
	h := NewControllerHandler(1, nil, nil, nil)
	rc := &RequestContext{Request: &Request{Principal: "User:alice"}}
	for name, req := range map[string]kmsg.Request{
		"produce":  kmsg.NewPtrProduceRequest(),
		"envelope": kmsg.NewPtrEnvelopeRequest(),
	} {
		if _, _, _, err := h.openEnvelope(sealEnvelope(rc, req)); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	env := sealEnvelope(rc, kmsg.NewPtrRenewDelegationTokenRequest())
	env.RequestPrincipal = []byte{0xff}
	if _, err := h.dispatchEnvelope(context.Background(), env); err == nil {
		t.Error("an unreadable principal was accepted")
	}
}

// FuzzOpenEnvelope: no envelope, however malformed, panics the controller
// plane.
func FuzzOpenEnvelope(f *testing.F) {
	rc := &RequestContext{Request: &Request{Principal: "User:alice"}}
	env := sealEnvelope(rc, kmsg.NewPtrExpireDelegationTokenRequest())
	f.Add(env.RequestData, env.RequestPrincipal)
	h := NewControllerHandler(1, nil, nil, nil)
	f.Fuzz(func(t *testing.T, data, principal []byte) {
		h.openEnvelope(&kmsg.EnvelopeRequest{RequestData: data, RequestPrincipal: principal})
	})
}
