// The tables under the diagram: topics (a topic row expands to its
// partitions), groups (with a lag sparkline), transactions, brokers,
// the decoded records of the internal topics and metrics. A row with details is a focusable control: click, Enter or
// Space selects it and the details panel shows it. Keys join names with
// "|" (never in a Kafka topic name; an HTML attribute cannot hold NUL).

import { esc, num, bytes, ago, list, sparkline, clock } from './util.js';

function row(kind, key, cells, selected, extra = '') {
  return '<tr tabindex="0" data-kind="' + kind + '" data-key="' + esc(key) + '"' + (selected ? ' aria-selected="true"' : '') + extra + '>' +
    cells.map((c) => '<td>' + c + '</td>').join('') + '</tr>';
}

function table(headers, rows, empty) {
  if (rows.length === 0) return '<p class="muted">' + empty + '</p>';
  return '<table><thead><tr>' + headers.map((h) => '<th scope="col">' + h + '</th>').join('') +
    '</tr></thead><tbody>' + rows.join('') + '</tbody></table>';
}

export function topicsTable(snap, ui) {
  const rows = [];
  for (const t of snap.topics) {
    const open = ui.tableOpen.has(t.name);
    const under = t.partitions.filter((p) => p.isr.length < p.replicas.length).length;
    const offline = t.partitions.filter((p) => p.leader < 0).length;
    let records = 0;
    for (const p of t.partitions) if (p.high_watermark >= 0 && p.log_start_offset >= 0) records += p.high_watermark - p.log_start_offset;
    const rf = t.partitions.length ? t.partitions[0].replicas.length : 0;
    rows.push(row('topic', t.name, [
      '<button type="button" class="disclose" data-open-topic="' + esc(t.name) + '" aria-expanded="' + open + '">' + esc(t.name) + '</button>',
      t.partitions.length, rf, under ? '<span class="warn">' + under + '</span>' : 0, offline ? '<span class="warn">' + offline + '</span>' : 0,
      num(records), esc(t.error || ''),
    ], ui.isSelected('topic', t.name)));
    if (!open) continue;
    for (const p of t.partitions) {
      const key = t.name + '|' + p.partition;
      rows.push(row('partition', key, [
        '<span class="indent">' + esc(t.name) + '-' + p.partition + '</span>', 'leader ' + num(p.leader) + ' (epoch ' + num(p.leader_epoch) + ')',
        'replicas ' + list(p.replicas), 'ISR ' + list(p.isr),
        p.offline_replicas.length ? '<span class="warn">offline ' + list(p.offline_replicas) + '</span>' : '',
        num(p.log_start_offset) + ' … ' + num(p.high_watermark), esc(p.error || ''),
      ], ui.isSelected('partition', key), ' class="sub" data-topic="' + esc(t.name) + '" data-partition="' + p.partition + '" data-hw="' + p.high_watermark + '"'));
    }
  }
  return table(['Topic', 'Partitions', 'RF', 'Under-replicated', 'Offline', 'Records', 'Error'], rows, 'No topics.');
}

export function groupsTable(snap, ui, history) {
  const rows = snap.groups.map((g) => row('group', g.id, [
    esc(g.id), esc(g.protocol), esc(g.state), g.protocol === 'consumer' ? g.epoch : '–', num(g.coordinator), g.members.length,
    '<span data-lag="' + g.lag + '">' + num(g.lag) + '</span>', sparkline(history.get(g.id)), esc(g.error || ''),
  ], ui.isSelected('group', g.id), ' data-group="' + esc(g.id) + '" data-lag="' + g.lag + '"'));
  return table(['Group', 'Protocol', 'State', 'Epoch', 'Coordinator', 'Members', 'Lag', 'Lag trend', 'Error'], rows, 'No consumer groups.');
}

export function txnsTable(snap, ui) {
  const now = clock.now();
  const rows = snap.transactions.map((x) => row('txn', x.id, [
    esc(x.id), esc(x.state), num(x.producer_id), num(x.producer_epoch), num(x.coordinator),
    x.partitions.reduce((n, t) => n + t.partitions.length, 0), x.start_time > 0 ? ago(x.start_time, now) : '–', esc(x.error || ''),
  ], ui.isSelected('txn', x.id)));
  return table(['Transactional id', 'State', 'Producer id', 'Epoch', 'Coordinator', 'Partitions', 'Age', 'Error'], rows, 'No transactional ids.');
}

export function brokersTable(snap, ui) {
  const rows = snap.brokers.map((b) => row('broker', String(b.id), [
    b.id + (b.id === snap.controller_id ? ' (controller)' : ''), b.host ? esc(b.host) + ':' + b.port : '–', esc(b.rack || '–'),
    b.alive ? 'alive' : b.fenced ? '<span class="warn">fenced</span>' : '<span class="warn">dead or absent</span>',
    bytes(b.size), (b.log_dirs || []).map((d) => esc(d.dir) + (d.error ? ' <span class="warn">' + esc(d.error) + '</span>' : '')).join('<br>'),
  ], ui.isSelected('broker', String(b.id))));
  return table(['Id', 'Address', 'Rack', 'State', 'Size', 'Log dirs'], rows, 'No brokers.');
}

// internalTable lists the decoded records of __consumer_offsets,
// __transaction_state and (with --bootstrap-controller)
// __cluster_metadata, newest first, of one kind if ui.internalKind is
// set. A tombstone (a deletion) is struck through.
export function internalTable(snap, ui) {
  const events = snap.internal || [];
  const rows = [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (ui.internalKind && e.kind !== ui.internalKind) continue;
    rows.push('<tr data-event-kind="' + esc(e.kind) + '" data-deleted="' + !!e.deleted + '"' +
      (e.group ? ' data-event-group="' + esc(e.group) + '"' : '') +
      (e.transactional_id ? ' data-event-txn="' + esc(e.transactional_id) + '" data-event-state="' + esc(e.state || '') + '"' : '') + '>' +
      '<td>' + new Date(e.time).toLocaleTimeString() + '</td><td>' + esc(e.topic) + '-' + e.partition + '</td><td>' + num(e.offset) +
      '</td><td>' + esc(e.kind) + (e.deleted ? ' (deleted)' : '') + '</td><td>' + esc(e.text) + '</td></tr>');
  }
  const empty = snap.replay ? 'A recorded run does not keep the internal topics\' records.'
    : events.length ? 'No records of this kind among the last ' + events.length + '.' : 'No records read yet.';
  return table(['Time', 'Partition', 'Offset', 'Kind', 'Record'], rows, empty);
}

export function metricsTable(snap) {
  const rate = (r) => (r < 0 ? '–' : r.toLocaleString('en'));
  const rows = (snap.metrics || []).map((m) => '<tr><td>' + esc(m.url) + '</td><td>' + rate(m.bytes_in_per_sec) + '</td><td>' +
    rate(m.bytes_out_per_sec) + '</td><td>' + rate(m.messages_in_per_sec) + '</td><td>' + esc(m.error || '') + '</td></tr>');
  return table(['URL', 'Bytes in/s', 'Bytes out/s', 'Messages in/s', 'Error'], rows, 'No metrics.');
}
