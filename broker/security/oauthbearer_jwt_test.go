package security

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwksServer serves a JWKS that a test may change (key rotation).
type jwksServer struct {
	mu    sync.Mutex
	keys  []jose.JSONWebKey
	gets  int
	httpd *httptest.Server
}

func newJWKSServer(t *testing.T, keys ...jose.JSONWebKey) *jwksServer {
	s := &jwksServer{keys: keys}
	s.httpd = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.gets++
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: s.keys})
	}))
	t.Cleanup(s.httpd.Close)
	return s
}

func (s *jwksServer) add(k jose.JSONWebKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, k)
}

// signingKey is a private key with its public JWK.
type signingKey struct {
	alg  jose.SignatureAlgorithm
	priv any
	pub  jose.JSONWebKey
}

func newRSAKey(t *testing.T, kid string) signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{jose.RS256, k, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}}
}

func newECKey(t *testing.T, kid string) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{jose.ES256, k, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}}
}

func (k signingKey) sign(t *testing.T, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.pub.KeyID}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestJWTValidator(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	rsaKey, ecKey, stranger := newRSAKey(t, "r1"), newECKey(t, "e1"), newRSAKey(t, "r1")
	srv := newJWKSServer(t, rsaKey.pub, ecKey.pub)
	v, err := NewJWTValidator(JWTConfig{JWKSURL: srv.httpd.URL, Issuer: "https://idp", Audience: []string{"kafka", "other"},
		ClockSkew: 30 * time.Second, Refresh: time.Hour}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	claims := func(kv ...any) map[string]any {
		c := map[string]any{"sub": "alice", "iss": "https://idp", "aud": "kafka", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(c, kv[i].(string))
			} else {
				c[kv[i].(string)] = kv[i+1]
			}
		}
		return c
	}
	hmac, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	hmacTok, _ := jwt.Signed(hmac).Claims(claims()).Serialize()
	for _, c := range []struct {
		name, token, want string
	}{
		{"RS256", rsaKey.sign(t, claims()), "alice"},
		{"ES256", ecKey.sign(t, claims("sub", "bob")), "bob"},
		{"audience among several", rsaKey.sign(t, claims("aud", []string{"x", "other"})), "alice"},
		{"expired within the skew", rsaKey.sign(t, claims("exp", now.Add(-10*time.Second).Unix())), "alice"},
		{"expired", rsaKey.sign(t, claims("exp", now.Add(-time.Minute).Unix())), ""},
		{"no exp", rsaKey.sign(t, claims("exp", nil)), ""},
		{"not yet valid", rsaKey.sign(t, claims("nbf", now.Add(time.Minute).Unix())), ""},
		{"wrong issuer", rsaKey.sign(t, claims("iss", "https://evil")), ""},
		{"wrong audience", rsaKey.sign(t, claims("aud", "elsewhere")), ""},
		{"no subject", rsaKey.sign(t, claims("sub", nil)), ""},
		{"another key with a known kid", stranger.sign(t, claims()), ""},
		{"HMAC", hmacTok, ""},
		{"unsecured", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.", ""},
		{"garbage", "a.b.c", ""},
	} {
		p, exp, status := v.Validate(c.token)
		if c.want == "" {
			if status != "invalid_token" {
				t.Errorf("%s: accepted as %q", c.name, p)
			}
			continue
		}
		if status != "" || p != c.want || exp.IsZero() {
			t.Errorf("%s: %q %v %q, want %q", c.name, p, exp, status, c.want)
		}
	}

	// A new key at the provider is fetched when a token names it.
	rotated := newRSAKey(t, "r2")
	tok := rotated.sign(t, claims())
	if _, _, status := v.Validate(tok); status == "" {
		t.Fatal("a token of a key the provider does not publish was accepted")
	}
	gets := srv.gets
	srv.add(rotated.pub)
	if p, _, status := v.Validate(tok); status != "" || p != "alice" {
		t.Fatalf("token of a rotated key: %q %q", p, status)
	}
	if srv.gets != gets+1 {
		t.Fatalf("%d fetches for the rotated key, want 1", srv.gets-gets)
	}
}

func TestJWTValidatorConfig(t *testing.T) {
	if _, err := NewJWTValidator(JWTConfig{}, nil); err == nil {
		t.Error("no URL accepted")
	}
	if _, err := NewJWTValidator(JWTConfig{JWKSURL: "ftp://x/jwks"}, nil); err == nil {
		t.Error("ftp accepted")
	}
	if _, err := NewJWTValidator(JWTConfig{JWKSURL: "http://127.0.0.1:1/jwks"}, nil); err == nil {
		t.Error("an unreachable JWKS accepted")
	}
	// A file JWKS, and a custom subject claim.
	k := newRSAKey(t, "f1")
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.pub}})
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := NewJWTValidator(JWTConfig{JWKSURL: "file://" + path, SubClaim: "client_id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := k.sign(t, map[string]any{"client_id": "svc-1", "exp": time.Now().Add(time.Hour).Unix()})
	if p, _, status := v.Validate(tok); status != "" || p != "svc-1" {
		t.Fatalf("file JWKS: %q %q", p, status)
	}
}
