package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
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

// Stock librdkafka clients with OAUTHBEARER: kcat with its built-in
// unsecured token against Kafka's default validator, and confluent-kafka
// with a signed token its oauth_cb fetches from the identity provider's
// token endpoint (client credentials; here the test's; Debian's librdkafka
// is built without libcurl, so not its own sasl.oauthbearer.method=oidc)
// against a listener that checks it with the provider's JWKS. Each produces and
// reads back; confluent-kafka in a consumer group.
func TestOAuthBearerStockClients(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "idp-1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	var issued atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "idp-1", Algorithm: "RS256", Use: "sig"}}})
	})
	// The token endpoint: client credentials grant, as an OIDC provider's.
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		user, pass, ok := r.BasicAuth()
		if !ok || user != "orders-svc" || pass != "orders-secret" {
			http.Error(w, "bad client", http.StatusUnauthorized)
			return
		}
		tok, err := jwt.Signed(signer).Claims(map[string]any{"sub": user, "iss": "https://idp.example", "aud": "kafka",
			"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "scope": "kafka"}).Serialize()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": 3600})
	})
	idp := httptest.NewServer(mux)
	t.Cleanup(idp.Close)
	b := startBroker(t, "",
		"listeners=PLAINTEXT://127.0.0.1:0,UNSECURED://127.0.0.1:0,SIGNED://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,UNSECURED:SASL_PLAINTEXT,SIGNED:SASL_PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=OAUTHBEARER",
		"listener.name.signed.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url="+idp.URL+"/jwks",
		"sasl.oauthbearer.expected.issuer=https://idp.example",
		"sasl.oauthbearer.expected.audience=kafka")

	t.Run("kcat unsecured", func(t *testing.T) {
		args := func(more ...string) []string {
			return append([]string{"-b", b.Addr("UNSECURED").String(), "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
				"-X", "sasl.oauthbearer.config=principal=kcat-user", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-m", "15"}, more...)
		}
		var in strings.Builder
		for i := range 20 {
			fmt.Fprintf(&in, "v%d\n", i)
		}
		pr := exec.Command("kcat", args("-P", "-t", "kcat-oauth")...)
		pr.Stdin = strings.NewReader(in.String())
		runClient(t, pr)
		out := runClient(t, exec.Command("kcat", args("-C", "-t", "kcat-oauth", "-o", "beginning", "-e", "-f", "%s@%o\n")...))
		for i := range 20 {
			if !strings.Contains(out, fmt.Sprintf("v%d@%d\n", i, i)) {
				t.Fatalf("kcat -C lacks v%d:\n%s", i, out)
			}
		}
		// The signed listener refuses the unsecured token.
		bad, err := exec.Command("kcat", append([]string{"-b", b.Addr("SIGNED").String(), "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
			"-X", "sasl.oauthbearer.config=principal=kcat-user", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-m", "15"}, "-L")...).CombinedOutput()
		if err == nil || !strings.Contains(string(bad), "invalid_token") {
			t.Fatalf("kcat's unsecured token on the JWKS listener: %v\n%s", err, bad)
		}
	})
	t.Run("confluent-kafka client credentials", func(t *testing.T) {
		script := `
import base64, json, sys, time, urllib.request
from confluent_kafka import Producer, Consumer
def oauth_cb(_config):
    req = urllib.request.Request(sys.argv[2], data=b"grant_type=client_credentials&scope=kafka", method="POST",
        headers={"Authorization": "Basic " + base64.b64encode(b"orders-svc:orders-secret").decode(),
                 "Content-Type": "application/x-www-form-urlencoded"})
    tok = json.load(urllib.request.urlopen(req, timeout=10))
    return tok["access_token"], time.time() + tok["expires_in"]
conf = {"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "OAUTHBEARER",
        "oauth_cb": oauth_cb}
p = Producer(dict(conf, acks="all"))
for i in range(30):
    p.produce("py-oidc", value="v%d" % i)
assert p.flush(30) == 0
c = Consumer(dict(conf, **{"group.id": "py-oidc", "auto.offset.reset": "earliest"}))
c.subscribe(["py-oidc"])
got = []
while len(got) < 30:
    m = c.poll(15)
    assert m is not None, "no message within 15s after %d" % len(got)
    assert m.error() is None, m.error()
    got.append(m.value().decode())
c.close()
assert got == ["v%d" % i for i in range(30)], got
print("ok")
`
		if out := runClient(t, exec.Command("/usr/bin/python3", "-c", script, b.Addr("SIGNED").String(), idp.URL+"/token")); !strings.Contains(out, "ok") {
			t.Fatalf("confluent-kafka:\n%s", out)
		}
		if issued.Load() == 0 {
			t.Fatal("the client never fetched a token from the provider")
		}
	})
}
