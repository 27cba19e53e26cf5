package controller

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

// Delegation tokens (Kafka's DelegationTokenControlManager): Create,
// Renew and Expire decide against the image and answer with a
// DelegationTokenRecord or RemoveDelegationTokenRecord. The HMAC is never
// written: it is the HMAC-SHA512 of the token id keyed by
// delegation.token.secret.key, recomputed wherever it is needed.
//
// The QuorumController methods below write the decisions (kapi's
// controller plane calls them for APIs 38-40, with the principal the
// forwarding broker put in the Envelope); the active controller sweeps
// expired tokens every delegation.token.expiry.check.interval.ms
// (startTokenSweep).

// TokenConfig is the controller's delegation token configuration.
type TokenConfig struct {
	// SecretKey is delegation.token.secret.key (or the deprecated
	// delegation.token.master.key); empty: tokens are disabled.
	SecretKey     string
	MaxLifetimeMs int64 // delegation.token.max.lifetime.ms
	RenewPeriodMs int64 // delegation.token.expiry.time.ms
}

// TokenHMAC is the HMAC-SHA512 of the token id keyed by the secret.
func TokenHMAC(secret, tokenID string) []byte {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// newTokenID is a random token id, as Kafka's: 16 random bytes in
// URL-safe base64 without padding (Kafka uses a UUID's base64 form).
func newTokenID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// CreateToken decides a CreateDelegationToken for owner, requested by
// requester, with renewers and maxLifetimeMs (<= 0: the configured
// maximum). It returns the new token and its record.
func CreateToken(cfg TokenConfig, nowMs int64, owner, requester string, renewers []string, maxLifetimeMs int64) (metadata.DelegationToken, *metadata.DelegationTokenRecord, error) {
	if cfg.SecretKey == "" {
		return metadata.DelegationToken{}, nil, apierr.New(kerr.DelegationTokenAuthDisabled, "Delegation Token feature is not enabled")
	}
	life := cfg.MaxLifetimeMs
	if maxLifetimeMs > 0 {
		life = min(maxLifetimeMs, cfg.MaxLifetimeMs)
	}
	maxMs := nowMs + life
	t := metadata.DelegationToken{
		TokenID:   newTokenID(),
		Owner:     owner,
		Requester: requester,
		Renewers:  slices.Clone(renewers),
		IssueMs:   nowMs,
		MaxMs:     maxMs,
		ExpiryMs:  min(maxMs, nowMs+cfg.RenewPeriodMs),
	}
	if t.Renewers == nil {
		t.Renewers = []string{}
	}
	return t, t.Record(), nil
}

// findToken returns the token whose HMAC is mac.
func findToken(cfg TokenConfig, im *metadata.Image, mac []byte) (metadata.DelegationToken, bool) {
	for id, t := range im.DelegationTokens {
		if hmac.Equal(TokenHMAC(cfg.SecretKey, id), mac) {
			return t, true
		}
	}
	return metadata.DelegationToken{}, false
}

// allowedToRenew: the owner, the requester or a listed renewer.
func allowedToRenew(t metadata.DelegationToken, principal string) bool {
	return t.Owner == principal || t.Requester == principal || slices.Contains(t.Renewers, principal)
}

// RenewToken decides a RenewDelegationToken by principal: the new expiry
// is min(max timestamp, now + period) (period < 0: the configured renew
// period).
func RenewToken(cfg TokenConfig, im *metadata.Image, nowMs int64, principal string, mac []byte, periodMs int64) (int64, *metadata.DelegationTokenRecord, error) {
	t, err := lookupForChange(cfg, im, nowMs, principal, mac)
	if err != nil {
		return 0, nil, err
	}
	if periodMs < 0 {
		periodMs = cfg.RenewPeriodMs
	}
	t.ExpiryMs = min(t.MaxMs, nowMs+periodMs)
	return t.ExpiryMs, t.Record(), nil
}

// ExpireToken decides an ExpireDelegationToken by principal: a negative
// period expires the token now (a RemoveDelegationTokenRecord); otherwise
// the expiry becomes min(max timestamp, now + period).
func ExpireToken(cfg TokenConfig, im *metadata.Image, nowMs int64, principal string, mac []byte, periodMs int64) (int64, metadata.Record, error) {
	t, err := lookupForChange(cfg, im, nowMs, principal, mac)
	if err != nil {
		return 0, nil, err
	}
	if periodMs < 0 {
		return nowMs, &metadata.RemoveDelegationTokenRecord{TokenID: t.TokenID}, nil
	}
	t.ExpiryMs = min(t.MaxMs, nowMs+periodMs)
	return t.ExpiryMs, t.Record(), nil
}

// lookupForChange finds the token for Renew and Expire and checks that
// principal may change it and that it has not expired.
func lookupForChange(cfg TokenConfig, im *metadata.Image, nowMs int64, principal string, mac []byte) (metadata.DelegationToken, error) {
	if cfg.SecretKey == "" {
		return metadata.DelegationToken{}, apierr.New(kerr.DelegationTokenAuthDisabled, "Delegation Token feature is not enabled")
	}
	t, ok := findToken(cfg, im, mac)
	if !ok {
		return t, apierr.New(kerr.DelegationTokenNotFound, "Delegation token not found")
	}
	if !allowedToRenew(t, principal) {
		return t, apierr.New(kerr.DelegationTokenOwnerMismatch, "Principal is not the owner, requester or a renewer of the token")
	}
	if t.MaxMs < nowMs || t.ExpiryMs < nowMs {
		return t, apierr.New(kerr.DelegationTokenExpired, "Delegation token has expired")
	}
	return t, nil
}

// ExpiredTokens returns the removal records of the tokens that expired
// before nowMs: the active controller's periodic sweep.
func ExpiredTokens(im *metadata.Image, nowMs int64) []metadata.Record {
	var recs []metadata.Record
	for _, id := range slices.Sorted(maps.Keys(im.DelegationTokens)) {
		if im.DelegationTokens[id].ExpiryMs < nowMs {
			recs = append(recs, &metadata.RemoveDelegationTokenRecord{TokenID: id})
		}
	}
	return recs
}

// tokenConfig reads the delegation token configs of the controller's
// broker config (Kafka 4 no longer reads the deprecated
// delegation.token.master.key; neither does Moldau).
func (c *QuorumController) tokenConfig() TokenConfig {
	b := c.cfg.Broker
	if b == nil {
		return TokenConfig{}
	}
	return TokenConfig{SecretKey: b.GetString("delegation.token.secret.key"),
		MaxLifetimeMs: b.GetLong("delegation.token.max.lifetime.ms"),
		RenewPeriodMs: b.GetLong("delegation.token.expiry.time.ms")}
}

// CreateDelegationToken creates a token for owner on behalf of requester
// (principals as "User:name"); the caller has checked that the
// connection may create tokens and that requester may act for owner.
func (c *QuorumController) CreateDelegationToken(ctx context.Context, owner, requester string, renewers []string, maxLifetimeMs int64) (metadata.DelegationToken, error) {
	cfg := c.tokenConfig()
	tok, _, err := write(ctx, c, "createDelegationToken", func(im *metadata.Image) (writeResult[metadata.DelegationToken], error) {
		t, rec, err := CreateToken(cfg, c.now().UnixMilli(), owner, requester, renewers, maxLifetimeMs)
		if err != nil {
			return writeResult[metadata.DelegationToken]{}, err
		}
		return writeResult[metadata.DelegationToken]{records: []metadata.Record{rec}, resp: t}, nil
	})
	return tok, err
}

// RenewDelegationToken renews the token whose HMAC is mac for principal
// and returns its new expiry.
func (c *QuorumController) RenewDelegationToken(ctx context.Context, principal string, mac []byte, periodMs int64) (int64, error) {
	cfg := c.tokenConfig()
	exp, _, err := write(ctx, c, "renewDelegationToken", func(im *metadata.Image) (writeResult[int64], error) {
		exp, rec, err := RenewToken(cfg, im, c.now().UnixMilli(), principal, mac, periodMs)
		if err != nil {
			return writeResult[int64]{}, err
		}
		return writeResult[int64]{records: []metadata.Record{rec}, resp: exp}, nil
	})
	return exp, err
}

// ExpireDelegationToken changes the expiry of the token whose HMAC is mac
// (a negative period removes it) and returns the new expiry.
func (c *QuorumController) ExpireDelegationToken(ctx context.Context, principal string, mac []byte, periodMs int64) (int64, error) {
	cfg := c.tokenConfig()
	exp, _, err := write(ctx, c, "expireDelegationToken", func(im *metadata.Image) (writeResult[int64], error) {
		exp, rec, err := ExpireToken(cfg, im, c.now().UnixMilli(), principal, mac, periodMs)
		if err != nil {
			return writeResult[int64]{}, err
		}
		return writeResult[int64]{records: []metadata.Record{rec}, resp: exp}, nil
	})
	return exp, err
}

// DelegationTokenHMAC is the HMAC of a token id under this controller's
// secret, for the CreateDelegationToken response.
func (c *QuorumController) DelegationTokenHMAC(tokenID string) []byte {
	return TokenHMAC(c.tokenConfig().SecretKey, tokenID)
}

// startTokenSweep runs SweepExpiredDelegationTokens every
// delegation.token.expiry.check.interval.ms while tokens are enabled
// (Kafka's expireTokens task); on a controller that is not active the
// write answers NOT_CONTROLLER and nothing happens.
func (c *QuorumController) startTokenSweep() {
	if c.cfg.Broker == nil || c.tokenConfig().SecretKey == "" {
		return
	}
	interval := time.Duration(c.cfg.Broker.GetLong("delegation.token.expiry.check.interval.ms")) * time.Millisecond
	c.g.Every(interval, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.SweepExpiredDelegationTokens(ctx); err != nil && !errors.Is(err, kerr.NotController) {
			c.log.Warn("sweeping expired delegation tokens failed", "err", err)
		}
	})
}

// SweepExpiredDelegationTokens removes the tokens that have expired: the
// active controller's periodic task (startTokenSweep).
func (c *QuorumController) SweepExpiredDelegationTokens(ctx context.Context) error {
	_, _, err := write(ctx, c, "sweepExpiredDelegationTokens", func(im *metadata.Image) (writeResult[struct{}], error) {
		return writeResult[struct{}]{records: ExpiredTokens(im, c.now().UnixMilli())}, nil
	})
	return err
}
