package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslListeners adds a SASL_PLAINTEXT listener named SASL beside
// PLAINTEXT (the first, so Seed() stays PLAINTEXT) with PLAIN and both
// SCRAM mechanisms; PLAIN's users are alice and the broker's own admin.
func saslListeners(extra ...string) []string {
	return append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.name.sasl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		`listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
	}, extra...)
}

// setScram creates a SCRAM credential through AlterUserScramCredentials.
func setScram(t *testing.T, seed, user, password string, mech kadm.ScramMechanism) {
	t.Helper()
	res, err := newAdmin(t, seed).AlterUserSCRAMs(ctxTimeout(t, 20*time.Second), nil,
		[]kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: 4096, Password: password}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
}

func saslPing(t *testing.T, seed string, m sasl.Mechanism) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.SASL(m), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// PLAIN and SCRAM-SHA-256/512 with kgo over a SASL_PLAINTEXT listener:
// produce and consume; wrong passwords and unknown users get
// SASL_AUTHENTICATION_FAILED; the principal is User:<name>.
func TestSASLPlainScramKgo(t *testing.T) {
	b := startBroker(t, "", saslListeners()...)
	seed := b.Addr("SASL").String()
	setScram(t, b.Seed(), "bob", "bob-secret", kadm.ScramSha256)
	setScram(t, b.Seed(), "carol", "carol-secret", kadm.ScramSha512)

	for name, m := range map[string]sasl.Mechanism{
		"plain":    plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"scram256": scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism(),
		"scram512": scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism(),
	} {
		t.Run(name, func(t *testing.T) {
			produceConsume(t, newClient(t, seed, kgo.SASL(m)), "sasl-"+name, 20)
		})
	}
	for name, m := range map[string]sasl.Mechanism{
		"plain-wrong":    plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(),
		"plain-unknown":  plain.Auth{User: "mallory", Pass: "x"}.AsMechanism(),
		"scram256-wrong": scram.Auth{User: "bob", Pass: "nope"}.AsSha256Mechanism(),
		"scram512-on256": scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(),
		"scram-unknown":  scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(),
	} {
		if err := saslPing(t, seed, m); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: got %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if !strings.Contains(b.Logs.String(), "failed authentication") {
		t.Error("no failed authentication in the log")
	}
}

// moldau serve --add-scram creates the first admin of a new cluster;
// with it, moldau user scram set/describe/delete work over the SCRAM
// listener through --command-config, and the new user logs in.
func TestSASLServeAddScramAndUserCLI(t *testing.T) {
	ports := freePorts(t, 2)
	plainAddr, saslAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	p := launchProcessEnv(t, plainAddr, nil,
		"--override", "log.dirs="+t.TempDir(),
		"--override", fmt.Sprintf("listeners=PLAINTEXT://%s,SASL://%s", plainAddr, saslAddr),
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
		"--override", "inter.broker.listener.name=PLAINTEXT",
		"--override", "sasl.enabled.mechanisms=SCRAM-SHA-512",
		"--override", "moldau.metrics.listener=",
		"--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]")
	p.waitStarted(t)
	props := filepath.Join(t.TempDir(), "admin.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cliCluster{brokers: saslAddr}
	c.ok(t, nil, "user", "scram", "set", "--command-config", props, "--user", "dave", "--mechanism", "SCRAM-SHA-256", "--password", "dave-secret", "--iterations", "4096")
	out := c.ok(t, nil, "user", "scram", "describe", "--command-config", props)
	for _, want := range []string{"admin", "SCRAM-SHA-512", "8192", "dave", "SCRAM-SHA-256"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	if err := saslPing(t, saslAddr, scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha512Mechanism()); err != nil {
		t.Fatalf("admin login: %v", err)
	}
	c.fails(t, 1, "RESOURCE_NOT_FOUND", nil, "user", "scram", "delete", "--command-config", props, "--user", "nobody")
	c.fails(t, 1, "iterations", nil, "user", "scram", "set", "--command-config", props, "--user", "x", "--password", "y", "--iterations", "100")
	c.ok(t, nil, "user", "scram", "delete", "--command-config", props, "--user", "dave", "--mechanism", "SCRAM-SHA-256")
	// Without --command-config the SASL listener refuses the CLI.
	if res := c.moldau(t, nil, "cluster", "info"); res.code == 0 {
		t.Fatalf("cluster info without credentials succeeded:\n%s", res.stdout)
	}
}
