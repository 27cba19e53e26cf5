package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The details panel's actions in a real browser, from the keyboard only
// (focus and Enter): a group's offsets reset and its lag changing, a
// partition's records deleted and its log start moving, each behind an
// inline confirmation that holds the panel still while it is open, and a
// broker's dynamic config set; and, under `moldau dev`, a console action
// in the event log and a node killed from its broker's details.

// press focuses the element of sel and presses Enter on it.
func (b *browser) press(sel string) {
	b.t.Helper()
	b.do(10*time.Second, chromedp.Focus(chromedp.CSS(sel)), chromedp.KeyEvent("\r"))
}

// confirmFocused waits for the confirmation of action id, focused.
func (b *browser) confirmFocused(id string) {
	b.t.Helper()
	b.poll(10*time.Second, "the confirmation of "+id+", focused",
		fmt.Sprintf(`document.activeElement && document.activeElement.matches('[data-act=%q] [data-act-confirm]')`, id))
}

// answered waits for the answer of action id in the live region.
func (b *browser) answered(id, state string) string {
	b.t.Helper()
	b.poll(20*time.Second, id+" answered "+state,
		fmt.Sprintf(`(() => { const a = document.getElementById('act-answer'); return a.dataset.action === %q && a.dataset.state === %q; })()`, id, state))
	text := eval[string](b, `document.getElementById('act-answer').textContent`)
	b.t.Logf("%s: %s", id, text)
	return text
}

func TestConsoleActionsBrowser(t *testing.T) {
	chromium := findChromium(t)
	br := startBroker(t, "", "offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1")
	seed := br.Seed()
	adm := newAdmin(t, seed)
	const topic, group = "act-orders", "act-group"
	if _, err := adm.CreateTopics(ctxTimeout(t, 10*time.Second), 1, 1, nil, topic, "act-other"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, seed, kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, 50)
	for i := range recs {
		recs[i] = &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}
	}
	if err := cl.ProduceSync(ctxTimeout(t, 10*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A group with no members, all caught up.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 50, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctxTimeout(t, 10*time.Second), group, offs); err != nil {
		t.Fatal(err)
	}
	url := startConsole(t, []string{seed}, 250*time.Millisecond)
	b := newBrowser(t, chromium)
	b.do(15*time.Second, chromedp.Navigate(url+"/"))
	groupRow := fmt.Sprintf(`tr[data-group=%q]`, group)
	b.poll(15*time.Second, "the group at lag 0", fmt.Sprintf(`(() => { const r = document.querySelector('%s'); return !!r && r.dataset.lag === "0"; })()`, groupRow))

	// The group's details, then its reset to the earliest offset.
	b.press(groupRow)
	b.poll(10*time.Second, "the group's actions", `document.getElementById('details-title').textContent === 'Group `+group+`' && !!document.querySelector('[data-act-run="reset-offsets"]')`)
	b.screenshot("group-actions")
	b.press(`[data-act-run="reset-offsets"]`)
	b.confirmFocused("reset-offsets")
	// While the question is open, new snapshots leave the panel as it is.
	seq := eval[int](b, `window.__held = document.getElementById('details-body').firstElementChild; +document.body.dataset.seq`)
	if err := cl.ProduceSync(ctxTimeout(t, 10*time.Second), &kgo.Record{Topic: "act-other", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.poll(10*time.Second, "a newer snapshot on the page", fmt.Sprintf(`+document.body.dataset.seq > %d`, seq))
	if !eval[bool](b, `document.getElementById('details-body').firstElementChild === window.__held && document.activeElement.matches('[data-act-confirm]')`) {
		t.Fatal("the details panel was rebuilt, or lost its focus, while a confirmation was open")
	}
	b.screenshot("group-reset-confirm")
	b.do(10*time.Second, chromedp.KeyEvent("\r"))
	b.answered("reset-offsets", "ok")
	b.poll(15*time.Second, "the group's lag at 50 after the reset", fmt.Sprintf(`document.querySelector('%s').dataset.lag === "50"`, groupRow))
	b.screenshot("group-reset")

	// A partition's details from the topics table, then its records
	// deleted before offset 20.
	b.press(fmt.Sprintf(`button[data-open-topic=%q]`, topic))
	b.press(fmt.Sprintf(`tr[data-kind="partition"][data-key="%s|0"]`, topic))
	b.poll(10*time.Second, "the partition's actions", `document.getElementById('details-title').textContent === 'Partition `+topic+`-0' && !!document.querySelector('[data-act-run="delete-records"]')`)
	b.do(10*time.Second, chromedp.Focus(chromedp.CSS(`[data-act="delete-records"] input[name="offset"]`)), chromedp.KeyEvent(kb.End+"\b\b\b20"))
	if v := eval[string](b, `document.querySelector('[data-act="delete-records"] input[name="offset"]').value`); v != "20" {
		t.Fatalf("the offset typed: %q", v)
	}
	b.press(`[data-act-run="delete-records"]`)
	b.confirmFocused("delete-records")
	if q := eval[string](b, `document.querySelector('[data-act="delete-records"] .act-confirm p').textContent`); q != "Delete the records of "+topic+"-0 before offset 20? This cannot be undone." {
		t.Errorf("the question: %q", q)
	}
	b.screenshot("delete-records-confirm")
	b.do(10*time.Second, chromedp.KeyEvent("\r"))
	b.answered("delete-records", "ok")
	leader, _ := partitionState(t, adm, topic, 0)
	b.poll(15*time.Second, "the lane's log start at 20", laneJS(topic, 0, leader)+`.dataset.logStart === "20"`)
	b.screenshot("records-deleted")

	// Escape takes a question back and keeps the details open.
	b.press(`[data-act-run="delete-records"]`)
	b.confirmFocused("delete-records")
	b.do(10*time.Second, chromedp.KeyEvent(kb.Escape))
	b.poll(10*time.Second, "the question gone, the details open, focus on the action",
		`!document.getElementById('details').hidden && document.querySelector('[data-act="delete-records"] .act-confirm').hidden && document.activeElement.matches('[data-act-run="delete-records"]')`)

	// A broker's dynamic config, set from its details: the configuration
	// is asked again and shows it.
	b.press(fmt.Sprintf(`button[data-select-broker="%d"]`, leader))
	b.poll(10*time.Second, "the broker's actions", `!!document.querySelector('[data-act-run="alter-config"]')`)
	b.do(10*time.Second, chromedp.Focus(chromedp.CSS(`[data-act="alter-config"] input[name="name"]`)), chromedp.KeyEvent("max.connections"),
		chromedp.Focus(chromedp.CSS(`[data-act="alter-config"] input[name="value"]`)), chromedp.KeyEvent("1000"))
	b.press(`[data-act-run="alter-config"]`)
	b.confirmFocused("alter-config")
	b.do(10*time.Second, chromedp.KeyEvent("\r"))
	b.answered("alter-config", "ok")
	b.poll(15*time.Second, "max.connections set dynamically in the broker's configuration",
		`(() => { const r = document.querySelector('#details-body tr[data-config="max.connections"]'); return !!r && r.dataset.source === 'DYNAMIC_BROKER_CONFIG' && r.querySelector('td.value').textContent === '1000'; })()`)
	b.screenshot("broker-config-altered")
}

// Under `moldau dev`, a broker's details offer its node's faults: kill -9
// from there (confirmed), and the card is crossed out.
func TestConsoleActionsDevBrowser(t *testing.T) {
	chromium := findChromium(t)
	d := startDev(t, "--partitions", "1")
	_, s, err := d.partition0()
	if err != nil {
		t.Fatal(err)
	}
	victim := int32(1)
	if s.ControllerID == victim {
		victim = 2
	}
	b := newBrowser(t, chromium)
	b.do(15*time.Second, chromedp.Navigate(d.url+"/"))
	b.poll(20*time.Second, "three broker cards and the dev panel",
		`document.querySelectorAll('.broker[data-state="alive"]').length === 3 && document.querySelectorAll('.dev-node[data-state="running"]').length === 3`)
	// A console action lands in the dev event log.
	b.press(`button[data-open-topic="dev"]`)
	b.press(`tr[data-kind="partition"][data-key="dev|0"]`)
	b.press(`[data-act-run="elect-preferred"]`)
	b.answered("elect-preferred", "ok")
	b.poll(10*time.Second, "the election in the event log",
		`[...document.querySelectorAll('#dev-events li[data-kind="action"]')].some(li => li.textContent.includes('preferred election of dev-0'))`)

	b.press(fmt.Sprintf(`button[data-select-broker="%d"]`, victim))
	b.poll(10*time.Second, "the node's faults in the broker's details",
		fmt.Sprintf(`document.getElementById('details-title').textContent === 'Broker %d' && !!document.querySelector('[data-act-run="dev-kill"]')`, victim))
	b.screenshot("broker-faults")
	b.press(`[data-act-run="dev-kill"]`)
	b.confirmFocused("dev-kill")
	b.screenshot("kill-confirm")
	killed := time.Now()
	b.do(10*time.Second, chromedp.KeyEvent("\r"))
	b.answered("dev-kill", "ok")
	b.poll(20*time.Second, "the killed broker crossed out, and start offered",
		fmt.Sprintf(`document.querySelector('.broker[data-broker-id="%d"]').dataset.down === "true" && `, victim)+
			fmt.Sprintf(`document.querySelector('.dev-node[data-dev-node="%d"]').dataset.state === "killed" && `, victim)+
			`!!document.querySelector('[data-act-run="dev-start"]')`)
	t.Logf("kill -9 of node %d from its details -> crossed out: %v", victim, time.Since(killed).Round(100*time.Millisecond))
	b.screenshot("broker-killed")
	b.poll(10*time.Second, "the kill in the event log",
		fmt.Sprintf(`[...document.querySelectorAll('#dev-events li[data-kind="fault"]')].some(li => li.textContent.includes('node %d: kill'))`, victim))
}

// A preferred leader election from the console moves the leadership back
// to the first replica: three nodes, the preferred leader stopped and
// restarted (no automatic rebalance), then POST
// /api/act/partition/elect.
func TestConsoleActionsPreferredElection(t *testing.T) {
	c := startReplicatedCluster(t, "auto.leader.rebalance.enable=false")
	seeds := c.seeds()
	adm := newAdmin(t, strings.Join(seeds, ","))
	const topic = "act-elect"
	if _, err := adm.CreateTopic(ctxTimeout(t, 10*time.Second), 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, topic, 1, 3)
	md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	preferred := md.Topics[topic].Partitions[0].Replicas[0]
	c.stop(int(preferred - 1))
	eventually(t, 30*time.Second, func() error {
		if l, _ := partitionStateRetry(t, adm, topic, 0); l == preferred || l < 0 {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	c.restart(int(preferred - 1))
	waitISR(t, adm, topic, 1, 3)
	if l, _ := partitionStateRetry(t, adm, topic, 0); l == preferred {
		t.Fatalf("the preferred replica %d leads again without an election", preferred)
	}
	url := startConsole(t, seeds, 250*time.Millisecond)
	body := fmt.Sprintf(`{"topic":%q,"partition":0,"type":"preferred"}`, topic)
	resp, err := http.Post(url+"/api/act/partition/elect", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("POST /api/act/partition/elect: %s %s", resp.Status, out)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("preferred election: %s %s", resp.Status, out)
	}
	eventually(t, 15*time.Second, func() error {
		if l, _ := partitionStateRetry(t, adm, topic, 0); l != preferred {
			return fmt.Errorf("leader %d, preferred %d", l, preferred)
		}
		return nil
	})
}
