package security

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Signed OAuth tokens: Kafka's OAuthBearerValidatorCallbackHandler
// (KIP-768), chosen for a listener by its
// listener.name.<l>.oauthbearer.sasl.server.callback.handler.class (or
// sasl.server.callback.handler.class). The token is a JWS signed by one
// of the keys of the JWKS at sasl.oauthbearer.jwks.endpoint.url (http,
// https or file), fetched at start-up and again every
// sasl.oauthbearer.jwks.endpoint.refresh.ms, and at once (at most every
// sasl.oauthbearer.jwks.endpoint.retry.backoff.ms) when a token names a key
// id the set lacks, so keys rotate without a restart. Checked as Kafka's
// ValidatorAccessTokenValidator: an asymmetric signature algorithm (RS*,
// PS*, ES*, EdDSA; never "none" or HMAC), exp present and ahead, nbf and
// iat not ahead, with sasl.oauthbearer.clock.skew.seconds of leeway; the
// issuer sasl.oauthbearer.expected.issuer and one audience of
// sasl.oauthbearer.expected.audience when set; the principal from the
// claim sasl.oauthbearer.sub.claim.name (Kafka also reads the scopes,
// which nothing in Kafka's broker checks; Moldau does not). A refused token fails the login with
// {"status":"invalid_token"}, as the unsecured validator's.
//
// The JWKS is read with go-jose (a maintained JOSE implementation: key
// parsing for RSA, EC and OKP keys, and signature verification, which we
// would not write ourselves).

// OAuth validator class names: Kafka 3.4+'s, and the package it had
// before (still accepted by Kafka).
const (
	OAuthValidatorClass       = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	OAuthValidatorClassLegacy = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
)

// JWTConfig is the signed-token validator's configuration (Kafka's
// sasl.oauthbearer.* broker properties).
type JWTConfig struct {
	JWKSURL      string        // sasl.oauthbearer.jwks.endpoint.url
	Refresh      time.Duration // sasl.oauthbearer.jwks.endpoint.refresh.ms
	RetryBackoff time.Duration // sasl.oauthbearer.jwks.endpoint.retry.backoff.ms
	Audience     []string      // sasl.oauthbearer.expected.audience
	Issuer       string        // sasl.oauthbearer.expected.issuer
	SubClaim     string        // sasl.oauthbearer.sub.claim.name
	ClockSkew    time.Duration // sasl.oauthbearer.clock.skew.seconds
	// HTTPClient fetches an http(s) JWKS; nil: one with a 10 s timeout.
	HTTPClient *http.Client
}

// jwtAlgorithms are the signature algorithms a token may use: asymmetric
// only, so a public key can never verify an HMAC made with it.
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// JWTValidator checks signed tokens against a JWKS it keeps fresh. Safe
// for concurrent use.
type JWTValidator struct {
	cfg JWTConfig
	now func() time.Time

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time // when keys were fetched
	tried   time.Time // the last fetch, successful or not
}

// NewJWTValidator checks the configuration and fetches the JWKS once (a
// JWKS that cannot be read fails start-up, as Kafka's does).
func NewJWTValidator(cfg JWTConfig, now func() time.Time) (*JWTValidator, error) {
	if cfg.JWKSURL == "" {
		return nil, errors.New("sasl.oauthbearer.jwks.endpoint.url is required by " + OAuthValidatorClass)
	}
	u, err := url.Parse(cfg.JWKSURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q: an http, https or file URL is required", cfg.JWKSURL)
	}
	if cfg.SubClaim == "" {
		cfg.SubClaim = "sub"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if now == nil {
		now = time.Now
	}
	v := &JWTValidator{cfg: cfg, now: now}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.fetchLocked(); err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	return v, nil
}

// maxJWKSSize bounds what a JWKS endpoint may make the broker read.
const maxJWKSSize = 1 << 20

// fetchLocked reads the JWKS. Called with mu held.
func (v *JWTValidator) fetchLocked() error {
	v.tried = v.now()
	var body []byte
	u, _ := url.Parse(v.cfg.JWKSURL)
	if u.Scheme == "file" {
		f, err := os.Open(u.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		if body, err = io.ReadAll(io.LimitReader(f, maxJWKSSize+1)); err != nil {
			return err
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
		if err != nil {
			return err
		}
		resp, err := v.cfg.HTTPClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", v.cfg.JWKSURL, resp.Status)
		}
		if body, err = io.ReadAll(io.LimitReader(resp.Body, maxJWKSSize+1)); err != nil {
			return err
		}
	}
	if len(body) > maxJWKSSize {
		return fmt.Errorf("the JWKS is larger than %d bytes", maxJWKSSize)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return fmt.Errorf("the JWKS cannot be read: %w", err)
	}
	v.keys, v.fetched = set, v.tried
	return nil
}

// keyFor returns the keys a token's key id names (every key when it names
// none), fetching the set again when it is stale or lacks the id.
func (v *JWTValidator) keyFor(kid string) []jose.JSONWebKey {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	stale := v.cfg.Refresh > 0 && now.Sub(v.fetched) >= v.cfg.Refresh
	missing := kid != "" && len(v.keys.Key(kid)) == 0
	if (stale || missing) && now.Sub(v.tried) >= v.cfg.RetryBackoff {
		_ = v.fetchLocked() // on failure the old keys serve
	}
	if kid == "" {
		return v.keys.Keys
	}
	return v.keys.Key(kid)
}

// Validate checks a token; status is "" when it is valid, else
// "invalid_token".
func (v *JWTValidator) Validate(token string) (principal string, expiry time.Time, status string) {
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil || len(tok.Headers) != 1 {
		return "", time.Time{}, "invalid_token"
	}
	var claims jwt.Claims
	custom := map[string]any{}
	verified := false
	for _, k := range v.keyFor(tok.Headers[0].KeyID) {
		if pub := k.Public(); pub.Key != nil && tok.Claims(pub.Key, &claims, &custom) == nil {
			verified = true
			break
		}
	}
	if !verified || claims.Expiry == nil {
		return "", time.Time{}, "invalid_token"
	}
	want := jwt.Expected{Issuer: v.cfg.Issuer, Time: v.now()}
	if len(v.cfg.Audience) > 0 {
		want.AnyAudience = v.cfg.Audience
	}
	if err := claims.ValidateWithLeeway(want, v.cfg.ClockSkew); err != nil {
		return "", time.Time{}, "invalid_token"
	}
	sub, _ := custom[v.cfg.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return "", time.Time{}, "invalid_token"
	}
	return sub, claims.Expiry.Time(), ""
}
