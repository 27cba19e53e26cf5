package security

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"
)

func TestProtocolRange(t *testing.T) {
	for _, tc := range []struct {
		enabled, protocol string
		min, max          uint16
		err               string
	}{
		{"TLSv1.2,TLSv1.3", "TLSv1.3", tls.VersionTLS12, tls.VersionTLS13, ""},
		{"TLSv1.2,TLSv1.3", "TLS", tls.VersionTLS12, tls.VersionTLS13, ""},
		{"TLSv1.2,TLSv1.3", "TLSv1.2", tls.VersionTLS12, tls.VersionTLS12, ""}, // the context caps
		{"TLSv1.3", "TLSv1.3", tls.VersionTLS13, tls.VersionTLS13, ""},
		{"TLSv1.2", "TLSv1.3", tls.VersionTLS12, tls.VersionTLS12, ""},
		{"TLSv1.3", "TLSv1.2", 0, 0, "no protocol of ssl.enabled.protocols"},
		{"TLSv1.1", "TLSv1.3", 0, 0, `"TLSv1.1" is not supported`},
		{"TLSv1.2", "SSLv3", 0, 0, `ssl.protocol "SSLv3" is not supported`},
	} {
		minV, maxV, err := protocolRange(strings.Split(tc.enabled, ","), tc.protocol)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s/%s: error %v, want %q", tc.enabled, tc.protocol, err, tc.err)
		case tc.err == "" && (err != nil || minV != tc.min || maxV != tc.max):
			t.Errorf("%s/%s: %x-%x %v, want %x-%x", tc.enabled, tc.protocol, minV, maxV, err, tc.min, tc.max)
		}
	}
}

func TestCipherSuites(t *testing.T) {
	ids, tls13, err := cipherSuites(nil)
	if err != nil || ids != nil || !tls13 {
		t.Errorf("default: %v %v %v", ids, tls13, err)
	}
	ids, tls13, err = cipherSuites([]string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "SSL_RSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"})
	want := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
	if err != nil || !slices.Equal(ids, want) || tls13 {
		t.Errorf("TLS 1.2 suites: %v %v %v", ids, tls13, err)
	}
	ids, tls13, err = cipherSuites([]string{"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
	if err != nil || !slices.Equal(ids, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}) || !tls13 {
		t.Errorf("mixed: %v %v %v", ids, tls13, err)
	}
	if _, _, err := cipherSuites([]string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_NOT_A_SUITE", "SSL_RSA_WITH_RC4_128_MD5"}); err == nil ||
		!strings.Contains(err.Error(), "TLS_NOT_A_SUITE, SSL_RSA_WITH_RC4_128_MD5") {
		t.Errorf("unknown suites: %v", err)
	}
	// Only TLS 1.3 suites: TLS 1.2 cannot be negotiated.
	e, err := buildEngine(SslConfig{EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, CipherSuites: []string{"TLS_AES_256_GCM_SHA384"}})
	if err != nil || e.minV != tls.VersionTLS13 || e.maxV != tls.VersionTLS13 {
		t.Errorf("TLS 1.3 suites only: %+v %v", e, err)
	}
	// No TLS 1.3 suite: TLS 1.3 is off.
	e, err = buildEngine(SslConfig{EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}})
	if err != nil || e.minV != tls.VersionTLS12 || e.maxV != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 suites only: %+v %v", e, err)
	}
	if _, err := buildEngine(SslConfig{EnabledProtocols: []string{"TLSv1.3"}, CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}}); err == nil {
		t.Error("TLSv1.3 only with TLS 1.2 suites: accepted")
	}
}
