package kapi

// SaslHandshake, versions 0 to 1, and the SASL exchange's wire forms.
//
//   - v0: the client names a mechanism; the response has an error code and
//     the enabled mechanisms. After it the client sends its SASL tokens as
//     raw frames (a 4-byte size and the token, no Kafka header), which the
//     socket server answers the same way (SaslServer.Authenticate).
//   - v1: the same message; the tokens then travel in SaslAuthenticate
//     requests (KIP-152).
//
// On a SASL listener the socket server hands SaslHandshake and
// SaslAuthenticate to SaslHandshake and SaslAuthenticate below, in the
// connection's goroutine, as Kafka's SaslServerAuthenticator handles
// them on the network thread; through the handler (a PLAINTEXT or SSL
// listener, or after authentication without a re-authentication)
// they are answered ILLEGAL_SASL_STATE, as Kafka's KafkaApis does.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslServer is the server side of one SASL login on a connection
// (broker/security implements it; the socket server drives it).
type SaslServer interface {
	// Mechanisms are the listener's enabled mechanisms.
	Mechanisms() []string
	// Handshake selects a mechanism; the error wraps
	// kerr.UnsupportedSaslMechanism.
	Handshake(mechanism string) error
	// Authenticate takes one client token and returns the challenge;
	// the error wraps a kerr sentinel (SASL_AUTHENTICATION_FAILED, ...)
	// with the client's message.
	Authenticate(token []byte) ([]byte, error)
	// Complete reports whether the login succeeded.
	Complete() bool
	// Principal is the authenticated principal, "User:<name>".
	Principal() string
	// SessionLifetime is how long the session may last before the client
	// must re-authenticate (KIP-368); 0: no limit.
	SessionLifetime() time.Duration
	// TokenAuthenticated reports whether the login used a delegation
	// token (SCRAM with tokenauth=true).
	TokenAuthenticated() bool
}

// SaslHandshakeKey and SaslAuthenticateKey are the API keys the socket
// server reads before a SASL connection is authenticated, with
// ApiVersions.
const (
	SaslHandshakeKey    = 17
	SaslAuthenticateKey = 36
	ApiVersionsKey      = apiVersionsKey
)

// SaslHandshake answers a SaslHandshake request for s. A non-nil error
// (the mechanism is not enabled, the request does not decode) means the
// connection fails authentication once the response, if any, is sent.
func SaslHandshake(r *Request, s SaslServer) (*Response, error) {
	kreq, err := decodeRequest(r.APIKey, r.APIVersion, r.Body)
	if err != nil {
		return nil, err
	}
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = s.Mechanisms()
	err = s.Handshake(req.Mechanism)
	resp.ErrorCode = ErrorCode(err)
	return encodeResponse(r, resp), err
}

// SaslAuthenticate answers a SaslAuthenticate request: the token goes to
// s, the challenge (or the failure's code and message) comes back, with
// the session lifetime from v1 once s is complete. A non-nil error: the
// authentication failed, the connection closes after the response.
func SaslAuthenticate(r *Request, s SaslServer) (*Response, error) {
	kreq, err := decodeRequest(r.APIKey, r.APIVersion, r.Body)
	if err != nil {
		return nil, err
	}
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	challenge, err := s.Authenticate(req.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		if resp.ErrorCode == kerr.UnknownServerError.Code {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		}
		return encodeResponse(r, resp), err
	}
	resp.SASLAuthBytes = challenge
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if s.Complete() {
		resp.SessionLifetimeMillis = s.SessionLifetime().Milliseconds()
	}
	return encodeResponse(r, resp), nil
}

func (h *Handler) handleSaslHandshake(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	resp := kreq.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp
}

func (h *Handler) handleSaslAuthenticate(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	resp := kreq.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return resp
}
