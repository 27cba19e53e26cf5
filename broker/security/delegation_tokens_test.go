package security

import (
	"testing"
	"time"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/security/scram"
)

// The cache derives a token's credential once, refuses expired and
// unknown tokens, and nothing logs in without the secret.
func TestDelegationTokenCache(t *testing.T) {
	im := &metadata.Image{DelegationTokens: map[string]metadata.DelegationToken{
		"t1": {TokenID: "t1", Owner: "User:alice", ExpiryMs: 2000, MaxMs: 3000},
	}}
	now := time.UnixMilli(1000)
	c := NewDelegationTokenCache("k", func() *metadata.Image { return im }, func() time.Time { return now })
	cred, owner, ok := c.Lookup(scram.SHA256.Name, "t1")
	if !ok || owner != "User:alice" || cred.Iterations != 4096 {
		t.Fatalf("lookup: %+v %q %v", cred, owner, ok)
	}
	if again, _, _ := c.Lookup(scram.SHA256.Name, "t1"); string(again.Salt) != string(cred.Salt) {
		t.Fatal("credential derived twice")
	}
	if _, _, ok := c.Lookup(scram.SHA256.Name, "t2"); ok {
		t.Fatal("unknown token")
	}
	now = time.UnixMilli(2500)
	if _, _, ok := c.Lookup(scram.SHA256.Name, "t1"); ok {
		t.Fatal("expired token")
	}
	off := NewDelegationTokenCache("", func() *metadata.Image { return im }, time.Now)
	if _, _, ok := off.Lookup(scram.SHA256.Name, "t1"); ok {
		t.Fatal("no secret")
	}
}
