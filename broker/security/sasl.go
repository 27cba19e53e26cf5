package security

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/security/scram"
	"github.com/moldau/moldau/kapi"
)

// Mechanism names (Kafka's).
const (
	MechanismPlain       = "PLAIN"
	MechanismOAuthBearer = "OAUTHBEARER"
	MechanismGSSAPI      = "GSSAPI"
)

// SaslConfig is a SASL listener's configuration.
type SaslConfig struct {
	Listener string
	// Mechanisms are sasl.enabled.mechanisms (or the listener's form).
	Mechanisms []string
	// Jaas is each mechanism's parsed
	// listener.name.<listener>.<mechanism>.sasl.jaas.config (absent:
	// not set).
	Jaas map[string]JaasEntry
	// Scram looks a SCRAM credential up in the metadata image.
	Scram func(mechanism, user string) (scram.Credential, bool)
	// Token looks a delegation token's SCRAM credential and owner up by
	// token id (nil: tokenauth is refused).
	Token func(mechanism, tokenID string) (cred scram.Credential, owner string, ok bool)
	// MaxReauth is connections.max.reauth.ms by mechanism (0 or absent:
	// sessions do not expire unless their credential does).
	MaxReauth map[string]time.Duration
	// MaxReceiveSize is sasl.server.max.receive.size.
	MaxReceiveSize int32
	// FailedDelay is connection.failed.authentication.delay.ms.
	FailedDelay time.Duration
	// Ssl is the listener's SSL factory on a SASL_SSL listener.
	Ssl *SslFactory
	// OAuthJWT, when set, makes OAUTHBEARER check signed tokens
	// against a JWKS (the listener's server callback handler is Kafka's
	// OAuthBearerValidatorCallbackHandler); nil: the unsecured validator.
	OAuthJWT *JWTConfig
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// SaslChannelBuilder is a SASL_PLAINTEXT or SASL_SSL listener's channel
// builder (Kafka's SaslChannelBuilder): the TLS handshake for SASL_SSL at
// accept, then, through network's SASL state, one SaslServer per login.
type SaslChannelBuilder struct {
	cfg        SaslConfig
	plainUsers map[string]string
	oauth      OAuthConfig
}

// NewSaslChannelBuilder checks a listener's SASL configuration: every
// enabled mechanism is one Moldau serves (GSSAPI is refused: Moldau has no
// Kerberos), PLAIN has a PlainLoginModule with its users, and a JAAS
// entry names its mechanism's login module.
func NewSaslChannelBuilder(cfg SaslConfig) (*SaslChannelBuilder, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Mechanisms) == 0 {
		return nil, fmt.Errorf("listener %s: sasl.enabled.mechanisms is empty", cfg.Listener)
	}
	b := &SaslChannelBuilder{cfg: cfg}
	for _, m := range cfg.Mechanisms {
		e, hasJaas := cfg.Jaas[m]
		if err := checkJaasModule(cfg.Listener, m, e, hasJaas); err != nil {
			return nil, err
		}
		switch m {
		case MechanismPlain:
			if !hasJaas {
				return nil, fmt.Errorf("listener %s: PLAIN needs listener.name.%s.plain.sasl.jaas.config with PlainLoginModule's user_<name>=\"<password>\" entries", cfg.Listener, strings.ToLower(cfg.Listener))
			}
			b.plainUsers = plainUsers(e)
		case scram.SHA256.Name, scram.SHA512.Name:
			if cfg.Scram == nil {
				return nil, fmt.Errorf("listener %s: %s needs the metadata image's credentials", cfg.Listener, m)
			}
		case MechanismOAuthBearer:
			var err error
			if b.oauth, err = oauthConfigFrom(e); err != nil {
				return nil, fmt.Errorf("listener %s: OAUTHBEARER: %w", cfg.Listener, err)
			}
			b.oauth.Now = cfg.Now
			if cfg.OAuthJWT != nil {
				if b.oauth.JWT, err = NewJWTValidator(*cfg.OAuthJWT, cfg.Now); err != nil {
					return nil, fmt.Errorf("listener %s: OAUTHBEARER: %w", cfg.Listener, err)
				}
			}
		case MechanismGSSAPI:
			return nil, fmt.Errorf("listener %s: SASL mechanism GSSAPI (Kerberos) is not supported by Moldau: set sasl.enabled.mechanisms (Kafka's default is GSSAPI) to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", cfg.Listener)
		default:
			return nil, fmt.Errorf("listener %s: unknown SASL mechanism %q in sasl.enabled.mechanisms (Moldau serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", cfg.Listener, m)
		}
	}
	return b, nil
}

// loginModuleFor is the JAAS login module each mechanism reads.
func loginModuleFor(mechanism string) string {
	switch mechanism {
	case MechanismPlain:
		return PlainLoginModule
	case scram.SHA256.Name, scram.SHA512.Name:
		return ScramLoginModule
	case MechanismOAuthBearer:
		return OAuthBearerLoginModule
	}
	return ""
}

func checkJaasModule(listener, mechanism string, e JaasEntry, has bool) error {
	want := loginModuleFor(mechanism)
	if !has || want == "" || e.LoginModule == want {
		return nil
	}
	return fmt.Errorf("listener %s: the JAAS config of %s names %s; Moldau reads %s there", listener, mechanism, e.LoginModule, want)
}

// SecurityProtocol is SASL_SSL or SASL_PLAINTEXT.
func (b *SaslChannelBuilder) SecurityProtocol() string {
	if b.cfg.Ssl != nil {
		return "SASL_SSL"
	}
	return "SASL_PLAINTEXT"
}

// Authenticate runs at accept: the TLS handshake on SASL_SSL (the client
// certificate does not make the principal: SASL does), nothing on
// SASL_PLAINTEXT. The principal is "" until the SASL login completes.
func (b *SaslChannelBuilder) Authenticate(ctx context.Context, nc net.Conn) (net.Conn, string, error) {
	if b.cfg.Ssl == nil {
		return nc, "", nil
	}
	tc, _, err := b.cfg.Ssl.Authenticate(ctx, nc)
	return tc, "", err
}

// MaxReceiveSize is sasl.server.max.receive.size.
func (b *SaslChannelBuilder) MaxReceiveSize() int32 { return b.cfg.MaxReceiveSize }

// FailedAuthenticationDelay is connection.failed.authentication.delay.ms.
func (b *SaslChannelBuilder) FailedAuthenticationDelay() time.Duration { return b.cfg.FailedDelay }

// NewSaslServer starts a login (the first, or a re-authentication).
func (b *SaslChannelBuilder) NewSaslServer() kapi.SaslServer { return &saslSession{b: b} }

// mechanismServer is one mechanism's side of an exchange.
type mechanismServer interface {
	evaluate(token []byte) ([]byte, error)
}

// saslSession is one login (kapi.SaslServer).
type saslSession struct {
	b         *SaslChannelBuilder
	mechanism string
	m         mechanismServer
	done      bool
	principal string
	lifetime  time.Duration
	// tokenAuthenticated: the login used a delegation token, so it may
	// not create tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
	tokenAuthenticated bool
}

func (s *saslSession) Mechanisms() []string { return slices.Clone(s.b.cfg.Mechanisms) }

func (s *saslSession) Handshake(mechanism string) error {
	if s.m != nil {
		return apierr.New(kerr.IllegalSaslState, "SaslHandshake received twice")
	}
	if !slices.Contains(s.b.cfg.Mechanisms, mechanism) {
		return apierr.Errorf(kerr.UnsupportedSaslMechanism, "Unsupported SASL mechanism %s", mechanism)
	}
	s.mechanism = mechanism
	switch mechanism {
	case MechanismPlain:
		s.m = &plainServer{users: s.b.plainUsers}
	case scram.SHA256.Name, scram.SHA512.Name:
		mech, _ := scram.MechanismByName(mechanism)
		s.m = &scramServer{mech: mech, lookup: s.b.cfg.Scram, tokenLookup: s.b.cfg.Token}
	case MechanismOAuthBearer:
		s.m = &oauthServer{cfg: s.b.oauth}
	}
	return nil
}

func (s *saslSession) Authenticate(token []byte) ([]byte, error) {
	if s.m == nil {
		return nil, apierr.New(kerr.IllegalSaslState, "SaslAuthenticate before SaslHandshake")
	}
	if s.done {
		return nil, apierr.New(kerr.IllegalSaslState, "SaslAuthenticate request received after successful authentication")
	}
	out, err := s.m.evaluate(token)
	if err != nil {
		return nil, err
	}
	var user, tokenOwner string
	var expiry time.Time
	switch m := s.m.(type) {
	case *plainServer:
		s.done, user = m.done, m.user
	case *scramServer:
		s.done, user, tokenOwner = m.state == 2, m.user, m.tokenOwner
	case *oauthServer:
		s.done, user, expiry = m.done, m.principal, m.expiry
	}
	if s.done {
		s.principal = "User:" + user
		if tokenOwner != "" {
			s.principal, s.tokenAuthenticated = tokenOwner, true
		}
		s.lifetime = s.sessionLifetime(expiry)
	}
	return out, nil
}

// sessionLifetime is Kafka's: connections.max.reauth.ms, capped by the
// credential's expiry (an OAuth token's exp), zero if neither applies.
func (s *saslSession) sessionLifetime(credentialExpiry time.Time) time.Duration {
	max := s.b.cfg.MaxReauth[s.mechanism]
	if credentialExpiry.IsZero() {
		return max
	}
	left := credentialExpiry.Sub(s.b.cfg.Now())
	if left < time.Millisecond {
		left = time.Millisecond // expired in between: at once
	}
	if max > 0 && max < left {
		return max
	}
	return left
}

func (s *saslSession) Complete() bool { return s.done }

// TokenAuthenticated reports whether the login used a delegation token.
func (s *saslSession) TokenAuthenticated() bool       { return s.tokenAuthenticated }
func (s *saslSession) Principal() string              { return s.principal }
func (s *saslSession) SessionLifetime() time.Duration { return s.lifetime }

// Mechanism is the mechanism chosen by the handshake.
func (s *saslSession) Mechanism() string { return s.mechanism }
