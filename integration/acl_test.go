package integration

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// aclBroker is a broker with the StandardAuthorizer: the PLAINTEXT
// listener's User:ANONYMOUS (the tests' admin and the inter-broker
// listener) and User:admin are super users; alice logs in with PLAIN on
// the SASL listener and may do only what ACLs grant her.
func aclBroker(t *testing.T, extra ...string) (*testBroker, *kadm.Client) {
	t.Helper()
	b := startBroker(t, "", saslListeners(append([]string{
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS;User:admin",
	}, extra...)...)...)
	return b, newAdmin(t, b.Seed())
}

func aliceClient(t *testing.T, b *testBroker, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, b.Addr("SASL").String(), append([]kgo.Opt{
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.RequestRetries(0),
	}, opts...)...)
}

func addACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctxTimeout(t, 20*time.Second), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v", r, r.Err)
		}
	}
}

// CreateAcls, DescribeAcls and DeleteAcls with kadm: the ACLs go through
// the controller into every broker's image; describe filters (literal,
// prefixed, MATCH); delete answers what it removed; without an authorizer
// the APIs answer SECURITY_DISABLED; a principal without ALTER on the
// cluster may not create them.
func TestACLsCreateDescribeDelete(t *testing.T) {
	b, adm := aclBroker(t)
	ctx := ctxTimeout(t, 30*time.Second)
	addACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead, kadm.OpDescribe))
	addACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	addACLs(t, adm, kadm.NewACLs().Deny("User:*").DenyHosts("10.0.0.1").Groups("g").Operations(kadm.OpRead))
	// Creating the same ACL again is a success that adds nothing.
	addACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead))

	describe := func(f *kadm.ACLBuilder) int {
		t.Helper()
		res, err := adm.DescribeACLs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			n += len(r.Described)
		}
		return n
	}
	if n := describe(kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)); n != 4 {
		t.Fatalf("all ACLs: %d, want 4", n)
	}
	// MATCH: the ACLs that apply to topic app-orders: the prefixed one.
	if n := describe(kadm.NewACLs().Topics("app-orders").ResourcePatternType(kadm.ACLPatternMatch).Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny)); n != 1 {
		t.Fatalf("ACLs matching app-orders: %d, want 1", n)
	}
	if n := describe(kadm.NewACLs().Topics("orders").Allow().AllowHosts().Operations(kadm.OpRead)); n != 1 {
		t.Fatalf("READ on orders: %d, want 1", n)
	}

	// alice may not manage ACLs.
	res, err := kadm.NewClient(aliceClient(t, b)).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("x").Operations(kadm.OpAll))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice creating an ACL: %v, want CLUSTER_AUTHORIZATION_FAILED", res[0].Err)
	}

	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, r := range del {
		deleted += len(r.Deleted)
	}
	if deleted != 3 {
		t.Fatalf("deleted %d, want 3 (alice's ACLs)", deleted)
	}
	if n := describe(kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)); n != 1 {
		t.Fatalf("left %d ACLs, want 1", n)
	}

	plainBroker := startBroker(t, "")
	dres, err := newAdmin(t, plainBroker.Seed()).DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny))
	if err == nil && len(dres) > 0 {
		err = dres[0].Err
	}
	if !errors.Is(err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeAcls without an authorizer: %v, want SECURITY_DISABLED", err)
	}
}

// firstErrorCode is the first non-zero ErrorCode field anywhere in a
// response (kmsg names them all ErrorCode), 0 if none.
func firstErrorCode(resp kmsg.Response) int16 {
	var walk func(v reflect.Value) int16
	walk = func(v reflect.Value) int16 {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				return walk(v.Elem())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
					if c := int16(v.Field(i).Int()); c != 0 {
						return c
					}
					continue
				}
				if c := walk(v.Field(i)); c != 0 {
					return c
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				if c := walk(v.Index(i)); c != 0 {
					return c
				}
			}
		}
		return 0
	}
	return walk(reflect.ValueOf(resp))
}

var authzCodes = map[int16]bool{
	kerr.TopicAuthorizationFailed.Code:           true,
	kerr.GroupAuthorizationFailed.Code:           true,
	kerr.ClusterAuthorizationFailed.Code:         true,
	kerr.TransactionalIDAuthorizationFailed.Code: true,
}

// moldau acl add, list and remove, as a user runs them against a broker
// with the authorizer; the ACL they add is enforced for alice.
func TestCLIACL(t *testing.T) {
	b, adm := aclBroker(t)
	createTopic(t, adm, 1, "cli-orders")
	c := &cliCluster{brokers: b.Seed(), broker: b}
	c.ok(t, nil, "acl", "add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Describe", "--topic", "cli-orders")
	c.ok(t, nil, "acl", "add", "--deny-principal", "User:*", "--operation", "Read", "--topic", "cli-", "--resource-pattern-type", "prefixed")
	var acls []aclJSONRow
	c.okJSON(t, &acls, nil, "acl", "list")
	if len(acls) != 3 {
		t.Fatalf("listed %+v, want 3", acls)
	}
	c.okJSON(t, &acls, nil, "acl", "list", "--topic", "cli-orders", "--resource-pattern-type", "match", "--operation", "Read")
	if len(acls) != 1 || acls[0].Permission != "DENY" || acls[0].PatternType != "PREFIXED" {
		t.Fatalf("ACLs matching READ on cli-orders: %+v", acls)
	}
	ctx := ctxTimeout(t, 30*time.Second)
	alice := aliceClient(t, b)
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "cli-orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("alice's produce with the ACL: %v", err)
	}
	c.okJSON(t, &acls, nil, "acl", "remove", "--allow-principal", "User:alice", "--topic", "cli-orders")
	if len(acls) != 2 {
		t.Fatalf("removed %+v, want alice's two", acls)
	}
	c.fails(t, 2, "name a principal", nil, "acl", "add", "--operation", "Read", "--topic", "x")
}

type aclJSONRow struct {
	ResourceType string `json:"resource_type"`
	Resource     string `json:"resource"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// ACLs are metadata: they survive a clean restart and a kill -9 of the
// broker process (and a removed one stays removed), and are enforced
// again at once.
func TestACLsSurviveRestarts(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	props := []string{
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS",
	}
	p := startProcess(t, dir, port, props...)
	adm := kadm.NewClient(newClient(t, p.Addr))
	addACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("kept").Operations(kadm.OpRead))
	addACLs(t, adm, kadm.NewACLs().Allow("User:bob").Topics("gone").Operations(kadm.OpWrite))
	if _, err := adm.DeleteACLs(ctxTimeout(t, 20*time.Second), kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("gone").Operations(kadm.OpAny)); err != nil {
		t.Fatal(err)
	}
	for _, restart := range []string{"clean restart", "kill -9"} {
		if restart == "kill -9" {
			p.kill(t)
		} else {
			p.stop(t)
		}
		p = startProcess(t, dir, port, props...)
		adm := kadm.NewClient(newClient(t, p.Addr))
		res, err := adm.DescribeACLs(ctxTimeout(t, 20*time.Second), kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			for _, d := range r.Described {
				got = append(got, d.Principal+" "+d.Operation.String()+" "+d.Name)
			}
		}
		if len(got) != 1 || got[0] != "User:alice READ kept" {
			t.Fatalf("after a %s: ACLs %v, want only alice's READ on kept", restart, got)
		}
	}
}

// With an authorizer the controller listener serves only principals with
// CLUSTER_ACTION: an admin request sent straight to it by one without is
// refused, so the broker's authorization cannot be gone around.
func TestControllerListenerNeedsClusterAction(t *testing.T) {
	b := startBroker(t, "",
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin")
	ctrl := newClient(t, b.Addr("CONTROLLER").String(), kgo.RequestRetries(0))
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "sneaky", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := ctrl.SeedBrokers()[0].Request(ctxTimeout(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := firstErrorCode(resp); got != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("CreateTopics on the controller listener as User:ANONYMOUS: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(got))
	}
}
