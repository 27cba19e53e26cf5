package integration

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// consumerProc is a group consumer process (kcat or a Python client)
// printing one line per record: "rec <partition> <offset> <value>" (the
// format strings below make every client print that).
type consumerProc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu     sync.Mutex
	recs   []consumedRec
	output strings.Builder
}

type consumedRec struct {
	partition int32
	offset    int64
	value     string
}

func startConsumerProc(t *testing.T, name string, args ...string) *consumerProc {
	t.Helper()
	c := &consumerProc{name: name, cmd: exec.Command(args[0], args[1:]...), done: make(chan struct{})}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = &lockedWriter{c: c}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.output.WriteString(line + "\n")
			if f := strings.SplitN(line, " ", 4); len(f) == 4 && f[0] == "rec" {
				p, _ := strconv.Atoi(f[1])
				o, _ := strconv.ParseInt(f[2], 10, 64)
				c.recs = append(c.recs, consumedRec{int32(p), o, f[3]})
			}
			c.mu.Unlock()
		}
		c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("%s output:\n%s", c.name, c.out())
		}
	})
	return c
}

type lockedWriter struct{ c *consumerProc }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.output.Write(p)
}

func (c *consumerProc) out() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.output.String()
}

func (c *consumerProc) consumed() []consumedRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]consumedRec(nil), c.recs...)
}

// stop asks the process to finish (SIGTERM for kcat, closing stdin for the
// Python scripts) and waits.
func (c *consumerProc) stop(t *testing.T, signal bool) {
	t.Helper()
	if signal {
		c.cmd.Process.Signal(syscall.SIGTERM)
	} else {
		c.stdin.Close()
	}
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop:\n%s", c.name, c.out())
	}
}

// union returns every (partition, offset) consumed by procs, and the
// duplicates.
func union(procs ...*consumerProc) (map[[2]int64]string, [][2]int64) {
	all := map[[2]int64]string{}
	var dups [][2]int64
	for _, p := range procs {
		for _, r := range p.consumed() {
			k := [2]int64{int64(r.partition), r.offset}
			if _, ok := all[k]; ok {
				dups = append(dups, k)
			}
			all[k] = r.value
		}
	}
	return all, dups
}

// groupMembers returns the members of a group and the partitions each
// holds, from DescribeGroups.
func groupMembers(t testing.TB, adm *kadm.Client, group string) (string, map[string][]int32, error) {
	described, err := adm.DescribeGroups(ctxTimeout(t, 10*time.Second), group)
	if err != nil {
		return "", nil, err
	}
	g := described[group]
	members := map[string][]int32{}
	for _, m := range g.Members {
		ca, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, tp := range ca.Topics {
			members[m.MemberID] = append(members[m.MemberID], tp.Partitions...)
		}
	}
	return g.State, members, g.Err
}

func committedSum(t testing.TB, adm *kadm.Client, group string) (int64, error) {
	offsets, err := adm.FetchOffsets(ctxTimeout(t, 10*time.Second), group)
	if err != nil {
		return 0, err
	}
	var sum int64
	offsets.Each(func(o kadm.OffsetResponse) { sum += o.At })
	return sum, nil
}

// Three kcat -G balanced consumers share a 6-partition topic; one is
// killed and its partitions move to the others within the session
// timeout; the broker is restarted cleanly and with kill -9, and the group
// and its committed offsets are still there: a new consumer resumes with
// no record lost or repeated.
func TestKcatBalancedConsumers(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: install it (apt-get install -y kcat); ./test.sh does")
	}
	dir := t.TempDir()
	port := freePort(t)
	overrides := []string{"group.initial.rebalance.delay.ms=0"}
	p := startProcess(t, dir, port, overrides...)
	adm := newAdmin(t, p.Addr)
	createTopic(t, adm, 6, "kg")
	produceN(t, p.Addr, "kg", 600, "a")

	const sessionTimeout = 6 * time.Second
	kcatArgs := func(extra ...string) []string {
		return append([]string{kcat, "-b", p.Addr, "-G", "kg-group", "-u", "-q",
			"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
			"-X", "auto.commit.interval.ms=100", "-X", "auto.offset.reset=earliest",
			"-f", "rec %p %o %s\n"}, append(extra, "kg")...)
	}
	var procs []*consumerProc
	for i := range 3 {
		procs = append(procs, startConsumerProc(t, fmt.Sprintf("kcat-%d", i), kcatArgs()...))
	}
	eventually(t, 60*time.Second, func() error {
		state, members, err := groupMembers(t, adm, "kg-group")
		if err != nil {
			return err
		}
		if state != "Stable" || len(members) != 3 {
			return fmt.Errorf("group %s with %d members", state, len(members))
		}
		for m, ps := range members {
			if len(ps) != 2 {
				return fmt.Errorf("member %s holds %v", m, ps)
			}
		}
		if all, _ := union(procs...); len(all) != 600 {
			return fmt.Errorf("consumed %d of 600", len(all))
		}
		return nil
	})
	if _, dups := union(procs...); len(dups) > 0 {
		t.Fatalf("records consumed twice: %v", dups)
	}
	// Every record is committed (auto-commit), so the kill below loses
	// nothing and repeats nothing.
	eventually(t, 30*time.Second, func() error {
		if sum, err := committedSum(t, adm, "kg-group"); err != nil || sum != 600 {
			return fmt.Errorf("committed %d of 600 (%v)", sum, err)
		}
		return nil
	})

	// Kill one: no LeaveGroup, the session timeout finds it.
	victim := procs[0]
	victim.cmd.Process.Kill()
	<-victim.done
	killed := time.Now()
	eventually(t, 3*sessionTimeout, func() error {
		state, members, err := groupMembers(t, adm, "kg-group")
		if err != nil {
			return err
		}
		if state != "Stable" || len(members) != 2 {
			return fmt.Errorf("group %s with %d members", state, len(members))
		}
		return nil
	})
	moved := time.Since(killed)
	t.Logf("partitions moved %v after the kill (session timeout %v)", moved.Round(10*time.Millisecond), sessionTimeout)
	// Detection takes the session timeout; then one heartbeat for the
	// others to learn of the rebalance and one join/sync round.
	if moved > sessionTimeout+2*time.Second {
		t.Fatalf("partitions moved %v after the kill; session timeout %v", moved, sessionTimeout)
	}
	produceN(t, p.Addr, "kg", 300, "b")
	eventually(t, 60*time.Second, func() error {
		if all, _ := union(procs...); len(all) != 900 {
			return fmt.Errorf("consumed %d of 900", len(all))
		}
		if sum, err := committedSum(t, adm, "kg-group"); err != nil || sum != 900 {
			return fmt.Errorf("committed %d of 900 (%v)", sum, err)
		}
		return nil
	})
	// Everything was committed before the kill: nothing is repeated.
	if _, dups := union(procs...); len(dups) > 0 {
		t.Fatalf("records consumed twice after the kill: %v", dups)
	}
	for _, c := range procs[1:] {
		c.stop(t, true)
	}

	checkGroup := func(addr string) {
		t.Helper()
		adm := newAdmin(t, addr)
		eventually(t, 30*time.Second, func() error {
			groups, err := adm.ListGroups(ctxTimeout(t, 10*time.Second))
			if err != nil {
				return err
			}
			if !strings.Contains(strings.Join(groups.Groups(), ","), "kg-group") {
				return fmt.Errorf("group not listed: %v", groups.Groups())
			}
			if sum, err := committedSum(t, adm, "kg-group"); err != nil || sum != 900 {
				return fmt.Errorf("committed %d of 900 after restart (%v)", sum, err)
			}
			return nil
		})
	}
	p.stop(t)
	p2 := startProcess(t, dir, port, overrides...)
	checkGroup(p2.Addr)
	p2.kill(t)
	p3 := startProcess(t, dir, port, overrides...)
	checkGroup(p3.Addr)

	// A new consumer resumes at the committed offsets.
	produceN(t, p3.Addr, "kg", 60, "c")
	resumed := startConsumerProc(t, "kcat-resumed", kcatArgs("-e")...)
	select {
	case <-resumed.done:
	case <-time.After(60 * time.Second):
		t.Fatal("kcat -e did not finish")
	}
	got := resumed.consumed()
	if len(got) != 60 {
		t.Fatalf("resumed consumer read %d records, want the 60 new ones", len(got))
	}
	for _, r := range got {
		if !strings.HasPrefix(r.value, "c") || r.offset < 150 {
			t.Fatalf("resumed consumer read an old record: %+v", r)
		}
	}
}

const pyConfluentConsumer = `
import sys, threading
from confluent_kafka import Consumer
seed, group, topic = sys.argv[1:4]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
c = Consumer({"bootstrap.servers": seed, "group.id": group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
def on_assign(c, parts):
    print("assigned " + ",".join(str(p.partition) for p in parts), flush=True)
c.subscribe([topic], on_assign=on_assign)
while not stop.is_set():
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error():
        print("error %s" % m.error(), flush=True)
        continue
    print("rec %d %d %s" % (m.partition(), m.offset(), m.value().decode()), flush=True)
    c.commit(message=m, asynchronous=False)
c.close()
print("closed", flush=True)
`

const pyKafkaPythonConsumer = `
import sys, threading
from kafka import KafkaConsumer, ConsumerRebalanceListener
seed, group, topic = sys.argv[1:4]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        pass
    def on_partitions_assigned(self, assigned):
        print("assigned " + ",".join(str(p.partition) for p in assigned), flush=True)
c = KafkaConsumer(bootstrap_servers=seed, group_id=group, enable_auto_commit=False,
                  auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=500)
c.subscribe([topic], listener=Listener())
while not stop.is_set():
    recs = c.poll(timeout_ms=200)
    for tp, msgs in recs.items():
        for m in msgs:
            print("rec %d %d %s" % (m.partition, m.offset, m.value.decode()), flush=True)
    if recs:
        c.commit()
c.close()
print("closed", flush=True)
`

// A confluent-kafka consumer and a kafka-python consumer (Debian's
// python3) consume a topic together in one group, commit, and after a
// restart of the broker and of themselves resume where they committed.
func TestPythonGroupConsumers(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, "group.initial.rebalance.delay.ms=0")
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 4, "py-group")

	start := func(seed string) []*consumerProc {
		return []*consumerProc{
			startConsumerProc(t, "confluent-kafka", "/usr/bin/python3", "-c", pyConfluentConsumer, seed, "py-g", "py-group"),
			startConsumerProc(t, "kafka-python", "/usr/bin/python3", "-c", pyKafkaPythonConsumer, seed, "py-g", "py-group"),
		}
	}
	// waitShared waits until both hold partitions of a Stable group, so
	// that no rebalance happens while they consume.
	waitShared := func(adm *kadm.Client, procs []*consumerProc) {
		eventually(t, 90*time.Second, func() error {
			state, members, err := groupMembers(t, adm, "py-g")
			if err != nil {
				return err
			}
			if state != "Stable" || len(members) != 2 {
				return fmt.Errorf("group %s with %d members", state, len(members))
			}
			for _, p := range procs {
				if !strings.Contains(p.out(), "assigned ") {
					return fmt.Errorf("%s has no assignment yet", p.name)
				}
			}
			n := 0
			for _, ps := range members {
				if len(ps) == 0 {
					return fmt.Errorf("a member holds nothing: %v", members)
				}
				n += len(ps)
			}
			if n != 4 {
				return fmt.Errorf("%d partitions held", n)
			}
			return nil
		})
	}
	consumeAll := func(procs []*consumerProc, want int, prefix string) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			all, _ := union(procs...)
			if len(all) < want {
				return fmt.Errorf("consumed %d of %d", len(all), want)
			}
			return nil
		})
		all, dups := union(procs...)
		if len(dups) > 0 || len(all) != want {
			t.Fatalf("consumed %d records (want %d), duplicates %v", len(all), want, dups)
		}
		for k, v := range all {
			if !strings.HasPrefix(v, prefix) {
				t.Fatalf("record %v = %q: not one of the new records", k, v)
			}
		}
		for _, p := range procs {
			if len(p.consumed()) == 0 {
				t.Fatalf("%s consumed nothing: the group did not share the topic", p.name)
			}
		}
		eventually(t, 30*time.Second, func() error {
			if sum, err := committedSum(t, newAdmin(t, b.Seed()), "py-g"); err != nil || sum < int64(want) {
				return fmt.Errorf("committed %d (%v)", sum, err)
			}
			return nil
		})
		for _, p := range procs {
			p.stop(t, false)
			if !strings.Contains(p.out(), "closed") {
				t.Fatalf("%s did not close cleanly:\n%s", p.name, p.out())
			}
		}
	}

	procs := start(b.Seed())
	waitShared(adm, procs)
	produceN(t, b.Seed(), "py-group", 200, "a")
	consumeAll(procs, 200, "a")

	b.Close()
	b = startBroker(t, dir, "group.initial.rebalance.delay.ms=0")
	adm = newAdmin(t, b.Seed())
	procs = start(b.Seed())
	waitShared(adm, procs)
	produceN(t, b.Seed(), "py-group", 100, "b")
	consumeAll(procs, 100, "b")
	if sum, err := committedSum(t, adm, "py-g"); err != nil || sum != 300 {
		t.Fatalf("committed %d of 300 (%v)", sum, err)
	}
}
