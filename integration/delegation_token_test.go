package integration

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/moldau/moldau/broker"
)

// Delegation tokens (APIs 38-41) with stock clients: kadm creates,
// describes, renews and expires them over a SASL listener, and a kgo
// client logs in with SCRAM and tokenauth=true.

const tokenSecret = "delegation.token.secret.key=a-secret-shared-by-every-node"

// tokenLogin is the SCRAM mechanism of a token login: the token id as
// the user, the base64 HMAC as the password.
func tokenLogin(tok kadm.DelegationToken) sasl.Mechanism {
	return scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha256Mechanism()
}

func plainAdmin(t *testing.T, seed, user, pass string) *kadm.Client {
	return kadm.NewClient(newClient(t, seed, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())))
}

func TestDelegationTokensKgo(t *testing.T) {
	b := startBroker(t, "", saslListeners(tokenSecret, "delegation.token.expiry.check.interval.ms=200")...)
	seed := b.Addr("SASL").String()
	alice := plainAdmin(t, seed, "alice", "alice-secret")
	admin := plainAdmin(t, seed, "admin", "admin-secret")
	ctx := ctxTimeout(t, time.Minute)

	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Name: "admin"}}})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Owner.Name != "alice" || tok.TokenRequesterPrincipal.Name != "alice" || len(tok.HMAC) != 64 || tok.TokenID == "" {
		t.Fatalf("created token %+v", tok)
	}
	if d := tok.ExpiryTimestamp.Sub(tok.IssueTimestamp); d != 24*time.Hour {
		t.Errorf("expiry %v after issue, want delegation.token.expiry.time.ms (24h)", d)
	}
	// The token logs in; its principal is the owner's.
	tokenCl := newClient(t, seed, kgo.SASL(tokenLogin(tok)))
	produceConsume(t, tokenCl, "token-topic", 10)

	// A token login may not manage tokens, nor may an unauthenticated
	// PLAINTEXT client.
	if _, err := kadm.NewClient(tokenCl).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Errorf("create over a token login: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
	if _, err := newAdmin(t, b.Seed()).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Errorf("create over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
	if _, err := newAdmin(t, b.Seed()).DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Errorf("describe over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}

	// Described with its renewer, to its owner.
	ds, err := alice.DescribeDelegationTokens(ctx, kadm.Principal{Name: "alice"})
	if err != nil || len(ds) != 1 || ds[0].TokenID != tok.TokenID || string(ds[0].HMAC) != string(tok.HMAC) ||
		len(ds[0].Renewers) != 1 || ds[0].Renewers[0].Name != "admin" {
		t.Fatalf("describe: %+v %v", ds, err)
	}
	if ds, err := alice.DescribeDelegationTokens(ctx, kadm.Principal{Name: "nobody"}); err != nil || len(ds) != 0 {
		t.Fatalf("describe of another owner: %+v %v", ds, err)
	}

	// The renewer renews; a principal that is none of owner, requester
	// or renewer may not.
	exp, err := admin.RenewDelegationToken(ctx, tok.HMAC, time.Hour)
	if err != nil || !exp.Before(tok.ExpiryTimestamp) || exp.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("renew by the renewer: %v %v (was %v)", exp, err, tok.ExpiryTimestamp)
	}
	other, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &kadm.Principal{Name: "carol"}})
	if err != nil || other.Owner.Name != "carol" || other.TokenRequesterPrincipal.Name != "admin" {
		t.Fatalf("token for another owner: %+v %v", other, err)
	}
	if _, err := alice.RenewDelegationToken(ctx, other.HMAC, time.Hour); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Errorf("renew by a stranger: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", err)
	}
	if _, err := alice.RenewDelegationToken(ctx, []byte("no such hmac"), time.Hour); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Errorf("renew of an unknown token: %v, want DELEGATION_TOKEN_NOT_FOUND", err)
	}

	// Expired now, the token no longer logs in nor is described.
	if _, err := alice.ExpireDelegationToken(ctx, tok.HMAC, -time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := saslPing(t, seed, tokenLogin(tok)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("login with an expired token: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if ds, err := alice.DescribeDelegationTokens(ctx); err != nil || slices.ContainsFunc(ds, func(d kadm.DelegationToken) bool { return d.TokenID == tok.TokenID }) {
		t.Fatalf("describe after expiry: %+v %v", ds, err)
	}

	// A token past its max lifetime is swept by the controller
	// (delegation.token.expiry.check.interval.ms).
	short, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{MaxLifetime: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		ds, err := alice.DescribeDelegationTokens(ctx)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ds, func(d kadm.DelegationToken) bool { return d.TokenID == short.TokenID }) {
			return fmt.Errorf("the expired token %s is still described", short.TokenID)
		}
		return nil
	})
}

// Without delegation.token.secret.key tokens are disabled.
func TestDelegationTokensDisabled(t *testing.T) {
	b := startBroker(t, "", saslListeners()...)
	alice := plainAdmin(t, b.Addr("SASL").String(), "alice", "alice-secret")
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("create: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}
	if _, err := alice.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("describe: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}
	// The request versions the broker serves are Kafka's.
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, newClient(t, b.Seed()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int16]int16{38: 3, 39: 2, 40: 2, 41: 3}
	for _, k := range resp.ApiKeys {
		if max, ok := want[k.ApiKey]; ok {
			if k.MaxVersion != max {
				t.Errorf("%s max v%d, want v%d", kmsg.NameForKey(k.ApiKey), k.MaxVersion, max)
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) > 0 {
		t.Errorf("ApiVersions lacks %v", want)
	}
}

// A token survives a clean restart and a kill -9 of the broker: it logs
// in afterwards and can still be renewed.
func TestDelegationTokenSurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	ports := freePorts(t, 2)
	plainAddr, saslAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	var args []string
	for _, o := range append(saslListeners(tokenSecret), "log.dirs="+dir, "moldau.metrics.listener=",
		fmt.Sprintf("listeners=PLAINTEXT://%s,SASL://%s", plainAddr, saslAddr)) {
		args = append(args, "--override", o)
	}
	p := launchProcess(t, plainAddr, args...)
	p.waitStarted(t)
	ctx := ctxTimeout(t, 2*time.Minute)
	tok, err := plainAdmin(t, saslAddr, "alice", "alice-secret").CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil {
		t.Fatal(err)
	}
	for _, restart := range []string{"clean restart", "kill -9"} {
		if restart == "kill -9" {
			p.kill(t)
		} else {
			p.stop(t)
		}
		p = launchProcess(t, plainAddr, args...)
		p.waitStarted(t)
		if err := saslPing(t, saslAddr, tokenLogin(tok)); err != nil {
			t.Fatalf("token login after a %s: %v", restart, err)
		}
		if _, err := plainAdmin(t, saslAddr, "alice", "alice-secret").RenewDelegationToken(ctx, tok.HMAC, time.Hour); err != nil {
			t.Fatalf("renew after a %s: %v", restart, err)
		}
	}
}

// On three nodes a token created through any node (its request carried
// to the active controller in an Envelope) logs in on every node, and
// still does once the active controller is gone; the survivors renew and
// expire it.
func TestDelegationTokensThreeNodes(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	saslPorts := make([]int, len(nodes))
	bs := make([]*broker.Broker, len(nodes))
	for i, n := range nodes {
		saslPorts[i] = freePort(t)
		bs[i] = startInProcessNode(t, n, nodes,
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d,SASL://127.0.0.1:%d", n.port, n.ctrl, saslPorts[i]),
			fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d,SASL://127.0.0.1:%d", n.port, saslPorts[i]),
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT",
			"inter.broker.listener.name=PLAINTEXT",
			"listener.name.sasl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
			`listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
			tokenSecret)
	}
	waitReady(t, bs...)
	saslAddr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", saslPorts[i]) }
	ctx := ctxTimeout(t, 2*time.Minute)
	active := bs[0].ActiveController()
	var toks []kadm.DelegationToken
	for i := range nodes {
		tok, err := plainAdmin(t, saslAddr(i), "alice", "alice-secret").CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
		if err != nil {
			t.Fatalf("create through node %d (active controller %d): %v", nodes[i].id, active, err)
		}
		toks = append(toks, tok)
	}
	for i := range nodes {
		for _, tok := range toks {
			if err := saslPing(t, saslAddr(i), tokenLogin(tok)); err != nil {
				t.Fatalf("token %s on node %d: %v", tok.TokenID, nodes[i].id, err)
			}
		}
	}
	// The active controller goes; the others elect one and keep the tokens.
	var survivors []int
	for i, n := range nodes {
		if n.id == active {
			bs[i].Close()
		} else {
			survivors = append(survivors, i)
		}
	}
	adm := plainAdmin(t, saslAddr(survivors[0]), "alice", "alice-secret")
	if _, err := adm.RenewDelegationToken(ctx, toks[0].HMAC, time.Hour); err != nil {
		t.Fatalf("renew after the active controller %d closed: %v", active, err)
	}
	if _, err := adm.ExpireDelegationToken(ctx, toks[1].HMAC, -time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, i := range survivors {
		if err := saslPing(t, saslAddr(i), tokenLogin(toks[0])); err != nil {
			t.Fatalf("token on node %d after the failover: %v", nodes[i].id, err)
		}
		eventually(t, 10*time.Second, func() error {
			if err := saslPing(t, saslAddr(i), tokenLogin(toks[1])); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				return fmt.Errorf("expired token on node %d: %v", nodes[i].id, err)
			}
			return nil
		})
	}
}

// With the StandardAuthorizer, a token for another owner needs
// CREATE_TOKENS on that USER; the owner's tokens are described to the
// owner, and to others only with DESCRIBE on the token or DESCRIBE_TOKENS
// on its owner.
func TestDelegationTokensAuthorized(t *testing.T) {
	b, adm := aclBroker(t, tokenSecret)
	seed := b.Addr("SASL").String()
	alice := plainAdmin(t, seed, "alice", "alice-secret")
	admin := plainAdmin(t, seed, "admin", "admin-secret")
	ctx := ctxTimeout(t, time.Minute)
	carol := &kadm.Principal{Name: "carol"}
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: carol}); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Fatalf("token for carol without CREATE_TOKENS: %v, want DELEGATION_TOKEN_AUTHORIZATION_FAILED", err)
	}
	createACL := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeUser, "User:carol", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationCreateTokens, kmsg.ACLPermissionTypeAllow
	createACL.Creations = append(createACL.Creations, c)
	if resp, err := createACL.RequestWith(ctx, newClient(t, b.Seed())); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("create ACL: %+v %v", resp, err)
	}
	var carolTok kadm.DelegationToken
	eventually(t, 10*time.Second, func() (err error) {
		carolTok, err = alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: carol})
		return err
	})
	if carolTok.Owner.Name != "carol" || carolTok.TokenRequesterPrincipal.Name != "alice" {
		t.Fatalf("carol's token: %+v", carolTok)
	}
	adminTok, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ts kadm.DelegationTokens) (out []string) {
		for _, d := range ts {
			out = append(out, d.TokenID)
		}
		return out
	}
	// alice requested carol's token, so she sees it; admin's she does not.
	ds, err := alice.DescribeDelegationTokens(ctx)
	if err != nil || !slices.Equal(ids(ds), []string{carolTok.TokenID}) {
		t.Fatalf("alice describes %v %v, want only %s", ids(ds), err, carolTok.TokenID)
	}
	addACLs(t, adm, allow().DelegationTokens(adminTok.TokenID).Operations(kadm.OpDescribe))
	eventually(t, 10*time.Second, func() error {
		ds, err := alice.DescribeDelegationTokens(ctx)
		if err != nil || len(ds) != 2 {
			return fmt.Errorf("alice describes %v %v, want two tokens", ids(ds), err)
		}
		return nil
	})
	// The super user sees every token.
	if ds, err := admin.DescribeDelegationTokens(ctx); err != nil || len(ds) != 2 {
		t.Fatalf("admin describes %v %v", ids(ds), err)
	}
}

// moldau token create, describe, renew and expire over a SASL listener
// (--command-config), as kafka-delegation-tokens.sh; the created token
// logs in.
func TestDelegationTokenCLI(t *testing.T) {
	b := startBroker(t, "", saslListeners(tokenSecret)...)
	seed := b.Addr("SASL").String()
	props := filepath.Join(t.TempDir(), "alice.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cliCluster{brokers: seed}
	var tok struct {
		TokenID   string   `json:"token_id"`
		HMAC      string   `json:"hmac"`
		Owner     string   `json:"owner"`
		Renewers  []string `json:"renewers"`
		Expiry    string   `json:"expiry_timestamp"`
		Requester string   `json:"requester"`
	}
	c.okJSON(t, &tok, nil, "token", "create", "--command-config", props, "--renewer", "User:admin", "--max-life-time", "48h")
	if tok.Owner != "User:alice" || tok.Requester != "User:alice" || len(tok.Renewers) != 1 || tok.Renewers[0] != "User:admin" || tok.TokenID == "" {
		t.Fatalf("created %+v", tok)
	}
	hmac, err := base64.StdEncoding.DecodeString(tok.HMAC)
	if err != nil {
		t.Fatal(err)
	}
	if err := saslPing(t, seed, tokenLogin(kadm.DelegationToken{TokenID: tok.TokenID, HMAC: hmac})); err != nil {
		t.Fatalf("login with the CLI's token: %v", err)
	}
	if out := c.ok(t, nil, "token", "describe", "--command-config", props, "--owner", "User:alice"); !strings.Contains(out, tok.TokenID) || !strings.Contains(out, "User:admin") {
		t.Fatalf("describe:\n%s", out)
	}
	if out := c.ok(t, nil, "token", "renew", "--command-config", props, "--hmac", tok.HMAC, "--renew-time", "1h"); !strings.Contains(out, "renewed") {
		t.Fatalf("renew:\n%s", out)
	}
	c.ok(t, nil, "token", "expire", "--command-config", props, "--hmac", tok.HMAC)
	if out := c.ok(t, nil, "token", "describe", "--command-config", props); strings.Contains(out, tok.TokenID) {
		t.Fatalf("expired token still described:\n%s", out)
	}
	c.fails(t, 1, "DELEGATION_TOKEN_NOT_FOUND", nil, "token", "renew", "--command-config", props, "--hmac", tok.HMAC)
	// Without credentials the PLAINTEXT listener refuses token requests.
	(&cliCluster{brokers: b.Seed()}).fails(t, 1, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", nil, "token", "create")
}
