// The details panel: what the selected row is, from the latest snapshot.

import { esc, num, bytes, ago, list } from './util.js';

function dl(pairs) {
  return '<dl class="kv">' + pairs.map(([k, v]) => '<dt>' + k + '</dt><dd>' + v + '</dd>').join('') + '</dl>';
}

function partitionDetails(snap, key) {
  const [topic, n] = key.split('|');
  const t = snap.topics.find((x) => x.name === topic);
  const p = t && t.partitions.find((x) => String(x.partition) === n);
  if (!p) return null;
  const sizes = Object.entries(p.replica_sizes || {}).map(([b, s]) => 'broker ' + esc(b) + ': ' + bytes(s)).join('<br>');
  return ['Partition ' + esc(topic) + '-' + p.partition, dl([
    ['Topic id', esc(t.id || '–')], ['Leader', num(p.leader)], ['Leader epoch', num(p.leader_epoch)],
    ['Replicas', list(p.replicas)], ['ISR', list(p.isr)], ['Offline replicas', list(p.offline_replicas)],
    ['Log start offset', num(p.log_start_offset)], ['High watermark', num(p.high_watermark)],
    ['Last stable offset', num(p.last_stable_offset)], ['Log end offset', num(p.log_end_offset)],
    ['Replica sizes', sizes || '–'], ['Error', esc(p.error || '–')],
  ])];
}

function groupDetails(snap, key) {
  const g = snap.groups.find((x) => x.id === key);
  if (!g) return null;
  let h = dl([['Protocol', esc(g.protocol) + (g.protocol_type ? ' (' + esc(g.protocol_type) + ')' : '')], ['Assignor', esc(g.assignor || '–')],
    ['State', esc(g.state)], ['Epoch', g.protocol === 'consumer' ? g.epoch : '–'], ['Coordinator', num(g.coordinator)], ['Lag', num(g.lag)]]);
  h += '<h3>Members</h3>' + (g.members.length === 0 ? '<p class="muted">None.</p>' : '<table><thead><tr><th>Member</th><th>Client</th><th>Host</th><th>Assigned</th></tr></thead><tbody>' +
    g.members.map((m) => '<tr><td>' + esc(m.instance_id || m.id) + '</td><td>' + esc(m.client_id) + '</td><td>' + esc(m.host) + '</td><td>' +
      m.assigned.map((a) => esc(a.topic) + ' ' + list(a.partitions)).join('<br>') + '</td></tr>').join('') + '</tbody></table>');
  h += '<h3>Offsets</h3>' + (g.offsets.length === 0 ? '<p class="muted">No committed offsets.</p>' : '<table><thead><tr><th>Partition</th><th>Committed</th><th>Log end</th><th>Lag</th></tr></thead><tbody>' +
    g.offsets.map((o) => '<tr data-offset-topic="' + esc(o.topic) + '" data-offset-partition="' + o.partition + '"><td>' + esc(o.topic) + '-' + o.partition +
      '</td><td>' + num(o.committed) + '</td><td>' + num(o.log_end_offset) + '</td><td>' + num(o.lag) + '</td></tr>').join('') + '</tbody></table>');
  return ['Group ' + esc(g.id), h];
}

function txnDetails(snap, key) {
  const x = snap.transactions.find((t) => t.id === key);
  if (!x) return null;
  return ['Transaction ' + esc(x.id), dl([
    ['State', esc(x.state)], ['Producer id', num(x.producer_id)], ['Producer epoch', num(x.producer_epoch)],
    ['Coordinator', num(x.coordinator)], ['Timeout', num(x.timeout_ms) + ' ms'], ['Age', x.start_time > 0 ? ago(x.start_time) : '–'],
    ['Partitions', x.partitions.map((t) => esc(t.topic) + ' ' + list(t.partitions)).join('<br>') || '–'], ['Error', esc(x.error || '–')],
  ])];
}

function topicDetails(snap, key) {
  const t = snap.topics.find((x) => x.name === key);
  if (!t) return null;
  return ['Topic ' + esc(t.name), dl([['Id', esc(t.id || '–')], ['Internal', t.internal ? 'yes' : 'no'],
    ['Partitions', t.partitions.length], ['Error', esc(t.error || '–')]])];
}

function brokerDetails(snap, key, ui) {
  const b = snap.brokers.find((x) => String(x.id) === key);
  if (!b) return null;
  const c = ui.configs && ui.configs.id === key ? ui.configs : null;
  return ['Broker ' + b.id, dl([['Address', b.host ? esc(b.host) + ':' + b.port : '–'], ['Rack', esc(b.rack || '–')],
    ['State', b.alive ? 'alive' : b.fenced ? 'fenced' : 'dead or absent'], ['Size', bytes(b.size)],
    ['Log dirs', (b.log_dirs || []).map((d) => esc(d.dir) + ': ' + bytes(d.size)).join('<br>') || '–']]) + configsHTML(c, ui.showDefaults)];
}

// configsHTML shows a broker's configuration as DescribeConfigs gave it:
// the entries set anywhere but the defaults, then (on demand) the
// defaults, each with where its value comes from.
function configsHTML(c, showDefaults) {
  const reload = '<button type="button" class="linkish" data-focus="configs-reload" data-configs-reload>Ask again</button>';
  let h = '<h3>Configuration</h3>';
  if (!c || c.state === 'loading') return h + '<p class="muted" data-configs="loading">Asking the cluster…</p>';
  if (c.state === 'error') return h + '<p class="warn" data-configs="error">' + esc(c.error) + '</p>' + reload;
  const rows = (xs) => '<table class="configs"><thead><tr><th>Name and source</th><th>Value</th></tr></thead><tbody>' +
    xs.map((x) => '<tr data-config="' + esc(x.name) + '" data-source="' + esc(x.source) + '"><td>' + esc(x.name) +
      '<br><span class="muted">' + esc(x.source) + '</span></td><td class="value">' +
      (x.sensitive ? '<span class="muted">(sensitive)</span>' : x.value == null ? '–' : esc(x.value)) + '</td></tr>').join('') +
    '</tbody></table>';
  const set = c.data.configs.filter((x) => !x.default);
  const defaults = c.data.configs.filter((x) => x.default);
  h += set.length ? rows(set) : '<p class="muted">Every entry at its default.</p>';
  if (defaults.length) {
    h += '<p><button type="button" class="linkish" data-focus="configs-defaults" data-configs-defaults aria-expanded="' + showDefaults + '">' +
      (showDefaults ? 'Hide' : 'Show') + ' the ' + defaults.length + ' entries at their defaults</button> · ' + reload + '</p>';
    if (showDefaults) h += rows(defaults);
  }
  return h;
}

const kinds = { partition: partitionDetails, group: groupDetails, txn: txnDetails, topic: topicDetails, broker: brokerDetails };

// details returns [title, html] for the selection, or null if it is gone.
export function details(snap, sel, ui) {
  const fn = sel && kinds[sel.kind];
  return fn ? fn(snap, sel.key, ui) : null;
}
