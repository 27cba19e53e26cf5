// Announcements: what changed between two snapshots, said in words where
// everyone sees and hears it: a new partition leader, a broker down or
// back, a new active controller, a replica out of or back in the ISR, a
// group rebalanced. They go to a log region (aria-live polite, so a
// screen reader reads them once) and fade after a while; under reduced
// motion they disappear without fading.
//
// The module follows the page's 'moldau-snapshot' events and needs
// nothing else. A replay going back in time (an older snapshot) says
// nothing: it compares only snapshots moving forward.
// window.moldauConsole.announced keeps the last messages for tests.

const keep = 8000; // ms a message stays
const maxShown = 6; // messages on screen at once
const maxPerSnapshot = 4; // beyond this, one message counts the rest

const region = document.getElementById('announcements');
const said = [];
if (window.moldauConsole) window.moldauConsole.announced = said;

let prev = null;

window.addEventListener('moldau-snapshot', (ev) => {
  const s = ev.detail;
  try {
    if (prev && s.time >= prev.time) announce(changes(prev, s));
  } finally {
    prev = s;
  }
});

// changes lists, in words, what differs from a to b.
export function changes(a, b) {
  const out = [];
  const aliveBefore = new Map(a.brokers.map((x) => [x.id, x.alive]));
  for (const x of b.brokers) {
    const was = aliveBefore.get(x.id);
    if (was === true && !x.alive) out.push({ kind: 'down', text: 'Broker ' + x.id + ' is ' + (x.fenced ? 'fenced' : 'down') });
    if (was === false && x.alive) out.push({ kind: 'up', text: 'Broker ' + x.id + ' is back' });
    if (was === undefined && a.brokers.length && x.alive) out.push({ kind: 'up', text: 'Broker ' + x.id + ' joined' });
  }
  if (a.quorum && b.quorum && a.quorum.leader_id !== b.quorum.leader_id && b.quorum.leader_id >= 0) {
    out.push({ kind: 'controller', text: 'Controller ' + b.quorum.leader_id + ' is the active controller (epoch ' + b.quorum.leader_epoch + ')' });
  }
  // Leadership and ISR changes, one message per broker: a broker's death
  // moves many partitions at once.
  const parts = new Map();
  for (const t of a.topics) for (const p of t.partitions) parts.set(t.name + '-' + p.partition, p);
  const leads = new Map(); // new leader -> [{name, epoch}]
  const left = new Map(); // broker -> partitions whose ISR it left
  const joined = new Map(); // broker -> partitions whose ISR it rejoined
  const add = (m, k, v) => { if (!m.has(k)) m.set(k, []); m.get(k).push(v); };
  for (const t of b.topics) {
    for (const p of t.partitions) {
      const name = t.name + '-' + p.partition;
      const q = parts.get(name);
      if (!q) continue;
      if (q.leader !== p.leader) add(leads, p.leader, { name, epoch: p.leader_epoch });
      const was = q.isr || [], is = p.isr || []; // null when the partition has no ISR
      for (const r of was) if (!is.includes(r)) add(left, r, name);
      for (const r of is) if (!was.includes(r)) add(joined, r, name);
    }
  }
  // The user's topics first: internal ones (__consumer_offsets...) move
  // with every broker and would hide them.
  const byTopic = (x, y) => (x.startsWith('__') - y.startsWith('__')) || x.localeCompare(y, undefined, { numeric: true });
  for (const m of [left, joined]) for (const list of m.values()) list.sort(byTopic);
  for (const list of leads.values()) list.sort((x, y) => byTopic(x.name, y.name));
  const names = (list) => list.length <= 3 ? list.join(', ') : list.slice(0, 3).join(', ') + ' and ' + (list.length - 3) + ' more';
  for (const [leader, list] of leads) {
    if (leader < 0) {
      out.push({ kind: 'leader', text: names(list.map((x) => x.name)) + (list.length === 1 ? ' has' : ' have') + ' no leader' });
    } else if (list.length === 1) {
      out.push({ kind: 'leader', text: 'Broker ' + leader + ' leads ' + list[0].name + ' (epoch ' + list[0].epoch + ')' });
    } else {
      out.push({ kind: 'leader', text: 'Broker ' + leader + ' now leads ' + list.length + ' partitions: ' + names(list.map((x) => x.name)) });
    }
  }
  for (const [r, list] of left) out.push({ kind: 'isr', text: 'Broker ' + r + ' left the ISR of ' + names(list) });
  for (const [r, list] of joined) out.push({ kind: 'isr', text: 'Broker ' + r + ' rejoined the ISR of ' + names(list) });
  const groups = new Map(a.groups.map((g) => [g.id, g]));
  for (const g of b.groups) {
    const h = groups.get(g.id);
    if (h && g.epoch > h.epoch && g.state !== 'Dead') {
      const n = (g.members || []).length;
      out.push({ kind: 'group', text: 'Group ' + g.id + ' rebalanced: ' + (g.protocol === 'consumer' ? 'epoch ' : 'generation ') + g.epoch +
        ', ' + n + ' member' + (n === 1 ? '' : 's') });
    }
  }
  return out;
}

function announce(list) {
  if (!list.length || !region) return;
  let shown = list;
  if (list.length > maxPerSnapshot) {
    shown = list.slice(0, maxPerSnapshot - 1);
    shown.push({ kind: 'more', text: (list.length - shown.length) + ' more changes (see the diagram and tables)' });
  }
  const at = new Date().toLocaleTimeString();
  for (const m of shown) {
    said.push(m.text);
    if (said.length > 50) said.shift();
    const li = document.createElement('li');
    li.className = 'announcement ' + m.kind;
    li.dataset.kind = m.kind;
    const time = document.createElement('time');
    time.textContent = at;
    li.append(time, ' ', m.text);
    region.append(li);
    setTimeout(() => li.classList.add('leaving'), keep);
    setTimeout(() => li.remove(), keep + 600);
  }
  while (region.children.length > maxShown) region.firstElementChild.remove();
}
