package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// OAUTHBEARER with signed tokens (Kafka's OAuthBearerValidatorCallbackHandler):
// the broker checks a kgo client's JWT against the identity provider's
// JWKS (served here by the test), with the expected issuer and audience;
// the principal is the subject. Expired, foreign and unsecured tokens
// fail the login with invalid_token.
func TestOAuthBearerJWKS(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "idp-1", Algorithm: "RS256", Use: "sig"}}})
	}))
	t.Cleanup(jwks.Close)
	b := startBroker(t, "",
		"listeners=PLAINTEXT://127.0.0.1:0,OAUTH://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OAUTH:SASL_PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER",
		"listener.name.oauth.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url="+jwks.URL,
		"sasl.oauthbearer.expected.issuer=https://idp.example",
		"sasl.oauthbearer.expected.audience=kafka",
		tokenSecret)
	seed := b.Addr("OAUTH").String()
	sign := func(k *rsa.PrivateKey, claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: "idp-1"}}, (&jose.SignerOptions{}).WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	claims := func(exp time.Time) map[string]any {
		return map[string]any{"sub": "svc-orders", "iss": "https://idp.example", "aud": "kafka", "exp": exp.Unix(), "iat": time.Now().Unix()}
	}
	good := oauth.Auth{Token: sign(key, claims(time.Now().Add(time.Hour)))}.AsMechanism()
	produceConsume(t, newClient(t, seed, kgo.SASL(good)), "oauth-topic", 10)

	// The principal is the token's subject: a delegation token created
	// over the connection is owned by it.
	tok, err := kadm.NewClient(newClient(t, seed, kgo.SASL(good))).CreateDelegationToken(ctxTimeout(t, 20*time.Second), kadm.CreateDelegationToken{})
	if err != nil || tok.Owner.Name != "svc-orders" {
		t.Fatalf("principal of the OAuth login: %+v %v", tok.Owner, err)
	}

	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	wrongIss := claims(time.Now().Add(time.Hour))
	wrongIss["iss"] = "https://evil.example"
	for name, token := range map[string]string{
		"expired":          sign(key, claims(time.Now().Add(-time.Hour))),
		"another key":      sign(other, claims(time.Now().Add(time.Hour))),
		"wrong issuer":     sign(key, wrongIss),
		"unsecured (none)": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJzdmMtb3JkZXJzIiwiZXhwIjo0MTAyNDQ0ODAwfQ.",
	} {
		err := saslPing(t, seed, oauth.Auth{Token: token}.AsMechanism())
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with invalid_token", name, err)
		}
	}
}
