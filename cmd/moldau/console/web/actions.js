// The details panel's actions: buttons above the selection's details that
// act on the cluster (POST /api/act/..., answered with Kafka's error by
// name) and, through window.moldauActions.register, on whatever an
// extension knows (`moldau dev` adds a node's faults to a broker).
//
// The buttons are built once per selection and kept across snapshots:
// they are rebuilt only when the set of actions changes (a node killed
// offers "start" instead), never while a confirmation is open or an
// action runs, so focus and typed values stay. A destructive action asks
// first, inline, with as many questions as it has (an unclean election
// asks twice); Escape or Cancel takes it back. The outcome is written to
// #act-answer, an aria-live region outside the panel (a deleted group's
// details close with it), and a 'moldau-acted' event is dispatched on
// window after an action succeeds. A read-only console
// (<body data-read-only>) shows no actions.
//
// An action is { id, label, section?, hint?, danger?, inputs?: [{ name,
// label, type: 'number' | 'text' | 'select', value, min?, options?: [[value,
// label]] }], confirm?: [question] or (values) => [question], run:
// async (values) => message }; run throws an Error whose name (set to
// Kafka's error, if any) and message are shown.

import { esc, num } from './util.js';

const readOnly = document.body.dataset.readOnly === 'true';
const hooks = new Map(); // kind -> [fn(snap, key) -> [action]]
const $ = (id) => document.getElementById(id);

const state = {
  sel: '', // kind|key the buttons were built for
  sig: '', // the actions they were built from
  acts: new Map(), // id -> action, the newest (run takes its data)
  confirm: null, // { id, step, questions, values }
  busy: null, // the id of the action running
};
let last = { snap: null, sel: null };

// ActError is a refusal: name is Kafka's error (or '').
class ActError extends Error {
  constructor(name, message) {
    super(message);
    this.kafka = name || '';
  }
}

// post calls a console action and returns its message.
async function post(path, body) {
  const r = await fetch('/api/act/' + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const v = await r.json().catch(() => ({}));
  if (!r.ok) throw new ActError(v.error, v.message || r.status + ' ' + r.statusText);
  return v.message;
}

function partitionActions(snap, key) {
  const [topic, n] = key.split('|');
  const t = snap.topics.find((x) => x.name === topic);
  const p = t && t.partitions.find((x) => String(x.partition) === n);
  if (!p) return [];
  const tp = topic + '-' + p.partition;
  const body = { topic, partition: p.partition };
  return [
    { id: 'elect-preferred', label: 'Elect the preferred leader', hint: 'preferred replica ' + num(p.replicas[0]) + ', leader now ' + num(p.leader),
      run: () => post('partition/elect', { ...body, type: 'preferred' }) },
    { id: 'elect-unclean', label: 'Unclean election', danger: true, hint: 'a leader from outside the ISR, if no in-sync replica is alive',
      confirm: ['Elect a leader of ' + tp + ' from outside the ISR if no in-sync replica is alive?',
        'Really? Records the ISR acknowledged may be lost for good.'],
      run: () => post('partition/elect', { ...body, type: 'unclean' }) },
    { id: 'delete-records', label: 'Delete records', danger: true,
      inputs: [{ name: 'offset', label: 'before offset', type: 'number', min: 0, value: Math.max(p.high_watermark, 0) }],
      confirm: (v) => ['Delete the records of ' + tp + ' before offset ' + v.offset + '? This cannot be undone.'],
      run: (v) => post('partition/delete-records', { ...body, offset: +v.offset }) },
  ];
}

function groupActions(snap, key) {
  const g = snap.groups.find((x) => x.id === key);
  if (!g) return [];
  // The partitions the group has offsets for, and each of their topics
  // whole; none yet: every topic.
  const targets = [];
  const topics = [...new Set(g.offsets.map((o) => o.topic))];
  for (const t of topics.length ? topics : snap.topics.filter((x) => !x.internal).map((x) => x.name)) {
    targets.push([t + '|-1', t + ' (every partition)']);
    for (const o of g.offsets) if (o.topic === t) targets.push([t + '|' + o.partition, t + '-' + o.partition]);
  }
  const live = !['Empty', 'Dead'].includes(g.state);
  const acts = [];
  if (targets.length) {
    acts.push({ id: 'reset-offsets', label: 'Reset offsets', danger: true,
      hint: live ? 'the group is ' + g.state + ': Kafka resets only a group with no members' : '',
      inputs: [{ name: 'target', label: 'of', type: 'select', options: targets, value: targets[0][0] },
        { name: 'to', label: 'to', type: 'select', options: [['earliest', 'earliest'], ['latest', 'latest'], ['offset', 'offset']], value: 'earliest' },
        { name: 'offset', label: 'offset', type: 'number', min: 0, value: 0 }],
      confirm: (v) => ['Move the committed offsets of group ' + g.id + ' on ' + v.target.replace('|-1', '').replace('|', '-') + ' to ' +
        (v.to === 'offset' ? 'offset ' + v.offset : 'the ' + v.to) + '?'],
      run: (v) => {
        const [topic, part] = v.target.split('|');
        return post('group/reset-offsets', { group: g.id, topic, partition: +part, to: v.to, offset: +v.offset });
      } });
  }
  acts.push({ id: 'delete-group', label: 'Delete the group', danger: true,
    confirm: ['Delete group ' + g.id + ' and its committed offsets?'], run: () => post('group/delete', { group: g.id }) });
  return acts;
}

function txnActions(snap, key) {
  const x = snap.transactions.find((t) => t.id === key);
  if (!x || !x.partitions.length) return [];
  return [{ id: 'abort-txn', label: 'Abort the open partitions', danger: true,
    hint: 'as kafka-transactions.sh abort: an ABORT marker written to each partition leader',
    confirm: ['Abort transaction ' + x.id + ' (producer ' + x.producer_id + ') on ' +
      x.partitions.map((t) => t.topic + ' ' + t.partitions.join(',')).join('; ') + '? Its records there are aborted.'],
    run: () => post('txn/abort', { transactional_id: x.id }) }];
}

function brokerActions(snap, key) {
  const b = snap.brokers.find((x) => String(x.id) === key);
  if (!b) return [];
  return [{ id: 'alter-config', label: 'Alter a dynamic config', danger: true,
    hint: 'IncrementalAlterConfigs, as kafka-configs.sh --entity-type brokers',
    inputs: [{ name: 'op', label: 'op', type: 'select', options: [['set', 'set'], ['delete', 'delete']], value: 'set' },
      { name: 'name', label: 'name', type: 'text', value: '' }, { name: 'value', label: 'value', type: 'text', value: '' }],
    confirm: (v) => [v.op === 'delete' ? 'Delete the dynamic value of ' + v.name + ' on broker ' + b.id + '?'
      : 'Set ' + v.name + ' to "' + v.value + '" on broker ' + b.id + '?'],
    run: (v) => post('broker/alter-config', { broker: b.id, name: v.name.trim(), value: v.op === 'delete' ? null : v.value }) }];
}

const builtin = { partition: partitionActions, group: groupActions, txn: txnActions, broker: brokerActions };

function actionsFor(snap, sel) {
  const out = builtin[sel.kind] ? builtin[sel.kind](snap, sel.key) : [];
  for (const fn of hooks.get(sel.kind) || []) out.push(...(fn(snap, sel.key) || []));
  return out;
}

function inputHTML(a, i) {
  const id = 'act-' + a.id + '-' + i.name;
  const field = i.type === 'select'
    ? '<select id="' + id + '" name="' + esc(i.name) + '">' + i.options.map(([v, l]) => '<option value="' + esc(v) + '"' +
      (v === i.value ? ' selected' : '') + '>' + esc(l) + '</option>').join('') + '</select>'
    : '<input id="' + id + '" name="' + esc(i.name) + '" type="' + (i.type === 'text' ? 'text' : 'number') + '"' + (i.min != null ? ' min="' + i.min + '"' : '') +
      ' value="' + esc(i.value) + '">';
  return '<label for="' + id + '">' + esc(i.label) + '</label> ' + field;
}

function actHTML(a) {
  return '<div class="act" data-act="' + esc(a.id) + '">' +
    '<button type="button" data-act-run="' + esc(a.id) + '"' + (a.danger ? ' class="danger"' : '') + '>' + esc(a.label) + (a.confirm ? '…' : '') + '</button> ' +
    (a.inputs || []).map((i) => inputHTML(a, i)).join(' ') +
    (a.hint ? ' <span class="muted">' + esc(a.hint) + '</span>' : '') +
    '<div class="act-confirm" role="group" aria-label="Confirm" hidden></div></div>';
}

function signature(acts) {
  return acts.map((a) => [a.id, a.label, a.section || '', (a.inputs || []).map((i) => i.name + (i.options ? ':' + i.options.join(',') : '')).join(' ')].join('/')).join(';');
}

function build(el, acts) {
  const active = document.activeElement;
  const focused = el.contains(active) && (active.dataset.actRun || (active.closest('.act') && active.closest('.act').dataset.act));
  let h = '';
  let section = null;
  for (const a of acts) {
    const s = a.section || 'Actions';
    if (s !== section) h += '<h3>' + esc(s) + '</h3>';
    section = s;
    h += actHTML(a);
  }
  el.innerHTML = h;
  if (focused) {
    // The same action, or the first if it is gone (kill -9 gave way to
    // start): focus stays in the panel.
    const b = el.querySelector('[data-act-run="' + CSS.escape(focused) + '"]') || el.querySelector('[data-act-run]');
    if (b) b.focus({ preventScroll: true });
  }
}

// confirming reports whether a question is open: the page then leaves
// the whole details panel as it is.
export function confirming() {
  return !!state.confirm;
}

// renderActions shows the actions of the selection (null: none). The
// page calls it with every render; it rebuilds the buttons only when they
// change and nothing is being confirmed or run.
export function renderActions(snap, sel) {
  last = { snap, sel };
  const el = $('details-actions');
  if (!el) return;
  const selKey = sel ? sel.kind + '|' + sel.key : '';
  if (selKey !== state.sel) state.confirm = null; // another selection: the question is moot
  const acts = readOnly || !sel ? [] : actionsFor(snap, sel);
  state.acts = new Map(acts.map((a) => [a.id, a]));
  el.hidden = acts.length === 0;
  if (selKey === state.sel && (state.confirm || state.busy)) return;
  const sig = signature(acts);
  if (selKey === state.sel && sig === state.sig) return;
  state.sel = selKey;
  state.sig = sig;
  build(el, acts);
}

function values(box) {
  const v = {};
  for (const f of box.querySelectorAll('input[name], select[name]')) v[f.name] = f.value;
  return v;
}

function showConfirm(box) {
  const c = state.confirm;
  const area = box.querySelector('.act-confirm');
  const qid = 'act-q-' + c.id;
  area.innerHTML = '<p id="' + qid + '">' + esc(c.questions[c.step]) + '</p>' +
    '<button type="button" class="danger" data-act-confirm aria-describedby="' + qid + '">' +
    (c.step + 1 < c.questions.length ? 'Yes, go on' : 'Yes, ' + esc(state.acts.get(c.id).label.toLowerCase())) + '</button> ' +
    '<button type="button" data-act-cancel>Cancel</button>';
  area.hidden = false;
  for (const b of box.querySelectorAll('[data-act-run], input, select')) b.disabled = true;
  area.querySelector('[data-act-confirm]').focus();
}

function closeConfirm(box, refocus) {
  state.confirm = null;
  const area = box.querySelector('.act-confirm');
  area.hidden = true;
  area.innerHTML = '';
  for (const b of box.querySelectorAll('[data-act-run], input, select')) b.disabled = false;
  if (refocus) box.querySelector('[data-act-run]').focus();
}

function answer(stateName, id, html) {
  const el = $('act-answer');
  el.dataset.state = stateName;
  el.dataset.action = id;
  el.innerHTML = html;
}

async function run(box, id, vals) {
  const a = state.acts.get(id);
  if (!a) return;
  const sel = last.sel;
  state.busy = id;
  for (const b of box.querySelectorAll('button, input, select')) b.disabled = true;
  answer('busy', id, esc(a.label) + '…');
  try {
    const msg = await a.run(vals);
    answer('ok', id, '<strong>Done.</strong> ' + esc(msg));
    // The page may have more to ask again (a broker's configuration).
    window.dispatchEvent(new CustomEvent('moldau-acted', { detail: { kind: sel.kind, key: sel.key, action: id } }));
  } catch (err) {
    answer('error', id, '<strong class="warn">' + esc(err.kafka || 'Refused') + '</strong> ' + esc(err.message));
  } finally {
    state.busy = null;
    for (const b of box.querySelectorAll('button, input, select')) b.disabled = false;
    if (box.isConnected && document.activeElement === document.body) box.querySelector('[data-act-run]').focus({ preventScroll: true });
    if (last.snap) renderActions(last.snap, last.sel);
  }
}

function onClick(ev) {
  const box = ev.target.closest('.act');
  if (!box || state.busy) return;
  const id = box.dataset.act;
  if (ev.target.closest('[data-act-cancel]')) { closeConfirm(box, true); return; }
  if (ev.target.closest('[data-act-confirm]') && state.confirm && state.confirm.id === id) {
    const c = state.confirm;
    if (c.step + 1 < c.questions.length) { c.step++; showConfirm(box); return; }
    closeConfirm(box, false);
    box.querySelector('[data-act-run]').focus();
    run(box, id, c.values);
    return;
  }
  if (!ev.target.closest('[data-act-run]')) return;
  const a = state.acts.get(id);
  const vals = values(box);
  const questions = typeof a.confirm === 'function' ? a.confirm(vals) : a.confirm;
  if (questions && questions.length) {
    state.confirm = { id, step: 0, questions, values: vals };
    showConfirm(box);
    return;
  }
  run(box, id, vals);
}

function onKey(ev) {
  if (ev.key !== 'Escape' || !state.confirm) return;
  const box = ev.target.closest('.act') || $('details-actions').querySelector('[data-act="' + CSS.escape(state.confirm.id) + '"]');
  ev.stopPropagation(); // the details stay open: only the question goes
  if (box) closeConfirm(box, true);
}

const root = $('details-actions');
if (root) {
  root.addEventListener('click', onClick);
  root.addEventListener('keydown', onKey);
}

// The hook for extensions: register(kind, fn) adds fn's actions to every
// selection of that kind; refresh() asks for them again (their state
// changed without a snapshot).
window.moldauActions = {
  readOnly,
  register(kind, fn) {
    if (!hooks.has(kind)) hooks.set(kind, []);
    hooks.get(kind).push(fn);
    this.refresh();
  },
  refresh() { if (last.snap) renderActions(last.snap, last.sel); },
};
