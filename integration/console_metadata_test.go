package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/moldau/moldau/cmd/moldau/console"
)

// The console given the controller listeners (--bootstrap-controller)
// shows the metadata log's records as events: a topic created, its
// partitions' leaders moving when the active controller's node stops
// (written by the controller elected after it, whose log the console
// must follow), and a config altered after that.
func TestConsoleMetadataLog(t *testing.T) {
	c := startReplicatedCluster(t)
	var ctrls []string
	for _, n := range c.nodes {
		ctrls = append(ctrls, fmt.Sprintf("127.0.0.1:%d", n.ctrl))
	}
	url := serveConsole(t, console.Config{Brokers: c.seeds(), Controllers: ctrls, Interval: 200 * time.Millisecond})
	waitEvent := func(what string, match func(console.InternalEvent) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			s, err := consoleSnapshot(url)
			if err == nil && slices.ContainsFunc(s.Internal, func(e console.InternalEvent) bool {
				return e.Kind == "metadata" && e.Topic == "__cluster_metadata" && match(e)
			}) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in the console's events within 20s (last error %v, errors %v)", what, err, s.Errors)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	prefix := func(p string) func(console.InternalEvent) bool {
		return func(e console.InternalEvent) bool { return strings.HasPrefix(e.Text, p) }
	}

	adm := newAdmin(t, strings.Join(c.seeds(), ","))
	const topic = "console-meta"
	if _, err := adm.CreateTopic(ctxTimeout(t, 10*time.Second), 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	waitEvent("the topic's record", prefix("TopicRecord "+topic+", id "))
	for p := range 3 {
		waitISR(t, adm, topic, int32(p), 3)
	}

	md, err := adm.Metadata(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	active := md.Controller
	var led []int32 // the partitions the active controller's node leads
	for _, p := range md.Topics[topic].Partitions {
		if p.Leader == active {
			led = append(led, p.Partition)
		}
	}
	t.Logf("stopping node %d, the active controller, leader of %s partitions %v", active, topic, led)
	c.stop(int(active - 1))

	// Its partitions get another leader, and the console reads it.
	for _, p := range led {
		waitEvent(fmt.Sprintf("partition %d's new leader", p), func(e console.InternalEvent) bool {
			var leader int32
			_, err := fmt.Sscanf(e.Text, "PartitionChangeRecord "+topic+fmt.Sprintf("-%d: leader %%d", p), &leader)
			return err == nil && leader != active
		})
	}
	// A record the new leader writes reaches the console too.
	adm = newAdmin(t, strings.Join(c.seeds(), ","))
	v := "7654321"
	resp, err := adm.AlterTopicConfigs(ctxTimeout(t, 10*time.Second), []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	waitEvent("the config written by the new controller", prefix("ConfigRecord topic "+topic+": retention.ms=7654321"))
}

// `moldau dev` gives its console the controllers: the dev topic's
// records show among the events, and after a rebuild the new cluster's.
func TestDevConsoleMetadataLog(t *testing.T) {
	d := startDev(t, "--partitions", "1")
	topicRecord := func(s *console.Snapshot) error {
		for _, tp := range s.Topics {
			if tp.Name != "dev" {
				continue
			}
			want := "TopicRecord dev, id " + tp.ID
			if slices.ContainsFunc(s.Internal, func(e console.InternalEvent) bool { return e.Kind == "metadata" && e.Text == want }) {
				return nil
			}
			return fmt.Errorf("no %q among the events (metadata log followed: %v, errors %v)", want, s.MetadataLog, s.Errors)
		}
		return fmt.Errorf("no topic dev yet")
	}
	eventually(t, 60*time.Second, func() error {
		s, err := consoleSnapshot(d.url)
		if err != nil {
			return err
		}
		return topicRecord(s)
	})
	first, err := consoleSnapshot(d.url)
	if err != nil {
		t.Fatal(err)
	}
	d.cli("rebuild", "--nodes", "1", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1",
		"--producers", "0", "--consumers", "0")
	eventually(t, 60*time.Second, func() error {
		s, err := consoleSnapshot(d.url)
		if err != nil {
			return err
		}
		if s.ClusterID == first.ClusterID {
			return fmt.Errorf("still cluster %s", s.ClusterID)
		}
		return topicRecord(s)
	})
}

// The page: with the controllers, the internal topics' table holds the
// metadata log's records, the kind filter shows them alone, and the
// note says where they come from; without, the note says how to have
// them.
func TestConsoleMetadataLogBrowser(t *testing.T) {
	chromium := findChromium(t)
	b := startBroker(t, "", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.listener.names=CONTROLLER", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
	seed, ctrl := b.Addr("").String(), b.Addr("CONTROLLER").String()
	if _, err := newAdmin(t, seed).CreateTopic(ctxTimeout(t, 10*time.Second), 1, 1, nil, "meta-page"); err != nil {
		t.Fatal(err)
	}
	with := serveConsole(t, console.Config{Brokers: []string{seed}, Controllers: []string{ctrl}, Interval: 200 * time.Millisecond})
	without := serveConsole(t, console.Config{Brokers: []string{seed}, Interval: 200 * time.Millisecond})
	br := newBrowser(t, chromium)

	br.do(15*time.Second, chromedp.Navigate(with+"/"))
	br.poll(15*time.Second, "the topic's record in the table, and the note naming __cluster_metadata",
		`[...document.querySelectorAll('#internal-table tr[data-event-kind="metadata"]')].some(r => r.textContent.includes('TopicRecord meta-page, id ')) && `+
			`document.getElementById('metadata-log-note').textContent.includes('__cluster_metadata')`)
	eval[bool](br, `(() => { const s = document.getElementById('internal-kind'); s.value = 'metadata'; s.dispatchEvent(new Event('change')); return true; })()`)
	br.poll(10*time.Second, "only metadata records under the filter",
		`(() => { const rows = [...document.querySelectorAll('#internal-table tbody tr')]; return rows.length > 0 && rows.every(r => r.dataset.eventKind === 'metadata'); })()`)
	eval[bool](br, `(document.getElementById('internal-title').scrollIntoView(), true)`)
	br.screenshot("metadata-log")

	br.do(15*time.Second, chromedp.Navigate(without+"/"))
	br.poll(15*time.Second, "the note saying how to follow the metadata log",
		`document.getElementById('metadata-log-note').textContent.includes('--bootstrap-controller') && `+
			`!document.querySelector('#internal-table tr[data-event-kind="metadata"]')`)
}
