// The `moldau dev` panel, loaded into the console page: the nodes with
// their faults, the built-in producers and consumers with their delivery
// counters, the event log, and the settings that rebuild the cluster. It
// polls /api/dev/state and /api/dev/events once a second and posts
// actions to /api/dev/....

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const css = document.createElement('link');
css.rel = 'stylesheet';
css.href = '/dev/static/panel.css';
document.head.appendChild(css);

const panel = document.createElement('section');
panel.id = 'dev-panel';
panel.setAttribute('aria-labelledby', 'dev-title');
panel.innerHTML = `
<h2 id="dev-title">Dev cluster</h2>
<div class="dev-row">
  <div id="dev-nodes"></div>
  <div class="dev-faults">
    <button type="button" data-dev="controller-kill">Kill the active controller</button>
    <span class="dev-lose">Lose the next
      <select id="dev-lose-what"><option value="false">request</option><option value="true">response</option></select>
      from <select id="dev-lose-from"></select> to <select id="dev-lose-to"></select>
      <button type="button" data-dev="lose">Lose</button></span>
    <span class="dev-slow"><label for="dev-slow-node">Slow the disk of</label> <select id="dev-slow-node"></select>
      <label>by <input id="dev-slow-ms" type="number" value="200" min="0" max="60000" style="width:5em"> ms</label>
      <button type="button" data-dev="slow">Slow disk</button></span>
  </div>
</div>
<div class="dev-row">
  <form id="dev-producer-form" class="dev-form"><strong>Producer</strong>
    <label>topic <input name="topic" value="dev" size="8"></label>
    <label>rate/s <input name="rate" type="number" value="20" min="1" style="width:5em"></label>
    <label>burst <input name="burst" type="number" value="1" min="1" style="width:4em"></label>
    <label>keys <input name="keys" type="number" value="10" min="0" style="width:4em"></label>
    <label>acks <select name="acks"><option>all</option><option>1</option><option>0</option></select></label>
    <label><input name="transactional" type="checkbox"> transactions</label>
    <label>abort every <input name="abort_every" type="number" value="0" min="0" style="width:4em"></label>
    <label>tombstone every <input name="tombstone_every" type="number" value="0" min="0" style="width:4em"></label>
    <button>Add producer</button></form>
  <form id="dev-consumer-form" class="dev-form"><strong>Consumer</strong>
    <label>group <input name="group" value="dev-group" size="10"></label>
    <label>topic <input name="topic" value="dev" size="8"></label>
    <label>protocol <select name="protocol"><option>classic</option><option>consumer</option></select></label>
    <label>assignor <select name="assignor"><option value="">default</option><option>cooperative-sticky</option><option>sticky</option><option>range</option><option>roundrobin</option><option>uniform</option></select></label>
    <label>isolation <select name="isolation"><option>read_committed</option><option>read_uncommitted</option></select></label>
    <label>commit ms <input name="commit_interval_ms" type="number" value="1000" min="1" style="width:5em"></label>
    <button>Add consumer</button></form>
</div>
<details class="dev-row" id="dev-settings">
  <summary>Settings: rebuild the cluster</summary>
  <form id="dev-settings-form" class="dev-form">
    <fieldset><legend>Cluster and topic</legend>
      <label>nodes <input name="nodes" type="number" min="1" max="9" style="width:4em"></label>
      <label>topic <input name="topic" size="8"></label>
      <label>partitions <input name="partitions" type="number" min="1" style="width:5em"></label>
      <label>replication factor <input name="replication_factor" type="number" min="1" max="9" style="width:4em"></label>
      <label>min.insync.replicas <input name="min_isr" type="number" min="1" style="width:4em"></label>
      <label><input name="unclean" type="checkbox"> unclean leader election</label>
      <label>retention.ms <input name="retention_ms" type="number" min="-1" style="width:8em" placeholder="default"></label>
      <label>cleanup.policy <select name="cleanup_policy"><option value="">default (delete)</option><option>delete</option><option>compact</option><option>compact,delete</option></select></label>
    </fieldset>
    <fieldset><legend>Built-in producers</legend>
      <label>count <input name="producers" type="number" min="0" max="20" style="width:4em"></label>
      <label>rate/s <input name="rate" type="number" min="1" style="width:5em"></label>
      <label>acks <select name="acks"><option>all</option><option>1</option><option>0</option></select></label>
      <label><input name="idempotent" type="checkbox"> idempotent</label>
      <label><input name="transactional" type="checkbox"> transactions</label>
      <label>linger ms <input name="linger_ms" type="number" min="0" style="width:5em"></label>
    </fieldset>
    <fieldset><legend>Built-in consumers</legend>
      <label>count <input name="consumers" type="number" min="0" max="20" style="width:4em"></label>
      <label>group <input name="group" size="10"></label>
      <label>protocol <select name="protocol"><option>classic</option><option>consumer</option></select></label>
      <label>assignor <select name="assignor"><option value="">default</option><option>cooperative-sticky</option><option>sticky</option><option>range</option><option>roundrobin</option><option>uniform</option></select></label>
      <label>isolation <select name="isolation"><option>read_committed</option><option>read_uncommitted</option></select></label>
      <label>commit ms <input name="commit_interval_ms" type="number" min="1" style="width:5em"></label>
    </fieldset>
    <button>Rebuild the cluster</button> <span class="muted">kills every node, removes its data and starts a new, empty cluster with these settings</span>
  </form>
</details>
<div class="dev-row"><div id="dev-counters"></div></div>
<div class="dev-row"><div id="dev-anomalies"></div></div>
<div class="dev-row dev-events-row">
  <h3>Events <button type="button" data-dev="check">Check the logs now</button> <a href="/api/dev/run?download=1" download="moldau-dev-run.json">Export the run (JSON, for moldau console --replay)</a></h3>
  <ol id="dev-events" reversed></ol>
</div>
<p id="dev-error" class="warn" role="alert"></p>`;
const main = document.querySelector('main');
main.insertBefore(panel, document.getElementById('diagram').nextSibling);

const $ = (id) => document.getElementById(id);
let lastEvent = 0;
let state = null;
const dev = { state: null, events: [] };
window.moldauDev = dev;

async function post(path, body) {
  const r = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body || {}) });
  const v = await r.json().catch(() => ({}));
  $('dev-error').textContent = r.ok ? '' : (v.error || r.statusText);
  refresh();
  return v;
}

function nodeCard(n) {
  const up = n.state === 'running';
  const cut = [n.cut_from_peers ? 'cut from peers' : '', n.cut_from_clients ? 'cut from clients' : ''].filter(Boolean).join(', ');
  return `<div class="dev-node" data-dev-node="${n.id}" data-state="${esc(n.state)}" data-cut-peers="${n.cut_from_peers}" data-cut-clients="${n.cut_from_clients}">
    <strong>node ${n.id}</strong> <span class="dev-state">${esc(n.state)}${n.pid ? ' (pid ' + n.pid + ')' : ''}</span>
    <span class="muted">${esc(n.client_addr)}</span> ${cut ? '<span class="warn">' + esc(cut) + '</span>' : ''}
    ${n.disk_delay_ms ? `<span class="warn dev-disk" data-disk-delay="${n.disk_delay_ms}">disk +${n.disk_delay_ms} ms</span>` : ''}<br>
    ${up ? `<button type="button" data-dev="kill" data-node="${n.id}">kill -9</button>
    <button type="button" data-dev="stop" data-node="${n.id}">stop</button>
    <button type="button" data-dev="restart" data-node="${n.id}">restart</button>` :
    `<button type="button" data-dev="start" data-node="${n.id}">start</button>`}
    <button type="button" data-dev="cut-peers" data-node="${n.id}">cut from peers</button>
    <button type="button" data-dev="cut-clients" data-node="${n.id}">cut from clients</button>
    <button type="button" data-dev="heal" data-node="${n.id}">heal</button>
    ${n.disk_delay_ms ? `<button type="button" data-dev="unslow" data-node="${n.id}">normal disk</button>` : ''}</div>`;
}

function counters(c) {
  const n = (a) => a.length;
  let h = '<table class="dev-table"><caption>Producers</caption><thead><tr><th>name</th><th>sent</th><th>acknowledged</th><th>in flight</th><th>failed</th><th>aborted</th><th>acknowledged but lost</th><th>duplicates</th><th></th></tr></thead><tbody>';
  for (const p of c.producers || []) {
    h += `<tr data-dev-producer="${esc(p.name)}" data-lost="${n(p.lost)}" data-duplicates="${n(p.duplicates)}" data-acked="${p.acked}"><td>${esc(p.name)}</td><td>${p.sent}</td><td>${p.acked}</td><td>${p.in_flight}</td><td>${p.failed}</td><td>${p.aborted}</td>
      <td class="${n(p.lost) ? 'warn' : ''}">${n(p.lost)}</td><td class="${n(p.duplicates) ? 'warn' : ''}">${n(p.duplicates)}</td>
      <td><button type="button" data-dev="producer-stop" data-name="${esc(p.name)}">stop</button></td></tr>`;
  }
  h += '</tbody></table><table class="dev-table"><caption>Consumers</caption><thead><tr><th>name</th><th>group</th><th>state</th><th>processed</th><th>processed twice (group)</th><th>skipped (group)</th><th></th></tr></thead><tbody>';
  for (const k of c.consumers || []) {
    h += `<tr data-dev-consumer="${esc(k.name)}"><td>${esc(k.name)}</td><td>${esc(k.group)}</td><td>${esc(k.state)}</td><td>${k.processed}</td>
      <td class="${n(k.processed_twice) ? 'warn' : ''}">${n(k.processed_twice)}</td><td class="${n(k.skipped) ? 'warn' : ''}">${n(k.skipped)}</td>
      <td>${k.state === 'running' ? `<button type="button" data-dev="consumer-close" data-name="${esc(k.name)}">close</button>
      <button type="button" data-dev="consumer-crash" data-name="${esc(k.name)}">crash</button>` :
      `<button type="button" data-dev="consumer-restart" data-name="${esc(k.name)}">restart</button>`}</td></tr>`;
  }
  h += '</tbody></table>';
  const checked = c.checked_at && !c.checked_at.startsWith('0001') ? new Date(c.checked_at).toLocaleTimeString() : 'never';
  h += `<p class="muted">Checked against the leaders' logs: ${esc(checked)}, ${c.log_records} records found${c.check_error ? ' <span class="warn">' + esc(c.check_error) + '</span>' : ''}</p>`;
  return h;
}

function anomalies(c) {
  const rows = [];
  const list = (who, kind, as) => { for (const a of as.slice(0, 20)) rows.push(`<li>${esc(who)}: ${esc(kind)} ${esc(a.id)} at ${esc(a.topic)}-${a.partition} offsets ${esc(a.offsets.join(', '))}${a.consumers ? ' by ' + esc(a.consumers.join(', ')) : ''}${a.detail ? ' (' + esc(a.detail) + ')' : ''}</li>`); };
  for (const p of c.producers || []) { list(p.name, 'lost', p.lost); list(p.name, 'duplicate', p.duplicates); }
  const groups = new Set();
  for (const k of c.consumers || []) {
    if (groups.has(k.group)) continue;
    groups.add(k.group);
    list(k.group, 'processed twice', k.processed_twice);
    list(k.group, 'skipped', k.skipped);
  }
  return rows.length ? '<h3>Anomalies</h3><ul class="dev-anomalies">' + rows.join('') + '</ul>' : '';
}

function render() {
  if (!state) return;
  if (window.moldauActions) window.moldauActions.refresh(); // a node's faults in its broker's details
  $('dev-nodes').innerHTML = state.nodes.map(nodeCard).join('');
  const opts = (withClients) => (withClients ? '<option value="0">clients</option>' : '') + state.nodes.map((n) => `<option value="${n.id}">node ${n.id}</option>`).join('');
  for (const [id, cl] of [['dev-lose-from', true], ['dev-lose-to', false], ['dev-slow-node', false]]) {
    const sel = $(id);
    const v = sel.value;
    if (sel.options.length !== state.nodes.length + (cl ? 1 : 0)) { sel.innerHTML = opts(cl); if (v) sel.value = v; }
  }
  $('dev-counters').innerHTML = counters(state.counters);
  $('dev-anomalies').innerHTML = anomalies(state.counters);
}

async function refresh() {
  try {
    const r = await fetch('/api/dev/state');
    state = await r.json();
    dev.state = state;
    render();
    const e = await (await fetch('/api/dev/events?since=' + lastEvent)).json();
    const ol = $('dev-events');
    for (const ev of e.events) {
      lastEvent = ev.seq;
      dev.events.push(ev);
      const li = document.createElement('li');
      li.dataset.kind = ev.kind;
      li.innerHTML = `<time>${esc(new Date(ev.time).toLocaleTimeString())}</time> <span class="dev-kind">${esc(ev.kind)}</span> ${esc(ev.text)}`;
      ol.prepend(li);
    }
    while (ol.children.length > 200) ol.lastChild.remove();
    if (dev.events.length > 1000) dev.events.splice(0, dev.events.length - 1000);
  } catch (err) {
    $('dev-error').textContent = 'dev API: ' + err;
  }
}

panel.addEventListener('click', (ev) => {
  const b = ev.target.closest('button[data-dev]');
  if (!b) return;
  const a = b.dataset.dev;
  const node = b.dataset.node;
  const name = b.dataset.name && encodeURIComponent(b.dataset.name);
  if (node && a === 'unslow') post(`/api/dev/nodes/${node}/slow`, { delay_ms: 0 });
  else if (node) post(`/api/dev/nodes/${node}/${a}`);
  else if (a === 'slow') post(`/api/dev/nodes/${$('dev-slow-node').value}/slow`, { delay_ms: +$('dev-slow-ms').value });
  else if (a === 'controller-kill') post('/api/dev/controller/kill');
  else if (a === 'lose') post('/api/dev/lose', { from: +$('dev-lose-from').value, to: +$('dev-lose-to').value, response: $('dev-lose-what').value === 'true' });
  else if (a === 'check') post('/api/dev/check');
  else if (a === 'producer-stop') post(`/api/dev/producers/${name}/stop`);
  else if (a.startsWith('consumer-')) post(`/api/dev/consumers/${name}/${a.slice(9)}`);
});

// A broker's details in the console offer its node's faults, through the
// console's hook (web/actions.js): the same calls as the node cards.
async function nodeAction(id, action, body) {
  const r = await fetch(`/api/dev/nodes/${id}/${action}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body || {}) });
  const v = await r.json().catch(() => ({}));
  refresh();
  if (!r.ok) throw new Error(v.error || r.statusText);
  return action === 'slow' ? `node ${id}: disk delay ${body.delay_ms} ms` : `node ${id}: ${action}`;
}

function brokerFaults(snap, key) {
  const n = state && state.nodes.find((x) => String(x.id) === key);
  if (!n) return [];
  const section = 'Faults (moldau dev)';
  const act = (action, label, question) => ({ id: 'dev-' + action, label, section, danger: !!question,
    confirm: question ? [question] : undefined, run: () => nodeAction(n.id, action) });
  const acts = n.state === 'running'
    ? [act('kill', 'kill -9', `Kill node ${n.id} with SIGKILL? It stops at once, with no controlled shutdown.`),
      act('stop', 'stop', `Stop node ${n.id} (SIGTERM, a controlled shutdown)?`),
      act('restart', 'restart', `Restart node ${n.id}?`)]
    : [act('start', 'start')];
  acts.push(act('cut-peers', 'cut from peers'), act('cut-clients', 'cut from clients'), act('heal', 'heal'));
  acts.push({ id: 'dev-slow', label: 'Slow the disk', section,
    inputs: [{ name: 'delay_ms', label: 'by (ms, 0: normal)', type: 'number', min: 0, value: n.disk_delay_ms || 200 }],
    run: (v) => nodeAction(n.id, 'slow', { delay_ms: +v.delay_ms }) });
  return acts;
}
if (window.moldauActions) window.moldauActions.register('broker', brokerFaults);

function formJSON(form) {
  const o = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    if (el.type === 'checkbox') o[el.name] = el.checked;
    else if (el.type === 'number') o[el.name] = +el.value;
    else o[el.name] = el.value;
  }
  return o;
}
$('dev-producer-form').addEventListener('submit', (ev) => { ev.preventDefault(); post('/api/dev/producers', formJSON(ev.target)); });
$('dev-consumer-form').addEventListener('submit', (ev) => { ev.preventDefault(); post('/api/dev/consumers', formJSON(ev.target)); });

// The settings form shows the cluster's settings; the first producer and
// consumer stand for all of them.
let settings = null;
async function loadSettings() {
  settings = await (await fetch('/api/dev/settings')).json();
  const f = $('dev-settings-form').elements;
  const tc = settings.topic_configs || {};
  const p = (settings.producers || [])[0] || { rate: 10, acks: 'all', idempotent: true, linger_ms: 0 };
  const c = (settings.consumers || [])[0] || { group: 'dev-group', protocol: 'classic', assignor: '', isolation: 'read_committed', commit_interval_ms: 1000 };
  f.nodes.value = settings.nodes;
  f.topic.value = settings.topic;
  f.partitions.value = settings.partitions;
  f.replication_factor.value = settings.replication_factor;
  f.min_isr.value = tc['min.insync.replicas'] || 1;
  f.unclean.checked = tc['unclean.leader.election.enable'] === 'true';
  f.retention_ms.value = tc['retention.ms'] || '';
  f.cleanup_policy.value = tc['cleanup.policy'] || '';
  f.producers.value = (settings.producers || []).length;
  f.rate.value = p.rate;
  f.acks.value = p.acks || 'all';
  f.idempotent.checked = p.idempotent !== false;
  f.transactional.checked = !!p.transactional;
  f.linger_ms.value = p.linger_ms || 0;
  f.consumers.value = (settings.consumers || []).length;
  f.group.value = c.group;
  f.protocol.value = c.protocol || 'classic';
  f.assignor.value = c.assignor || '';
  f.isolation.value = c.isolation || 'read_committed';
  f.commit_interval_ms.value = c.commit_interval_ms || 1000;
}

function settingsFromForm(form) {
  const v = formJSON(form);
  const tc = { ...(settings.topic_configs || {}), 'min.insync.replicas': String(v.min_isr), 'unclean.leader.election.enable': String(v.unclean) };
  delete tc['retention.ms'];
  delete tc['cleanup.policy'];
  if (form.elements.retention_ms.value !== '') tc['retention.ms'] = String(v.retention_ms);
  if (v.cleanup_policy) tc['cleanup.policy'] = v.cleanup_policy;
  const template = (settings.producers || [])[0] || {};
  const producers = [];
  for (let i = 0; i < v.producers; i++) {
    producers.push({ ...template, name: 'p' + (i + 1), topic: v.topic, rate: v.rate, acks: v.acks,
      idempotent: v.idempotent && v.acks === 'all', transactional: v.transactional, linger_ms: v.linger_ms });
  }
  const consumers = [];
  for (let i = 0; i < v.consumers; i++) {
    consumers.push({ name: 'c' + (i + 1), group: v.group, topic: v.topic, protocol: v.protocol, assignor: v.assignor,
      isolation: v.isolation, commit_interval_ms: v.commit_interval_ms });
  }
  return { nodes: v.nodes, topic: v.topic, partitions: v.partitions, replication_factor: v.replication_factor,
    topic_configs: tc, producers, consumers };
}

$('dev-settings-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const b = ev.target.querySelector('button');
  b.disabled = true;
  b.textContent = 'Rebuilding…';
  await post('/api/dev/rebuild', settingsFromForm(ev.target));
  b.disabled = false;
  b.textContent = 'Rebuild the cluster';
  loadSettings();
});

loadSettings();
refresh();
setInterval(refresh, 1000);
