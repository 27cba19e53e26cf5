package kapi

// RenewDelegationToken, versions 0-2.
//
//   - v1: same as v0 (throttle semantics, KIP-219).
//   - v2: flexible.
//
// Checked and forwarded as CreateDelegationToken is (see
// 38_create_delegation_token.go). The controller finds the token by its
// HMAC, lets its owner, requester or a listed renewer renew it, and sets
// the expiry to min(max timestamp, now + renew_period_ms) (a negative
// period: delegation.token.expiry.time.ms). The broker answers once its
// metadata has the new expiry.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleRenewDelegationToken(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.RenewDelegationTokenRequest)
	if !allowTokenRequests(callerOf(rc)) {
		return renewTokenResponse(req, kerr.DelegationTokenRequestNotAllowed.Code, -1)
	}
	r, err := h.forwardAs(rc, req)
	if err != nil {
		return renewTokenResponse(req, ErrorCode(err), -1)
	}
	resp := r.(*kmsg.RenewDelegationTokenResponse)
	if resp.ErrorCode == 0 {
		h.waitForToken(rc, req.HMAC, func(t metadata.DelegationToken, ok bool) bool { return ok && t.ExpiryMs == resp.ExpiryTimestamp })
	}
	return resp
}

func renewTokenResponse(req *kmsg.RenewDelegationTokenRequest, code int16, expiry int64) *kmsg.RenewDelegationTokenResponse {
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = code, expiry
	return resp
}

// waitForToken waits (bounded) until cond holds for the token whose HMAC
// is hmac in this broker's metadata (ok false: no such token).
func (h *Handler) waitForToken(rc *RequestContext, hmac []byte, cond func(t metadata.DelegationToken, ok bool) bool) {
	if h.cfg.DelegationTokenHMAC == nil {
		return
	}
	h.waitForMetadata(rc.Context(), tokenWait, func(im *metadata.Image) bool {
		for id, t := range im.DelegationTokens {
			if string(h.cfg.DelegationTokenHMAC(id)) == string(hmac) {
				return cond(t, true)
			}
		}
		return cond(metadata.DelegationToken{}, false)
	})
}

// renewDelegationToken is the controller plane's RenewDelegationToken.
func (h *ControllerHandler) renewDelegationToken(ctx context.Context, req *kmsg.RenewDelegationTokenRequest) (kmsg.Response, error) {
	c := callerFrom(ctx)
	if !allowTokenRequests(c) {
		return renewTokenResponse(req, kerr.DelegationTokenRequestNotAllowed.Code, -1), nil
	}
	exp, err := h.controller.RenewDelegationToken(ctx, c.principal, req.HMAC, req.RenewTimeMillis)
	if err != nil {
		if requestWide(err) {
			return nil, err
		}
		return renewTokenResponse(req, ErrorCode(err), -1), nil
	}
	return renewTokenResponse(req, 0, exp), nil
}
