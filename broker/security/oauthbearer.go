package security

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
)

// OAUTHBEARER (RFC 7628) as Kafka's OAuthBearerSaslServer with its
// default validator, OAuthBearerUnsecuredValidatorCallbackHandler: the
// token is an unsecured JWS (header {"alg":"none"}, claims, empty
// signature), its principal the sub claim (or the JAAS option
// unsecuredValidatorPrincipalClaimName), valid while exp (seconds since
// the epoch) is ahead, iat not after exp, with every scope of
// unsecuredValidatorRequiredScope. A refused token is answered with
// Kafka's JSON error challenge ({"status":"invalid_token"}); the client
// acknowledges with %x01 and the authentication fails with that JSON as
// the message.

// OAuthConfig is the unsecured validator's options (the JAAS options of
// the listener's OAuthBearerLoginModule).
type OAuthConfig struct {
	PrincipalClaim string        // unsecuredValidatorPrincipalClaimName, default sub
	ScopeClaim     string        // unsecuredValidatorScopeClaimName, default scope
	RequiredScope  []string      // unsecuredValidatorRequiredScope
	ClockSkew      time.Duration // unsecuredValidatorAllowableClockSkewMs
	Now            func() time.Time
	// JWT, when set, checks signed tokens against a JWKS instead
	// (OAuthBearerValidatorCallbackHandler; oauthbearer_jwt.go) and the
	// unsecured options above are not read.
	JWT *JWTValidator
}

// oauthConfigFrom reads the validator options from a JAAS entry.
func oauthConfigFrom(e JaasEntry) (OAuthConfig, error) {
	c := OAuthConfig{PrincipalClaim: "sub", ScopeClaim: "scope", Now: time.Now}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorPrincipalClaimName"]); v != "" {
		c.PrincipalClaim = v
	}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorScopeClaimName"]); v != "" {
		c.ScopeClaim = v
	}
	for _, s := range strings.Split(e.Options["unsecuredValidatorRequiredScope"], ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.RequiredScope = append(c.RequiredScope, s)
		}
	}
	if v := strings.TrimSpace(e.Options["unsecuredValidatorAllowableClockSkewMs"]); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return c, fmt.Errorf("unsecuredValidatorAllowableClockSkewMs: %q is not a non-negative integer", v)
		}
		c.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	return c, nil
}

// oauthServer is one OAUTHBEARER exchange.
type oauthServer struct {
	cfg       OAuthConfig
	errorJSON string // sent as the challenge; the client's %x01 then fails
	principal string
	expiry    time.Time
	done      bool
}

// oauthAuthRE is Kafka's AUTH_PATTERN for the auth value.
var oauthAuthRE = regexp.MustCompile(`^([\w]+)[ ]+([-_\.a-zA-Z0-9]+)$`)

func oauthInvalidMessage() error {
	return apierr.New(kerr.SaslAuthenticationFailed, "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER")
}

func (o *oauthServer) evaluate(msg []byte) ([]byte, error) {
	if o.done {
		return nil, apierr.New(kerr.IllegalSaslState, "Unexpected response in SASL/OAUTHBEARER: the exchange is complete")
	}
	if len(msg) == 1 && msg[0] == 0x01 && o.errorJSON != "" {
		return nil, apierr.New(kerr.SaslAuthenticationFailed, o.errorJSON)
	}
	authzid, token, ok := parseOAuthInitial(string(msg))
	if !ok {
		return nil, oauthInvalidMessage()
	}
	principal, expiry, status, scope := o.validate(token)
	if status != "" {
		o.errorJSON = oauthErrorJSON(status, scope)
		return []byte(o.errorJSON), nil
	}
	if authzid != "" && authzid != principal {
		return nil, apierr.Errorf(kerr.SaslAuthenticationFailed, "Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, principal)
	}
	o.principal, o.expiry, o.done = principal, expiry, true
	return nil, nil
}

// parseOAuthInitial parses the client's first message (Kafka's
// OAuthBearerClientInitialResponse): gs2 header "n,[a=authzid],", then
// %x01-separated key=value pairs ending with %x01%x01, auth among them.
func parseOAuthInitial(s string) (authzid, token string, ok bool) {
	rest, found := strings.CutPrefix(s, "n,")
	if !found {
		return "", "", false
	}
	i := strings.IndexByte(rest, ',')
	if i < 0 {
		return "", "", false
	}
	if i > 0 {
		a, isA := strings.CutPrefix(rest[:i], "a=")
		if !isA {
			return "", "", false
		}
		authzid = a
	}
	kv := rest[i+1:]
	if !strings.HasPrefix(kv, "\x01") || !strings.HasSuffix(kv, "\x01\x01") || len(kv) < 3 {
		return "", "", false
	}
	for _, p := range strings.Split(kv[1:len(kv)-2], "\x01") {
		k, v, _ := strings.Cut(p, "=")
		if k != "auth" {
			continue
		}
		m := oauthAuthRE.FindStringSubmatch(v)
		if m == nil || !strings.EqualFold(m[1], "bearer") {
			return "", "", false
		}
		token = m[2]
	}
	return authzid, token, token != ""
}

// validate checks an unsecured JWS; status is "" when it is valid, else
// Kafka's error status (invalid_token, insufficient_scope).
func (o *oauthServer) validate(token string) (principal string, expiry time.Time, status, scope string) {
	if o.cfg.JWT != nil {
		principal, expiry, status = o.cfg.JWT.Validate(token)
		return principal, expiry, status, ""
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] != "" {
		return "", time.Time{}, "invalid_token", ""
	}
	var header map[string]any
	claims := map[string]any{}
	if !decodeJWTPart(parts[0], &header) || !decodeJWTPart(parts[1], &claims) {
		return "", time.Time{}, "invalid_token", ""
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return "", time.Time{}, "invalid_token", ""
	}
	sub, _ := claims[o.cfg.PrincipalClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return "", time.Time{}, "invalid_token", ""
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return "", time.Time{}, "invalid_token", ""
	}
	now := o.cfg.Now()
	if !now.Before(exp.Add(o.cfg.ClockSkew)) {
		return "", time.Time{}, "invalid_token", ""
	}
	if v, has := claims["iat"]; has {
		iat, ok := numericDate(v)
		if !ok || iat.After(exp) || iat.After(now.Add(o.cfg.ClockSkew)) {
			return "", time.Time{}, "invalid_token", ""
		}
	}
	if len(o.cfg.RequiredScope) > 0 {
		have := scopeClaim(claims[o.cfg.ScopeClaim])
		for _, s := range o.cfg.RequiredScope {
			if !slices.Contains(have, s) {
				return "", time.Time{}, "insufficient_scope", strings.Join(o.cfg.RequiredScope, " ")
			}
		}
	}
	return sub, exp, "", ""
}

func decodeJWTPart(s string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return false
	}
	return json.Unmarshal(b, v) == nil
}

// numericDate reads a JWT NumericDate (seconds, possibly fractional).
func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(f * 1000)), true
}

// scopeClaim reads a scope claim: a space-separated string or an array.
func scopeClaim(v any) []string {
	switch s := v.(type) {
	case string:
		return strings.Fields(s)
	case []any:
		var out []string
		for _, x := range s {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// oauthErrorJSON is OAuthBearerSaslServer's jsonErrorResponse.
func oauthErrorJSON(status, scope string) string {
	s := fmt.Sprintf(`{"status":"%s"`, status)
	if scope != "" {
		s += fmt.Sprintf(`, "scope":"%s"`, scope)
	}
	return s + "}"
}
