// Package security is Moldau's authentication of connections (Kafka's
// org.apache.kafka.common.security and ChannelBuilders): the SSL security
// protocol, and SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) on
// SASL_PLAINTEXT and SASL_SSL listeners. The authorizer on the ACLs of
// the metadata image is package authorizer. Delegation tokens
// (delegation_tokens.go, Kafka's DelegationTokenCache) log in over SCRAM.
//
// # Listeners and channel builders
//
// Each listener has a security protocol (listener.security.protocol.map).
// A PLAINTEXT listener needs nothing: its connections' principal is
// User:ANONYMOUS. An SSL listener has an SslFactory (Kafka's SslFactory
// with its DefaultSslEngineFactory), built by package broker from the
// listener's ssl.* values (listener.name.<listener>.ssl.* where set, else
// ssl.*; see config.KafkaConfig.ListenerSsl). The network layer calls its
// Authenticate on every accepted connection, in the connection's own
// goroutine and bounded by the request receive timeout
// (network.ChannelBuilder is the interface): the TLS handshake, then the
// principal. A SASL listener has a SaslChannelBuilder (sasl.go): its
// Authenticate is the TLS handshake on SASL_SSL (nothing on
// SASL_PLAINTEXT), and the network layer then runs the SASL exchange with
// one kapi.SaslServer per login (network.SaslChannelBuilder).
//
// # SASL
//
// sasl.enabled.mechanisms (or listener.name.<l>.sasl.enabled.mechanisms)
// names the mechanisms; GSSAPI, Kafka's default, is a start-up error, as
// Moldau has no Kerberos. Each mechanism's JAAS configuration is
// listener.name.<l>.<mechanism lower case>.sasl.jaas.config, parsed as
// Kafka's JaasConfig parses it (jaas.go: StreamTokenizer's words, numbers
// and quoted strings, comments, exactly one login module, Kafka's
// disallowed modules); the unprefixed sasl.jaas.config is ignored with
// Kafka's warning, as Kafka's servers ignore it. Read at start-up.
//
//   - PLAIN (sasl_plain.go, Kafka's PlainSaslServer): the
//     user_<name>="<password>" options of the listener's PlainLoginModule
//     are the users; passwords compare as SHA-256 digests in constant time,
//     an unknown user costing the same as a wrong password.
//   - SCRAM-SHA-256 and SCRAM-SHA-512 (scram.go, Kafka's ScramSaslServer;
//     the formatter is package scram): RFC 5802 with gs2 header "n" only,
//     credentials from the metadata image (UserScramCredentialRecord),
//     and delegation tokens: a client-first message with the extension
//     tokenauth=true names a token id as the user, its password is the
//     base64 of the token's HMAC-SHA512 (keyed by
//     delegation.token.secret.key), the credential is derived per token
//     and mechanism with a random salt and 4096 iterations, the principal
//     becomes the token's owner and the session is marked token
//     authenticated (such a session may not create tokens). An expired or
//     unknown token, or no secret, fails as Kafka's "Token Authentication
//     failed: Invalid tokenId". As Kafka, the
//     client-final nonce need only end with the server's (librdkafka 1.7
//     repeats the client nonce).
//   - OAUTHBEARER (oauthbearer.go): Kafka's unsecured validator by
//     default (unsigned JWS, sub or unsecuredValidatorPrincipalClaimName,
//     exp, iat, unsecuredValidatorRequiredScope), or, when the listener's
//     server callback handler is Kafka's
//     OAuthBearerValidatorCallbackHandler, signed JWTs checked against the
//     JWKS at sasl.oauthbearer.jwks.endpoint.url (oauthbearer_jwt.go); a
//     refused token gets Kafka's JSON challenge ({"status":"invalid_token"})
//     and the failure carries it.
//
// Failures are Kafka's: SASL_AUTHENTICATION_FAILED with Kafka's messages
// (the generic "Authentication failed during authentication due to
// invalid credentials with SASL mechanism X" where Kafka's server throws
// a SaslException), UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE. The
// principal is User:<name> (the PLAIN or SCRAM user, the token's sub).
// The session lifetime is Kafka's: connections.max.reauth.ms for the
// mechanism (listener.name.<l>.<mechanism>.connections.max.reauth.ms
// first), capped by an OAuth token's expiry.
//
// # Stores
//
// ssl.keystore.type and ssl.truststore.type are PEM, PKCS12 (via
// software.sslmate.com/src/go-pkcs12) or JKS (via
// github.com/pavlo-v-chernykh/keystore-go/v4), with Kafka's rules and
// messages for which keys go together (keystore.go). Differences: an
// encrypted PEM private key is refused (Go's standard library does not
// decrypt PKCS#8), and a JKS trust store needs its password (keystore-go
// always checks the store's integrity; Java skips the check without one).
// Without a trust store the system's roots are trusted, as Java's default.
//
// # Protocols and cipher suites
//
// ssl.enabled.protocols (TLSv1.2, TLSv1.3) and ssl.protocol (the
// SSLContext's: TLSv1.2 caps at 1.2) give the range of versions.
// ssl.cipher.suites takes IANA (Java) names, SSL_ read as TLS_; an unknown
// name is an error. Go cannot narrow TLS 1.3's three suites: a list
// naming none of them turns TLS 1.3 off, a list naming only them turns
// TLS 1.2 off.
//
// # Client authentication and principals
//
// ssl.client.auth: none (no certificate asked), requested (verified if
// sent: tls.VerifyClientCertIfGiven), required
// (tls.RequireAndVerifyClientCert). The principal is Kafka's
// DefaultKafkaPrincipalBuilder's: User:ANONYMOUS without a certificate,
// else User: and the subject's distinguished name (RFC 2253, as Java's
// X500Principal.getName(); Go names SERIALNUMBER and POSTALCODE where
// Java writes their OIDs) mapped by ssl.principal.mapping.rules
// (SslPrincipalMapper, principal.go). A certificate no rule maps fails
// the authentication. The principal is kept on the connection and on
// every kapi.Request (Principal) for the authorizer to come.
//
// # The node's own connections
//
// A node connecting to an SSL listener of another node (the controller
// channel and the metadata quorum to controller.listener.names[0], the
// inter-broker channels and replica fetchers to
// inter.broker.listener.name) uses the SslFactory of that listener in
// client mode, as Kafka's inter-broker clients use the listener's
// configuration: the key store's certificate as the client certificate,
// the trust store's roots, and with ssl.endpoint.identification.algorithm
// =https (the default) the host name checked against the certificate;
// empty checks the chain only. SslFactory.Dialer wraps a dial function
// (broker.Options.Dial) with the handshake. On a SASL_* listener the node
// then logs in (sasl_client.go, SaslClient.Dialer): SaslHandshake v1 and
// SaslAuthenticate v1 with sasl.mechanism.inter.broker.protocol (or
// sasl.mechanism.controller.protocol to the controllers: PLAIN, or SCRAM
// when the credential is bootstrapped) and the username and password of
// that listener's JAAS configuration for the mechanism, franz-go's PLAIN
// and SCRAM clients doing the exchange; a refused login is the dial's
// error, which the caller logs (broker registration, fetchers).
//
// # Rotation
//
// The key and trust store keys (config.SslStoreKeys) are dynamic per
// broker and per listener, as Kafka's: an AlterConfigs or
// IncrementalAlterConfigs of listener.name.<listener>.ssl.keystore.location
// (and the rest) is validated by loading the new stores, and refused
// (INVALID_REQUEST, Kafka's "Validation of dynamic config update of
// SSLFactory failed") if they do not load or, unless ssl.allow.dn.changes
// or ssl.allow.san.changes, if the new certificate's subject or
// alternative names differ. Installed, handshakes from then on use the new
// stores (tls.Config.GetConfigForClient reads them per handshake);
// established connections keep theirs. Kafka also reloads a store whose
// file changed when the same value is set again; Moldau applies only a
// change of value. A change of the listener's other dynamic ssl.* keys
// (ssl.client.auth, ssl.enabled.protocols, ssl.cipher.suites, ...) is
// validated and applied to new handshakes the same way;
// ssl.principal.mapping.rules and ssl.allow.*.changes are read-only, as
// in Kafka.
//
// # Thread-safety
//
// An SslFactory, an SslPrincipalMapper, a SaslChannelBuilder and a
// SaslClient are safe for concurrent use; a kapi.SaslServer belongs to
// one connection's goroutine.
package security
