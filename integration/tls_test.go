package integration

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/security/securitytest"
)

// testPKI is a CA, a broker certificate (SANs localhost and 127.0.0.1) and
// a client certificate, made in the test.
type testPKI struct {
	ca             *securitytest.CA
	broker, client *securitytest.Cert
	caFile         string
	keystore       string // the broker's PEM key store file
}

func newTestPKI(t testing.TB) *testPKI {
	ca := securitytest.NewCA(t, "moldau-test-ca")
	p := &testPKI{
		ca:     ca,
		broker: ca.Issue(t, pkix.Name{CommonName: "broker", Organization: []string{"Moldau"}}),
		client: ca.Issue(t, pkix.Name{CommonName: "client", Organization: []string{"Moldau"}}),
		caFile: ca.CAFile(t),
	}
	p.keystore = p.broker.KeystorePEM(t, "broker")
	return p
}

// sslListener adds an SSL listener named SSL beside PLAINTEXT (the
// first, so Seed() stays PLAINTEXT), with ssl.client.auth=auth.
func (p *testPKI) sslListener(auth string) []string {
	return []string{
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.name.ssl.ssl.keystore.type=PEM",
		"listener.name.ssl.ssl.keystore.location=" + p.keystore,
		"listener.name.ssl.ssl.truststore.type=PEM",
		"listener.name.ssl.ssl.truststore.location=" + p.caFile,
		"listener.name.ssl.ssl.client.auth=" + auth,
	}
}

func tlsClient(t testing.TB, seed string, cfg *tls.Config, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, seed, append([]kgo.Opt{kgo.DialTLSConfig(cfg)}, opts...)...)
}

// produceConsume produces n records to a new topic through cl and reads
// them back.
func produceConsume(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume after %d: %v", got, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprintf("v%d", got) {
				t.Fatalf("record %d: %q", got, r.Value)
			}
			got++
		})
	}
}

// A kgo client with a certificate produces and consumes over an mTLS
// listener (ssl.client.auth=required); one without a certificate, and a
// PLAINTEXT client on the TLS port, are closed, and the others go on.
func TestTLSMutualKgo(t *testing.T) {
	p := newTestPKI(t)
	b := startBroker(t, "", p.sslListener("required")...)
	ssl := b.Addr("SSL").String()
	cl := tlsClient(t, ssl, p.ca.ClientTLS(p.client))
	produceConsume(t, cl, "tls-mtls", 100)

	noCert := tlsClient(t, ssl, p.ca.ClientTLS(nil), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err := noCert.Ping(ctxTimeout(t, 10*time.Second)); err == nil {
		t.Fatal("a client without a certificate was served with ssl.client.auth=required")
	}
	plain := newClient(t, ssl, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err := plain.Ping(ctxTimeout(t, 10*time.Second)); err == nil {
		t.Fatal("a PLAINTEXT client was served on the SSL listener")
	}
	// The TLS client and the PLAINTEXT listener are unaffected.
	if err := cl.ProduceSync(ctxTimeout(t, 10*time.Second), &kgo.Record{Topic: "tls-mtls", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := newClient(t, b.Seed()).Ping(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(b.Logs.String(), "failed authentication") {
			return errors.New("no failed-authentication line in the log")
		}
		return nil
	})
}

// kcat (librdkafka) over mTLS with PEM files, as its users configure it.
func TestTLSKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: install it (apt-get install -y kcat); ./test.sh does")
	}
	p := newTestPKI(t)
	b := startBroker(t, "", p.sslListener("required")...)
	certFile, keyFile := p.client.PEMFiles(t, "client")
	args := func(rest ...string) []string {
		return append([]string{"-b", b.Addr("SSL").String(), "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + p.caFile,
			"-X", "ssl.certificate.location=" + certFile, "-X", "ssl.key.location=" + keyFile}, rest...)
	}
	if out, err := exec.Command(kcat, args("-L", "-m", "10")...).CombinedOutput(); err != nil || !strings.Contains(string(out), "1 brokers:") {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	prod := exec.Command(kcat, args("-P", "-t", "kcat-tls", "-m", "10")...)
	prod.Stdin = strings.NewReader("one\ntwo\nthree\n")
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	out, err := exec.Command(kcat, args("-C", "-t", "kcat-tls", "-o", "beginning", "-e", "-m", "20")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "one\ntwo\nthree") {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
}

// confluent-kafka (Debian's python3-confluent-kafka, librdkafka) over mTLS.
func TestTLSPythonConfluent(t *testing.T) {
	p := newTestPKI(t)
	b := startBroker(t, "", p.sslListener("required")...)
	certFile, keyFile := p.client.PEMFiles(t, "client")
	script := `
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
seed, ca, cert, key = sys.argv[1:5]
tls = {"bootstrap.servers": seed, "security.protocol": "SSL", "ssl.ca.location": ca,
       "ssl.certificate.location": cert, "ssl.key.location": key}
p = Producer(dict(tls, acks="all"))
for i in range(50):
    p.produce("py-tls", key=str(i), value="v%d" % i)
assert p.flush(30) == 0
c = Consumer(dict(tls, **{"group.id": "py-tls", "enable.auto.commit": False}))
c.assign([TopicPartition("py-tls", 0, 0)])
got = []
while len(got) < 50:
    m = c.poll(10)
    assert m is not None, "no message within 10s after %d" % len(got)
    assert m.error() is None, m.error()
    got.append(m.value().decode())
assert got == ["v%d" % i for i in range(50)], got
print("ok")
`
	cmd := exec.CommandContext(ctxTimeout(t, 120*time.Second), "/usr/bin/python3", "-c", script, b.Addr("SSL").String(), p.caFile, certFile, keyFile)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("confluent-kafka over mTLS: %v\n%s", err, out)
	}
}

// Three nodes whose every listener is SSL with ssl.client.auth=required:
// the quorum, broker registration, the controller channel and the
// replica fetchers all run over mTLS, and a topic of RF 3 replicates.
func TestTLSThreeNodeCluster(t *testing.T) {
	p := newTestPKI(t)
	nodes := newClusterNodes(t, 3)
	bs := make([]*broker.Broker, 3)
	for i, n := range nodes {
		bs[i] = startInProcessNode(t, n, nodes,
			fmt.Sprintf("listeners=SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.ctrl),
			fmt.Sprintf("advertised.listeners=SSL://127.0.0.1:%d", n.port),
			"listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL",
			"security.inter.broker.protocol=SSL",
			"ssl.keystore.type=PEM", "ssl.keystore.location="+p.keystore,
			"ssl.truststore.type=PEM", "ssl.truststore.location="+p.caFile,
			"ssl.client.auth=required")
	}
	t.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	waitReady(t, bs...)
	seeds := make([]string, len(nodes))
	for i, n := range nodes {
		seeds[i] = n.seed()
	}
	cl := tlsClient(t, strings.Join(seeds, ","), p.ca.ClientTLS(p.client), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "tls-rf3"); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tls-rf3", Partition: int32(i % 3), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	eventually(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, "tls-rf3")
		if err != nil {
			return err
		}
		for _, pd := range md.Topics["tls-rf3"].Partitions {
			if len(pd.ISR) != 3 {
				return fmt.Errorf("partition %d ISR %v", pd.Partition, pd.ISR)
			}
		}
		return nil
	})
	// acks=all with an ISR of 3: every replica has them; the end offsets add up.
	ends, err := adm.ListEndOffsets(ctx, "tls-rf3")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	if sum != 60 {
		t.Fatalf("end offsets add up to %d, want 60", sum)
	}
}

// tlsAPIVersions does an ApiVersions round trip on a raw connection.
func tlsAPIVersions(c net.Conn, corr int32) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "moldau-test", "1"
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("tls-test")).AppendRequest(nil, req, corr)); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		return fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	_, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(hdr[:4]))-4)
	return err
}

// Rotation without a restart: altering the listener's key store location
// (IncrementalAlterConfigs on the broker) makes new handshakes present
// the new certificate while a connection made before keeps working; a
// key store that does not load is refused with INVALID_REQUEST.
func TestTLSCertificateRotation(t *testing.T) {
	p := newTestPKI(t)
	b := startBroker(t, "", p.sslListener("none")...)
	ssl := b.Addr("SSL").String()
	serial := func(c *tls.Conn) int64 { return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64() }
	old, err := tls.Dial("tcp", ssl, p.ca.ClientTLS(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := tlsAPIVersions(old, 1); err != nil {
		t.Fatal(err)
	}
	if got := serial(old); got != p.broker.Cert.SerialNumber.Int64() {
		t.Fatalf("serial %d, want %d", got, p.broker.Cert.SerialNumber.Int64())
	}
	adm := newAdmin(t, b.Seed())
	alter := func(value string) error {
		rs, err := adm.AlterBrokerConfigs(ctxTimeout(t, 30*time.Second), []kadm.AlterConfig{{Name: "listener.name.ssl.ssl.keystore.location", Value: &value}}, 1)
		if err != nil {
			return err
		}
		if rs[0].Err != nil {
			return fmt.Errorf("%w: %s", rs[0].Err, rs[0].ErrMessage)
		}
		return nil
	}
	if err := alter("/nonexistent/keystore.pem"); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("a key store that does not load: %v, want INVALID_REQUEST", err)
	}
	next := p.ca.Issue(t, p.broker.Cert.Subject)
	if err := alter(next.KeystorePEM(t, "broker-next")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		c, err := tls.Dial("tcp", ssl, p.ca.ClientTLS(nil))
		if err != nil {
			return err
		}
		defer c.Close()
		if got := serial(c); got != next.Cert.SerialNumber.Int64() {
			return fmt.Errorf("new connection: serial %d, want %d", got, next.Cert.SerialNumber.Int64())
		}
		return tlsAPIVersions(c, 1)
	})
	if err := tlsAPIVersions(old, 2); err != nil {
		t.Fatalf("the connection made before the rotation: %v", err)
	}
	// Another subject is refused (ssl.allow.dn.changes=false).
	other := p.ca.Issue(t, pkix.Name{CommonName: "someone-else"})
	if err := alter(other.KeystorePEM(t, "other")); !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "DistinguishedName does not match") {
		t.Fatalf("another DN: %v", err)
	}
}

// A broker with an SSL listener whose key store is missing does not start.
func TestTLSBadKeystoreStartup(t *testing.T) {
	p := newTestPKI(t)
	p.keystore = "/nonexistent/keystore.pem"
	cfg, _, err := config.Load("", append([]string{"log.dirs=" + t.TempDir(), "moldau.metrics.listener="}, p.sslListener("none")...))
	if err != nil {
		t.Fatal(err)
	}
	b, cfgErr := broker.New(cfg, broker.Options{})
	if cfgErr == nil {
		b.Close()
	}
	if cfgErr == nil || !strings.Contains(cfgErr.Error(), "Failed to load PEM SSL keystore /nonexistent/keystore.pem") {
		t.Fatalf("start-up error %v", cfgErr)
	}
}
