// The console page: it receives snapshots over server-sent events
// (/api/events) and renders the newest one, at most once per frame.
//
// window.moldauConsole exposes timings for tests and the curious:
// firstRender (ms from navigation start to the first snapshot rendered),
// seq (the snapshot on screen) and updates (per snapshot: its seq, the
// ms from the poll that made it to the DOM showing it, from the second
// snapshot on, render: the ms the page spent drawing it, and wires: the
// part of that spent on the wires).

import { esc } from './util.js';
import { Diagram } from './diagram.js';
import { Wires } from './wires.js';
import { topicsTable, groupsTable, txnsTable, brokersTable, internalTable, metricsTable } from './tables.js';
import { details } from './details.js';
import { renderActions, confirming } from './actions.js';

const historyLength = 60; // lag samples kept per group, one per snapshot

const $ = (id) => document.getElementById(id);
const stats = { firstRender: null, seq: 0, updates: [] };
window.moldauConsole = stats;

const ui = {
  expanded: new Map(), // diagram: topic -> expanded
  expandAll: location.hash === '#expand-all', // every topic starts expanded
  tableOpen: new Set(), // topics table: topics showing their partitions
  selection: null, // { kind, key }
  internalKind: '', // internal topics table: the kind shown ('' all)
  configs: null, // the selected broker's configuration: { id, state: 'loading' | 'done' | 'error', data, error }
  showDefaults: false, // the broker details list the entries at their defaults too
  isSelected(kind, key) { return this.selection && this.selection.kind === kind && this.selection.key === key; },
  select(kind, key) {
    this.selection = { kind, key };
    if (kind === 'broker') loadConfigs(key);
    schedule(true);
  },
  rerender() { schedule(true); },
};

let snap = null;
let pending = false;
let force = false;
const lagHistory = new Map();
const diagram = new Diagram($('quorum'), $('brokers'), ui);
const wires = new Wires($('flow'), ui);

function schedule(forced) {
  force = force || forced;
  if (pending || !snap) return;
  pending = true;
  requestAnimationFrame(render);
}

// renderMetadataLogNote says whether the table holds the metadata log's
// records, and how to have them when it does not.
function renderMetadataLogNote(s) {
  const note = $('metadata-log-note');
  const following = !!s.metadata_log;
  if (note.dataset.following === String(following)) return;
  note.dataset.following = String(following);
  note.innerHTML = following
    ? 'With those of <code>__cluster_metadata</code> (kind metadata), fetched from the active controller.'
    : 'The metadata log is not served to clients by the brokers: start the console with <code>--bootstrap-controller</code> (the controller listeners) to follow it here.';
}

function render() {
  const started = performance.now();
  pending = false;
  const s = snap;
  const focused = document.activeElement && document.activeElement.closest('[data-key],[data-toggle-topic],[data-open-topic],[data-focus]');
  const focusSel = focused && focusSelector(focused);
  renderHeader(s);
  diagram.render(s);
  const wiresStarted = performance.now();
  wires.render(s);
  const wiresMs = performance.now() - wiresStarted;
  $('topics-table').innerHTML = topicsTable(s, ui);
  $('groups-table').innerHTML = groupsTable(s, ui, lagHistory);
  $('txns-table').innerHTML = txnsTable(s, ui);
  $('brokers-table').innerHTML = brokersTable(s, ui);
  $('internal-table').innerHTML = internalTable(s, ui);
  renderMetadataLogNote(s);
  $('metrics-section').hidden = !(s.metrics && s.metrics.length);
  if (s.metrics) $('metrics-table').innerHTML = metricsTable(s);
  renderDetails(s);
  if (focusSel) {
    const el = document.querySelector(focusSel);
    if (el && el !== document.activeElement) el.focus({ preventScroll: true });
  }
  void document.body.offsetHeight; // include layout in the timings
  if (stats.seq !== s.seq) {
    const now = performance.now();
    // The first snapshot may be older than the page: it times nothing.
    if (stats.firstRender === null) stats.firstRender = now;
    else stats.updates.push({ seq: s.seq, ms: Date.now() - s.time, render: Math.round(now - started), wires: Math.round(wiresMs) });
    if (stats.updates.length > 100) stats.updates.shift();
    stats.seq = s.seq;
    document.body.dataset.seq = s.seq;
  }
  force = false;
}

// focusSelector finds the same control again after a table is redrawn.
function focusSelector(el) {
  for (const a of ['data-toggle-topic', 'data-open-topic', 'data-focus']) {
    if (el.hasAttribute(a)) return '[' + a + '="' + CSS.escape(el.getAttribute(a)) + '"]';
  }
  return '[data-kind="' + CSS.escape(el.dataset.kind || '') + '"][data-key="' + CSS.escape(el.dataset.key) + '"]';
}

function renderHeader(s) {
  $('cluster-id').textContent = s.cluster_id || '–';
  $('controller-id').textContent = s.controller_id >= 0 ? s.controller_id : '–';
  const q = s.quorum;
  $('quorum-summary').textContent = q ? 'leader ' + q.leader_id + ', epoch ' + q.leader_epoch + ', ' + q.voters.length + ' voters' : 'not reported';
  $('updated').textContent = new Date(s.time).toLocaleTimeString() + ' (#' + s.seq + ')';
  const errs = Object.entries(s.errors || {}).filter(([k]) => k !== 'quorum' || !/not served/.test(s.errors[k]));
  const trunc = Object.entries(s.truncated || {});
  $('status').innerHTML = errs.map(([k, v]) => '<span class="warn">' + esc(k) + ': ' + esc(v) + '</span>').join(' ') +
    trunc.map(([k, n]) => ' <span class="muted">' + n + ' ' + esc(k) + ' not shown</span>').join('');
}

function renderDetails(s) {
  const d = details(s, ui.selection, ui);
  $('details').hidden = !d;
  renderActions(s, d ? ui.selection : null);
  if (!d || confirming()) return; // a question open: the panel holds still
  $('details-title').innerHTML = d[0];
  $('details-body').innerHTML = d[1];
}

// loadConfigs asks the console for a broker's configuration
// (DescribeConfigs): once when the broker is selected, again on demand,
// never with every snapshot.
function loadConfigs(id) {
  const c = { id, state: 'loading' };
  ui.configs = c;
  fetch('/api/broker/' + encodeURIComponent(id) + '/configs')
    .then((r) => (r.ok ? r.json() : r.text().then((t) => { throw new Error(r.status + ': ' + t.trim()); })))
    .then((data) => { c.state = 'done'; c.data = data; })
    .catch((err) => { c.state = 'error'; c.error = err.message; })
    .finally(() => { if (ui.configs === c) schedule(true); });
}

function recordLag(s) {
  const seen = new Set();
  for (const g of s.groups) {
    seen.add(g.id);
    let h = lagHistory.get(g.id);
    if (!h) lagHistory.set(g.id, (h = []));
    h.push(g.lag);
    if (h.length > historyLength) h.shift();
  }
  for (const id of lagHistory.keys()) if (!seen.has(id)) lagHistory.delete(id);
}

function onSnapshot(ev) {
  const prev = snap;
  snap = JSON.parse(ev.data);
  if (prev && snap.time < prev.time) lagHistory.clear(); // a replay went back in time
  recordLag(snap);
  schedule(false);
  // Extension modules (the dev panel, the replay timeline) follow the
  // snapshots through this event.
  window.dispatchEvent(new CustomEvent('moldau-snapshot', { detail: snap }));
}

function connect() {
  const es = new EventSource('/api/events');
  es.addEventListener('snapshot', onSnapshot);
  es.onopen = () => { if (!snap) $('updated').textContent = 'waiting for the first poll…'; };
  es.onerror = () => { $('updated').textContent = 'disconnected, reconnecting…'; };
}

function onActivate(ev) {
  const open = ev.target.closest('button[data-open-topic]');
  if (open) {
    const t = open.dataset.openTopic;
    if (ui.tableOpen.has(t)) ui.tableOpen.delete(t); else ui.tableOpen.add(t);
    schedule(true);
    return;
  }
  const tr = ev.target.closest('tr[data-kind]');
  if (tr) ui.select(tr.dataset.kind, tr.dataset.key);
}

$('tables').addEventListener('click', onActivate);
$('tables').addEventListener('keydown', (ev) => {
  if ((ev.key === 'Enter' || ev.key === ' ') && ev.target.matches('tr[data-kind]')) {
    ev.preventDefault();
    onActivate(ev);
  }
});
$('internal-kind').addEventListener('change', (ev) => { ui.internalKind = ev.target.value; schedule(true); });
$('details-body').addEventListener('click', (ev) => {
  if (ev.target.closest('[data-configs-defaults]')) { ui.showDefaults = !ui.showDefaults; schedule(true); }
  if (ev.target.closest('[data-configs-reload]') && ui.configs) { loadConfigs(ui.configs.id); schedule(true); }
});
window.addEventListener('moldau-acted', (ev) => { if (ev.detail.kind === 'broker') loadConfigs(ev.detail.key); }); // an altered config
$('details-close').addEventListener('click', () => { ui.selection = null; schedule(true); });
document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape' && ui.selection) { ui.selection = null; schedule(true); } });
setInterval(() => { if (snap && snap.transactions.length) schedule(true); }, 1000); // transaction ages
connect();
