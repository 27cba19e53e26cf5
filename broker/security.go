package broker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/broker/security"
	"github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/broker/security/scram"
)

// The wiring of security (Kafka's ChannelBuilders for the listeners and
// the inter-broker and controller clients): an SslFactory per SSL or
// SASL_SSL listener this node serves, a client-side one for a listener it
// only connects to, a SaslChannelBuilder per SASL listener, the dial
// functions of the node's own connections (TLS, then the SASL login), and
// the rotation of key and trust stores through dynamic configs.

// securityProtocolIDs are the ids of RegisterBrokerRecord's endpoints.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

func usesTLS(proto string) bool  { return proto == "SSL" || proto == "SASL_SSL" }
func usesSASL(proto string) bool { return proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" }

// newSecurity builds the SSL factories, the SASL channel builders and the
// dial functions to the controller listener and the inter-broker
// listener, before anything dials or listens.
func (b *Broker) newSecurity() error {
	cfg := b.cfg
	b.sslFactories = map[string]*security.SslFactory{}
	b.saslBuilders = map[string]*security.SaslChannelBuilder{}
	for _, l := range append(append([]config.Listener(nil), cfg.Listeners...), cfg.ControllerListeners...) {
		proto := cfg.SecurityProtocol(l.Name)
		if usesTLS(proto) {
			f, err := security.NewSslFactory(l.Name, security.SslConfigFrom(cfg.ListenerSsl(l.Name)), true)
			if err != nil {
				return err
			}
			b.sslFactories[l.Name] = f
		}
		if usesSASL(proto) {
			sb, err := b.newSaslBuilder(l.Name)
			if err != nil {
				return err
			}
			b.saslBuilders[l.Name] = sb
		}
	}
	if s := cfg.Get("sasl.jaas.config"); s != nil && len(b.saslBuilders) > 0 {
		b.log.Warn("Server config sasl.jaas.config should be prefixed with SASL mechanism name, ignoring config (as Kafka does): use listener.name.<listener>.<mechanism>.sasl.jaas.config")
	}
	var err error
	b.interBrokerDial, err = b.dialerTo(cfg.InterBrokerListenerName, "sasl.mechanism.inter.broker.protocol")
	if err != nil {
		return fmt.Errorf("inter.broker.listener.name: %w", err)
	}
	b.controllerDial = b.opts.Dial
	if len(cfg.ControllerListenerNames) > 0 {
		if b.controllerDial, err = b.dialerTo(cfg.ControllerListenerNames[0], "sasl.mechanism.controller.protocol"); err != nil {
			return fmt.Errorf("controller.listener.names: %w", err)
		}
	}
	if b.bootstrapScram, err = addScramRecords(b.opts.AddScram); err != nil {
		return err
	}
	return b.newAuthorizer()
}

// newAuthorizer builds the StandardAuthorizer that authorizer.class.name
// names, on the applied metadata's ACLs. Any other class is refused at
// start-up: Kafka 4's only built-in authorizer is this one.
func (b *Broker) newAuthorizer() error {
	switch name := b.cfg.GetString("authorizer.class.name"); name {
	case "":
		return nil
	case authorizer.ClassName:
	default:
		return fmt.Errorf("authorizer.class.name: %q is not supported (only %s is)", name, authorizer.ClassName)
	}
	b.authorizer = authorizer.New(authorizer.Config{
		ACLs: func() *metadata.ACLs {
			if b.loader == nil {
				return nil
			}
			return b.loader.Image().ACLs
		},
		SuperUsers:                authorizer.ParseSuperUsers(b.cfg.GetString("super.users")),
		AllowEveryoneIfNoACLFound: b.cfg.GetBool("allow.everyone.if.no.acl.found"),
		Logger:                    b.log,
	})
	return nil
}

// newSaslBuilder builds a SASL listener's channel builder from its
// sasl.enabled.mechanisms and its JAAS configurations.
func (b *Broker) newSaslBuilder(listener string) (*security.SaslChannelBuilder, error) {
	cfg := b.cfg
	sc := security.SaslConfig{
		Listener:       listener,
		Mechanisms:     cfg.ListenerSaslMechanisms(listener),
		Jaas:           map[string]security.JaasEntry{},
		MaxReauth:      map[string]time.Duration{},
		MaxReceiveSize: cfg.GetInt("sasl.server.max.receive.size"),
		FailedDelay:    time.Duration(cfg.GetInt("connection.failed.authentication.delay.ms")) * time.Millisecond,
		Ssl:            b.sslFactories[listener],
		Scram:          b.scramCredential,
		Token:          b.tokenCache().Lookup,
	}
	for _, m := range sc.Mechanisms {
		sc.MaxReauth[m] = cfg.ListenerMaxReauth(listener, m)
		s := cfg.ListenerJaasConfig(listener, m)
		if s == "" {
			continue
		}
		e, err := security.ParseJaasProperty(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.ListenerKey(listener, strings.ToLower(m)+".sasl.jaas.config"), err)
		}
		sc.Jaas[m] = e
	}
	if slices.Contains(sc.Mechanisms, security.MechanismOAuthBearer) {
		var err error
		if sc.OAuthJWT, err = b.oauthJWTConfig(listener); err != nil {
			return nil, err
		}
	}
	return security.NewSaslChannelBuilder(sc)
}

// oauthJWTConfig is a listener's signed-token validation, when its
// OAUTHBEARER server callback handler is Kafka's
// OAuthBearerValidatorCallbackHandler (nil: the unsecured validator).
// Each sasl.oauthbearer.* key is read in its listener.name.<listener>.
// form where set, as Kafka's listener prefix overrides.
func (b *Broker) oauthJWTConfig(listener string) (*security.JWTConfig, error) {
	get := func(key string) any {
		if v := b.cfg.Get(config.ListenerKey(listener, key)); v != nil {
			return v
		}
		return b.cfg.Get(key)
	}
	classKey := config.ListenerKey(listener, "oauthbearer.sasl.server.callback.handler.class")
	class, _ := b.cfg.Get(classKey).(string)
	if class == "" {
		classKey = "sasl.server.callback.handler.class"
		class, _ = get(classKey).(string)
	}
	switch class {
	case "":
		return nil, nil
	case security.OAuthValidatorClass, security.OAuthValidatorClassLegacy:
	default:
		return nil, fmt.Errorf("%s: %q is not supported (only %s is)", classKey, class, security.OAuthValidatorClass)
	}
	c := &security.JWTConfig{}
	c.JWKSURL, _ = get("sasl.oauthbearer.jwks.endpoint.url").(string)
	c.Issuer, _ = get("sasl.oauthbearer.expected.issuer").(string)
	c.SubClaim, _ = get("sasl.oauthbearer.sub.claim.name").(string)
	c.Audience, _ = get("sasl.oauthbearer.expected.audience").([]string)
	if v, ok := get("sasl.oauthbearer.jwks.endpoint.refresh.ms").(int64); ok {
		c.Refresh = time.Duration(v) * time.Millisecond
	}
	if v, ok := get("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms").(int64); ok {
		c.RetryBackoff = time.Duration(v) * time.Millisecond
	}
	if v, ok := get("sasl.oauthbearer.clock.skew.seconds").(int32); ok {
		c.ClockSkew = time.Duration(v) * time.Second
	}
	return c, nil
}

// tokenCache is the broker's delegation token cache, made on first use.
func (b *Broker) tokenCache() *security.DelegationTokenCache {
	b.tokenCacheOnce.Do(func() {
		secret := b.cfg.GetString("delegation.token.secret.key")
		b.tokens = security.NewDelegationTokenCache(secret, func() *metadata.Image {
			if b.loader == nil {
				return nil
			}
			return b.loader.Image()
		}, time.Now)
	})
	return b.tokens
}

// delegationTokenHMAC is the HMAC of a token id for kapi's token APIs;
// nil when delegation.token.secret.key is not set (tokens disabled).
func (b *Broker) delegationTokenHMAC() func(string) []byte {
	if b.cfg.GetString("delegation.token.secret.key") == "" {
		return nil
	}
	return b.tokenCache().HMAC
}

// scramCredential looks a SCRAM credential up in the applied metadata.
func (b *Broker) scramCredential(mechanism, user string) (scram.Credential, bool) {
	m, ok := scram.MechanismByName(mechanism)
	if !ok || b.loader == nil {
		return scram.Credential{}, false
	}
	c, ok := b.loader.Image().Scram[metadata.ScramKey{User: user, Mechanism: m.Type}]
	return scram.Credential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}, ok
}

// dialerTo is how this node dials listener on other nodes: Options.Dial,
// with a TLS handshake when the listener is SSL or SASL_SSL (that
// listener's SSL configuration in client mode, as Kafka's inter-broker
// clients), then a SASL login with mechanismKey's mechanism when it is
// SASL_*.
func (b *Broker) dialerTo(listener, mechanismKey string) (network.DialFunc, error) {
	proto := b.cfg.SecurityProtocol(listener)
	dial := b.opts.Dial
	if usesTLS(proto) {
		f := b.sslFactories[listener]
		if f == nil {
			var err error
			if f, err = security.NewSslFactory(listener, security.SslConfigFrom(b.cfg.ListenerSsl(listener)), false); err != nil {
				return nil, err
			}
			b.sslFactories[listener] = f
		}
		dial = f.Dialer(dial)
	}
	if !usesSASL(proto) {
		return dial, nil
	}
	mech := strings.ToUpper(strings.TrimSpace(b.cfg.GetString(mechanismKey)))
	var jaas security.JaasEntry
	s := b.cfg.ListenerJaasConfig(listener, mech)
	if s != "" {
		var err error
		if jaas, err = security.ParseJaasProperty(s); err != nil {
			return nil, fmt.Errorf("%s: %w", config.ListenerKey(listener, strings.ToLower(mech)+".sasl.jaas.config"), err)
		}
	}
	c, err := security.NewSaslClient(listener, mech, jaas, s != "", mechanismKey)
	if err != nil {
		return nil, err
	}
	return c.Dialer(dial), nil
}

// channelBuilder is a listener's network.ChannelBuilder (nil: PLAINTEXT).
func (b *Broker) channelBuilder(listener string) network.ChannelBuilder {
	switch proto := b.cfg.SecurityProtocol(listener); {
	case usesSASL(proto):
		if sb := b.saslBuilders[listener]; sb != nil {
			return sb
		}
	case proto == "SSL":
		if f := b.sslFactories[listener]; f != nil {
			return f
		}
	}
	return nil
}

// addScramRecords turns Options.AddScram into the credential records of a
// new cluster, checked by the controller's rules.
func addScramRecords(specs []string) ([]metadata.Record, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, s := range specs {
		u, err := scram.ParseAddScram(s)
		if err != nil {
			return nil, fmt.Errorf("--add-scram %q: %w", s, err)
		}
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.Name, u.Mechanism.Type, u.Iterations, u.Salt, u.SaltedPassword
		req.Upsertions = append(req.Upsertions, up)
	}
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	recs := controller.AlterScram(metadata.Empty, req, resp)
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return nil, fmt.Errorf("--add-scram for %s: %s", r.User, msg)
		}
	}
	return recs, nil
}

// sslReconfigurables make each SSL factory follow its listener's ssl.*
// keys (Kafka's SslFactory as a Reconfigurable of its channel builder):
// a change is validated by building the new stores (a key store that does
// not load refuses the AlterConfigs) and applies to the handshakes after
// it; connections already established keep their session.
func (b *Broker) sslReconfigurables() []config.Reconfigurable {
	var rs []config.Reconfigurable
	for name, f := range b.sslFactories {
		from := func(values map[string]any) security.SslConfig {
			return security.SslConfigFrom(config.ListenerSslValues(name, config.SslKeys, values))
		}
		rs = append(rs, config.ReconfigurableFunc{
			Keys:     config.ListenerSslKeys(name, config.SslKeys),
			Validate: func(values map[string]any) error { return f.ValidateReconfiguration(from(values)) },
			Apply: func(_, values map[string]any) {
				if err := f.Reconfigure(from(values)); err != nil {
					// Validated, but the files may have changed since.
					b.log.Error("SSL reconfiguration failed; the listener keeps its stores", "listener", name, "err", err)
					return
				}
				attrs := []any{"listener", name}
				if c := f.Certificate(); c != nil {
					attrs = append(attrs, "subject", c.Subject.String(), "serial", c.SerialNumber.String(), "not_after", c.NotAfter)
				}
				b.log.Info("SSL key and trust stores reconfigured: new handshakes use them", attrs...)
			},
		})
	}
	return rs
}
