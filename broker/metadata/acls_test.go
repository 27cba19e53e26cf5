package metadata

import (
	"reflect"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

// ACLs: add, remove by id; the records survive encoding; an image that
// did not change its ACLs shares the set (its identity is the authorizer's
// cache key); a snapshot rebuilds them; a duplicate id or the removal of an
// unknown one is refused.
func TestDeltaACLs(t *testing.T) {
	a := &AccessControlEntryRecord{ID: uuid.Random(), ACL: ACL{ResourceType: 2, ResourceName: "orders", PatternType: 3, Principal: "User:alice", Host: "*", Operation: 3, Permission: 3}}
	b := &AccessControlEntryRecord{ID: uuid.Random(), ACL: ACL{ResourceType: 3, ResourceName: "app-", PatternType: 4, Principal: "User:*", Host: "10.0.0.1", Operation: 2, Permission: 2}}
	for _, rec := range []Record{a, &RemoveAccessControlEntryRecord{ID: b.ID}} {
		got, err := Decode(Encode(rec))
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Fatalf("round trip of %+v: %+v, %v", rec, got, err)
		}
	}
	_, im := replayAll(t, Empty, a, b)
	if im.ACLs.Len() != 2 || im.ACLs.ByID[b.ID] != b.ACL {
		t.Fatalf("ACLs: %+v", im.ACLs)
	}
	_, same := replayAll(t, im, &NoOpRecord{})
	if same.ACLs != im.ACLs {
		t.Fatal("an image without ACL changes has a new ACL set")
	}
	_, im2 := replayAll(t, im, &RemoveAccessControlEntryRecord{ID: a.ID})
	if im2.ACLs.Len() != 1 || im.ACLs.Len() != 2 {
		t.Fatalf("after remove: %d, base %d", im2.ACLs.Len(), im.ACLs.Len())
	}
	_, again := replayAll(t, Empty, im.Records()...)
	if !reflect.DeepEqual(again.ACLs, im.ACLs) {
		t.Fatalf("rebuilt %+v, want %+v", again.ACLs, im.ACLs)
	}
	for _, rec := range []Record{a, &RemoveAccessControlEntryRecord{ID: uuid.Random()}} {
		d := NewDelta(im)
		if err := d.Replay(rec); err == nil {
			t.Fatalf("%T %+v accepted", rec, rec)
		}
	}
}
