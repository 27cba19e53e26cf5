package metadata

import (
	"reflect"
	"testing"
)

// SCRAM credentials: set, replace, remove; the records survive encoding,
// and the image's records (a snapshot) rebuild them.
func TestDeltaScramCredentials(t *testing.T) {
	alice := &UserScramCredentialRecord{Name: "alice", Mechanism: 1, Salt: []byte("s1"), StoredKey: []byte("k1"), ServerKey: []byte("v1"), Iterations: 4096}
	bob := &UserScramCredentialRecord{Name: "bob", Mechanism: 2, Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192}
	for _, rec := range []Record{alice, &RemoveUserScramCredentialRecord{Name: "bob", Mechanism: 2}} {
		got, err := Decode(Encode(rec))
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Fatalf("round trip of %+v: %+v, %v", rec, got, err)
		}
	}
	_, im := replayAll(t, Empty, alice, bob)
	alice2 := *alice
	alice2.Iterations = 16384
	_, im2 := replayAll(t, im, &alice2, &RemoveUserScramCredentialRecord{Name: "bob", Mechanism: 2})
	if len(im2.Scram) != 1 || im2.Scram[ScramKey{"alice", 1}].Iterations != 16384 {
		t.Fatalf("credentials: %+v", im2.Scram)
	}
	if len(im.Scram) != 2 || im.Scram[ScramKey{"alice", 1}].Iterations != 4096 {
		t.Fatal("the base image changed")
	}
	_, again := replayAll(t, Empty, im.Records()...)
	if !reflect.DeepEqual(again.Scram, im.Scram) {
		t.Fatalf("rebuilt %+v, want %+v", again.Scram, im.Scram)
	}
}
