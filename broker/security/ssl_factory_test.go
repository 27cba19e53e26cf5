package security

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/moldau/moldau/broker/security/securitytest"
)

func defaults(c SslConfig) SslConfig {
	if c.EnabledProtocols == nil {
		c.EnabledProtocols = []string{"TLSv1.2", "TLSv1.3"}
	}
	return c
}

// Every store format Kafka's DefaultSslEngineFactory reads, and its
// errors for keys that do not go together.
func TestStores(t *testing.T) {
	ca := securitytest.NewCA(t, "test-ca")
	srv := ca.Issue(t, pkix.Name{CommonName: "broker"})
	pemFile := srv.KeystorePEM(t, "ks")
	p12 := srv.KeystorePKCS12(t, "ks", "secret")
	jks := srv.KeystoreJKS(t, "ks", "secret")
	caFile := ca.CAFile(t)
	for name, tc := range map[string]struct {
		ks  keystoreConfig
		ts  truststoreConfig
		err string
	}{
		"pem file":        {ks: keystoreConfig{Type: "PEM", Location: pemFile}, ts: truststoreConfig{Type: "PEM", Location: caFile}},
		"pem inline":      {ks: keystoreConfig{Type: "PEM", CertificateChain: string(srv.CertPEM()), Key: string(srv.KeyPEM())}, ts: truststoreConfig{Type: "PEM", Certificates: string(ca.PEM())}},
		"pkcs12":          {ks: keystoreConfig{Type: "PKCS12", Location: p12, Password: "secret"}, ts: truststoreConfig{Type: "PKCS12", Location: ca.TruststorePKCS12(t, "ts", "tspw"), Password: "tspw"}},
		"jks":             {ks: keystoreConfig{Type: "JKS", Location: jks, Password: "secret"}, ts: truststoreConfig{Type: "JKS", Location: ca.TruststoreJKS(t, "ts", "tspw"), Password: "tspw"}},
		"pkcs12 wrong pw": {ks: keystoreConfig{Type: "PKCS12", Location: p12, Password: "nope"}, err: "Failed to load SSL keystore"},
		"jks no pw":       {ks: keystoreConfig{Type: "JKS", Location: jks}, err: "key store password is not specified"},
		"pem with pw":     {ks: keystoreConfig{Type: "PEM", Location: pemFile, Password: "x"}, err: "cannot be specified with PEM format"},
		"key not pem":     {ks: keystoreConfig{Type: "PKCS12", Key: "k", CertificateChain: "c"}, err: "only for PEM"},
		"key no chain":    {ks: keystoreConfig{Type: "PEM", Key: string(srv.KeyPEM())}, err: "certificate chain is not specified"},
		"chain no key":    {ks: keystoreConfig{Type: "PEM", CertificateChain: string(srv.CertPEM())}, err: "private key is not specified"},
		"both":            {ks: keystoreConfig{Type: "PEM", Location: pemFile, Key: string(srv.KeyPEM()), CertificateChain: string(srv.CertPEM())}, err: "Both SSL key store location and separate private key"},
		"missing file":    {ks: keystoreConfig{Type: "PEM", Location: "/nonexistent.pem"}, err: "Failed to load PEM SSL keystore /nonexistent.pem"},
		"wrong key":       {ks: keystoreConfig{Type: "PEM", CertificateChain: string(srv.CertPEM()), Key: string(ca.Issue(t, pkix.Name{CommonName: "x"}).KeyPEM())}, err: "does not match"},
		"ts pem pw":       {ks: keystoreConfig{Type: "PEM", Location: pemFile}, ts: truststoreConfig{Type: "PEM", Location: caFile, Password: "x"}, err: "trust store password cannot be specified for PEM"},
		"ts no cert":      {ks: keystoreConfig{Type: "PEM", Location: pemFile}, ts: truststoreConfig{Type: "PEM", Certificates: "garbage"}, err: "At least one certificate expected"},
	} {
		f, err := NewSslFactory("SSL", defaults(SslConfig{Keystore: tc.ks, Truststore: tc.ts}), true)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := f.Certificate().SerialNumber; got.Cmp(srv.Cert.SerialNumber) != 0 {
			t.Errorf("%s: serial %v, want %v", name, got, srv.Cert.SerialNumber)
		}
	}
	if _, err := NewSslFactory("INTERNAL", defaults(SslConfig{}), true); err == nil || !strings.Contains(err.Error(), "needs a key store") {
		t.Errorf("server without key store: %v", err)
	}
}

// handshake runs a real TLS handshake over loopback: the factory's
// listener side against a client with cfg; it returns the principal.
func handshake(t *testing.T, f *SslFactory, cfg *tls.Config) (string, *tls.ConnectionState, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		principal string
		err       error
	}
	ch := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		tc, p, err := f.Authenticate(ctx, nc)
		if err == nil {
			_, err = tc.Write([]byte{1}) // the client's read completes its handshake (TLS 1.3)
		}
		ch <- result{p, err}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	var state *tls.ConnectionState
	if err == nil {
		var b [1]byte
		_, err = c.Read(b[:])
		cs := c.ConnectionState()
		state = &cs
		c.Close()
	}
	r := <-ch
	if r.err != nil {
		return "", state, r.err
	}
	return r.principal, state, err
}

func TestClientAuthAndPrincipal(t *testing.T) {
	ca := securitytest.NewCA(t, "test-ca")
	srv := ca.Issue(t, pkix.Name{CommonName: "broker"})
	alice := ca.Issue(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Org"}, Country: []string{"US"}})
	other := securitytest.NewCA(t, "other-ca").Issue(t, pkix.Name{CommonName: "mallory"})
	build := func(auth, rules string) *SslFactory {
		f, err := NewSslFactory("SSL", defaults(SslConfig{
			Keystore:   keystoreConfig{Type: "PEM", Location: srv.KeystorePEM(t, "srv")},
			Truststore: truststoreConfig{Type: "PEM", Location: ca.CAFile(t)},
			ClientAuth: auth, PrincipalMappingRules: rules,
		}), true)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		auth, rules string
		client      *securitytest.Cert
		want, err   string
	}{
		{"none", "", alice, Anonymous, ""}, // not asked for: not sent
		{"requested", "", nil, Anonymous, ""},
		{"requested", "", alice, "User:CN=Alice,OU=ServiceUsers,O=Org,C=US", ""},
		{"required", "", alice, "User:CN=Alice,OU=ServiceUsers,O=Org,C=US", ""},
		{"required", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT", alice, "User:alice", ""},
		{"required", "", nil, "", "certificate"},
		{"required", "", other, "", "certificate"}, // not signed by the trust store
		{"required", "RULE:^CN=nobody$/x/", alice, "", "No rules apply"},
	} {
		p, _, err := handshake(t, build(tc.auth, tc.rules), ca.ClientTLS(tc.client))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %q: error %v, want %q", tc.auth, tc.rules, err, tc.err)
		case tc.err == "" && (err != nil || p != tc.want):
			t.Errorf("%s %q: %q %v, want %q", tc.auth, tc.rules, p, err, tc.want)
		}
	}
	// ssl.enabled.protocols and ssl.protocol bound what is negotiated.
	f, err := NewSslFactory("SSL", SslConfig{Keystore: keystoreConfig{Type: "PEM", Location: srv.KeystorePEM(t, "srv")}, EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, Protocol: "TLSv1.2"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, st, err := handshake(t, f, ca.ClientTLS(nil)); err != nil || st.Version != tls.VersionTLS12 {
		t.Errorf("ssl.protocol=TLSv1.2: %v %v", st, err)
	}
}

// A new key store applies to new handshakes; one that does not load, or
// names another subject, is refused and the old one stays.
func TestReconfigureKeystore(t *testing.T) {
	ca := securitytest.NewCA(t, "test-ca")
	name := pkix.Name{CommonName: "broker"}
	first, second := ca.Issue(t, name), ca.Issue(t, name)
	cfg := defaults(SslConfig{Keystore: keystoreConfig{Type: "PEM", Location: first.KeystorePEM(t, "first")}})
	f, err := NewSslFactory("SSL", cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() int64 {
		_, st, err := handshake(t, f, ca.ClientTLS(nil))
		if err != nil {
			t.Fatal(err)
		}
		return st.PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(); got != first.Cert.SerialNumber.Int64() {
		t.Fatalf("serial %d, want %d", got, first.Cert.SerialNumber.Int64())
	}
	bad := cfg
	bad.Keystore.Location = "/nonexistent"
	if err := f.ValidateReconfiguration(bad); err == nil || !strings.Contains(err.Error(), "Validation of dynamic config update of SSLFactory failed") {
		t.Errorf("missing key store: %v", err)
	}
	renamed := cfg
	renamed.Keystore.Location = ca.Issue(t, pkix.Name{CommonName: "other"}).KeystorePEM(t, "other")
	if err := f.ValidateReconfiguration(renamed); err == nil || !strings.Contains(err.Error(), "DistinguishedName does not match") {
		t.Errorf("another DN: %v", err)
	}
	renamed.AllowDNChanges = true
	if err := f.ValidateReconfiguration(renamed); err != nil {
		t.Errorf("another DN, allowed: %v", err)
	}
	next := cfg
	next.Keystore.Location = second.KeystorePEM(t, "second")
	if err := f.Reconfigure(next); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != second.Cert.SerialNumber.Int64() {
		t.Errorf("after rotation: serial %d, want %d", got, second.Cert.SerialNumber.Int64())
	}
}

// The client side: the broker's own connections verify the listener's
// certificate, its host name with https, and present the key store.
func TestDialer(t *testing.T) {
	ca := securitytest.NewCA(t, "test-ca")
	srvCert := ca.Issue(t, pkix.Name{CommonName: "broker"}) // SANs localhost, 127.0.0.1
	server, err := NewSslFactory("INTERNAL", defaults(SslConfig{
		Keystore:   keystoreConfig{Type: "PEM", Location: srvCert.KeystorePEM(t, "srv")},
		Truststore: truststoreConfig{Type: "PEM", Location: ca.CAFile(t)},
		ClientAuth: "required",
	}), true)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	principals := make(chan string, 8)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				_, p, err := server.Authenticate(context.Background(), nc)
				if err != nil {
					p = "error: " + err.Error()
				}
				principals <- p
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	client := func(verify string) *SslFactory {
		f, err := NewSslFactory("INTERNAL", defaults(SslConfig{
			Keystore:               keystoreConfig{Type: "PEM", Location: srvCert.KeystorePEM(t, "cli")},
			Truststore:             truststoreConfig{Type: "PEM", Location: ca.CAFile(t)},
			EndpointIdentification: verify,
		}), false)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Every address reaches the listener; the name is what is checked.
	toListener := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ln.Addr().String())
	}
	for _, tc := range []struct{ verify, host, err string }{
		{"https", "127.0.0.1", ""},
		{"https", "localhost", ""},
		{"", "broker.invalid", ""}, // not in the SANs, not checked
		{"https", "broker.invalid", "broker.invalid"},
	} {
		nc, err := client(tc.verify).Dialer(toListener)(ctx, "tcp", net.JoinHostPort(tc.host, port))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q %s: %v, want %q", tc.verify, tc.host, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q %s: %v", tc.verify, tc.host, err)
		case err == nil:
			nc.Close()
			if p := <-principals; p != "User:CN=broker" {
				t.Errorf("%q %s: principal %q", tc.verify, tc.host, p)
			}
		default:
			<-principals
		}
	}
}
