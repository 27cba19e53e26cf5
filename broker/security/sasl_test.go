package security

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	fscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/moldau/moldau/broker/security/scram"
)

// RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil",
// client nonce rOprNGfwEbeRWgbNEkqO, salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096
// iterations; our server is given the RFC's server nonce.
func TestScramRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	m := scram.SHA256
	cred := m.CredentialFromSalted(m.SaltedPassword("pencil", salt, 4096), salt, 4096)
	s := &scramServer{mech: m, lookup: func(mech, user string) (scram.Credential, bool) {
		return cred, mech == m.Name && user == "user"
	}}
	first := "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	out, err := s.evaluate([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	// Redo the server-first with the RFC's nonce.
	s.nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	s.serverFirst = "r=" + s.nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	if !strings.HasPrefix(string(out), "r=rOprNGfwEbeRWgbNEkqO") {
		t.Fatalf("server-first %q", out)
	}
	final := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	out, err = s.evaluate([]byte(final))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server-final %q", out)
	}
}

// RFC 5802's SCRAM-SHA-1 example is not a Kafka mechanism; instead the
// full exchange with franz-go's client for both mechanisms, and the
// failures: wrong password, unknown user, tampered nonce, an authzid that
// is not the user, tokenauth (delegation tokens, not yet).
func TestScramWithFranzClient(t *testing.T) {
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		cred := m.NewCredential("secret", 4096)
		lookup := func(mech, user string) (scram.Credential, bool) { return cred, mech == m.Name && user == "u,=x" }
		run := func(pass string, mutate func(string) string) error {
			a := fscram.Auth{User: "u,=x", Pass: pass}
			mech := a.AsSha256Mechanism()
			if m.Type == scram.SHA512.Type {
				mech = a.AsSha512Mechanism()
			}
			sess, msg, err := mech.Authenticate(context.Background(), "host")
			if err != nil {
				t.Fatal(err)
			}
			s := &scramServer{mech: m, lookup: lookup}
			for {
				if mutate != nil {
					msg = []byte(mutate(string(msg)))
				}
				out, err := s.evaluate(msg)
				if err != nil {
					return err
				}
				done, next, err := sess.Challenge(out)
				if err != nil {
					return err
				}
				if done {
					if s.state != 2 || s.user != "u,=x" {
						t.Fatalf("client done, server state %d user %q", s.state, s.user)
					}
					return nil
				}
				msg = next
			}
		}
		if err := run("secret", nil); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		for name, c := range map[string]struct {
			pass   string
			mutate func(string) string
		}{
			"wrong": {"nope", nil},
			"nonce": {"secret", func(s string) string {
				if strings.HasPrefix(s, "c=") {
					return strings.Replace(s, ",r=", ",r=X", 1)
				}
				return s
			}},
			"authzid": {"secret", func(s string) string { return strings.Replace(s, "n,,", "n,a=other,", 1) }},
			"token": {"secret", func(s string) string {
				if strings.HasPrefix(s, "n,,") {
					return s + ",tokenauth=true"
				}
				return s
			}},
			"channel": {"secret", func(s string) string { return strings.Replace(s, "n,,", "y,,", 1) }},
		} {
			if err := run(c.pass, c.mutate); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Errorf("%s %s: got %v, want SASL_AUTHENTICATION_FAILED", m.Name, name, err)
			}
		}
	}
}

func TestPlain(t *testing.T) {
	p := func() *plainServer { return &plainServer{users: map[string]string{"alice": "alice-secret"}} }
	s := p()
	if _, err := s.evaluate([]byte("\x00alice\x00alice-secret")); err != nil || !s.done || s.user != "alice" {
		t.Fatalf("good login: %v %+v", err, s)
	}
	if _, err := p().evaluate([]byte("alice\x00alice\x00alice-secret")); err != nil {
		t.Fatalf("authzid = user: %v", err)
	}
	for in, want := range map[string]string{
		"\x00alice\x00wrong":           "Invalid username or password",
		"\x00bob\x00alice-secret":      "Invalid username or password",
		"\x00alice":                    "expected 3 tokens, got 2",
		"\x00\x00x":                    "username not specified",
		"\x00alice\x00":                "password not specified",
		"bob\x00alice\x00alice-secret": "authorization id that is different",
	} {
		_, err := p().evaluate([]byte(in))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

func unsecuredToken(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func oauthMessage(token string) []byte {
	return []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
}

func TestOAuthUnsecured(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cfg := OAuthConfig{PrincipalClaim: "sub", ScopeClaim: "scope", Now: func() time.Time { return now }}
	good := unsecuredToken(fmt.Sprintf(`{"sub":"admin","exp":%d,"iat":%d,"scope":"a b"}`, now.Unix()+60, now.Unix()))
	o := &oauthServer{cfg: cfg}
	if out, err := o.evaluate(oauthMessage(good)); err != nil || len(out) != 0 || o.principal != "admin" || !o.expiry.Equal(now.Add(time.Minute)) {
		t.Fatalf("good token: %q %v %+v", out, err, o)
	}
	for name, tok := range map[string]string{
		"expired":   unsecuredToken(fmt.Sprintf(`{"sub":"admin","exp":%d}`, now.Unix()-1)),
		"no exp":    unsecuredToken(`{"sub":"admin"}`),
		"no sub":    unsecuredToken(fmt.Sprintf(`{"exp":%d}`, now.Unix()+60)),
		"signed":    strings.TrimSuffix(good, ".") + ".c2ln",
		"alg":       base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256"}`)) + "." + strings.Split(good, ".")[1] + ".",
		"iat > exp": unsecuredToken(fmt.Sprintf(`{"sub":"a","exp":%d,"iat":%d}`, now.Unix()+60, now.Unix()+120)),
		"not json":  "bm90.anNvbg.",
	} {
		o := &oauthServer{cfg: cfg}
		out, err := o.evaluate(oauthMessage(tok))
		if err != nil || string(out) != `{"status":"invalid_token"}` {
			t.Errorf("%s: challenge %q, %v", name, out, err)
			continue
		}
		// The client acknowledges; the failure carries the JSON.
		if _, err := o.evaluate([]byte{1}); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
			t.Errorf("%s: after %%x01: %v", name, err)
		}
	}
	scoped := cfg
	scoped.RequiredScope = []string{"a", "c"}
	if out, _ := (&oauthServer{cfg: scoped}).evaluate(oauthMessage(good)); string(out) != `{"status":"insufficient_scope", "scope":"a c"}` {
		t.Errorf("scope: %q", out)
	}
	for _, msg := range []string{"", "n,,", "y,,\x01auth=Bearer x\x01\x01", "n,,\x01auth=Basic x\x01\x01", "n,,\x01auth=Bearer a b\x01\x01", "n,,\x01\x01"} {
		if _, err := (&oauthServer{cfg: cfg}).evaluate([]byte(msg)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%q: %v", msg, err)
		}
	}
	if _, err := (&oauthServer{cfg: cfg}).evaluate([]byte("n,a=other,\x01auth=Bearer " + good + "\x01\x01")); err == nil {
		t.Error("authzid other than sub accepted")
	}
}

// The SASL server's inputs never panic.
func FuzzSaslServers(f *testing.F) {
	f.Add(0, []byte("\x00alice\x00alice-secret"))
	f.Add(1, []byte("n,,n=user,r=abc"))
	f.Add(1, []byte("c=biws,r=abc,p=AAAA"))
	f.Add(2, oauthMessage(unsecuredToken(`{"sub":"a","exp":1e20}`)))
	cred := scram.SHA256.NewCredential("secret", 4096)
	f.Fuzz(func(t *testing.T, which int, msg []byte) {
		var m mechanismServer
		switch uint(which) % 3 {
		case 0:
			m = &plainServer{users: map[string]string{"alice": "alice-secret"}}
		case 1:
			m = &scramServer{mech: scram.SHA256, lookup: func(string, string) (scram.Credential, bool) { return cred, true }}
		default:
			m = &oauthServer{cfg: OAuthConfig{PrincipalClaim: "sub", Now: time.Now}}
		}
		for range 3 {
			if _, err := m.evaluate(msg); err != nil {
				return
			}
		}
	})
}

// A delegation token authenticates with tokenauth=true: the username is
// the token id, the password the base64 HMAC, and the login's principal
// becomes the token's owner.
func TestScramDelegationToken(t *testing.T) {
	hmac := []byte("0123456789abcdef0123456789abcdef")
	pass := base64.StdEncoding.EncodeToString(hmac)
	cred := TokenCredential(scram.SHA512, hmac)
	b := &SaslChannelBuilder{cfg: SaslConfig{
		Mechanisms: []string{scram.SHA512.Name},
		Scram:      func(string, string) (scram.Credential, bool) { return scram.Credential{}, false },
		Token: func(mech, id string) (scram.Credential, string, bool) {
			return cred, "User:alice", mech == scram.SHA512.Name && id == "tok1"
		},
	}}
	for _, c := range []struct {
		user, pass string
		ok         bool
	}{{"tok1", pass, true}, {"tok1", "wrong", false}, {"tok2", pass, false}} {
		a := fscram.Auth{User: c.user, Pass: c.pass, IsToken: true}
		sess, msg, err := a.AsSha512Mechanism().Authenticate(context.Background(), "host")
		if err != nil {
			t.Fatal(err)
		}
		s := &saslSession{b: b}
		if err := s.Handshake(scram.SHA512.Name); err != nil {
			t.Fatal(err)
		}
		for err == nil && !s.Complete() {
			var out []byte
			if out, err = s.Authenticate(msg); err == nil {
				_, msg, err = sess.Challenge(out)
			}
		}
		if c.ok != (err == nil) {
			t.Fatalf("%s/%s: %v", c.user, c.pass, err)
		}
		if c.ok && (s.Principal() != "User:alice" || !s.TokenAuthenticated()) {
			t.Fatalf("principal %q token %v", s.Principal(), s.TokenAuthenticated())
		}
	}
}
