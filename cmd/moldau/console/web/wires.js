// Wires: who talks to whom, with the traffic on it. Producers are boxes
// left of the broker cards, consumer groups (with their members) boxes on
// their right, and an SVG overlay draws the snapshot's wires (aggregated
// by the poller: per producer and leader, leader and follower, member and
// leader, group and coordinator, never per partition) between them.
//
// Routing: every wire runs in a band above the cards, each on a track of
// its own, and enters or leaves a card through a port on its top edge
// (producers' wires on the left of the edge, replication in the middle,
// consumers' on the right, coordinators at the far right), so a wire to
// the third card never crosses the first. Ports on the top edge do not
// move when a topic is expanded. The geometry comes from the boxes' and
// cards' bounding boxes, again whenever the set of wires changes or
// anything is resized or scrolled.
//
// Traffic: records travel as dashes from the sender to the receiver,
// faster, denser and thicker as the rate grows, with the rate as a label
// (and bytes per second, when the broker's metrics are read);
// an idle wire is still; a wire to or from a broker that is down is grey
// and dashed. With prefers-reduced-motion nothing travels (the stylesheet
// stops every animation) and thickness and label stay. A wire that
// appears or goes (a rebalance moving a member's wires, a new leader)
// fades in or out.
//
// On a narrow screen the diagram stacks (producers, brokers, groups) and
// the wires give way to the same list as text (#wire-list), which is
// always there for screen readers.

import { esc, num, bytes } from './util.js';

const maxProducers = 8; // boxes; the others share one
const maxGroups = 8;
const maxMembers = 8; // the poller wires the first 8 members of a group
const svgNS = 'http://www.w3.org/2000/svg';
const track = 7; // px between two wires' tracks in the band
const maxTracks = 24; // wires beyond share tracks
const radius = 5; // corner radius
const fadeMs = 400;

// Segments of a card's top edge, as fractions of its width, per port kind.
const ports = {
  produce: [0.06, 0.3],
  'replicate-out': [0.34, 0.48],
  'replicate-in': [0.52, 0.66],
  consume: [0.7, 0.86],
  coordinator: [0.89, 0.97],
};

export class Wires {
  constructor(flowEl, ui) {
    this.flow = flowEl;
    this.ui = ui;
    this.producersEl = flowEl.querySelector('#producers');
    this.groupsEl = flowEl.querySelector('#groups');
    this.brokersEl = flowEl.querySelector('#brokers');
    this.svg = flowEl.querySelector('#wires');
    this.listEl = document.getElementById('wire-list');
    this.paths = new Map(); // wire key -> { g, path, label }
    this.boxesKey = '';
    this.snap = null;
    this.reduced = matchMedia('(prefers-reduced-motion: reduce)');
    const relayout = () => this.scheduleLayout();
    new ResizeObserver(relayout).observe(flowEl);
    new ResizeObserver(relayout).observe(this.brokersEl);
    this.brokersEl.addEventListener('scroll', relayout, { passive: true });
    this.groupsEl.addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-select-group]');
      if (b) ui.select('group', b.dataset.selectGroup);
    });
  }

  render(snap) {
    this.snap = snap;
    this.renderBoxes(snap);
    this.layout();
    this.renderList();
  }

  scheduleLayout() {
    if (this.pending || !this.snap) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.layout(); });
  }

  // renderBoxes draws the producer and group boxes, rebuilt only when
  // what they show changes.
  renderBoxes(snap) {
    const producers = snap.producers || [];
    const shownP = producers.slice(0, maxProducers);
    const restP = producers.slice(maxProducers);
    const groups = orderGroups(snap.groups || []);
    const shownG = groups.slice(0, maxGroups);
    const restG = groups.slice(maxGroups);
    let hp = '';
    for (const p of shownP) {
      hp += '<section class="client producer" data-node="producer:' + esc(p.id) + '" aria-label="Producer ' + esc(p.name) + '">' +
        '<h3>' + esc(p.name) + '</h3>' +
        (p.client_id ? '<span class="muted">' + esc(p.client_id) + '</span>' : '') +
        '<span class="muted">' + (p.producer_id >= 0 ? 'producer id ' + p.producer_id + ' · ' : '') + partsText(p.partitions) + '</span>' +
        '<span class="rate" data-rate>' + rateText(p.rate) + '</span></section>';
    }
    if (restP.length) {
      hp += '<section class="client producer more" data-node="producer:*" aria-label="Other producers"><h3>+' + restP.length + ' producers</h3>' +
        '<span class="rate">' + rateText(restP.reduce((s, p) => s + p.rate, 0)) + '</span></section>';
    }
    let hg = '';
    for (const g of shownG) {
      hg += '<section class="client group" data-node="group:' + esc(g.id) + '" aria-label="Consumer group ' + esc(g.id) + '">' +
        '<h3><button type="button" data-select-group="' + esc(g.id) + '">' + esc(g.id) + '</button></h3>' +
        '<span class="muted">' + esc(g.state || '') + (g.coordinator >= 0 ? ' · coordinator ' + g.coordinator : '') + ' · lag <span data-lag>' + num(g.lag) + '</span></span>' +
        '<ul class="members">';
      const members = g.members || [];
      for (const m of members.slice(0, maxMembers)) {
        hg += '<li data-node="' + esc(memberEnd(g.id, m.id)) + '" title="' + esc(m.id) + '">' + esc(m.client_id || m.id) +
          ' <span class="muted">' + partsText(m.assigned) + '</span></li>';
      }
      if (members.length > maxMembers) hg += '<li class="muted">+' + (members.length - maxMembers) + ' members</li>';
      if (!members.length) hg += '<li class="muted">no members</li>';
      hg += '</ul></section>';
    }
    if (restG.length) hg += '<section class="client group more" data-node="group:*" aria-label="Other groups"><h3>+' + restG.length + ' groups</h3></section>';
    const key = hp + '\u0000' + hg;
    if (key === this.boxesKey) return;
    this.boxesKey = key;
    this.producersEl.innerHTML = hp;
    this.groupsEl.innerHTML = hg;
    this.flow.dataset.producers = shownP.length + (restP.length ? 1 : 0);
    this.flow.dataset.groups = shownG.length + (restG.length ? 1 : 0);
  }

  // nodes maps every wire end on screen to its element.
  nodes() {
    const m = new Map();
    for (const el of this.flow.querySelectorAll('[data-node]')) m.set(el.dataset.node, el);
    for (const el of this.brokersEl.querySelectorAll('.broker[data-broker-id]')) m.set('broker:' + el.dataset.brokerId, el);
    return m;
  }

  // endOf resolves a wire end to the element drawn for it: the thing
  // itself, or the box of the producers or groups not shown.
  endOf(nodes, end) {
    const el = nodes.get(end);
    if (el) return [end, el];
    if (end.startsWith('producer:')) return ['producer:*', nodes.get('producer:*')];
    if (end.startsWith('member:') || end.startsWith('group:')) return ['group:*', nodes.get('group:*')];
    return [end, null];
  }

  // wires are the snapshot's wires as drawn: ends resolved, those into
  // the "others" boxes merged.
  drawnWires(nodes) {
    const out = new Map();
    for (const w of this.snap.wires || []) {
      const [from, fromEl] = this.endOf(nodes, w.from);
      const [to, toEl] = this.endOf(nodes, w.to);
      if (!fromEl || !toEl) continue;
      const key = w.kind + '|' + from + '|' + to;
      const d = out.get(key);
      if (d) {
        d.rate += w.rate;
        d.bytes += w.bytes || 0;
        d.partitions += w.partitions;
        d.down = d.down && w.down;
        continue;
      }
      out.set(key, { key, kind: w.kind, from, to, fromEl, toEl, rate: w.rate, bytes: w.bytes || 0, partitions: w.partitions, down: !!w.down });
    }
    return [...out.values()];
  }

  layout() {
    if (!this.snap) return;
    const narrow = getComputedStyle(this.svg).display === 'none';
    const nodes = this.nodes();
    const wires = this.drawnWires(nodes);
    this.current = wires;
    if (narrow) {
      this.sync(wires, null);
      return;
    }
    // The band above the cards holds a track per wire (at most maxTracks).
    const band = (Math.min(wires.length, maxTracks) + 2) * track + 'px';
    if (this.flow.style.getPropertyValue('--band') !== band) this.flow.style.setProperty('--band', band);
    const base = this.flow.getBoundingClientRect();
    const rel = (r) => ({ left: r.left - base.left, right: r.right - base.left, top: r.top - base.top, bottom: r.bottom - base.top, width: r.width, height: r.height });
    const cardsBox = rel(this.brokersEl.getBoundingClientRect());
    const rects = new Map();
    const rectOf = (el) => {
      let r = rects.get(el);
      if (!r) rects.set(el, (r = rel(el.getBoundingClientRect())));
      return r;
    };
    // Ports: per card and port kind, the wires through it in order.
    const perPort = new Map();
    const portOf = (w, end) => {
      const kind = w.kind === 'replicate' ? (end === w.from ? 'replicate-out' : 'replicate-in')
        : w.kind.endsWith('coordinator') ? 'coordinator' : w.kind;
      const k = end + '|' + kind;
      let list = perPort.get(k);
      if (!list) perPort.set(k, (list = []));
      list.push(w);
      return k;
    };
    for (const w of wires) {
      if (w.from.startsWith('broker:')) w.fromPort = portOf(w, w.from);
      if (w.to.startsWith('broker:')) w.toPort = portOf(w, w.to);
    }
    const portX = (w, portKey, el) => {
      const r = rectOf(el);
      const [a, b] = ports[portKey.slice(portKey.indexOf('|') + 1)];
      const list = perPort.get(portKey);
      const f = a + (b - a) * (list.indexOf(w) + 1) / (list.length + 1);
      // A card scrolled out of view: its port stays at the edge of the cards.
      return Math.min(Math.max(r.left + r.width * f, cardsBox.left + 2), cardsBox.right - 2);
    };
    const bandBottom = cardsBox.top - 4;
    const tracks = Math.max(1, Math.floor((bandBottom - 4) / track) - 1);
    // First the ends of every wire, then the tracks: the shortest run
    // over the band gets the track nearest the cards, so wires cross as
    // little as they can. Vertical runs in a gap are spread a little.
    const gapSlot = { left: 0, right: 0 };
    const gapX = (side, boxEdge) => {
      const i = gapSlot[side]++ % 8;
      return side === 'left' ? boxEdge + (cardsBox.left - boxEdge) / 2 + 10 - i * 3 : cardsBox.right + (boxEdge - cardsBox.right) / 2 - 10 + i * 3;
    };
    const edge = bandBottom + 4;
    for (const w of wires) {
      if (w.kind === 'replicate') {
        const x0 = portX(w, w.fromPort, w.fromEl), x1 = portX(w, w.toPort, w.toEl);
        w.geo = { x0, y0: edge, x1, y1: edge };
        w.points = (y) => [[x0, edge], [x0, y], [x1, y], [x1, edge]];
        w.span = [x0, x1];
      } else if (w.from.startsWith('broker:')) {
        // Leader -> member: up from the card, over, down to the member's row.
        const x0 = portX(w, w.fromPort, w.fromEl);
        const r = rectOf(w.toEl);
        const gx = gapX('right', r.left);
        const y1 = r.top + Math.min(r.height / 2, 12);
        w.geo = { x0, y0: edge, x1: r.left, y1 };
        w.points = (y) => [[x0, edge], [x0, y], [gx, y], [gx, y1], [r.left, y1]];
        w.span = [x0, gx];
      } else {
        // A producer or a group -> a card: out of the box's side, up, over, down.
        const r = rectOf(w.fromEl);
        const x1 = portX(w, w.toPort, w.toEl);
        const fromLeft = r.right <= cardsBox.left;
        const sx = fromLeft ? r.right : r.left;
        const gx = gapX(fromLeft ? 'left' : 'right', sx);
        const y0 = r.top + Math.min(r.height / 2, 14);
        w.geo = { x0: sx, y0, x1, y1: edge };
        w.points = (y) => [[sx, y0], [gx, y0], [gx, y], [x1, y], [x1, edge]];
        w.span = [gx, x1];
      }
    }
    const byLength = [...wires].sort((a, b) => Math.abs(a.span[1] - a.span[0]) - Math.abs(b.span[1] - b.span[0]));
    byLength.forEach((w, i) => {
      const y = bandBottom - track * (1 + (i % tracks));
      w.d = route(w.points(y));
      // Labels on neighbouring tracks are staggered along their runs.
      const at = 0.25 + 0.5 * ((i * 0.618) % 1);
      w.labelAt = [w.span[0] + (w.span[1] - w.span[0]) * at, y - 2];
    });
    this.svg.setAttribute('viewBox', '0 0 ' + base.width + ' ' + base.height);
    this.svg.setAttribute('width', base.width);
    this.svg.setAttribute('height', base.height);
    this.sync(wires, true);
  }

  // sync makes the SVG hold exactly wires: new ones fade in, gone ones
  // fade out, the others are updated in place.
  sync(wires, draw) {
    const seen = new Set();
    for (const w of wires) {
      seen.add(w.key);
      let e = this.paths.get(w.key);
      if (!e) {
        const g = document.createElementNS(svgNS, 'g');
        const path = document.createElementNS(svgNS, 'path');
        const label = document.createElementNS(svgNS, 'text');
        g.append(path, label);
        g.setAttribute('class', 'wire-g entering');
        path.dataset.kind = w.kind;
        path.dataset.from = w.from;
        path.dataset.to = w.to;
        this.svg.append(g);
        e = { g, path, label };
        this.paths.set(w.key, e);
        if (!this.reduced.matches) requestAnimationFrame(() => requestAnimationFrame(() => g.classList.remove('entering')));
        else g.classList.remove('entering');
      }
      if (e.leaving) {
        clearTimeout(e.leaving);
        e.leaving = 0;
        e.g.classList.remove('leaving');
      }
      if (draw) {
        if (e.path.getAttribute('d') !== w.d) e.path.setAttribute('d', w.d);
        const p = e.path.dataset;
        p.x0 = Math.round(w.geo.x0); p.y0 = Math.round(w.geo.y0); p.x1 = Math.round(w.geo.x1); p.y1 = Math.round(w.geo.y1);
        e.label.setAttribute('x', w.labelAt[0].toFixed(1));
        e.label.setAttribute('y', w.labelAt[1].toFixed(1));
      }
      const state = w.down ? 'down' : w.rate > 0 ? 'busy' : 'idle';
      const level = w.rate >= 1000 ? 3 : w.rate >= 50 ? 2 : 1;
      const cls = 'wire ' + w.kind + ' ' + state + (state === 'busy' ? ' level' + level : '');
      if (e.path.getAttribute('class') !== cls) e.path.setAttribute('class', cls);
      e.path.dataset.rate = w.rate;
      e.path.dataset.down = w.down;
      e.path.dataset.partitions = w.partitions;
      if (state === 'busy') {
        // Faster with the rate: about 16 px/s at 1 record/s, 80 px/s from 500/s.
        e.path.style.animationDuration = Math.max(0.25, 2 / Math.log2(2 + w.rate)).toFixed(2) + 's';
        e.path.style.strokeWidth = Math.min(6, 1.5 + Math.log10(1 + w.rate)).toFixed(1);
      } else {
        e.path.style.animationDuration = '';
        e.path.style.strokeWidth = '';
      }
      const text = state === 'busy' ? rateText(w.rate) + bytesText(w.bytes) : '';
      e.path.dataset.bytes = w.bytes;
      if (e.label.textContent !== text) e.label.textContent = text;
    }
    for (const [key, e] of this.paths) {
      if (seen.has(key) || e.leaving) continue;
      if (this.reduced.matches) {
        e.g.remove();
        this.paths.delete(key);
        continue;
      }
      e.g.classList.add('leaving');
      e.leaving = setTimeout(() => { e.g.remove(); this.paths.delete(key); }, fadeMs);
    }
  }

  // renderList writes the wires as text: what a phone shows instead of
  // the overlay, and what a screen reader reads.
  renderList() {
    if (!this.listEl || !this.current) return;
    const names = new Map();
    for (const p of this.snap.producers || []) names.set('producer:' + p.id, 'producer ' + p.name);
    for (const g of this.snap.groups || []) {
      names.set('group:' + g.id, 'group ' + g.id);
      for (const m of g.members || []) names.set(memberEnd(g.id, m.id), 'group ' + g.id + ' member ' + (m.client_id || m.id));
    }
    const name = (end) => names.get(end) || end.replace('broker:', 'broker ').replace('producer:*', 'other producers').replace('group:*', 'other groups');
    // Who asks whom: a follower and a consumer fetch from the leader.
    const sentence = (w) => {
      switch (w.kind) {
        case 'produce': return name(w.from) + ' produces to ' + name(w.to);
        case 'replicate': return name(w.to) + ' fetches from ' + name(w.from) + ' (replication)';
        case 'consume': return name(w.to) + ' fetches from ' + name(w.from);
        case 'group_coordinator': return name(w.from) + ' is coordinated by ' + name(w.to);
        default: return name(w.from) + ': transactions coordinated by ' + name(w.to);
      }
    };
    let h = '';
    for (const w of this.current) {
      h += '<li data-kind="' + w.kind + '" data-from="' + esc(w.from) + '" data-to="' + esc(w.to) + '" data-down="' + w.down + '">' +
        esc(sentence(w)) +
        (w.down ? ' <span class="warn">(down)</span>' : w.kind.endsWith('coordinator') ? '' : ': ' + rateText(w.rate) + bytesText(w.bytes) + ', ' + w.partitions + ' partition' + (w.partitions === 1 ? '' : 's')) + '</li>';
    }
    if (!h) h = '<li class="muted">no wires</li>';
    if (this.listEl.innerHTML !== h) this.listEl.innerHTML = h;
  }
}

// orderGroups puts the groups with members first, as the poller wires them.
function orderGroups(groups) {
  return [...groups.filter((g) => g.members && g.members.length), ...groups.filter((g) => !g.members || !g.members.length)];
}

export function memberEnd(group, member) {
  return 'member:' + group + '/' + member;
}

function rateText(r) {
  if (!(r > 0)) return 'idle';
  return (r >= 100 ? Math.round(r).toLocaleString('en') : r.toFixed(1)) + ' rec/s';
}

// bytesText is a wire's bytes per second, estimated from its broker's
// metrics (--metrics-url ID=URL), if any.
function bytesText(b) {
  return b > 0 ? ' · ≈' + bytes(b) + '/s' : '';
}

function partsText(tps) {
  if (!tps || !tps.length) return 'no partitions';
  const n = tps.reduce((s, t) => s + t.partitions.length, 0);
  return tps.length === 1 ? esc(tps[0].topic) + ': ' + n + ' partition' + (n === 1 ? '' : 's') : n + ' partitions of ' + tps.length + ' topics';
}

// route is an orthogonal path through the points with rounded corners.
function route(pts) {
  let d = 'M' + f(pts[0][0]) + ' ' + f(pts[0][1]);
  for (let i = 1; i < pts.length - 1; i++) {
    const [px, py] = pts[i - 1], [x, y] = pts[i], [nx, ny] = pts[i + 1];
    const r1 = Math.min(radius, Math.hypot(x - px, y - py) / 2), r2 = Math.min(radius, Math.hypot(nx - x, ny - y) / 2);
    const a = toward(x, y, px, py, r1), b = toward(x, y, nx, ny, r2);
    d += 'L' + f(a[0]) + ' ' + f(a[1]) + 'Q' + f(x) + ' ' + f(y) + ' ' + f(b[0]) + ' ' + f(b[1]);
  }
  const last = pts[pts.length - 1];
  return d + 'L' + f(last[0]) + ' ' + f(last[1]);
}

function toward(x, y, tx, ty, r) {
  const len = Math.hypot(tx - x, ty - y) || 1;
  return [x + ((tx - x) / len) * r, y + ((ty - y) / len) * r];
}

function f(n) {
  return n.toFixed(1);
}
