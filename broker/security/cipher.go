package security

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// tlsVersions are the protocols of ssl.enabled.protocols and ssl.protocol,
// by Java's names. TLSv1 and TLSv1.1 are not offered (Java disables them
// too, in jdk.tls.disabledAlgorithms); "TLS" is the newest.
var tlsVersions = map[string]uint16{
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
	"TLS":     tls.VersionTLS13,
}

// tls13Suites are TLS 1.3's cipher suites: Go enables all three and lets
// none be turned off.
var tls13Suites = map[string]uint16{
	"TLS_AES_128_GCM_SHA256":       tls.TLS_AES_128_GCM_SHA256,
	"TLS_AES_256_GCM_SHA384":       tls.TLS_AES_256_GCM_SHA384,
	"TLS_CHACHA20_POLY1305_SHA256": tls.TLS_CHACHA20_POLY1305_SHA256,
}

// protocolRange turns ssl.enabled.protocols and ssl.protocol into the
// versions a handshake may use: from the oldest enabled to the newest
// enabled that ssl.protocol allows (an SSLContext for TLSv1.2 never speaks
// TLSv1.3, whatever is enabled).
func protocolRange(enabled []string, protocol string) (minV, maxV uint16, err error) {
	cap, ok := tlsVersions[protocol]
	if !ok {
		return 0, 0, fmt.Errorf("ssl.protocol %q is not supported: use TLSv1.3, TLSv1.2 or TLS", protocol)
	}
	for _, p := range enabled {
		v, ok := tlsVersions[p]
		if !ok || p == "TLS" {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: %q is not supported: use TLSv1.2 and/or TLSv1.3", p)
		}
		if v > cap {
			continue
		}
		if minV == 0 || v < minV {
			minV = v
		}
		maxV = max(maxV, v)
	}
	if minV == 0 {
		return 0, 0, fmt.Errorf("no protocol of ssl.enabled.protocols (%s) is allowed by ssl.protocol %s", strings.Join(enabled, ","), protocol)
	}
	return minV, maxV, nil
}

// cipherSuites turns ssl.cipher.suites, by IANA name (Java's names; the
// legacy SSL_ prefix is read as TLS_), into Go's TLS 1.2 suite ids. Empty
// means Go's defaults. A name Go does not implement is an error. Since
// TLS 1.3's suites cannot be narrowed in Go, a list naming none of them
// disables TLS 1.3 (tls13 false), as a Java engine with no TLS 1.3 suite
// enabled cannot negotiate it either.
func cipherSuites(names []string) (ids []uint16, tls13 bool, err error) {
	if len(names) == 0 {
		return nil, true, nil
	}
	known := make(map[string]uint16)
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	for _, s := range tls.InsecureCipherSuites() {
		known[s.Name] = s.ID
	}
	var unknown []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		name := n
		if rest, ok := strings.CutPrefix(name, "SSL_"); ok {
			name = "TLS_" + rest
		}
		if _, ok := tls13Suites[name]; ok {
			tls13 = true
			continue
		}
		id, ok := known[name]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		ids = append(ids, id)
	}
	if len(unknown) > 0 {
		return nil, false, fmt.Errorf("ssl.cipher.suites: unknown or unsupported cipher suites %s", strings.Join(unknown, ", "))
	}
	if len(ids) == 0 && !tls13 {
		return nil, false, fmt.Errorf("ssl.cipher.suites names no cipher suite")
	}
	return ids, tls13, nil
}
