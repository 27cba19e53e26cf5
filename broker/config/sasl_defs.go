package config

import (
	"strings"
	"time"
)

// The SASL keys Moldau acts on (Kafka's BrokerSecurityConfigs and the
// SASL part of SocketServerConfigs and KRaftConfigs). Per listener, a
// listener reads listener.name.<listener>.<key> where set, else <key>;
// the JAAS configuration is per listener and mechanism only,
// listener.name.<listener>.<mechanism lower case>.sasl.jaas.config, as
// Kafka's JaasContext.loadServerContext reads it (an unprefixed
// sasl.jaas.config is ignored by a server, with Kafka's warning). They are
// read at start-up: changing them needs a restart (Kafka reconfigures a
// listener's JAAS dynamically).
var saslDefs = []*Def{
	def("sasl.enabled.mechanisms", TypeList, "GSSAPI", Medium, "The list of SASL mechanisms enabled in the Kafka server. The list may contain any mechanism for which a security provider is available. Moldau serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER; GSSAPI (Kafka's default) is a start-up error on a SASL listener, as Moldau has no Kerberos. Per listener: listener.name.<listener>.sasl.enabled.mechanisms. Read at start-up."),
	def("sasl.jaas.config", TypePassword, nil, Medium, "JAAS login context parameters for SASL connections in the format used by JAAS configuration files. The format for the value is: loginModuleClass controlFlag (optionName=optionValue)*;. For brokers, the config must be prefixed with listener prefix and SASL mechanism name in lower-case, e.g. listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;. PLAIN reads PlainLoginModule's user_<name>=\"<password>\" options (the accepted users) and username/password (the broker's own login to other brokers); SCRAM's username/password are the broker's own login. Read at start-up."),
	def("sasl.mechanism.inter.broker.protocol", TypeString, "GSSAPI", Medium, "SASL mechanism used for inter-broker communication. Default is GSSAPI, which Moldau refuses at start-up when the inter-broker listener is SASL: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. The broker logs in with the username and password of that listener's JAAS configuration for the mechanism."),
	def("sasl.mechanism.controller.protocol", TypeString, "GSSAPI", High, "SASL mechanism used for communication with controllers. Default is GSSAPI, which Moldau refuses at start-up when the controller listener is SASL: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SCRAM needs its credentials in the metadata log, which the controllers themselves read from the quorum: use PLAIN unless the credentials are bootstrapped)."),
	def("sasl.server.max.receive.size", TypeInt, 524288, Medium, "The maximum receive size allowed before and during initial SASL authentication. Default receive size is 512KB. GSSAPI limits requests to 64K, but we allow upto 512KB by default for custom SASL mechanisms. In practice, PLAIN, SCRAM and OAUTH mechanisms can use much smaller limits.", atLeast(1)),
	def("connections.max.reauth.ms", TypeLong, int64(0), Medium, "When explicitly set to a positive number (the default is 0, not a positive number), a session lifetime that will not exceed the configured value will be communicated to v2.2.0 or later clients when they authenticate. The broker will disconnect any such connection that is not re-authenticated within the session lifetime and that is then subsequently used for any purpose other than re-authentication. Configuration names can optionally be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms=3600000", atLeast(0)),
	def("sasl.server.callback.handler.class", TypeClass, nil, Medium, "The SASL server callback handler: for OAUTHBEARER (listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class), org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler checks signed tokens against the JWKS at sasl.oauthbearer.jwks.endpoint.url; unset, OAUTHBEARER takes Kafka's unsecured tokens. No other handler is supported. Read at start-up."),
	def("sasl.oauthbearer.jwks.endpoint.url", TypeString, nil, Medium, "The OAuth/OIDC provider URL (http, https or file) from which the provider's JWKS (JSON Web Key Set) can be retrieved, to verify the signatures of OAUTHBEARER tokens when the listener's server callback handler is OAuthBearerValidatorCallbackHandler. Fetched at start-up (a failure stops it), every sasl.oauthbearer.jwks.endpoint.refresh.ms, and when a token names a key id not in the set. Per listener: listener.name.<listener>.sasl.oauthbearer.jwks.endpoint.url."),
	def("sasl.oauthbearer.jwks.endpoint.refresh.ms", TypeLong, int64(3600000), Low, "The (optional) value in milliseconds for the broker to wait between refreshing its JWKS (JSON Web Key Set) cache that contains the keys to verify the signature of the JWT.", atLeast(0)),
	def("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", TypeLong, int64(100), Low, "The least time between two fetches of the JWKS when a token names a key id the cached set lacks.", atLeast(0)),
	def("sasl.oauthbearer.clock.skew.seconds", TypeInt, 30, Low, "The (optional) value in seconds to allow for differences between the time of the OAuth/OIDC identity provider and the broker (exp, nbf and iat of a signed token).", atLeast(0)),
	def("sasl.oauthbearer.expected.audience", TypeList, nil, Low, "The (optional) comma-delimited setting for the broker to use to verify that the JWT was issued for one of the expected audiences (the aud claim)."),
	def("sasl.oauthbearer.expected.issuer", TypeString, nil, Low, "The (optional) setting for the broker to use to verify that the JWT was created by the expected issuer (the iss claim must match it exactly)."),
	def("sasl.oauthbearer.sub.claim.name", TypeString, "sub", Low, "The OAuth claim for the subject is often named \"sub\", but this (optional) setting can provide a different name to use for the subject included in the JWT payload's claims; its value is the principal's name."),
	def("connection.failed.authentication.delay.ms", TypeInt, 100, Low, "Connection close delay on failed authentication: this is the time (in milliseconds) by which connection close will be delayed on authentication failure. This must be configured to be less than connections.max.idle.ms to prevent connection timeout.", atLeast(0)),
}

// ListenerSaslMechanisms are the SASL mechanisms enabled on a listener.
func (c *KafkaConfig) ListenerSaslMechanisms(listener string) []string {
	var out []string
	for _, m := range c.listenerList(listener, "sasl.enabled.mechanisms") {
		if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// ListenerJaasConfig is a listener's JAAS configuration for a mechanism
// ("" if unset).
func (c *KafkaConfig) ListenerJaasConfig(listener, mechanism string) string {
	s, _ := c.Get(ListenerKey(listener, strings.ToLower(mechanism)+".sasl.jaas.config")).(string)
	return s
}

// ListenerMaxReauth is a listener's connections.max.reauth.ms for a
// mechanism: listener.name.<l>.<mechanism>.connections.max.reauth.ms,
// else listener.name.<l>.connections.max.reauth.ms, else the key.
func (c *KafkaConfig) ListenerMaxReauth(listener, mechanism string) time.Duration {
	for _, k := range []string{ListenerKey(listener, strings.ToLower(mechanism)+".connections.max.reauth.ms"),
		ListenerKey(listener, "connections.max.reauth.ms"), "connections.max.reauth.ms"} {
		if v, ok := c.Get(k).(int64); ok {
			return time.Duration(v) * time.Millisecond
		}
	}
	return 0
}

// listenerList is a LIST key's value for a listener: its
// listener.name.<listener>. form where set, else the key.
func (c *KafkaConfig) listenerList(listener, key string) []string {
	if v, ok := c.Get(ListenerKey(listener, key)).([]string); ok {
		return v
	}
	return c.GetList(key)
}
