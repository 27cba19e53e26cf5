// The diagram: the controller quorum on top, then one card per broker.
// Inside a card every partition has a lane at the same place in every
// card (a broker that does not host it shows an empty lane), so one
// partition reads across the cards. A lane draws the replica's log (see
// cells.js): a cell per offset for the newest offsets, coloured by key,
// the high watermark as a bar, the log end as a dashed slot. The leader's
// lane is outlined, an in-sync follower plain, a replica out of the ISR
// dashed red.
//
// The cards are rebuilt only when the layout changes (brokers, topics,
// replica placement, a topic expanded or collapsed); otherwise each lane
// is updated in place.

import { esc, num, bytes } from './util.js';
import { laneCellsHTML, updateCells } from './cells.js';

// Topics start collapsed when they are internal or when the cluster has
// more than this many partitions in all.
const expandLimit = 200;

export class Diagram {
  constructor(quorumEl, brokersEl, ui) {
    this.quorumEl = quorumEl;
    this.brokersEl = brokersEl;
    this.ui = ui; // { expanded: Map topic -> bool, select(kind, key) }
    this.layoutKey = '';
    this.lanes = new Map(); // key -> lane element
    brokersEl.addEventListener('click', (ev) => this.onClick(ev));
  }

  isExpanded(snap, t) {
    const set = this.ui.expanded.get(t.name);
    if (set !== undefined) return set;
    if (this.ui.expandAll) return true;
    if (t.internal) return false;
    return snap.topics.reduce((n, x) => n + x.partitions.length, 0) <= expandLimit;
  }

  onClick(ev) {
    const broker = ev.target.closest('button[data-select-broker]');
    if (broker) {
      this.ui.select('broker', broker.dataset.selectBroker);
      return;
    }
    const toggle = ev.target.closest('button[data-toggle-topic]');
    if (toggle) {
      const topic = toggle.dataset.toggleTopic;
      this.ui.expanded.set(topic, toggle.getAttribute('aria-expanded') !== 'true');
      this.ui.rerender(topic);
      return;
    }
    const lane = ev.target.closest('.lane[data-partition]');
    if (lane) this.ui.select('partition', lane.dataset.topic + '|' + lane.dataset.partition);
  }

  render(snap) {
    this.renderQuorum(snap);
    const key = layoutKey(snap, (t) => this.isExpanded(snap, t));
    if (key !== this.layoutKey) {
      this.layoutKey = key;
      this.rebuild(snap);
    } else {
      this.update(snap);
    }
    for (const card of this.brokersEl.querySelectorAll('.broker[data-broker-id]')) {
      card.setAttribute('aria-current', String(!!this.ui.isSelected('broker', card.dataset.brokerId)));
    }
  }

  renderQuorum(snap) {
    const q = snap.quorum;
    if (!q) {
      const why = (snap.errors && snap.errors.quorum) || 'no KRaft quorum reported';
      this.quorumEl.innerHTML = '<p class="muted">Controller quorum: ' + esc(why) + '</p>';
      return;
    }
    let h = '<ol class="voters" aria-label="Voters">';
    for (const v of q.voters) {
      const active = v.id === q.leader_id;
      h += '<li class="voter' + (active ? ' active' : '') + '" data-voter="' + v.id + '"' + (active ? ' data-active="true"' : '') + '>' +
        '<span class="voter-id">controller ' + v.id + '</span>' +
        (active ? '<span class="badge">active · epoch ' + q.leader_epoch + '</span>' : '<span class="lag">lag ' + num(v.lag) + '</span>') +
        '</li>';
    }
    h += '</ol>';
    this.quorumEl.innerHTML = h;
  }

  rebuild(snap) {
    const parts = [];
    for (const b of snap.brokers) parts.push(this.cardHTML(snap, b));
    this.brokersEl.innerHTML = parts.join('');
    this.lanes.clear();
    for (const el of this.brokersEl.querySelectorAll('.lane[data-key]')) this.lanes.set(el.dataset.key, el);
    this.update(snap);
  }

  cardHTML(snap, b) {
    const state = b.alive ? 'alive' : b.fenced ? 'fenced' : 'dead';
    const addr = b.host ? esc(b.host) + ':' + b.port : 'not in Metadata';
    // A fenced broker (stopped, or lost its session) is down as a dead one
    // is: both are crossed out, the text tells them apart.
    let h = '<section class="broker ' + state + '" data-broker-id="' + b.id + '" data-state="' + state + '" data-down="' + !b.alive +
      '" aria-label="Broker ' + b.id + ', ' + state + '">' +
      '<header><h3><button type="button" class="select-broker" data-select-broker="' + b.id + '">Broker ' + b.id + '</button>' + (b.id === snap.controller_id ? ' <span class="badge">controller</span>' : '') + '</h3>' +
      '<span class="addr">' + addr + '</span>' +
      '<span class="state">' + state + '</span>' +
      '<span class="size" data-size>' + bytes(b.size) + '</span></header><div class="lanes">';
    for (const t of snap.topics) {
      const open = this.isExpanded(snap, t);
      const hosted = t.partitions.filter((p) => p.replicas.includes(b.id));
      const leads = hosted.filter((p) => p.leader === b.id).length;
      h += '<div class="topic-lane"><button type="button" data-toggle-topic="' + esc(t.name) + '" aria-expanded="' + open + '">' +
        esc(t.name) + '</button><span class="muted">' + hosted.length + '/' + t.partitions.length + ' hosted, ' + leads + ' led</span></div>';
      if (!open) continue;
      for (const p of t.partitions) {
        if (!p.replicas.includes(b.id)) {
          h += '<div class="lane none" aria-hidden="true"></div>';
          continue;
        }
        const key = t.name + '|' + p.partition + '|' + b.id;
        h += '<div class="lane" role="group" data-key="' + esc(key) + '" data-topic="' + esc(t.name) + '" data-partition="' + p.partition +
          '" data-broker="' + b.id + '"><span class="label" aria-label="' + esc(t.name) + '-' + p.partition + '">partition ' + p.partition + '</span>' +
          laneCellsHTML() + '</div>';
      }
    }
    return h + '</div></section>';
  }

  // update sets every lane's role and offsets in place.
  update(snap) {
    const alive = new Map(snap.brokers.map((b) => [b.id, b.alive]));
    for (const b of snap.brokers) {
      const card = this.brokersEl.querySelector('.broker[data-broker-id="' + b.id + '"] [data-size]');
      if (card) card.textContent = bytes(b.size);
    }
    for (const t of snap.topics) {
      for (const p of t.partitions) {
        for (const r of p.replicas) {
          const el = this.lanes.get(t.name + '|' + p.partition + '|' + r);
          if (el) updateLane(el, p, r, alive.get(r));
        }
      }
    }
  }
}

// role is what a replica is: leader, follower (in sync), out-of-sync, or
// offline (its broker is not alive, or Metadata lists it offline).
export function role(p, r, alive) {
  if (!alive || p.offline_replicas.includes(r)) return 'offline';
  if (p.leader === r) return 'leader';
  return p.isr.includes(r) ? 'follower' : 'out-of-sync';
}

function updateLane(el, p, r, alive) {
  const ro = role(p, r, alive);
  if (el.dataset.role !== ro) {
    el.dataset.role = ro;
    el.className = 'lane ' + ro;
  }
  updateCells(el, p, r, ro);
}

// layoutKey changes exactly when the cards must be rebuilt.
function layoutKey(snap, expanded) {
  let k = snap.controller_id + '|';
  for (const b of snap.brokers) k += b.id + (b.alive ? 'a' : b.fenced ? 'f' : 'd') + (b.host || '') + b.port + ',';
  for (const t of snap.topics) {
    k += '|' + t.name + (expanded(t) ? '+' : '-');
    for (const p of t.partitions) k += p.replicas.join('.') + ';';
  }
  return k;
}
