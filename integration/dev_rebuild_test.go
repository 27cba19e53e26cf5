package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/moldau/moldau/cmd/moldau/dev"
)

// Rebuilding a dev cluster: `moldau dev rebuild` with other flags replaces
// three nodes with one, the topic with two partitions and starts a
// producer, whose records are all acknowledged and found in the log; then
// the panel's settings form, filled in by keyboard, rebuilds it with two
// nodes and the page shows two broker cards of a new cluster; the panel's
// slow-disk control slows node 2's disk and restores it.
func TestDevRebuild(t *testing.T) {
	chromium := findChromium(t)
	d := startDev(t, "--partitions", "1")
	first, err := consoleSnapshot(d.url)
	if err != nil {
		t.Fatal(err)
	}
	d.cli("rebuild", "--nodes", "1", "--partitions", "2", "--replication-factor", "1", "--min-insync-replicas", "1",
		"--producers", "1", "--rate", "200", "--burst", "10", "--consumers", "0")
	var settings dev.Settings
	resp, err := http.Get(d.url + "/api/dev/settings")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&settings)
	resp.Body.Close()
	if settings.Nodes != 1 || settings.Partitions != 2 || len(settings.Producers) != 1 {
		t.Fatalf("settings after the rebuild: %+v", settings)
	}
	eventually(t, 60*time.Second, func() error {
		s, err := consoleSnapshot(d.url)
		if err != nil {
			return err
		}
		if s.ClusterID == first.ClusterID || len(s.Brokers) != 1 || !s.Brokers[0].Alive {
			return fmt.Errorf("cluster %s (was %s), brokers %+v", s.ClusterID, first.ClusterID, s.Brokers)
		}
		for _, tp := range s.Topics {
			if tp.Name == "dev" && len(tp.Partitions) == 2 && tp.Partitions[0].HighWatermark+tp.Partitions[1].HighWatermark >= 100 {
				return nil
			}
		}
		return fmt.Errorf("no topic dev with 2 partitions and 100 records yet: %+v", s.Topics)
	})
	d.post("/api/dev/producers/p1/stop", nil)
	c := d.check()
	p := producerCounters(c, "p1")
	if p.Acked < 100 || len(p.Lost) != 0 || len(p.Duplicates) != 0 || p.InFlight != 0 {
		t.Fatalf("producer p1 after the rebuild: %+v", p)
	}

	// The settings form, by keyboard.
	b := newBrowser(t, chromium)
	b.do(15*time.Second, chromedp.Navigate(d.url+"/"))
	b.poll(20*time.Second, "one broker card and the settings form filled in",
		`document.querySelectorAll('.broker[data-state="alive"]').length === 1 && document.querySelector('#dev-settings-form').elements.nodes.value === "1"`)
	b.do(10*time.Second, chromedp.Click(chromedp.CSS("#dev-settings summary")),
		chromedp.SetValue(chromedp.CSS(`#dev-settings-form input[name="nodes"]`), "2"),
		chromedp.SetValue(chromedp.CSS(`#dev-settings-form input[name="producers"]`), "0"),
		chromedp.Focus(chromedp.CSS("#dev-settings-form button")), chromedp.KeyEvent(kb.Enter))
	b.poll(60*time.Second, "two broker cards and two nodes running",
		`document.querySelectorAll('.broker[data-state="alive"]').length === 2 && document.querySelectorAll('.dev-node[data-state="running"]').length === 2`)
	b.screenshot("rebuilt-two-nodes")
	b.poll(10*time.Second, "the rebuild in the event log", `[...document.querySelectorAll('#dev-events li[data-kind="cluster"]')].some(li => /rebuilding: 2 nodes/.test(li.textContent))`)

	// The panel's slow-disk control on the new cluster's node 2, and back.
	b.do(10*time.Second, chromedp.SetValue(chromedp.CSS("#dev-slow-node"), "2"), chromedp.SetValue(chromedp.CSS("#dev-slow-ms"), "150"),
		chromedp.Click(chromedp.CSS(`button[data-dev="slow"]`)))
	b.poll(15*time.Second, "node 2's disk slowed by 150 ms", `!!document.querySelector('.dev-node[data-dev-node="2"] .dev-disk[data-disk-delay="150"]')`)
	b.screenshot("slow-disk")
	b.do(10*time.Second, chromedp.Click(chromedp.CSS(`.dev-node[data-dev-node="2"] button[data-dev="unslow"]`)))
	b.poll(15*time.Second, "node 2's disk back to normal", `!document.querySelector('.dev-node[data-dev-node="2"] .dev-disk')`)
}
