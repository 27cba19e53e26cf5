// Package securitytest makes certificates for tests: a CA, and server and
// client certificates it signs, written as PEM, PKCS12 or JKS files.
package securitytest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// CA is a test certificate authority.
type CA struct {
	Cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial atomic.Int64
	dir    string
}

// Cert is a certificate the CA issued, with its key.
type Cert struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	ca   *CA
}

// NewCA makes a CA whose files go to a temporary directory of t.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Moldau Test"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	ca := &CA{Cert: c, key: key, dir: t.TempDir()}
	ca.serial.Store(100)
	return ca
}

// Issue signs a certificate for subject with the SANs localhost and
// 127.0.0.1 (plus hosts), usable by servers and clients.
func (ca *CA) Issue(t testing.TB, subject pkix.Name, hosts ...string) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial.Add(1)),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &Cert{Cert: c, Key: key, ca: ca}
}

// Pool is a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// PEM is the CA certificate in PEM.
func (ca *CA) PEM() []byte { return pemCert(ca.Cert) }

// WriteFile writes data to name in the CA's directory and returns its path.
func (ca *CA) WriteFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// CAFile writes the CA certificate as PEM and returns its path.
func (ca *CA) CAFile(t testing.TB) string { return ca.WriteFile(t, "ca.pem", ca.PEM()) }

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// CertPEM is the certificate chain (the certificate, then the CA) in PEM.
func (c *Cert) CertPEM() []byte { return append(pemCert(c.Cert), pemCert(c.ca.Cert)...) }

// KeyPEM is the private key in PKCS#8 PEM.
func (c *Cert) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TLS is the certificate as a tls.Certificate.
func (c *Cert) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.Cert.Raw, c.ca.Cert.Raw}, PrivateKey: c.Key, Leaf: c.Cert}
}

// PEMFiles writes the chain and the key to name.crt and name.key and
// returns their paths (kcat's, librdkafka's and kgo's form).
func (c *Cert) PEMFiles(t testing.TB, name string) (certFile, keyFile string) {
	return c.ca.WriteFile(t, name+".crt", c.CertPEM()), c.ca.WriteFile(t, name+".key", c.KeyPEM())
}

// KeystorePEM writes a PEM key store (key and chain in one file, Kafka's
// ssl.keystore.type=PEM) and returns its path.
func (c *Cert) KeystorePEM(t testing.TB, name string) string {
	return c.ca.WriteFile(t, name+".pem", append(c.KeyPEM(), c.CertPEM()...))
}

// KeystorePKCS12 writes a PKCS12 key store protected by password.
func (c *Cert) KeystorePKCS12(t testing.TB, name, password string) string {
	t.Helper()
	data, err := pkcs12.Modern.Encode(c.Key, c.Cert, []*x509.Certificate{c.ca.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return c.ca.WriteFile(t, name+".p12", data)
}

// KeystoreJKS writes a JKS key store, store and key protected by password.
func (c *Cert) KeystoreJKS(t testing.TB, name, password string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	err = ks.SetPrivateKeyEntry("moldau", keystore.PrivateKeyEntry{
		CreationTime: time.Now(), PrivateKey: der,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: c.Cert.Raw}, {Type: "X509", Content: c.ca.Cert.Raw}},
	}, []byte(password))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return c.ca.WriteFile(t, name+".jks", buf.Bytes())
}

// TruststorePKCS12 writes the CA as a PKCS12 trust store.
func (ca *CA) TruststorePKCS12(t testing.TB, name, password string) string {
	t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return ca.WriteFile(t, name+".p12", data)
}

// TruststoreJKS writes the CA as a JKS trust store.
func (ca *CA) TruststoreJKS(t testing.TB, name, password string) string {
	t.Helper()
	ks := keystore.New()
	if err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: ca.Cert.Raw},
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return ca.WriteFile(t, name+".jks", buf.Bytes())
}

// ClientTLS is a client tls.Config trusting the CA, presenting c (nil:
// no certificate).
func (ca *CA) ClientTLS(c *Cert) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	if c != nil {
		cfg.Certificates = []tls.Certificate{c.TLS()}
	}
	return cfg
}
