package kapi

// CreateDelegationToken, versions 0-3 (KIP-48; in KRaft, KIP-900).
//
//   - v1: same as v0 (throttle semantics, KIP-219).
//   - v2: flexible.
//   - v3: the owner may be named (owner_principal_type/_name), and the
//     response names the requester too (KIP-373).
//
// A broker checks what only the client's connection tells (Kafka's
// allowTokenRequests: not on a PLAINTEXT listener, not from a one-way SSL
// client, never from a connection that logged in with a token) and, for
// a token owned by another principal, CREATE_TOKENS on that USER; then it
// forwards the request in an Envelope naming the client's principal. The
// controller creates the token (DelegationTokenRecord: id, owner,
// requester, renewers, issue, expiry and max timestamps; the HMAC is
// never written, every node with delegation.token.secret.key recomputes
// it) and answers with the HMAC. The broker answers once its own
// metadata has the token, so a SCRAM login with it (tokenauth=true) right
// after succeeds on this broker.
//
// Kafka forwards without the PLAINTEXT check, which its controller skips
// for forwarded requests "for testing"; Moldau refuses token requests on
// a PLAINTEXT listener wherever they arrive: a token is a credential, and
// an unauthenticated connection has no principal to own it.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	az "github.com/moldau/moldau/broker/security/authorizer"
)

// allowTokenRequests is Kafka's check of the connection a token request
// came on: never a token login, nor PLAINTEXT, nor SSL without a client
// certificate (ANONYMOUS).
func allowTokenRequests(c caller) bool {
	switch {
	case c.tokenAuth:
		return false
	case c.forwarded:
		return true // the forwarding broker checked its client's connection
	case c.protocol == "" || c.protocol == "PLAINTEXT":
		return false
	case c.protocol == "SSL" && c.principal == anonymousPrincipal:
		return false
	}
	return true
}

// callerOf is the caller of a client request on this broker.
func callerOf(rc *RequestContext) caller {
	return caller{principal: rc.principal(), tokenAuth: rc.TokenAuthenticated, protocol: rc.SecurityProtocol}
}

// tokenWait bounds how long a token request waits for this broker's
// metadata to show the controller's answer.
const tokenWait = 5 * time.Second

func (h *Handler) handleCreateDelegationToken(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.CreateDelegationTokenRequest)
	c := callerOf(rc)
	owner := tokenOwner(req, c.principal)
	switch {
	case !allowTokenRequests(c):
		return createTokenError(req, kerr.DelegationTokenRequestNotAllowed.Code, owner, c.principal)
	case owner != c.principal && !h.authorize(rc, az.CreateTokens, az.User, owner):
		return createTokenError(req, kerr.DelegationTokenAuthorizationFailed.Code, owner, c.principal)
	}
	r, err := h.forwardAs(rc, req)
	if err != nil {
		return createTokenError(req, ErrorCode(err), owner, c.principal)
	}
	resp := r.(*kmsg.CreateDelegationTokenResponse)
	if resp.ErrorCode == 0 {
		h.waitForMetadata(rc.Context(), tokenWait, func(im *metadata.Image) bool {
			_, ok := im.DelegationTokens[resp.TokenID]
			return ok
		})
	}
	return resp
}

// tokenOwner is the owner a CreateDelegationToken names, or the requester.
func tokenOwner(req *kmsg.CreateDelegationTokenRequest, requester string) string {
	if req.OwnerPrincipalName == nil || *req.OwnerPrincipalName == "" {
		return requester
	}
	var typ string
	if req.OwnerPrincipalType != nil {
		typ = *req.OwnerPrincipalType
	}
	return joinPrincipal(typ, *req.OwnerPrincipalName)
}

// createTokenError is Kafka's CreateDelegationTokenResponse.prepareResponse
// for an error: the principals, no token, timestamps -1.
func createTokenError(req *kmsg.CreateDelegationTokenRequest, code int16, owner, requester string) *kmsg.CreateDelegationTokenResponse {
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	resp.ErrorCode = code
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(requester)
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = -1, -1, -1
	resp.HMAC = []byte{}
	return resp
}

// createDelegationToken is the controller plane's CreateDelegationToken,
// run as the caller (the connection's or the envelope's principal).
func (h *ControllerHandler) createDelegationToken(ctx context.Context, req *kmsg.CreateDelegationTokenRequest) (kmsg.Response, error) {
	c := callerFrom(ctx)
	owner := tokenOwner(req, c.principal)
	if !allowTokenRequests(c) {
		return createTokenError(req, kerr.DelegationTokenRequestNotAllowed.Code, owner, c.principal), nil
	}
	if owner != c.principal && h.authorizer != nil && !c.forwarded &&
		!h.authorizer.Authorize(az.Session{Principal: c.principal}, az.Action{Operation: az.CreateTokens, ResourceType: az.User, Name: owner, RefCount: 1, LogIfDenied: true}) {
		return createTokenError(req, kerr.DelegationTokenAuthorizationFailed.Code, owner, c.principal), nil
	}
	renewers := make([]string, 0, len(req.Renewers))
	for _, r := range req.Renewers {
		renewers = append(renewers, joinPrincipal(r.PrincipalType, r.PrincipalName))
	}
	t, err := h.controller.CreateDelegationToken(ctx, owner, c.principal, renewers, req.MaxLifetimeMillis)
	if err != nil {
		if requestWide(err) {
			return nil, err
		}
		return createTokenError(req, ErrorCode(err), owner, c.principal), nil
	}
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(t.Owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
	resp.TokenID, resp.HMAC = t.TokenID, h.controller.DelegationTokenHMAC(t.TokenID)
	return resp, nil
}

// requestWide reports whether a controller error is about the request as
// a whole (this node is not the active controller, or it gave up
// waiting), so the forwarding channel retries or the client is told the
// request timed out, rather than an answer about the token.
func requestWide(err error) bool {
	return errors.Is(err, kerr.NotController) || errors.Is(err, kerr.RequestTimedOut) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
