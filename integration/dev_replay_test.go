package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/moldau/moldau/cmd/moldau/console"
)

// checkReplay exports the run of a `moldau dev` whose leader was killed
// (`moldau dev events`), replays it with `moldau console --replay` as a
// process, and drives the timeline in the browser by keyboard and by the
// event log: the last frame shows the leader's card crossed out, an
// earlier one (reached with the arrow keys) alive; the kill's event shows the frame after it; played at 16×
// from there the replay runs to the last frame and stops.
func checkReplay(t *testing.T, b *browser, d *devProcess, leader int32) {
	// The recorder keeps at most a frame a second: wait for the frame
	// with the leader down.
	file := filepath.Join(t.TempDir(), "run.json")
	var run *console.Run
	alive := -1 // the last frame showing the leader alive
	eventually(t, 15*time.Second, func() error {
		out := d.cli("events")
		r, err := console.ReadRun([]byte(out))
		if err != nil {
			return err
		}
		var brokers []console.Broker
		alive = -1
		leaderAlive := false
		for i, f := range r.Frames {
			if v, ok := f.Patch["brokers"]; ok {
				brokers = nil
				json.Unmarshal(v, &brokers)
			}
			leaderAlive = false
			for _, br := range brokers {
				leaderAlive = leaderAlive || br.ID == leader && br.Alive && !br.Fenced
			}
			if leaderAlive {
				alive = i
			}
		}
		if leaderAlive || alive < 0 {
			return fmt.Errorf("the leader not alive then down in %d frames (last frame alive: %v)", len(r.Frames), leaderAlive)
		}
		run = r
		return os.WriteFile(file, []byte(out), 0o644)
	})
	if len(run.Events) == 0 {
		t.Fatal("the run's export holds no events")
	}

	url := runConsole(t, "--replay", file)

	last := len(run.Frames) - 1
	frame := func(i int) string { return fmt.Sprintf(`document.getElementById('replay')?.dataset.frame === "%d"`, i) }
	down := fmt.Sprintf(`document.querySelector('.broker[data-broker-id="%d"]')?.dataset.down === "true"`, leader)
	up := fmt.Sprintf(`document.querySelector('.broker[data-broker-id="%d"]')?.dataset.state === "alive"`, leader)
	b.do(15*time.Second, chromedp.Navigate(url+"/"))
	b.poll(15*time.Second, "the replay on its first frame with the run's events",
		frame(0)+` && document.querySelectorAll('.broker').length > 0 && document.querySelectorAll('#replay-events li').length > 0`)
	b.screenshot("replay-first-frame")

	// By keyboard: the slider takes End, Home and the arrows.
	b.do(10*time.Second, chromedp.Focus(chromedp.CSS("#replay-slider")), chromedp.KeyEvent(kb.End))
	b.poll(15*time.Second, "the last frame, the killed leader crossed out", frame(last)+` && `+down)
	b.poll(15*time.Second, "the last frame's wires to the killed leader grey", fmt.Sprintf(
		`(() => { const ws = [...document.querySelectorAll('#wires path.wire')].filter(p => p.dataset.from === 'broker:%[1]d' || p.dataset.to === 'broker:%[1]d'); return ws.length > 0 && ws.every(p => p.dataset.down === 'true'); })()`, leader))
	b.screenshot("replay-last-frame")
	b.do(10*time.Second, chromedp.KeyEvent(kb.Home))
	b.poll(15*time.Second, "back on the first frame", frame(0))
	for range alive {
		b.do(10*time.Second, chromedp.KeyEvent(kb.ArrowRight))
	}
	b.poll(15*time.Second, "the last frame with the leader alive", frame(alive)+` && `+up)

	// The kill in the event log shows the frame after it.
	b.do(10*time.Second, chromedp.Click(chromedp.CSS(`#replay-events li[data-kind="fault"] button`)))
	b.poll(15*time.Second, "the frame of the kill",
		`(() => { const f = document.querySelector('#replay-events li[data-kind="fault"] button').dataset.frame; return f !== "0" && document.getElementById('replay').dataset.frame === f; })()`)
	b.screenshot("replay-kill-event")

	// Played fast, from the start, to the end.
	b.do(10*time.Second, chromedp.SetValue(chromedp.CSS("#replay-speed"), "16"), chromedp.Click(chromedp.CSS("#replay-play")))
	b.poll(60*time.Second, "played to the last frame and stopped",
		fmt.Sprintf(`document.getElementById('replay').dataset.frame === "%d" && document.getElementById('replay').dataset.playing === "false" && `, last)+down)
}
