package security

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// The key store (this node's certificate chain and private key) and the
// trust store (the certificates it trusts, for client certificates and
// the brokers it connects to), in Kafka's three formats: PEM (a file, or
// inline in ssl.keystore.certificate.chain and ssl.keystore.key or
// ssl.truststore.certificates), PKCS12 and JKS. The rules on which keys
// go together, and their messages, are DefaultSslEngineFactory's.

// Store types.
const (
	typePEM    = "PEM"
	typePKCS12 = "PKCS12"
	typeJKS    = "JKS"
)

// keystoreConfig is the key store part of an SslConfig.
type keystoreConfig struct {
	Type, Location, Password, KeyPassword, CertificateChain, Key string
}

// truststoreConfig is the trust store part of an SslConfig.
type truststoreConfig struct {
	Type, Location, Password, Certificates string
}

// loadKeystore loads the key store; nil when none is configured (a
// client that sends no certificate).
func loadKeystore(c keystoreConfig) (*tls.Certificate, error) {
	typ := strings.ToUpper(c.Type)
	switch {
	case c.Key != "":
		switch {
		case typ != typePEM:
			return nil, fmt.Errorf("SSL private key can be specified only for PEM, but key store type is %s.", c.Type)
		case c.CertificateChain == "":
			return nil, errors.New("SSL private key is specified, but certificate chain is not specified.")
		case c.Location != "":
			return nil, errors.New("Both SSL key store location and separate private key are specified.")
		case c.Password != "":
			return nil, errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified.")
		}
		cert, err := pemKeyPair([]byte(c.CertificateChain), []byte(c.Key), c.KeyPassword)
		if err != nil {
			return nil, fmt.Errorf("Invalid PEM keystore configs: %w", err)
		}
		return cert, nil
	case c.CertificateChain != "":
		return nil, errors.New("SSL certificate chain is specified, but private key is not specified")
	case typ == typePEM && c.Location != "":
		if c.Password != "" {
			return nil, errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified")
		}
		data, err := os.ReadFile(c.Location)
		if err != nil {
			return nil, fmt.Errorf("Failed to load PEM SSL keystore %s: %w", c.Location, err)
		}
		cert, err := pemKeyPair(data, data, c.KeyPassword)
		if err != nil {
			return nil, fmt.Errorf("Failed to load PEM SSL keystore %s: %w", c.Location, err)
		}
		return cert, nil
	case c.Location == "" && c.Password != "":
		return nil, errors.New("SSL key store is not specified, but key store password is specified.")
	case c.Location != "" && c.Password == "":
		return nil, errors.New("SSL key store is specified, but key store password is not specified.")
	case c.Location != "":
		keyPassword := c.KeyPassword
		if keyPassword == "" {
			keyPassword = c.Password // as Java's FileBasedStore
		}
		cert, err := loadKeystoreFile(typ, c.Location, c.Password, keyPassword)
		if err != nil {
			return nil, fmt.Errorf("Failed to load SSL keystore %s of type %s: %w", c.Location, c.Type, err)
		}
		return cert, nil
	}
	return nil, nil
}

// loadTruststore loads the trust store; nil when none is configured (then
// the system's roots are trusted, as Java's default trust store).
func loadTruststore(c truststoreConfig) (*x509.CertPool, error) {
	typ := strings.ToUpper(c.Type)
	var certs []*x509.Certificate
	var err error
	switch {
	case c.Certificates != "":
		switch {
		case typ != typePEM:
			return nil, fmt.Errorf("SSL trust store certs can be specified only for PEM, but trust store type is %s.", c.Type)
		case c.Location != "":
			return nil, errors.New("Both SSL trust store location and separate trust certificates are specified.")
		case c.Password != "":
			return nil, errors.New("SSL trust store password cannot be specified for PEM format.")
		}
		if certs, err = pemCertificates([]byte(c.Certificates)); err != nil {
			return nil, fmt.Errorf("Invalid PEM truststore configs: %w", err)
		}
	case typ == typePEM && c.Location != "":
		if c.Password != "" {
			return nil, errors.New("SSL trust store password cannot be specified for PEM format.")
		}
		data, err := os.ReadFile(c.Location)
		if err == nil {
			certs, err = pemCertificates(data)
		}
		if err != nil {
			return nil, fmt.Errorf("Failed to load PEM SSL truststore %s: %w", c.Location, err)
		}
	case c.Location == "" && c.Password != "":
		return nil, errors.New("SSL trust store is not specified, but trust store password is specified.")
	case c.Location != "":
		if certs, err = loadTruststoreFile(typ, c.Location, c.Password); err != nil {
			return nil, fmt.Errorf("Failed to load SSL truststore %s of type %s: %w", c.Location, c.Type, err)
		}
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// pemKeyPair reads the certificate chain from certPEM and the one private
// key from keyPEM (the same file for a PEM key store file).
func pemKeyPair(certPEM, keyPEM []byte, keyPassword string) (*tls.Certificate, error) {
	certs, err := pemCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	var keys []*pem.Block
	for rest := keyPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			keys = append(keys, b)
		}
	}
	switch {
	case len(keys) == 0:
		return nil, errors.New("Private key not provided")
	case len(keys) > 1:
		return nil, fmt.Errorf("Expected one private key, but found %d", len(keys))
	case keys[0].Type == "ENCRYPTED PRIVATE KEY" || keys[0].Headers["Proc-Type"] != "":
		return nil, errors.New("the private key is encrypted: Moldau does not decrypt PEM keys yet (ssl.key.password); use an unencrypted PKCS#8 key, or a PKCS12 key store")
	}
	key, err := parsePrivateKey(keys[0].Bytes)
	if err != nil {
		return nil, fmt.Errorf("Private key could not be loaded: %w", err)
	}
	return keyPair(certs, key)
}

// pemCertificates reads every CERTIFICATE block; at least one.
func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("At least one certificate expected, but none found")
	}
	return certs, nil
}

func parsePrivateKey(der []byte) (crypto.PrivateKey, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	return x509.ParseECPrivateKey(der)
}

// keyPair checks that key belongs to the first certificate of chain.
func keyPair(chain []*x509.Certificate, key crypto.PrivateKey) (*tls.Certificate, error) {
	cert := &tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return nil, errors.New("unsupported private key type")
	}
	if eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(chain[0].PublicKey) {
		return nil, errors.New("the private key does not match the first certificate of the chain")
	}
	return cert, nil
}

func loadKeystoreFile(typ, path, password, keyPassword string) (*tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch typ {
	case typePKCS12:
		key, leaf, cas, err := pkcs12.DecodeChain(data, password)
		if err != nil {
			return nil, err
		}
		return keyPair(append([]*x509.Certificate{leaf}, cas...), key)
	case typeJKS:
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
			return nil, err
		}
		for _, alias := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", alias, err)
			}
			var chain []*x509.Certificate
			for _, c := range e.CertificateChain {
				x, err := x509.ParseCertificate(c.Content)
				if err != nil {
					return nil, err
				}
				chain = append(chain, x)
			}
			if len(chain) == 0 {
				return nil, fmt.Errorf("key %q has no certificate", alias)
			}
			key, err := parsePrivateKey(e.PrivateKey)
			if err != nil {
				return nil, err
			}
			return keyPair(chain, key)
		}
		return nil, errors.New("no private key entry")
	}
	return nil, fmt.Errorf("unknown key store type %s", typ)
}

func loadTruststoreFile(typ, path, password string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch typ {
	case typePKCS12:
		if certs, err = pkcs12.DecodeTrustStore(data, password); err != nil {
			return nil, err
		}
	case typeJKS:
		// Java reads a JKS trust store without a password, skipping
		// its integrity check; keystore-go always checks it.
		if password == "" {
			return nil, errors.New("a JKS trust store needs ssl.truststore.password in Moldau (or use PEM or PKCS12)")
		}
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
			return nil, err
		}
		for _, alias := range ks.Aliases() {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				continue // a private key entry
			}
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return nil, err
			}
			certs = append(certs, c)
		}
	default:
		return nil, fmt.Errorf("unknown trust store type %s", typ)
	}
	if len(certs) == 0 {
		return nil, errors.New("no trusted certificate")
	}
	return certs, nil
}
