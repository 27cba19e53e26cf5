package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcat (librdkafka) lists the broker, produces and consumes.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: install it (apt-get install -y kcat); ./test.sh does")
	}
	b := startBroker(t, "")
	out, err := exec.Command(kcat, "-L", "-b", b.Seed(), "-m", "10").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "1 brokers:") {
		t.Fatalf("kcat -L does not show the broker:\n%s", out)
	}

	var in strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	p := exec.Command(kcat, "-P", "-b", b.Seed(), "-t", "kcat-topic", "-K:", "-z", "lz4", "-m", "10")
	p.Stdin = strings.NewReader(in.String())
	if out, err := p.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	c := exec.Command(kcat, "-C", "-b", b.Seed(), "-t", "kcat-topic", "-o", "beginning", "-e", "-f", "%k=%s@%o\n", "-m", "20")
	out, err = c.CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
	for i := 0; i < 100; i++ {
		if want := fmt.Sprintf("k%d=v%d@%d\n", i, i, i); !strings.Contains(string(out), want) {
			t.Fatalf("kcat -C output lacks %q:\n%s", want, out)
		}
	}
}

// The Debian Python clients (confluent-kafka on librdkafka, and the pure
// Python kafka-python) produce and read back.
func TestPythonClients(t *testing.T) {
	b := startBroker(t, "")
	scripts := map[string]string{
		"confluent-kafka": `
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
seed = sys.argv[1]
p = Producer({"bootstrap.servers": seed, "acks": "all", "compression.type": "zstd"})
for i in range(50):
    p.produce("py-ck", key=str(i), value="v%d" % i)
assert p.flush(30) == 0
c = Consumer({"bootstrap.servers": seed, "group.id": "unused", "enable.auto.commit": False})
c.assign([TopicPartition("py-ck", 0, 0)])
got = []
while len(got) < 50:
    m = c.poll(10)
    assert m is not None, "no message within 10s after %d" % len(got)
    assert m.error() is None, m.error()
    got.append((m.offset(), m.value().decode()))
assert got == [(i, "v%d" % i) for i in range(50)], got
print("ok")
`,
		"kafka-python": `
import sys
from kafka import KafkaProducer, KafkaConsumer, TopicPartition
seed = sys.argv[1]
p = KafkaProducer(bootstrap_servers=seed, acks="all", compression_type="gzip")
for i in range(50):
    p.send("py-kp", key=str(i).encode(), value=("v%d" % i).encode())
p.flush(30)
c = KafkaConsumer(bootstrap_servers=seed, enable_auto_commit=False, consumer_timeout_ms=15000)
tp = TopicPartition("py-kp", 0)
c.assign([tp])
c.seek_to_beginning(tp)
got = [(m.offset, m.value.decode()) for _, m in zip(range(50), c)]
assert got == [(i, "v%d" % i) for i in range(50)], got
print("ok")
`,
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("/usr/bin/python3", "-c", script, b.Seed())
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(120 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("%s timed out:\n%s", name, out)
			}
			if err != nil || !strings.Contains(string(out), "ok") {
				t.Fatalf("%s: %v\n%s", name, err, out)
			}
		})
	}
}

// Fetches go from the page cache to the socket with sendfile: the broker
// process, traced with strace, makes sendfile calls that carry the
// records a consumer reads.
func TestFetchUsesSendfile(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace not found: install it (apt-get install -y strace); ./test.sh does")
	}
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	trace := filepath.Join(t.TempDir(), "strace.out")
	st := exec.Command(strace, "-f", "-p", strconv.Itoa(p.cmd.Process.Pid), "-e", "trace=sendfile", "-o", trace)
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { st.Process.Signal(os.Interrupt); st.Wait() }()
	ctx := ctxTimeout(t, 60*time.Second)
	prod := newClient(t, p.Addr, kgo.DefaultProduceTopic("sf"), kgo.AllowAutoTopicCreation())
	val := bytes.Repeat([]byte("z"), 1000)
	for i := 0; i < 100; i++ {
		prod.Produce(ctx, &kgo.Record{Value: val}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// strace attaches to the broker's threads asynchronously, so read
	// the topic from the start again until the trace shows the fetches.
	consumeAll := func() {
		cl := newClient(t, p.Addr, kgo.ConsumeTopics("sf"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer cl.Close()
		for n := 0; n < 100; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			n += fs.NumRecords()
		}
	}
	re := regexp.MustCompile(`sendfile\(\d+, \d+, \[\d+\] => \[\d+\], \d+\) = (\d+)`)
	eventually(t, 30*time.Second, func() error {
		consumeAll()
		data, _ := os.ReadFile(trace)
		var sent int
		for _, m := range re.FindAllSubmatch(data, -1) {
			n, _ := strconv.Atoi(string(m[1]))
			sent += n
		}
		if sent == 0 {
			return fmt.Errorf("no sendfile in the broker's trace:\n%s", data)
		}
		return nil
	})
}
