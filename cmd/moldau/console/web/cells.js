// A lane's cells: one replica's log, one cell per offset for the newest
// offsets (Snapshot's Partition.records, see snapshot.go).
//
// From left to right: the offsets below the log start (deleted), an
// ellipsis when older offsets are not drawn, then a grid of slots: the
// records from the first drawn offset to the high watermark, coloured by
// key (a tombstone is an outlined cell with ×, an aborted record striped,
// a commit or abort marker the letter C or A, a compacted gap a dot, an
// offset not read grey), the high watermark as a bar, the offsets between
// the high watermark and the log end as faded empty cells (at most
// maxAbove, the last an ellipsis beyond), and the log end as a dashed
// slot; the records past the last stable offset (in transactions still
// open) underlined. Under the grid: the first offset, the high watermark and the log
// end. When the log end goes back (truncation), the slots that went away
// flash for a few seconds after the log end.
//
// The slots are made once and reused by position; a lane whose data did
// not change is not touched.

import { esc, num } from './util.js';

// maxCells matches the poller's (poll_records.go); maxAbove bounds the
// faded slots above the high watermark.
const maxCells = 32;
const maxAbove = 8;
// goneMs is how long truncated slots stay on the lane.
const goneMs = 3000;

const kinds = {
  r: 'record', t: 'tombstone', a: 'aborted record', C: 'commit marker', A: 'abort marker',
  _: 'no record (compacted away)', '?': 'not read',
};

// laneCellsHTML is a lane's empty log, filled in by updateCells.
export function laneCellsHTML() {
  return '<span class="log" aria-hidden="true"><span class="deleted" hidden></span><span class="more" hidden>…</span>' +
    '<span class="cells"><span class="hw"></span><span class="off first"></span><span class="off at-hw"></span><span class="off last"></span></span></span>';
}

// laneEnd is the log end a replica's lane draws: the leader's (read with
// OffsetForLeaderEpoch) when known, else the high watermark. A
// follower's own log end is not in the protocol.
function laneEnd(p) {
  const rec = p.records;
  if (rec && rec.log_end >= p.high_watermark) return rec.log_end;
  return p.log_end_offset;
}

// updateCells draws p's log on the lane el of replica r in role ro.
export function updateCells(el, p, r, ro) {
  const end = laneEnd(p);
  const rec = p.records;
  const sig = [ro, p.log_start_offset, p.high_watermark, p.last_stable_offset, end, rec ? rec.from + rec.shape + rec.keys : ''].join('|');
  const prevEnd = Number(el.dataset.logEnd);
  if (el.dataset.logEnd !== undefined && prevEnd > end && end >= 0) {
    el._gone = { from: end, to: Math.min(prevEnd, end + maxAbove), until: Date.now() + goneMs };
    clearTimeout(el._goneTimer);
    el._goneTimer = setTimeout(() => { el._gone = null; el.dataset.sig = ''; updateCells(el, el._p, r, el.dataset.role); }, goneMs);
  }
  el._p = p;
  if (el.dataset.sig === sig) return;
  el.dataset.sig = sig;
  el.dataset.logStart = p.log_start_offset;
  el.dataset.logEnd = end;
  el.dataset.hw = p.high_watermark;
  el.dataset.lso = p.last_stable_offset;
  draw(el, p, end);
}

function draw(el, p, end) {
  const start = p.log_start_offset, hw = p.high_watermark, rec = p.records;
  const log = el.querySelector('.log');
  const grid = log.querySelector('.cells');
  const hwBar = grid.querySelector('.hw');
  hwBar.dataset.offset = hw;
  if (hw < 0 || start < 0) { // offsets unknown
    setSlots(grid, []);
    hwBar.hidden = true;
    setLabels(grid, 0, []);
    el.setAttribute('aria-label', el.querySelector('.label').getAttribute('aria-label') + ': offsets unknown');
    return;
  }
  hwBar.hidden = false;
  const first = Math.max(start, hw - maxCells);
  const lso = p.last_stable_offset < hw ? p.last_stable_offset : -1;
  const del = log.querySelector('.deleted');
  del.hidden = start <= 0;
  del.title = start > 0 ? 'offsets 0 to ' + num(start - 1) + ' deleted (below the log start)' : '';
  const more = log.querySelector('.more');
  more.hidden = first <= start;
  more.title = first > start ? 'offsets ' + num(start) + ' to ' + num(first - 1) + ' not drawn' : '';

  const slots = [];
  const counts = { t: 0, a: 0, C: 0, A: 0 };
  for (let o = first; o < hw; o++) {
    const i = rec ? o - rec.from : -1;
    const k = i >= 0 && i < rec.shape.length ? rec.shape[i] : '?';
    const key = i >= 0 && i < rec.keys.length ? rec.keys[i] : '-';
    if (k in counts) counts[k]++;
    const open = lso >= 0 && o >= lso; // past the last stable offset: in a transaction still open
    slots.push({ o, cls: 'cell s-' + (k === '_' ? 'gap' : k === '?' ? 'unread' : k) + (key === '-' ? ' kn' : ' k' + key) + (open ? ' open' : ''), text: glyph(k),
      title: 'offset ' + num(o) + ': ' + kinds[k] + (key === '-' || k === 'C' || k === 'A' ? '' : ', key colour ' + key) + (open ? ', past the last stable offset' : '') });
  }
  const above = Math.max(0, end - hw);
  for (let j = 0; j < Math.min(above, maxAbove); j++) {
    const skip = j === maxAbove - 1 && above > maxAbove;
    slots.push({ o: hw + j, cls: 'cell above' + (skip ? ' skip' : ''), text: skip ? '…' : '',
      title: skip ? 'offsets ' + num(hw + j) + ' to ' + num(end - 1) + ' above the high watermark' : 'offset ' + num(hw + j) + ': above the high watermark, not yet replicated' });
  }
  const endAt = slots.length;
  slots.push({ o: end, cls: 'cell log-end', text: '', title: 'log end ' + num(end) + ': the next offset written' });
  const g = el._gone;
  if (g && Date.now() < g.until) {
    for (let o = g.from; o < g.to; o++) slots.push({ o, cls: 'cell gone', text: '', title: 'offset ' + num(o) + ': truncated away' });
  }
  setSlots(grid, slots);
  const hwAt = Math.min(hw - first, endAt);
  hwBar.style.gridColumn = String(hwAt + 1);
  setLabels(grid, hwAt, slots, endAt);
  hwBar.title = 'high watermark ' + num(hw);

  let label = el.querySelector('.label').getAttribute('aria-label') + ', ' + (el.dataset.role || '') + ': log start ' + num(start) +
    ', high watermark ' + num(hw) + (lso >= 0 ? ', last stable ' + num(lso) : '') + ', log end ' + num(end);
  if (slots.length > 1) label += '; offsets ' + num(first) + ' to ' + num(end) + ' drawn';
  const notes = [[counts.C, 'commit marker'], [counts.A, 'abort marker'], [counts.a, 'aborted record'], [counts.t, 'tombstone']]
    .filter(([n]) => n > 0).map(([n, what]) => n + ' ' + what + (n > 1 ? 's' : ''));
  if (notes.length) label += ', ' + notes.join(', ');
  el.setAttribute('aria-label', label);
  el.title = label;
}

function glyph(k) {
  switch (k) {
    case 'C': case 'A': return k;
    case 't': return '×';
    case '_': return '·';
    default: return '';
  }
}

// setSlots makes grid hold exactly slots' cells, reusing those there;
// the missing ones are added with one insertAdjacentHTML (a lane's first
// draw makes all of them).
function setSlots(grid, slots) {
  const cells = grid.getElementsByClassName('cell');
  while (cells.length > slots.length) cells[cells.length - 1].remove();
  const have = cells.length;
  for (let i = 0; i < have; i++) {
    const c = cells[i], s = slots[i];
    if (c.className !== s.cls) c.className = s.cls;
    if (c.textContent !== s.text) c.textContent = s.text;
    if (c.dataset.offset !== String(s.o)) c.dataset.offset = s.o;
    if (c.title !== s.title) c.title = s.title;
  }
  if (have === slots.length) return;
  let h = '';
  for (let i = have; i < slots.length; i++) {
    const s = slots[i];
    h += '<span class="' + s.cls + '" style="grid-column:' + (i + 1) + '" data-offset="' + s.o + '" title="' + esc(s.title) + '">' + esc(s.text) + '</span>';
  }
  grid.insertAdjacentHTML('beforeend', h);
}

// setLabels writes the offsets under the grid: the first, the high
// watermark (where it does not crowd the others) and the log end.
function setLabels(grid, hwAt, slots, endAt) {
  const [first, atHW, last] = [grid.querySelector('.off.first'), grid.querySelector('.off.at-hw'), grid.querySelector('.off.last')];
  first.hidden = atHW.hidden = last.hidden = slots.length === 0;
  if (!slots.length) return;
  first.textContent = num(slots[0].o);
  last.textContent = num(slots[endAt].o);
  last.style.gridColumn = String(endAt + 1);
  atHW.textContent = 'HW ' + num(slots[Math.min(hwAt, endAt)].o);
  atHW.style.gridColumn = String(hwAt + 1);
  atHW.hidden = hwAt < 4 || endAt - hwAt < 3;
  first.hidden = endAt < 3;
}
