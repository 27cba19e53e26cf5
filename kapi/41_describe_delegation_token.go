package kapi

// DescribeDelegationToken, versions 0-3.
//
//   - v1: same as v0 (throttle semantics, KIP-219).
//   - v2: flexible.
//   - v3: each token names its requester (KIP-373).
//
// Served by any broker from its metadata image (Kafka's
// handleDescribeTokensRequest on its token cache), not forwarded. Tokens
// disabled (no delegation.token.secret.key): DELEGATION_TOKEN_AUTH_DISABLED;
// a connection that may not manage tokens (see allowTokenRequests):
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED. owners null: every token; owners
// empty: none. A token is listed when, besides matching the owners, the
// caller is its owner, requester or a renewer, or may DESCRIBE it
// (DELEGATION_TOKEN resource, the token id) or DESCRIBE_TOKENS its owner
// (USER resource), as Kafka's DelegationTokenManager.filterToken.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDescribeDelegationToken(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	c := callerOf(rc)
	switch {
	case h.cfg.DelegationTokenHMAC == nil:
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp
	case !allowTokenRequests(c):
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp
	case req.Owners != nil && len(req.Owners) == 0:
		return resp
	}
	var owners map[string]bool
	if req.Owners != nil {
		owners = map[string]bool{}
		for _, o := range req.Owners {
			owners[joinPrincipal(o.PrincipalType, o.PrincipalName)] = true
		}
	}
	tokens := h.image().DelegationTokens
	for _, id := range slices.Sorted(maps.Keys(tokens)) {
		t := tokens[id]
		if owners != nil && !owners[t.Owner] {
			continue
		}
		if t.Owner != c.principal && t.Requester != c.principal && !slices.Contains(t.Renewers, c.principal) &&
			!h.authorizeQuiet(rc, az.Describe, az.DelegationToken, id) && !h.authorizeQuiet(rc, az.DescribeTokens, az.User, t.Owner) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = splitPrincipal(t.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
		d.TokenID, d.HMAC = id, h.cfg.DelegationTokenHMAC(id)
		for _, r := range t.Renewers {
			rr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			rr.PrincipalType, rr.PrincipalName = splitPrincipal(r)
			d.Renewers = append(d.Renewers, rr)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp
}
