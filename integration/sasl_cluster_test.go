package integration

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
)

// saslClusterNode starts a node whose listeners are both SASL_SSL: the
// controller listener with PLAIN (the node's own login admin, from the
// JAAS username/password), the broker listener with PLAIN and
// SCRAM-SHA-512, inter-broker traffic (replica fetchers, markers) over
// SCRAM-SHA-512 with the credential bootstrapped by --add-scram.
func saslClusterNode(t *testing.T, p *testPKI, n clusterNode, nodes []clusterNode, ctrlPassword string, logs io.Writer) *broker.Broker {
	t.Helper()
	plainJaas := func(pass string) string {
		return `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + pass + `" user_admin="admin-secret" user_alice="alice-secret";`
	}
	overrides := append(kraftOverrides(n, nodes), "moldau.metrics.listener=",
		fmt.Sprintf("listeners=BROKER://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.ctrl),
		fmt.Sprintf("advertised.listeners=BROKER://127.0.0.1:%d", n.port),
		"listener.security.protocol.map=BROKER:SASL_SSL,CONTROLLER:SASL_SSL",
		"inter.broker.listener.name=BROKER",
		"ssl.keystore.type=PEM", "ssl.keystore.location="+p.keystore,
		"ssl.truststore.type=PEM", "ssl.truststore.location="+p.caFile,
		"sasl.mechanism.controller.protocol=PLAIN",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"listener.name.controller.plain.sasl.jaas.config="+plainJaas(ctrlPassword),
		"listener.name.broker.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"listener.name.broker.plain.sasl.jaas.config="+plainJaas("admin-secret"),
		`listener.name.broker.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
	)
	cfg, warnings, err := config.Load("", overrides)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("config: %v %v", err, warnings)
	}
	w := io.MultiWriter(logs, testWriter{t})
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", n.id)
	b, err := broker.New(cfg, broker.Options{Logger: logger, AddScram: []string{"SCRAM-SHA-512=[name=broker,password=broker-secret]"}})
	if err != nil {
		t.Fatalf("node %d: %v", n.id, err)
	}
	b.Start()
	t.Cleanup(func() { b.Close() })
	return b
}

// Three nodes whose controller and inter-broker listeners are SASL_SSL
// form a cluster and replicate (the quorum and registrations log in with
// PLAIN, the replica fetchers with SCRAM-SHA-512); a fourth configuration,
// node 3 with a wrong controller password, is refused and says so.
func TestSASLThreeNodeCluster(t *testing.T) {
	p := newTestPKI(t)
	nodes := newClusterNodes(t, 3)
	bs := make([]*broker.Broker, 2)
	for i := range 2 {
		bs[i] = saslClusterNode(t, p, nodes[i], nodes, "admin-secret", io.Discard)
	}
	// Node 3 first with a wrong password: the quorum of nodes 1 and 2
	// forms without it, and it logs why it cannot join.
	wrongLogs := &syncBuffer{}
	wrong := saslClusterNode(t, p, nodes[2], nodes, "wrong", wrongLogs)
	waitReady(t, bs...)
	eventually(t, 30*time.Second, func() error {
		if s := wrongLogs.String(); !strings.Contains(s, "SASL PLAIN login as admin") || !strings.Contains(s, "Invalid username or password") {
			return fmt.Errorf("node 3 does not log its refused login yet")
		}
		return nil
	})
	wrong.Close()

	bs = append(bs, saslClusterNode(t, p, nodes[2], nodes, "admin-secret", io.Discard))
	waitReady(t, bs...)
	seeds := make([]string, len(nodes))
	for i, n := range nodes {
		seeds[i] = n.seed()
	}
	cl := tlsClient(t, strings.Join(seeds, ","), p.ca.ClientTLS(nil), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "sasl-rf3"); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl-rf3", Partition: int32(i % 3), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	eventually(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, "sasl-rf3")
		if err != nil {
			return err
		}
		for _, pd := range md.Topics["sasl-rf3"].Partitions {
			if len(pd.ISR) != 3 {
				return fmt.Errorf("partition %d ISR %v", pd.Partition, pd.ISR)
			}
		}
		return nil
	})
	d, err := adm.DescribeUserSCRAMs(ctx, "broker")
	if err != nil || d["broker"].Err != nil || len(d["broker"].CredInfos) != 1 {
		t.Fatalf("bootstrapped credential: %+v %v", d, err)
	}
}
