package security

import (
	"crypto/hmac"
	"crypto/sha512"
	"sync"
	"time"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/security/scram"
)

// DelegationTokenCache is the broker's side of delegation tokens (Kafka's
// DelegationTokenCache with DelegationTokenManager): for each token in
// the metadata image, a SCRAM credential per mechanism derived from the
// token's HMAC (random salt, 4096 iterations), so a client may log in
// with SCRAM and tokenauth=true. Credentials are derived once per token
// and expiry and dropped when the token leaves the image. Safe for
// concurrent use.
type DelegationTokenCache struct {
	secret string
	image  func() *metadata.Image
	now    func() time.Time

	mu    sync.Mutex
	creds map[tokenCredKey]tokenCred
}

type tokenCredKey struct {
	id   string
	mech int8
}

type tokenCred struct {
	token metadata.DelegationToken
	cred  scram.Credential
}

// NewDelegationTokenCache serves the tokens of image() with the secret
// (delegation.token.secret.key; empty: no token logs in).
func NewDelegationTokenCache(secret string, image func() *metadata.Image, now func() time.Time) *DelegationTokenCache {
	return &DelegationTokenCache{secret: secret, image: image, now: now, creds: map[tokenCredKey]tokenCred{}}
}

// HMAC is the HMAC-SHA512 of tokenID keyed by the secret.
func (c *DelegationTokenCache) HMAC(tokenID string) []byte {
	m := hmac.New(sha512.New, []byte(c.secret))
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// Lookup returns the SCRAM credential of token id for a mechanism and the
// token's owner; not ok if the token is unknown or expired, or tokens are
// disabled.
func (c *DelegationTokenCache) Lookup(mechanism, id string) (scram.Credential, string, bool) {
	m, ok := scram.MechanismByName(mechanism)
	if !ok || c.secret == "" {
		return scram.Credential{}, "", false
	}
	im := c.image()
	if im == nil {
		return scram.Credential{}, "", false
	}
	t, ok := im.DelegationTokens[id]
	if !ok || t.ExpiryMs < c.now().UnixMilli() {
		return scram.Credential{}, "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := tokenCredKey{id, m.Type}
	if e, ok := c.creds[k]; ok && e.token.ExpiryMs == t.ExpiryMs && e.token.MaxMs == t.MaxMs {
		return e.cred, t.Owner, true
	}
	cred := TokenCredential(m, c.HMAC(id))
	c.creds[k] = tokenCred{token: t, cred: cred}
	for k := range c.creds { // forget removed tokens
		if _, ok := im.DelegationTokens[k.id]; !ok {
			delete(c.creds, k)
		}
	}
	return cred, t.Owner, true
}
