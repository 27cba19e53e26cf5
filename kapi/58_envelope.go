package kapi

// Envelope, version 0 (flexible), on the controller listener only
// (KIP-590).
//
//   - v0: the forwarded request (its header and body), the client's
//     principal (Kafka's DefaultPrincipalData, v0) and address; the
//     answer carries the inner response (header and body) or an error.
//
// Moldau's brokers forward most admin requests without an envelope,
// having authorized them themselves (see controller_apis.go). The
// requests whose outcome depends on who asked (the delegation token APIs:
// a token's owner and requester are the client's principal) go in an
// Envelope, as Kafka forwards every request. The controller plane opens
// it, runs the inner request as the enclosed principal (callerFrom) and
// seals the answer. The broker that sealed it has already checked what
// needs the client's connection (its listener's security protocol, a
// token login); the controller trusts the principal of a peer that has
// CLUSTER_ACTION, as Kafka's ControllerApis does.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
)

// caller is who sent a controller-plane request: the connection's
// principal, or the one an Envelope carried.
type caller struct {
	principal string // "User:name"
	tokenAuth bool   // logged in with a delegation token
	forwarded bool   // came in an Envelope
	protocol  string // the security protocol of the connection it came on
}

type callerKey struct{}

func withCaller(ctx context.Context, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom returns the request's caller; anonymous when none was set.
func callerFrom(ctx context.Context) caller {
	if c, ok := ctx.Value(callerKey{}).(caller); ok {
		return c
	}
	return caller{principal: anonymousPrincipal}
}

const anonymousPrincipal = "User:ANONYMOUS"

// principal is the request's principal: User:ANONYMOUS when the listener
// authenticates nobody.
func (r *Request) principal() string {
	if r.Principal == "" {
		return anonymousPrincipal
	}
	return r.Principal
}

// joinPrincipal is "Type:name"; an empty type is User, as clients mean
// it (kadm leaves it empty).
func joinPrincipal(typ, name string) string {
	if typ == "" {
		typ = "User"
	}
	return typ + ":" + name
}

// splitPrincipal splits "Type:name" (Kafka's KafkaPrincipal.toString).
func splitPrincipal(p string) (typ, name string) {
	typ, name, ok := strings.Cut(p, ":")
	if !ok {
		return "User", p
	}
	return typ, name
}

// sealEnvelope wraps req, sent by the client of rc, for the controller.
func sealEnvelope(rc *RequestContext, req kmsg.Request) *kmsg.EnvelopeRequest {
	env := kmsg.NewPtrEnvelopeRequest()
	pd := kmsg.NewDefaultPrincipalData()
	pd.Type, pd.Name = splitPrincipal(rc.principal())
	pd.TokenAuthenticated = rc.TokenAuthenticated
	env.RequestPrincipal = pd.AppendTo(nil)
	if a, ok := rc.ClientAddr.(*net.TCPAddr); ok {
		if ip4 := a.IP.To4(); ip4 != nil {
			env.ClientHostAddress = ip4
		} else {
			env.ClientHostAddress = a.IP
		}
	}
	// The inner request's header is v1, or v2 when the request is
	// flexible (Kafka's RequestHeader); kmsg's formatter writes it after
	// the 4-byte size, which the envelope does not carry.
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(rc.ClientID))
	env.RequestData = f.AppendRequest(nil, req, rc.CorrelationID)[4:]
	return env
}

// openEnvelope parses an envelope's principal and inner request. The
// inner request must be one the controller plane serves at that version.
func (h *ControllerHandler) openEnvelope(env *kmsg.EnvelopeRequest) (caller, kmsg.Request, int32, error) {
	var c caller
	pd := kmsg.NewDefaultPrincipalData()
	if err := pd.ReadFrom(env.RequestPrincipal); err != nil || pd.Name == "" {
		return c, nil, 0, apierr.Errorf(kerr.PrincipalDeserializationFailure, "The envelope's principal cannot be read.")
	}
	c = caller{principal: pd.Type + ":" + pd.Name, tokenAuth: pd.TokenAuthenticated, forwarded: true}
	key, version, corr, body, err := parseInnerHeader(env.RequestData)
	if err != nil {
		return c, nil, 0, apierr.Errorf(kerr.InvalidRequest, "The envelope's request cannot be read: %v.", err)
	}
	a, ok := h.apis[key]
	if !ok || key == envelopeKey || key == apiVersionsKey || version < a.min || version > a.max {
		return c, nil, 0, apierr.Errorf(kerr.InvalidRequest, "%s v%d cannot be forwarded in an envelope.", kmsg.NameForKey(key), version)
	}
	req, err := decodeRequest(key, version, body)
	if err != nil {
		return c, nil, 0, apierr.Errorf(kerr.InvalidRequest, "The envelope's request cannot be read: %v.", err)
	}
	return c, req, corr, nil
}

const envelopeKey = 58

// parseInnerHeader parses a request header (v1, or v2 when the request's
// version is flexible) and returns the body after it.
func parseInnerHeader(b []byte) (key, version int16, corr int32, body []byte, err error) {
	errShort := errors.New("truncated request header")
	if len(b) < 10 {
		return 0, 0, 0, nil, errShort
	}
	key, version = int16(binary.BigEndian.Uint16(b)), int16(binary.BigEndian.Uint16(b[2:]))
	corr = int32(binary.BigEndian.Uint32(b[4:]))
	n := int16(binary.BigEndian.Uint16(b[8:]))
	b = b[10:]
	if n > 0 {
		if int(n) > len(b) {
			return 0, 0, 0, nil, errShort
		}
		b = b[n:]
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return 0, 0, 0, nil, fmt.Errorf("unknown API key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		if b, err = skipTags(b); err != nil {
			return 0, 0, 0, nil, err
		}
	}
	return key, version, corr, b, nil
}

// skipTags skips a tagged-fields section.
func skipTags(b []byte) ([]byte, error) {
	errTags := errors.New("malformed tagged fields")
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errTags
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errTags
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errTags
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// dispatchEnvelope runs an envelope's request as its principal and seals
// the answer. An error of the inner request as a whole (NOT_CONTROLLER, a
// timeout) is the envelope's, so the forwarding channel retries.
func (h *ControllerHandler) dispatchEnvelope(ctx context.Context, env *kmsg.EnvelopeRequest) (kmsg.Response, error) {
	c, inner, corr, err := h.openEnvelope(env)
	if err != nil {
		return nil, err
	}
	resp, err := h.Dispatch(withCaller(ctx, c), inner)
	if err != nil {
		return nil, err
	}
	out := env.ResponseKind().(*kmsg.EnvelopeResponse)
	enc := encodeResponse(&Request{APIKey: inner.Key(), APIVersion: inner.GetVersion(), CorrelationID: corr}, resp)
	out.ResponseData = enc.Buf[4:]
	return out, nil
}

// openEnvelopeResponse returns the inner response of an envelope sent for
// req.
func openEnvelopeResponse(req kmsg.Request, resp kmsg.Response) (kmsg.Response, error) {
	env, ok := resp.(*kmsg.EnvelopeResponse)
	if !ok {
		return nil, fmt.Errorf("%w: the controller answered an envelope with %T", kerr.UnknownServerError, resp)
	}
	if env.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(env.ErrorCode)
	}
	b := env.ResponseData
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: truncated envelope response", kerr.UnknownServerError)
	}
	b = b[4:] // correlation id
	inner := req.ResponseKind()
	inner.SetVersion(req.GetVersion())
	if inner.IsFlexible() {
		var err error
		if b, err = skipTags(b); err != nil {
			return nil, fmt.Errorf("%w: envelope response: %v", kerr.UnknownServerError, err)
		}
	}
	if err := inner.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: envelope response: %v", kerr.UnknownServerError, err)
	}
	return inner, nil
}

// forwardAs sends req to the active controller in an Envelope carrying
// the client's principal and returns the inner response.
func (h *Handler) forwardAs(rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	resp, err := h.forward(rc.Context(), sealEnvelope(rc, req), 0)
	if err != nil {
		return nil, err
	}
	return openEnvelopeResponse(req, resp)
}
