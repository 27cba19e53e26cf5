package authorizer

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

func set(acls ...metadata.ACL) *metadata.ACLs {
	s := &metadata.ACLs{ByID: map[uuid.UUID]metadata.ACL{}}
	for _, a := range acls {
		s.ByID[uuid.Random()] = a
	}
	return s
}

func acl(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) metadata.ACL {
	return metadata.ACL{ResourceType: int8(rt), ResourceName: name, PatternType: int8(pt), Principal: principal, Host: host, Operation: int8(op), Permission: int8(perm)}
}

// Kafka's StandardAuthorizer semantics, case by case.
func TestAuthorize(t *testing.T) {
	alice := Session{Principal: "User:alice", Host: "10.0.0.1"}
	bob := Session{Principal: "User:bob", Host: "10.0.0.2"}
	admin := Session{Principal: "User:admin", Host: "10.0.0.3"}
	acls := set(
		acl(Topic, "orders", Literal, "User:alice", "*", Read, Allow),
		acl(Topic, "app-", Prefixed, "User:alice", "*", Write, Allow),
		acl(Topic, "app-secret", Literal, "User:alice", "*", Write, Deny),
		acl(Topic, "app-x", Prefixed, "User:*", "10.0.0.2", All, Allow),
		acl(Topic, "*", Literal, "User:bob", "*", Describe, Allow),
		acl(Group, "g", Literal, "User:*", "*", Read, Allow),
		acl(Group, "g", Literal, "User:bob", "*", Read, Deny),
		acl(Topic, "cfg", Literal, "User:alice", "*", AlterConfigs, Allow),
		acl(Topic, "deny-read", Literal, "User:alice", "*", Describe, Allow),
		acl(Topic, "deny-read", Literal, "User:alice", "*", Read, Deny),
		acl(Topic, "from-host", Literal, "User:alice", "10.9.9.9", Read, Allow),
		acl(Cluster, ClusterName, Literal, "User:bob", "*", All, Deny),
	)
	for _, allowEveryone := range []bool{false, true} {
		a := New(Config{ACLs: func() *metadata.ACLs { return acls }, SuperUsers: ParseSuperUsers("User:admin; User:root"), AllowEveryoneIfNoACLFound: allowEveryone})
		for _, c := range []struct {
			s    Session
			op   kmsg.ACLOperation
			rt   kmsg.ACLResourceType
			name string
			want bool
		}{
			{alice, Read, Topic, "orders", true},
			{alice, Describe, Topic, "orders", true}, // READ implies DESCRIBE
			{alice, Write, Topic, "orders", false},   // the resource has ACLs: denied
			{bob, Read, Topic, "orders", false},
			{bob, Describe, Topic, "orders", true}, // the literal wildcard
			{alice, Write, Topic, "app-1", true},   // prefixed
			{alice, Write, Topic, "app-secret", false},
			{alice, Describe, Topic, "app-secret", true}, // WRITE on app- implies it; the DENY is WRITE only
			{bob, Delete, Topic, "app-x1", true},         // ALL, wildcard principal, host
			{alice, Delete, Topic, "app-x1", false},      // wrong host
			{bob, Read, Group, "g", false},               // DENY before ALLOW
			{alice, Read, Group, "g", true},
			{alice, DescribeConfigs, Topic, "cfg", true}, // ALTER_CONFIGS implies DESCRIBE_CONFIGS
			{alice, Describe, Topic, "cfg", false},
			{alice, Read, Topic, "deny-read", false},
			{alice, Describe, Topic, "deny-read", true},
			{alice, Read, Topic, "from-host", false},
			{bob, Describe, Cluster, ClusterName, false}, // DENY ALL
			{admin, Alter, Cluster, ClusterName, true},   // super user
			{Session{Principal: "User:root"}, Delete, Topic, "orders", true},
			{alice, Read, TransactionalID, "tx", allowEveryone}, // no ACL names it
			{alice, Read, Topic, "nothing-here", false},         // the literal wildcard names every topic
			{alice, Read, Group, "other", allowEveryone},
		} {
			if got := a.Authorize(c.s, Action{Operation: c.op, ResourceType: c.rt, Name: c.name}); got != c.want {
				t.Errorf("allow.everyone=%v: %s %s %s %q: %v, want %v", allowEveryone, c.s.Principal, c.op, c.rt, c.name, got, c.want)
			}
		}
	}
}

// The index follows the image's ACL set: a new set is a new decision.
func TestAuthorizeFollowsACLSet(t *testing.T) {
	cur := set()
	a := New(Config{ACLs: func() *metadata.ACLs { return cur }})
	s := Session{Principal: "User:alice", Host: "h"}
	act := Action{Operation: Read, ResourceType: Topic, Name: "t"}
	if a.Authorize(s, act) {
		t.Fatal("allowed without ACLs")
	}
	cur = set(acl(Topic, "t", Literal, "User:alice", "*", Read, Allow))
	if !a.Authorize(s, act) {
		t.Fatal("not allowed after the ACL was added")
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	s := Session{Principal: "User:alice", Host: "h"}
	for i, c := range []struct {
		acls *metadata.ACLs
		want bool
	}{
		{set(), false},
		{set(acl(Topic, "x", Literal, "User:alice", "*", Write, Allow)), true},
		{set(acl(Topic, "x", Literal, "User:alice", "*", Write, Allow), acl(Topic, "x", Literal, "User:alice", "*", Write, Deny)), false},
		{set(acl(Topic, "ab", Prefixed, "User:alice", "*", Write, Allow), acl(Topic, "a", Prefixed, "User:*", "*", Write, Deny)), false},
		{set(acl(Topic, "ab", Prefixed, "User:alice", "*", Write, Allow), acl(Topic, "abc", Prefixed, "User:*", "*", Write, Deny)), true},
		{set(acl(Topic, "*", Literal, "User:alice", "*", All, Allow)), true},
		{set(acl(Topic, "x", Literal, "User:alice", "*", Write, Allow), acl(Topic, "*", Literal, "User:alice", "*", Write, Deny)), false},
		{set(acl(Topic, "x", Literal, "User:alice", "*", Read, Allow)), false},
	} {
		a := New(Config{ACLs: func() *metadata.ACLs { return c.acls }})
		if got := a.AuthorizeByResourceType(s, Write, Topic); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := New(Config{ACLs: func() *metadata.ACLs {
		return set(acl(Group, "g", Literal, "User:alice", "*", Read, Allow))
	}})
	got := a.AuthorizedOperations(Session{Principal: "User:alice"}, Group, "g")
	if want := int32(1<<Read | 1<<Describe); got != want {
		t.Fatalf("operations %b, want %b", got, want)
	}
	if AllOperations(Group) != 1<<3|1<<6|1<<8|1<<10|1<<11 {
		t.Fatalf("group operations %b", AllOperations(Group))
	}
}

// BenchmarkAuthorize10000ACLs is the cost of one decision among 10,000
// ACLs (half literal, half prefixed, over 1,000 principals).
func BenchmarkAuthorize10000ACLs(b *testing.B) {
	var acls []metadata.ACL
	for i := range 5000 {
		p := fmt.Sprintf("User:u%d", i%1000)
		acls = append(acls, acl(Topic, fmt.Sprintf("topic-%d", i), Literal, p, "*", Read, Allow))
		acls = append(acls, acl(Topic, fmt.Sprintf("team-%d-", i), Prefixed, p, "*", Write, Allow))
	}
	s := set(acls...)
	a := New(Config{ACLs: func() *metadata.ACLs { return s }})
	sess := Session{Principal: "User:u7", Host: "10.1.2.3"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if !a.Authorize(sess, Action{Operation: Write, ResourceType: Topic, Name: "team-7-orders-eu-west-1"}) {
			b.Fatal("denied")
		}
	}
}
