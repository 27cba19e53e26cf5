package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/cmd/moldau/console"
	"github.com/moldau/moldau/cmd/moldau/dev"
)

// `moldau dev` as a process: three child nodes behind its proxies, its
// console with the dev panel, its API and its command line.

// devProcess is a running `moldau dev`.
type devProcess struct {
	t   *testing.T
	url string
	out *syncBuffer
	cmd *exec.Cmd
}

// devTestFlags make the nodes quick to fence and the traffic explicit.
var devTestFlags = []string{
	"--no-open", "--listen", "127.0.0.1:0", "--check-interval", "0", "--producers", "0", "--consumers", "0",
	"--override", "broker.session.timeout.ms=3000", "--override", "broker.heartbeat.interval.ms=500",
	"--override", "replica.lag.time.max.ms=5000",
}

var devURL = regexp.MustCompile(`dev panel on (http://[0-9.:]+) `)

// startDev starts `moldau dev` with the flags and waits until its nodes
// serve and its topic exists.
func startDev(t *testing.T, flags ...string) *devProcess {
	t.Helper()
	d := &devProcess{t: t, out: &syncBuffer{}}
	dir := t.TempDir()
	d.cmd = exec.Command(moldauBinary(t), append(append([]string{"dev", "--dir", dir}, devTestFlags...), flags...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		if t.Failed() && d.url != "" {
			d.logEvents()
		}
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			d.cmd.Process.Kill()
			<-done
			t.Errorf("moldau dev did not stop within 30s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("moldau dev output:\n%s", d.out.String())
			logs, _ := filepath.Glob(filepath.Join(dir, "node-*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s (the last 16 KiB):\n%s", filepath.Base(l), b[max(len(b)-16<<10, 0):])
			}
		}
	})
	eventually(t, 60*time.Second, func() error {
		m := devURL.FindStringSubmatch(d.out.String())
		if m == nil {
			return fmt.Errorf("no URL yet: %s", d.out.String())
		}
		d.url = m[1]
		if !bytes.Contains([]byte(d.out.String()), []byte("nodes serving")) {
			return fmt.Errorf("the nodes do not serve yet")
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		s, err := consoleSnapshot(d.url)
		if err != nil {
			return err
		}
		for _, tp := range s.Topics {
			if tp.Name == "dev" && len(tp.Partitions) > 0 && tp.Partitions[0].Leader >= 0 {
				return nil
			}
		}
		return fmt.Errorf("topic dev not in the console yet")
	})
	return d
}

// logEvents logs the run's event log.
func (d *devProcess) logEvents() {
	resp, err := http.Get(d.url + "/api/dev/events")
	if err != nil {
		d.t.Logf("events: %v", err)
		return
	}
	defer resp.Body.Close()
	var evs struct{ Events []dev.Event }
	if err := json.NewDecoder(resp.Body).Decode(&evs); err != nil {
		d.t.Logf("events: %v", err)
		return
	}
	for _, e := range evs.Events {
		d.t.Logf("event %s %-10s %s", e.Time.Format("15:04:05.000"), e.Kind, e.Text)
	}
}

// post calls the dev API; a non-200 answer fails the test.
func (d *devProcess) post(path string, body any) []byte {
	d.t.Helper()
	out, err := d.tryPost(path, body)
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}

func (d *devProcess) tryPost(path string, body any) ([]byte, error) {
	b, _ := json.Marshal(body)
	if body == nil {
		b = []byte("{}")
	}
	resp, err := http.Post(d.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: %s %s", path, resp.Status, out)
	}
	return out, nil
}

// cli runs `moldau dev ACTION...` against this dev process.
func (d *devProcess) cli(args ...string) string {
	d.t.Helper()
	out, err := exec.Command(moldauBinary(d.t), append(append([]string{"dev"}, args...), "--dev", d.url)...).CombinedOutput()
	if err != nil {
		d.t.Fatalf("moldau dev %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// produce runs a built-in producer of count records to the end.
func (d *devProcess) produce(cfg dev.ProducerConfig) {
	d.t.Helper()
	d.post("/api/dev/producers", cfg)
	d.post("/api/dev/producers/"+cfg.Name+"/wait", nil)
}

// partition0 is partition 0 of topic dev in the console's snapshot.
func (d *devProcess) partition0() (console.Partition, *console.Snapshot, error) {
	s, err := consoleSnapshot(d.url)
	if err != nil {
		return console.Partition{}, nil, err
	}
	for _, tp := range s.Topics {
		if tp.Name == "dev" && len(tp.Partitions) > 0 {
			return tp.Partitions[0], s, nil
		}
	}
	return console.Partition{}, s, fmt.Errorf("no topic dev")
}

// check checks the counters against the logs until a check succeeds.
func (d *devProcess) check() dev.Counters {
	d.t.Helper()
	var c dev.Counters
	eventually(d.t, 30*time.Second, func() error {
		out, err := d.tryPost("/api/dev/check", nil)
		if err != nil {
			time.Sleep(250 * time.Millisecond)
			return err
		}
		return json.Unmarshal(out, &c)
	})
	return c
}

func producerCounters(c dev.Counters, name string) dev.ProducerCounters {
	for _, p := range c.Producers {
		if p.Name == name {
			return p
		}
	}
	return dev.ProducerCounters{Name: name}
}

// The browser check against `moldau dev` with three nodes: three
// broker cards and the active controller; the high watermark bar of the
// partition moving to the new log end after records are produced; a
// consumer group's lag at 0 once it has read everything; after `moldau
// dev kill` (SIGKILL) of the leader its card crossed out and another
// replica's lane leading within the session timeout, both announced;
// then the run
// exported and replayed (checkReplay). A screenshot of each step is kept.
func TestDevBrowser(t *testing.T) {
	chromium := findChromium(t)
	d := startDev(t, "--partitions", "1")
	b := newBrowser(t, chromium)
	b.do(15*time.Second, chromedp.Navigate(d.url+"/"))
	b.poll(20*time.Second, "three broker cards, the active controller and the dev panel",
		`document.querySelectorAll('.broker[data-state="alive"]').length === 3 && !!document.querySelector('.voter[data-active="true"]') && document.querySelectorAll('.dev-node[data-state="running"]').length === 3`)
	b.screenshot("three-brokers")

	p, _, err := d.partition0()
	if err != nil {
		t.Fatal(err)
	}
	leader := p.Leader
	d.produce(dev.ProducerConfig{Name: "p1", Topic: "dev", Rate: 1000, Burst: 50, Count: 50})
	lane := laneJS("dev", 0, leader)
	b.poll(15*time.Second, "the high watermark bar at the new log end",
		lane+`.classList.contains('leader') && `+lane+`.querySelector('.hw').dataset.offset === "50" && `+lane+`.dataset.logEnd === "50"`)
	b.screenshot("high-watermark")

	d.post("/api/dev/consumers", dev.ConsumerConfig{Name: "c1", Group: "dev-group", Topic: "dev"})
	b.poll(20*time.Second, "the group's lag at 0",
		`(() => { const r = document.querySelector('tr[data-group="dev-group"]'); return !!r && r.dataset.lag === "0"; })()`)
	b.screenshot("group-lag-zero")

	// A producer that keeps going: its wire to the leader carries its
	// records, the group's member reads them from the leader.
	d.post("/api/dev/producers", dev.ProducerConfig{Name: "p2", Topic: "dev", Rate: 20})
	checkProducerWires(t, b, leader, slices.DeleteFunc(slices.Clone(p.Replicas), func(id int32) bool { return id == leader }))
	checkGroupWires(t, b, "dev-group", leader)
	// A rebalance moves the member's wire: c2 joins, c1 leaves.
	d.post("/api/dev/consumers", dev.ConsumerConfig{Name: "c2", Group: "dev-group", Topic: "dev"})
	b.poll(30*time.Second, "c2 in the group's box", `[...box('group:dev-group').querySelectorAll('li[data-node]')].some(li => li.textContent.includes('moldau-dev-c2'))`)
	d.post("/api/dev/consumers/c1/close", nil)
	checkRebalanceMovesWire(t, b, "dev-group", leader, "moldau-dev-c1", "moldau-dev-c2")

	killed := time.Now()
	d.cli("kill", strconv.Itoa(int(leader)))
	b.poll(20*time.Second, "the killed leader crossed out and another lane leading",
		fmt.Sprintf(`document.querySelector('.broker[data-broker-id="%d"]').dataset.down === "true" && `, leader)+
			fmt.Sprintf(`[...document.querySelectorAll('.lane.leader[data-topic="dev"][data-partition="0"]')].some(l => l.dataset.broker !== "%d") && `, leader)+
			fmt.Sprintf(`document.querySelector('.dev-node[data-dev-node="%d"]').dataset.state === "killed"`, leader))
	t.Logf("kill -9 of leader %d -> crossed out and a new leader on the page: %v (broker.session.timeout.ms=3000)", leader, time.Since(killed).Round(100*time.Millisecond))
	b.screenshot("leader-killed")
	// Announced in words (announce.js): the broker down, the new leader.
	b.poll(10*time.Second, "the killed broker and the new leader announced",
		fmt.Sprintf(`(() => { const a = window.moldauConsole.announced || []; return a.some(m => m === 'Broker %d is down' || m === 'Broker %d is fenced') && `, leader, leader)+
			fmt.Sprintf(`a.some(m => /^Broker \d+ (leads dev-0 \(epoch \d+\)$|now leads \d+ partitions: dev-0,)/.test(m) && !m.startsWith('Broker %d ')); })()`, leader))
	checkWiresAfterLeaderDown(t, b, leader, "producer:p2")
	b.poll(10*time.Second, "the kill and the leader change in the event log",
		`[...document.querySelectorAll('#dev-events li[data-kind="fault"]')].some(li => /kill/.test(li.textContent)) && !!document.querySelector('#dev-events li[data-kind="leader"]')`)
	b.screenshot("event-log")
	checkReplay(t, b, d, leader)
}

// A node cut off from its peers by its proxies is fenced and drops out of
// the ISR; healed, it rejoins. Cut off from the clients, a client that
// knows only it cannot reach the cluster, and can once healed.
func TestDevCutAndHeal(t *testing.T) {
	d := startDev(t, "--partitions", "1")
	d.produce(dev.ProducerConfig{Name: "p1", Topic: "dev", Rate: 1000, Burst: 20, Count: 20})
	p, _, err := d.partition0()
	if err != nil {
		t.Fatal(err)
	}
	// A follower: the leader would move, and that is another test.
	victim := p.Replicas[0]
	if victim == p.Leader {
		victim = p.Replicas[1]
	}
	d.cli("cut", strconv.Itoa(int(victim)), "--from", "peers")
	eventually(t, 30*time.Second, func() error {
		p, s, err := d.partition0()
		if err != nil {
			return err
		}
		fenced := false
		for _, br := range s.Brokers {
			fenced = fenced || (br.ID == victim && br.Fenced)
		}
		if slices.Contains(p.ISR, victim) || !fenced {
			return fmt.Errorf("node %d cut from its peers: fenced %v, ISR %v", victim, fenced, p.ISR)
		}
		return nil
	})
	d.cli("heal", strconv.Itoa(int(victim)))
	eventually(t, 30*time.Second, func() error {
		p, s, err := d.partition0()
		if err != nil {
			return err
		}
		for _, br := range s.Brokers {
			if br.ID == victim && (br.Fenced || !br.Alive) {
				return fmt.Errorf("node %d healed, still fenced", victim)
			}
		}
		if !slices.Contains(p.ISR, victim) {
			return fmt.Errorf("node %d healed, ISR %v", victim, p.ISR)
		}
		return nil
	})

	// From the clients: the node keeps its place in the cluster, but a
	// client that has only its address gets nothing.
	var state dev.State
	if err := json.Unmarshal([]byte(d.cli("state")), &state); err != nil {
		t.Fatal(err)
	}
	addr := state.Nodes[victim-1].ClientAddr
	d.cli("cut", strconv.Itoa(int(victim)), "--from", "clients")
	cl := newClient(t, addr, kgo.RetryTimeout(2*time.Second), kgo.DialTimeout(time.Second))
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctxTimeout(t, 5*time.Second)); err == nil {
		t.Fatalf("node %d cut from the clients answered Metadata through its proxy", victim)
	}
	d.cli("heal", strconv.Itoa(int(victim)))
	eventually(t, 15*time.Second, func() error {
		_, err := kadm.NewClient(cl).BrokerMetadata(ctxTimeout(t, 5*time.Second))
		return err
	})

	// The active controller, killed from the command line, is replaced.
	var killed struct{ Killed int32 }
	if err := json.Unmarshal([]byte(d.cli("kill-controller")), &killed); err != nil || killed.Killed < 1 {
		t.Fatalf("kill-controller: %v %+v", err, killed)
	}
	eventually(t, 20*time.Second, func() error {
		_, s, err := d.partition0()
		if err == nil && (s.ControllerID == killed.Killed || s.ControllerID < 0) {
			err = fmt.Errorf("controller %d", s.ControllerID)
		}
		return err
	})
	d.cli("start", strconv.Itoa(int(killed.Killed)))
	d.cli("lose", "0", "1", "--response")
	eventually(t, 5*time.Second, func() error {
		var evs struct{ Events []dev.Event }
		if err := json.Unmarshal([]byte(d.cli("events")), &evs); err != nil {
			return err
		}
		for _, e := range evs.Events {
			if e.Kind == "fault" && e.Text == "the next response on clients -> node 1 will be lost" {
				return nil
			}
		}
		return fmt.Errorf("no loss armed in the event log")
	})
}

// The delivery counters, checked against the leaders' logs: an idempotent
// acks=all producer through a SIGKILL of its partition's leader loses and
// duplicates nothing; an acks=1 producer writing to a leader cut off from
// its followers has every one of those records acknowledged and then lost
// when another replica takes over and the old leader truncates.
func TestDevDeliveryCounters(t *testing.T) {
	// No automatic leader balance: the leader read before the cut is the
	// leader cut.
	d := startDev(t, "--partitions", "1", "--min-insync-replicas", "1", "--override", "auto.leader.rebalance.enable=false")
	began := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }
	p, _, err := d.partition0()
	if err != nil {
		t.Fatal(err)
	}
	d.post("/api/dev/consumers", dev.ConsumerConfig{Name: "c1", Group: "g", Topic: "dev"})
	// acks=all through a leader kill.
	d.post("/api/dev/producers", dev.ProducerConfig{Name: "safe", Topic: "dev", Rate: 200, Burst: 10, Count: 400})
	eventually(t, 10*time.Second, func() error {
		var c dev.Counters
		out, err := d.tryPost("/api/dev/check", nil)
		if err != nil {
			return err
		}
		json.Unmarshal(out, &c)
		if producerCounters(c, "safe").Acked < 100 {
			return fmt.Errorf("%d acknowledged", producerCounters(c, "safe").Acked)
		}
		return nil
	})
	step("100 acknowledged; killing the leader")
	d.post(fmt.Sprintf("/api/dev/nodes/%d/kill", p.Leader), nil)
	d.post("/api/dev/producers/safe/wait", nil)
	step("the producer is done; restarting the leader")
	d.post(fmt.Sprintf("/api/dev/nodes/%d/start", p.Leader), nil)
	c := d.check()
	safe := producerCounters(c, "safe")
	t.Logf("acks=all through a leader kill: %+v (log holds %d records)", safe, c.LogRecords)
	if safe.Acked != 400 || safe.Failed != 0 || len(safe.Lost) != 0 || len(safe.Duplicates) != 0 {
		t.Fatalf("acks=all idempotent producer through a leader kill: %+v", safe)
	}

	// acks=1 to a leader cut off from its followers: lost. First the
	// killed leader's successor, with the restarted node back in its ISR.
	killed := p.Leader
	eventually(t, 30*time.Second, func() error {
		p, _, err = d.partition0()
		if err == nil && (p.Leader == killed || p.Leader < 0 || len(p.ISR) < 3) {
			err = fmt.Errorf("leader %d, ISR %v", p.Leader, p.ISR)
		}
		return err
	})
	step("a new leader, the ISR full again")
	old := p.Leader
	d.post(fmt.Sprintf("/api/dev/nodes/%d/cut-peers", old), nil)
	idem := false
	d.produce(dev.ProducerConfig{Name: "unsafe", Topic: "dev", Rate: 1000, Burst: 30, Count: 30, Acks: "1", Idempotent: &idem})
	eventually(t, 30*time.Second, func() error {
		p, _, err := d.partition0()
		if err == nil && (p.Leader == old || p.Leader < 0) {
			err = fmt.Errorf("leader %d", p.Leader)
		}
		return err
	})
	step("the cut leader replaced")
	// Healed first: cut off, the old leader still takes acks=all writes
	// and holds them until they time out. Then writes on the new leader
	// move the high watermark past the lost offsets, which now hold
	// other records.
	d.post(fmt.Sprintf("/api/dev/nodes/%d/heal", old), nil)
	d.produce(dev.ProducerConfig{Name: "after", Topic: "dev", Rate: 1000, Burst: 50, Count: 50})
	step("healed, and 50 more written")
	c = d.check()
	step("checked")
	unsafe, after := producerCounters(c, "unsafe"), producerCounters(c, "after")
	t.Logf("acks=1 to a leader cut off: %d acknowledged, %d lost, first %+v", unsafe.Acked, len(unsafe.Lost), unsafe.Lost[:min(1, len(unsafe.Lost))])
	if unsafe.Acked != 30 || len(unsafe.Lost) != 30 {
		t.Fatalf("acks=1 to a leader cut off from its followers: want 30 acknowledged and lost, got %+v", unsafe)
	}
	for _, a := range unsafe.Lost {
		if len(a.Offsets) != 1 || a.Partition != 0 || a.Topic != "dev" {
			t.Fatalf("a lost record without its offset: %+v", a)
		}
	}
	if after.Acked != 50 || len(after.Lost) != 0 || len(after.Duplicates) != 0 || len(producerCounters(c, "safe").Lost) != 0 {
		t.Fatalf("acks=all records around the loss: %+v, safe %+v", after, producerCounters(c, "safe"))
	}

	// The consumer read every record in the log (the 450 acknowledged
	// and kept), skipped none, through all of it; crashed and restarted,
	// it goes on from its group's commits.
	consumed := func(want int64) {
		t.Helper()
		eventually(t, 30*time.Second, func() error {
			c := d.check()
			if len(c.Consumers) != 1 {
				return fmt.Errorf("consumers %+v", c.Consumers)
			}
			k := c.Consumers[0]
			if len(k.Skipped) > 0 {
				t.Fatalf("the group skipped records: %+v", k.Skipped)
			}
			if k.Processed < want {
				time.Sleep(200 * time.Millisecond)
				return fmt.Errorf("%d processed, want %d", k.Processed, want)
			}
			t.Logf("consumer %s: %d processed, %d processed twice", k.Name, k.Processed, len(k.ProcessedTwice))
			return nil
		})
	}
	consumed(450)
	d.post("/api/dev/consumers/c1/crash", nil)
	d.post("/api/dev/consumers/c1/restart", nil)
	d.produce(dev.ProducerConfig{Name: "late", Topic: "dev", Rate: 1000, Burst: 20, Count: 20})
	consumed(470)
	step("consumed")
}
