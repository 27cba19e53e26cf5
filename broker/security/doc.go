// Package security is Moldau's authentication of connections (Kafka's
// org.apache.kafka.common.security and ChannelBuilders): today the SSL
// security protocol; SASL (PLAIN, SCRAM, OAUTHBEARER), the authorizer and
// delegation tokens come later and slot in beside it.
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
// (network.ChannelBuilder is the interface; a SASL builder will
// implement the same): the TLS handshake, then the principal. SASL_SSL
// and SASL_PLAINTEXT listeners are refused at start-up (config), since
// SASL is not implemented yet.
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
// (broker.Options.Dial) with the handshake.
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
// An SslFactory and an SslPrincipalMapper are safe for concurrent use.
package security
