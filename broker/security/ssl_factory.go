package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// SslConfig is a listener's SSL configuration: the ssl.* values in effect
// for it (config.KafkaConfig.ListenerSsl).
type SslConfig struct {
	Keystore               keystoreConfig
	Truststore             truststoreConfig
	ClientAuth             string   // ssl.client.auth: none, requested, required
	EnabledProtocols       []string // ssl.enabled.protocols
	Protocol               string   // ssl.protocol
	CipherSuites           []string // ssl.cipher.suites
	EndpointIdentification string   // ssl.endpoint.identification.algorithm: https or ""
	PrincipalMappingRules  string   // ssl.principal.mapping.rules
	AllowDNChanges         bool     // ssl.allow.dn.changes
	AllowSANChanges        bool     // ssl.allow.san.changes
}

// SslConfigFrom reads an SslConfig from values keyed by the ssl.* names,
// as config.KafkaConfig.ListenerSsl returns them (nil: unset).
func SslConfigFrom(v map[string]any) SslConfig {
	s := func(k string) string { x, _ := v[k].(string); return strings.TrimSpace(x) }
	l := func(k string) []string { x, _ := v[k].([]string); return x }
	b := func(k string) bool { x, _ := v[k].(bool); return x }
	return SslConfig{
		Keystore: keystoreConfig{
			Type: s("ssl.keystore.type"), Location: s("ssl.keystore.location"),
			Password: s("ssl.keystore.password"), KeyPassword: s("ssl.key.password"),
			CertificateChain: s("ssl.keystore.certificate.chain"), Key: s("ssl.keystore.key"),
		},
		Truststore: truststoreConfig{
			Type: s("ssl.truststore.type"), Location: s("ssl.truststore.location"),
			Password: s("ssl.truststore.password"), Certificates: s("ssl.truststore.certificates"),
		},
		ClientAuth:             strings.ToLower(s("ssl.client.auth")),
		EnabledProtocols:       l("ssl.enabled.protocols"),
		Protocol:               s("ssl.protocol"),
		CipherSuites:           l("ssl.cipher.suites"),
		EndpointIdentification: s("ssl.endpoint.identification.algorithm"),
		PrincipalMappingRules:  s("ssl.principal.mapping.rules"),
		AllowDNChanges:         b("ssl.allow.dn.changes"),
		AllowSANChanges:        b("ssl.allow.san.changes"),
	}
}

// sslEngine is one immutable build of an SslConfig (Kafka's
// SslEngineFactory): what a handshake in either mode needs.
type sslEngine struct {
	cert       *tls.Certificate // nil: none (a client without one)
	roots      *x509.CertPool   // nil: the system's
	minV, maxV uint16
	suites     []uint16
	clientAuth tls.ClientAuthType
	verifyHost bool
	server     *tls.Config
}

func buildEngine(c SslConfig) (*sslEngine, error) {
	e := &sslEngine{verifyHost: strings.EqualFold(c.EndpointIdentification, "https")}
	if c.EndpointIdentification != "" && !e.verifyHost {
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm %q is not supported: use https, or empty for none", c.EndpointIdentification)
	}
	var err error
	if e.minV, e.maxV, err = protocolRange(c.EnabledProtocols, orDefault(c.Protocol, "TLSv1.3")); err != nil {
		return nil, err
	}
	suites, tls13, err := cipherSuites(c.CipherSuites)
	if err != nil {
		return nil, err
	}
	e.suites = suites
	if !tls13 {
		e.maxV = min(e.maxV, tls.VersionTLS12)
	}
	if len(c.CipherSuites) > 0 && len(suites) == 0 {
		e.minV = max(e.minV, tls.VersionTLS13) // only TLS 1.3 suites named
	}
	if e.minV > e.maxV {
		return nil, fmt.Errorf("ssl.cipher.suites (%s) leaves no protocol of ssl.enabled.protocols (%s)", strings.Join(c.CipherSuites, ","), strings.Join(c.EnabledProtocols, ","))
	}
	switch c.ClientAuth {
	case "", "none":
		e.clientAuth = tls.NoClientCert
	case "requested":
		e.clientAuth = tls.VerifyClientCertIfGiven
	case "required":
		e.clientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth %q: expected required, requested or none", c.ClientAuth)
	}
	if e.cert, err = loadKeystore(c.Keystore); err != nil {
		return nil, err
	}
	if e.roots, err = loadTruststore(c.Truststore); err != nil {
		return nil, err
	}
	e.server = &tls.Config{
		MinVersion:   e.minV,
		MaxVersion:   e.maxV,
		CipherSuites: e.suites,
		ClientAuth:   e.clientAuth,
		ClientCAs:    e.roots,
	}
	if e.cert != nil {
		e.server.Certificates = []tls.Certificate{*e.cert}
	}
	return e, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// SslFactory is one listener's TLS setup (Kafka's SslFactory): the
// server side of its accepted connections, the client side of this
// node's connections to that listener on other nodes, the principal of a
// connection, and the rotation of its key and trust stores at run time:
// Reconfigure builds the new stores and swaps them in, so that new
// handshakes use them while established connections keep theirs. Safe
// for concurrent use.
type SslFactory struct {
	listener string
	mapper   *SslPrincipalMapper

	mu  sync.Mutex // serialises Reconfigure
	cur atomic.Pointer[sslEngine]
}

// NewSslFactory builds listener's factory from its configuration; server:
// the listener is served here, so a key store is required.
func NewSslFactory(listener string, c SslConfig, server bool) (*SslFactory, error) {
	mapper, err := NewSslPrincipalMapper(orDefault(c.PrincipalMappingRules, "DEFAULT"))
	if err != nil {
		return nil, fmt.Errorf("listener %s: ssl.principal.mapping.rules: %w", listener, err)
	}
	e, err := buildEngine(c)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", listener, err)
	}
	if server && e.cert == nil {
		return nil, fmt.Errorf("listener %s: an SSL listener needs a key store (ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key, with the listener.name.%s. prefix or without)", listener, strings.ToLower(listener))
	}
	f := &SslFactory{listener: listener, mapper: mapper}
	f.cur.Store(e)
	return f, nil
}

// ServerTLSConfig is the tls.Config of the listener's accepted
// connections: each handshake takes the stores in effect then.
func (f *SslFactory) ServerTLSConfig() *tls.Config {
	e := f.cur.Load()
	return &tls.Config{
		MinVersion: e.minV, // for a client hello before GetConfigForClient
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return f.cur.Load().server, nil
		},
	}
}

// ClientTLSConfig is the tls.Config of a connection from this node to
// addr (host:port) on the listener: the key store's certificate as the
// client's, the trust store's roots, and, with
// ssl.endpoint.identification.algorithm=https, the host name checked
// against the certificate.
func (f *SslFactory) ClientTLSConfig(addr string) *tls.Config {
	e := f.cur.Load()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c := &tls.Config{
		MinVersion:   e.minV,
		MaxVersion:   e.maxV,
		CipherSuites: e.suites,
		RootCAs:      e.roots,
		ServerName:   host,
	}
	if e.cert != nil {
		c.Certificates = []tls.Certificate{*e.cert}
	}
	if !e.verifyHost {
		// Verify the chain, not the name (Go checks both or neither).
		c.InsecureSkipVerify = true
		roots := e.roots
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots, x509.ExtKeyUsageServerAuth)
		}
	}
	return c
}

func verifyChain(chain []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(chain) == 0 {
		return errors.New("the peer sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(opts)
	return err
}

// Dialer wraps dial (nil: a net.Dialer) so that its connections speak
// TLS to the listener: the handshake is bounded by ctx.
func (f *SslFactory) Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(nc, f.ClientTLSConfig(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("SSL handshake with %s (listener %s) failed: %w", addr, f.listener, err)
		}
		return tc, nil
	}
}

// Authenticate runs the server side of the handshake on an accepted
// connection, bounded by ctx, and returns the TLS connection and its
// principal (SslChannelBuilder with DefaultKafkaPrincipalBuilder).
func (f *SslFactory) Authenticate(ctx context.Context, nc net.Conn) (net.Conn, string, error) {
	tc := tls.Server(nc, f.ServerTLSConfig())
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, "", fmt.Errorf("SSL handshake failed: %w", err)
	}
	p, err := f.mapper.PrincipalFor(tc.ConnectionState().PeerCertificates)
	if err != nil {
		return nil, "", fmt.Errorf("SSL principal: %w", err)
	}
	return tc, p, nil
}

// SecurityProtocol is the listener's, SSL.
func (f *SslFactory) SecurityProtocol() string { return "SSL" }

// Certificate is the key store's certificate in effect (nil: none).
func (f *SslFactory) Certificate() *x509.Certificate {
	if e := f.cur.Load(); e.cert != nil {
		return e.cert.Leaf
	}
	return nil
}

// ValidateReconfiguration checks that c can replace the configuration in
// effect: its stores load and, unless ssl.allow.dn.changes and
// ssl.allow.san.changes allow it, the new certificate has the subject and
// subject alternative names of the old one (Kafka's SslFactory checks).
func (f *SslFactory) ValidateReconfiguration(c SslConfig) error {
	_, err := f.build(c)
	return err
}

func (f *SslFactory) build(c SslConfig) (*sslEngine, error) {
	e, err := buildEngine(c)
	if err != nil {
		return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: listener %s: %w", f.listener, err)
	}
	old := f.cur.Load()
	if old.cert != nil && e.cert == nil {
		return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: listener %s: no key store", f.listener)
	}
	if old.cert != nil {
		o, n := old.cert.Leaf, e.cert.Leaf
		if !c.AllowDNChanges && !slices.Equal(o.RawSubject, n.RawSubject) {
			return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: Keystore DistinguishedName does not match:  existing={alias=%s, DN=%s}, new={DN=%s}", f.listener, o.Subject, n.Subject)
		}
		if !c.AllowSANChanges && !sameSANs(o, n) {
			return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: Keystore SubjectAltNames do not match:  existing={%v}, new={%v}", sans(o), sans(n))
		}
	}
	return e, nil
}

// Reconfigure installs c: handshakes from now on use its stores.
func (f *SslFactory) Reconfigure(c SslConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.build(c)
	if err != nil {
		return err
	}
	f.cur.Store(e)
	return nil
}

func sans(c *x509.Certificate) []string {
	var out []string
	out = append(out, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	out = append(out, c.EmailAddresses...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	slices.Sort(out)
	return out
}

func sameSANs(a, b *x509.Certificate) bool { return slices.Equal(sans(a), sans(b)) }
