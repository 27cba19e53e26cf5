package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// runClient runs a client command with a deadline and returns its output.
func runClient(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v timed out:\n%s", cmd.Args, out)
	}
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	return string(out)
}

// Stock clients over SASL: kcat (librdkafka) with SASL_SSL and
// SCRAM-SHA-512, confluent-kafka with SCRAM-SHA-256, kafka-python with
// PLAIN (SaslHandshake v0 or v1, whichever it picks); each produces and
// reads back, and a wrong password fails.
func TestSASLStockClients(t *testing.T) {
	p := newTestPKI(t)
	b := startBroker(t, "", saslListeners(
		"listeners=PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0,SASLSSL://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,SASLSSL:SASL_SSL",
		"listener.name.saslssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.saslssl.ssl.keystore.type=PEM", "listener.name.saslssl.ssl.keystore.location="+p.keystore,
	)...)
	setScram(t, b.Seed(), "kcat", "kcat-secret", kadm.ScramSha512)
	setScram(t, b.Seed(), "ck", "ck-secret", kadm.ScramSha256)
	sasl, saslssl := b.Addr("SASL").String(), b.Addr("SASLSSL").String()

	t.Run("kcat", func(t *testing.T) {
		args := func(pass string, more ...string) []string {
			return append([]string{"-b", saslssl, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
				"-X", "sasl.username=kcat", "-X", "sasl.password=" + pass, "-X", "ssl.ca.location=" + p.caFile, "-m", "15"}, more...)
		}
		var in strings.Builder
		for i := range 50 {
			fmt.Fprintf(&in, "v%d\n", i)
		}
		pr := exec.Command("kcat", args("kcat-secret", "-P", "-t", "kcat-sasl")...)
		pr.Stdin = strings.NewReader(in.String())
		runClient(t, pr)
		out := runClient(t, exec.Command("kcat", args("kcat-secret", "-C", "-t", "kcat-sasl", "-o", "beginning", "-e", "-f", "%s@%o\n")...))
		for i := range 50 {
			if !strings.Contains(out, fmt.Sprintf("v%d@%d\n", i, i)) {
				t.Fatalf("kcat -C lacks v%d:\n%s", i, out)
			}
		}
		bad, err := exec.Command("kcat", args("wrong", "-L")...).CombinedOutput()
		if err == nil || !strings.Contains(string(bad), "Authentication failed") {
			t.Fatalf("kcat with a wrong password: %v\n%s", err, bad)
		}
	})
	scripts := map[string]string{
		"confluent-kafka": `
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
conf = {"bootstrap.servers": sys.argv[1], "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "ck", "sasl.password": "ck-secret"}
p = Producer(dict(conf, acks="all"))
for i in range(50):
    p.produce("py-ck-sasl", value="v%d" % i)
assert p.flush(30) == 0
c = Consumer(dict(conf, **{"group.id": "py-ck-sasl", "auto.offset.reset": "earliest"}))
c.subscribe(["py-ck-sasl"])
got = []
while len(got) < 50:
    m = c.poll(15)
    assert m is not None, "no message within 15s after %d" % len(got)
    assert m.error() is None, m.error()
    got.append(m.value().decode())
c.close()
assert got == ["v%d" % i for i in range(50)], got
print("ok")
`,
		"kafka-python": `
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
conf = dict(bootstrap_servers=sys.argv[1], security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
            sasl_plain_username="alice", sasl_plain_password="alice-secret")
KafkaAdminClient(**conf).create_topics([NewTopic("py-kp-sasl", 1, 1)])
p = KafkaProducer(acks="all", **conf)
for i in range(50):
    p.send("py-kp-sasl", ("v%d" % i).encode())
p.flush(30)
c = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=15000, **conf)
tp = TopicPartition("py-kp-sasl", 0)
c.assign([tp])
c.seek_to_beginning(tp)
got = [m.value.decode() for _, m in zip(range(50), c)]
assert got == ["v%d" % i for i in range(50)], got
print("ok")
`,
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			if out := runClient(t, exec.Command("/usr/bin/python3", "-c", script, sasl)); !strings.Contains(out, "ok") {
				t.Fatalf("%s:\n%s", name, out)
			}
		})
	}
}
