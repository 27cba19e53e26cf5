package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/security"
)

// The client side of security for every client command and moldau bench:
// --command-config names a file of Kafka client properties, as the
// --command-config of Kafka's tools does:
//
//	security.protocol=SASL_SSL           (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
//	ssl.ca.location=ca.pem               (or ssl.truststore.location with ssl.truststore.type=PEM)
//	ssl.certificate.location=client.crt  (librdkafka's names, for mTLS;
//	ssl.key.location=client.key           or ssl.keystore.location with ssl.keystore.type=PEM)
//	ssl.endpoint.identification.algorithm=https (default; empty: no host name check)
//	sasl.mechanism=SCRAM-SHA-512         (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; Kafka's default GSSAPI is refused)
//	sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="secret";
//	                                     (or librdkafka's sasl.username and sasl.password)
//
// PEM files only; PLAINTEXT needs no file.

// commandConfigOpts reads a --command-config file into kgo options (none
// for PLAINTEXT).
func commandConfigOpts(path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	props, err := config.ParseProperties(string(data))
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	p := map[string]string{"ssl.endpoint.identification.algorithm": "https"}
	for _, kv := range props {
		p[kv.Key] = strings.TrimSpace(kv.Value)
	}
	var opts []kgo.Opt
	proto := strings.ToUpper(p["security.protocol"])
	switch proto {
	case "", "PLAINTEXT", "SSL":
	case "SASL_PLAINTEXT", "SASL_SSL":
		m, err := saslMechanism(p)
		if err != nil {
			return nil, fmt.Errorf("--command-config: %w", err)
		}
		opts = append(opts, kgo.SASL(m))
	default:
		return nil, fmt.Errorf("--command-config: security.protocol %s is not supported (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", proto)
	}
	if proto != "SSL" && proto != "SASL_SSL" {
		return opts, nil
	}
	tlsOpt, err := tlsOpts(p)
	if err != nil {
		return nil, err
	}
	return append(opts, tlsOpt), nil
}

// saslMechanism is the client's login from sasl.mechanism and
// sasl.jaas.config (or sasl.username and sasl.password).
func saslMechanism(p map[string]string) (sasl.Mechanism, error) {
	mech := strings.ToUpper(first(p["sasl.mechanism"], "GSSAPI"))
	user, pass := p["sasl.username"], p["sasl.password"]
	if j := p["sasl.jaas.config"]; j != "" {
		e, err := security.ParseJaasProperty(j)
		if err != nil {
			return nil, fmt.Errorf("sasl.jaas.config: %w", err)
		}
		user, pass = e.Options["username"], e.Options["password"]
	}
	if mech != "GSSAPI" && mech != "OAUTHBEARER" && (user == "" || pass == "") {
		return nil, fmt.Errorf("sasl.mechanism %s needs a username and password (sasl.jaas.config with username=\"...\" password=\"...\", or sasl.username and sasl.password)", mech)
	}
	switch mech {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("sasl.mechanism %s is not supported (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; GSSAPI is Kafka's default)", mech)
}

// tlsOpts is the TLS dialer of the ssl.* properties.
func tlsOpts(p map[string]string) (kgo.Opt, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	ca := first(p["ssl.ca.location"], pemOnly(p, "truststore"))
	if ca != "" {
		pemData, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--command-config: CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("--command-config: no PEM certificate in %s", ca)
		}
	}
	cert, key := p["ssl.certificate.location"], p["ssl.key.location"]
	if ks := pemOnly(p, "keystore"); ks != "" {
		cert, key = ks, ks
	}
	if cert != "" || key != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--command-config: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	if p["ssl.endpoint.identification.algorithm"] == "" {
		cfg.InsecureSkipVerify = true
		roots := cfg.RootCAs
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return kgo.DialTLSConfig(cfg), nil // kgo sets ServerName per broker
}

// pemOnly is ssl.<store>.location when ssl.<store>.type is PEM.
func pemOnly(p map[string]string, store string) string {
	if strings.EqualFold(p["ssl."+store+".type"], "PEM") {
		return p["ssl."+store+".location"]
	}
	return ""
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
