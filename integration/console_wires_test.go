package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The console's wires (web/wires.js) as a browser shows them: producer
// boxes left of the cards and group boxes right of them, each wire's
// drawn ends on the boxes' and cards' bounding boxes, traffic moving
// (or not, under reduced motion), grey wires to a broker that is down,
// and the diagram stacked with the wires as a list on a narrow screen.

// wireHelpersJS defines, in the page, wire(kind, from, to) (the path of
// that wire, or null), ends(path, fromEl, toEl) (whether its drawn ends
// lie on the two elements' bounding boxes: a box's side, a card's top
// edge) and box(sel) (an element's bounding box).
const wireHelpersJS = `(() => {
  window.wire = (kind, from, to) => [...document.querySelectorAll('#wires path.wire')].find(p =>
    p.dataset.kind === kind && (from === '*' || p.dataset.from === from || (from.endsWith('/') && p.dataset.from.startsWith(from))) &&
    (to === '*' || p.dataset.to === to || (to.endsWith('/') && p.dataset.to.startsWith(to)))) || null;
  const on = (x, y, el) => { const r = el.getBoundingClientRect(); return x >= r.left - 2 && x <= r.right + 2 && y >= r.top - 6 && y <= r.bottom + 2; };
  window.ends = (p, a, b) => { if (!p || !a || !b) return false; const f = document.getElementById('flow').getBoundingClientRect();
    return on(+p.dataset.x0 + f.left, +p.dataset.y0 + f.top, a) && on(+p.dataset.x1 + f.left, +p.dataset.y1 + f.top, b); };
  window.card = (id) => document.querySelector('.broker[data-broker-id="' + id + '"]');
  window.box = (node) => document.querySelector('[data-node="' + node + '"]');
  return true;
})()`

func installWireHelpers(b *browser) { eval[bool](b, wireHelpersJS) }

// keepProducing produces a record to partition 0 of topic every 50 ms
// until the returned stop is called.
func keepProducing(t *testing.T, seed, topic string) (stop func()) {
	cl := newClient(t, seed, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
			cl.ProduceSync(pctx, &kgo.Record{Value: []byte("wire"), Partition: 0})
			pcancel()
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait(); cl.Close() }) }
	t.Cleanup(stop)
	return stop
}

// checkProducerWires waits for a producer box left of the cards with a
// wire to the leader's card carrying records (its dashes moving), and
// for a replication wire from the leader to each follower, each drawn
// end on its box or card.
func checkProducerWires(t *testing.T, b *browser, leader int32, followers []int32) {
	installWireHelpers(b)
	b.poll(20*time.Second, "a producer box left of the cards with a busy wire to the leader's card",
		fmt.Sprintf(`(() => { const p = [...document.querySelectorAll('#wires path.wire.produce')].find(p => p.dataset.to === 'broker:%d' && +p.dataset.rate > 0); if (!p) return false;
		  const pb = box(p.dataset.from), c = card(%d);
		  return !!pb && pb.getBoundingClientRect().right <= document.getElementById('brokers').getBoundingClientRect().left &&
		    ends(p, pb, c) && +p.dataset.rate > 0 && getComputedStyle(p).animationName === 'wire-flow'; })()`, leader, leader))
	for _, f := range followers {
		b.poll(10*time.Second, fmt.Sprintf("a replication wire from leader %d to follower %d", leader, f),
			fmt.Sprintf(`ends(wire('replicate', 'broker:%d', 'broker:%d'), card(%d), card(%d))`, leader, f, leader, f))
	}
	t.Logf("wires: %s", eval[string](b, `[...document.querySelectorAll('#wires path.wire')].map(p => p.dataset.kind + ' ' + p.dataset.from + ' -> ' + p.dataset.to + ' ' + p.dataset.rate + '/s').join('; ')`))
	b.screenshot("wires")
}

// checkGroupWires waits for group's box right of the cards, listing a
// member with a wire from the leader's card to the member's row, and a
// wire from the box to its coordinator's card.
func checkGroupWires(t *testing.T, b *browser, group string, leader int32) {
	installWireHelpers(b)
	b.poll(20*time.Second, "the group's box right of the cards with wires from the leader and to its coordinator",
		fmt.Sprintf(`(() => { const g = box('group:%[1]s'); if (!g) return false;
		  const cards = document.getElementById('brokers').getBoundingClientRect();
		  const c = wire('consume', 'broker:%[2]d', 'member:%[1]s/'), k = wire('group_coordinator', 'group:%[1]s', '*');
		  return g.getBoundingClientRect().left >= cards.right && !!c && ends(c, card(%[2]d), box(c.dataset.to)) && g.contains(box(c.dataset.to)) &&
		    !!k && ends(k, g, card(k.dataset.to.slice(7))); })()`, group, leader))
	t.Logf("group %s: coordinator %s", group, eval[string](b, fmt.Sprintf(`wire('group_coordinator', 'group:%s', '*').dataset.to`, group)))
	b.screenshot("group-wires")
}

// checkRebalanceMovesWire waits, after from leaves group's partitions to
// to (a rebalance), for the leader's wire to end on to's row in the
// group's box and for no live wire to reach from's row.
func checkRebalanceMovesWire(t *testing.T, b *browser, group string, leader int32, from, to string) {
	installWireHelpers(b)
	b.poll(30*time.Second, "the leader's consumer wire moved to "+to,
		fmt.Sprintf(`(() => { const live = [...document.querySelectorAll('#wires path.consume')].filter(p => !p.closest('g').classList.contains('leaving') && p.dataset.from === 'broker:%[2]d' && p.dataset.to.startsWith('member:%[1]s/'));
		  const row = (p) => box(p.dataset.to) ? box(p.dataset.to).textContent : '';
		  return live.length > 0 && live.every(p => row(p).includes(%[4]q) && !row(p).includes(%[3]q)) && live.every(p => ends(p, card(%[2]d), box(p.dataset.to))); })()`, group, leader, from, to))
	b.screenshot("rebalance-moved-wire")
}

// checkWiresStill checks, with reduced motion emulated, that records
// still flow on some wire (its rate) and that no wire animates.
func checkWiresStill(t *testing.T, b *browser) {
	b.poll(15*time.Second, "a busy wire that does not move",
		`(() => { const ws = [...document.querySelectorAll('#wires path.wire')]; return ws.some(p => +p.dataset.rate > 0) &&
		  ws.every(p => getComputedStyle(p).animationName === 'none') && document.getAnimations().length === 0; })()`)
	b.screenshot("wires-reduced-motion")
	// Motion again: what follows (the render timings) includes the dashes.
	b.do(10*time.Second, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{}})
		return err
	}))
}

// checkWiresAfterLeaderDown waits, after broker down (the leader) is
// stopped or killed, for every wire from or to it to be grey (down, not
// moving, not the colour of a live produce wire) and for a producer's
// wire (producer's, if not empty) and a replication wire to reach the
// new leader. It returns the new leader.
func checkWiresAfterLeaderDown(t *testing.T, b *browser, down int32, producer string) int32 {
	installWireHelpers(b)
	b.poll(30*time.Second, "the down broker's wires grey and a producer's wire on the new leader",
		fmt.Sprintf(`(() => { const ws = [...document.querySelectorAll('#wires path.wire')];
		  const np = ws.find(p => p.dataset.kind === 'produce' && ('%[2]s' === '' || p.dataset.from === '%[2]s') && p.dataset.down === 'false' && p.dataset.to !== 'broker:%[1]d');
		  if (!np) return false;
		  const live = getComputedStyle(np).stroke;
		  const its = ws.filter(p => p.dataset.from === 'broker:%[1]d' || p.dataset.to === 'broker:%[1]d');
		  if (!its.length || !its.every(p => p.dataset.down === 'true' && p.classList.contains('down') && getComputedStyle(p).animationName === 'none' && getComputedStyle(p).stroke !== live)) return false;
		  const nl = np.dataset.to;
		  window.__newLeader = nl.slice(7);
		  return ends(np, box(np.dataset.from), card(nl.slice(7))) && ws.some(p => p.dataset.kind === 'replicate' && p.dataset.from === nl && p.dataset.down === 'false'); })()`, down, producer))
	var nl int32
	fmt.Sscan(eval[string](b, `window.__newLeader`), &nl)
	t.Logf("broker %d down: its %d wires grey, a producer's wire on broker %d", down,
		eval[int](b, fmt.Sprintf(`[...document.querySelectorAll('#wires path.wire')].filter(p => p.dataset.from === 'broker:%[1]d' || p.dataset.to === 'broker:%[1]d').length`, down)), nl)
	b.screenshot("wires-leader-down")
	return nl
}

// checkNarrow emulates a phone-sized viewport: the diagram stacks
// (producers, brokers, groups, top to bottom) and the wires are the list
// of text instead of the overlay; then the viewport is restored.
func checkNarrow(t *testing.T, b *browser) {
	b.do(10*time.Second, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 400, Height: 860, DeviceScaleFactor: 1, Mobile: true})
		return err
	}))
	b.poll(10*time.Second, "the diagram stacked with the wires as a list",
		`(() => { const r = (id) => document.getElementById(id).getBoundingClientRect();
		  const p = r('producers'), c = r('brokers'), g = r('groups'), cards = [...document.querySelectorAll('.broker')].map(e => e.getBoundingClientRect());
		  const list = document.getElementById('wire-list');
		  return p.height > 0 && p.bottom <= c.top && c.bottom <= g.top && g.height > 0 && cards.every((x, i) => i === 0 || cards[i - 1].bottom <= x.top) &&
		    getComputedStyle(document.getElementById('wires')).display === 'none' && list.getBoundingClientRect().width > 200 &&
		    list.querySelectorAll('li[data-kind="produce"]').length > 0 && document.documentElement.scrollWidth <= 400; })()`)
	eval[bool](b, `(document.getElementById('wire-list').scrollIntoView(), true)`)
	b.screenshot("narrow-wire-list")
	eval[bool](b, `(window.scrollTo(0, 0), true)`)
	b.screenshot("narrow-top")
	b.do(10*time.Second, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		return err
	}))
}
