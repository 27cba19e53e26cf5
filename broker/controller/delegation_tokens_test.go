package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
)

func replayTokens(t *testing.T, im *metadata.Image, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(im)
	for _, r := range recs {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

// Create, renew and expire follow Kafka's DelegationTokenControlManager:
// lifetimes capped by the configs, the HMAC checked, only the owner,
// requester or a renewer may change a token, an expired one may not be
// renewed, and a negative expiry period removes the token.
func TestDelegationTokenControl(t *testing.T) {
	cfg := TokenConfig{SecretKey: "s3cret", MaxLifetimeMs: 10_000, RenewPeriodMs: 1_000}
	if _, _, err := CreateToken(TokenConfig{}, 0, "User:a", "User:a", nil, 0); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("no secret: %v", err)
	}
	tok, rec, err := CreateToken(cfg, 100, "User:alice", "User:alice", []string{"User:bob"}, 50_000)
	if err != nil || tok.MaxMs != 10_100 || tok.ExpiryMs != 1_100 || rec.TokenID == "" {
		t.Fatalf("create: %+v, %v", tok, err)
	}
	im := replayTokens(t, metadata.Empty, rec)
	mac := TokenHMAC(cfg.SecretKey, tok.TokenID)
	if _, _, err := RenewToken(cfg, im, 200, "User:bob", []byte("wrong"), -1); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("wrong hmac: %v", err)
	}
	if _, _, err := RenewToken(cfg, im, 200, "User:eve", mac, -1); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Fatalf("stranger: %v", err)
	}
	exp, rrec, err := RenewToken(cfg, im, 500, "User:bob", mac, -1)
	if err != nil || exp != 1_500 || rrec.ExpirationTimestamp != 1_500 {
		t.Fatalf("renew: %d, %v", exp, err)
	}
	im = replayTokens(t, im, rrec)
	if exp, _, _ := RenewToken(cfg, im, 1_400, "User:alice", mac, 50_000); exp != 10_100 {
		t.Fatalf("renew past max: %d", exp)
	}
	if _, _, err := RenewToken(cfg, im, 2_000, "User:alice", mac, -1); !errors.Is(err, kerr.DelegationTokenExpired) {
		t.Fatalf("expired: %v", err)
	}
	if got := ExpiredTokens(im, 2_000); len(got) != 1 {
		t.Fatalf("sweep: %v", got)
	}
	if got := ExpiredTokens(im, 1_000); len(got) != 0 {
		t.Fatalf("sweep too early: %v", got)
	}
	_, erec, err := ExpireToken(cfg, im, 600, "User:alice", mac, -1)
	if err != nil {
		t.Fatal(err)
	}
	if im = replayTokens(t, im, erec); len(im.DelegationTokens) != 0 {
		t.Fatalf("after expire: %+v", im.DelegationTokens)
	}
}

// The controller writes the token records through the quorum: create,
// renew and expire, refused without the secret.
func TestQuorumControllerDelegationTokens(t *testing.T) {
	c, _, _ := newTestController(t)
	if _, err := c.CreateDelegationToken(ctx(t), "User:a", "User:a", nil, -1); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("no secret: %v", err)
	}
	cfg, _, err := config.Load("", []string{"delegation.token.secret.key=k"})
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ = newTestControllerWith(t, func(cc *Config) { cc.Broker = cfg })
	tok, err := c.CreateDelegationToken(ctx(t), "User:alice", "User:alice", []string{"User:bob"}, -1)
	if err != nil || tok.ExpiryMs-tok.IssueMs != 86_400_000 || tok.MaxMs-tok.IssueMs != 604_800_000 {
		t.Fatalf("create: %+v, %v", tok, err)
	}
	mac := TokenHMAC("k", tok.TokenID)
	if exp, err := c.RenewDelegationToken(ctx(t), "User:bob", mac, 1000); err != nil || exp != tok.IssueMs+1000 {
		t.Fatalf("renew: %d, %v", exp, err)
	}
	if _, err := c.ExpireDelegationToken(ctx(t), "User:alice", mac, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewDelegationToken(ctx(t), "User:bob", mac, 1000); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("after expire: %v", err)
	}
}
