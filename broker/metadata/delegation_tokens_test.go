package metadata

import (
	"reflect"
	"testing"
)

// Delegation tokens: create, renew, remove; the records survive encoding,
// and the image's records (a snapshot) rebuild them.
func TestDeltaDelegationTokens(t *testing.T) {
	a := &DelegationTokenRecord{Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"},
		IssueTimestamp: 1000, MaxTimestamp: 9000, ExpirationTimestamp: 5000, TokenID: "tok-a"}
	b := &DelegationTokenRecord{Owner: "User:bob", Requester: "User:admin", Renewers: []string{},
		IssueTimestamp: 2000, MaxTimestamp: 8000, ExpirationTimestamp: 3000, TokenID: "tok-b"}
	for _, rec := range []Record{a, b, &RemoveDelegationTokenRecord{TokenID: "tok-b"}} {
		got, err := Decode(Encode(rec))
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Fatalf("round trip of %+v: %+v, %v", rec, got, err)
		}
	}
	_, im := replayAll(t, Empty, a, b)
	renewed := *a
	renewed.ExpirationTimestamp = 7000
	d, im2 := replayAll(t, im, &renewed, &RemoveDelegationTokenRecord{TokenID: "tok-b"})
	if !d.DelegationTokensChanged() || !reflect.DeepEqual(d.ChangedDelegationTokens(), []string{"tok-a", "tok-b"}) {
		t.Fatalf("changed: %v", d.ChangedDelegationTokens())
	}
	if len(im2.DelegationTokens) != 1 || im2.DelegationTokens["tok-a"].ExpiryMs != 7000 {
		t.Fatalf("tokens: %+v", im2.DelegationTokens)
	}
	if len(im.DelegationTokens) != 2 || im.DelegationTokens["tok-a"].ExpiryMs != 5000 {
		t.Fatal("the base image changed")
	}
	_, again := replayAll(t, Empty, im.Records()...)
	if !reflect.DeepEqual(again.DelegationTokens, im.DelegationTokens) {
		t.Fatalf("rebuilt %+v, want %+v", again.DelegationTokens, im.DelegationTokens)
	}
}
