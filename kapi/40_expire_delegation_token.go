package kapi

// ExpireDelegationToken, versions 0-2.
//
//   - v1: same as v0 (throttle semantics, KIP-219).
//   - v2: flexible.
//
// Checked and forwarded as CreateDelegationToken is (see
// 38_create_delegation_token.go). The controller finds the token by its
// HMAC and lets its owner, requester or a listed renewer change it: a
// negative expiry_time_period_ms removes it at once
// (RemoveDelegationTokenRecord), otherwise its expiry becomes
// min(max timestamp, now + period). The broker answers once its metadata
// shows that, so the token no longer logs in here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func (h *Handler) handleExpireDelegationToken(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.ExpireDelegationTokenRequest)
	if !allowTokenRequests(callerOf(rc)) {
		return expireTokenResponse(req, kerr.DelegationTokenRequestNotAllowed.Code, -1)
	}
	r, err := h.forwardAs(rc, req)
	if err != nil {
		return expireTokenResponse(req, ErrorCode(err), -1)
	}
	resp := r.(*kmsg.ExpireDelegationTokenResponse)
	if resp.ErrorCode == 0 {
		removed := req.ExpiryPeriodMillis < 0
		h.waitForToken(rc, req.HMAC, func(t metadata.DelegationToken, ok bool) bool {
			if removed {
				return !ok
			}
			return ok && t.ExpiryMs == resp.ExpiryTimestamp
		})
	}
	return resp
}

func expireTokenResponse(req *kmsg.ExpireDelegationTokenRequest, code int16, expiry int64) *kmsg.ExpireDelegationTokenResponse {
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = code, expiry
	return resp
}

// expireDelegationToken is the controller plane's ExpireDelegationToken.
func (h *ControllerHandler) expireDelegationToken(ctx context.Context, req *kmsg.ExpireDelegationTokenRequest) (kmsg.Response, error) {
	c := callerFrom(ctx)
	if !allowTokenRequests(c) {
		return expireTokenResponse(req, kerr.DelegationTokenRequestNotAllowed.Code, -1), nil
	}
	exp, err := h.controller.ExpireDelegationToken(ctx, c.principal, req.HMAC, req.ExpiryPeriodMillis)
	if err != nil {
		if requestWide(err) {
			return nil, err
		}
		return expireTokenResponse(req, ErrorCode(err), -1), nil
	}
	return expireTokenResponse(req, 0, exp), nil
}
