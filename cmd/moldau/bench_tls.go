package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker/config"
)

// The client side of TLS for moldau bench: --command-config names a file
// of Kafka client properties, as kafka-producer-perf-test.sh's
// --command-config does:
//
//	security.protocol=SSL
//	ssl.ca.location=ca.pem               (or ssl.truststore.location with ssl.truststore.type=PEM)
//	ssl.certificate.location=client.crt  (librdkafka's names, for mTLS;
//	ssl.key.location=client.key           or ssl.keystore.location with ssl.keystore.type=PEM)
//	ssl.endpoint.identification.algorithm=https (default; empty: no host name check)
//
// PEM files only; PLAINTEXT needs no file.

// benchTLSOpts reads a --command-config file into kgo options (none for
// PLAINTEXT).
func benchTLSOpts(path string) ([]kgo.Opt, error) {
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
	switch proto := strings.ToUpper(p["security.protocol"]); proto {
	case "", "PLAINTEXT":
		return nil, nil
	case "SSL":
	default:
		return nil, fmt.Errorf("--command-config: security.protocol %s is not supported by moldau bench (PLAINTEXT or SSL)", proto)
	}
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
	return []kgo.Opt{kgo.DialTLSConfig(cfg)}, nil // kgo sets ServerName per broker
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
