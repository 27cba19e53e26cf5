// Small helpers shared by the page's modules.

const entities = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

// esc makes a value safe inside HTML text and attribute values.
export function esc(v) {
  return String(v ?? '').replace(/[&<>"']/g, (c) => entities[c]);
}

// num prints an offset or count; negative or missing is unknown.
export function num(n) {
  return n == null || n < 0 ? '–' : n.toLocaleString('en');
}

export function bytes(n) {
  if (n == null || n < 0) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
}

// clock is the page's idea of now: the wall clock, or the time of the
// frame on show when a recorded run is replayed.
export const clock = { now: () => Date.now() };

// ago prints the time since a Unix-ms timestamp.
export function ago(ms, now = clock.now()) {
  if (ms == null || ms < 0) return '–';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
}

export function list(xs) {
  return '[' + (xs || []).join(',') + ']';
}

// pct places an offset on a partition's lane: 0 at offset 0, 100 at the
// log end.
export function pct(offset, end) {
  if (offset == null || offset < 0 || end <= 0) return 0;
  return Math.min(100, (offset / end) * 100);
}

// sparkline draws the last values as a small SVG polyline.
export function sparkline(values, width = 80, height = 18) {
  if (!values || values.length < 2) return '<svg class="spark" width="' + width + '" height="' + height + '" aria-hidden="true"></svg>';
  const maxV = Math.max(1, ...values);
  const step = width / (values.length - 1);
  const pts = values.map((v, i) => (i * step).toFixed(1) + ',' + (height - 1 - (Math.max(0, v) / maxV) * (height - 2)).toFixed(1)).join(' ');
  return '<svg class="spark" width="' + width + '" height="' + height + '" viewBox="0 0 ' + width + ' ' + height +
    '" aria-hidden="true"><polyline points="' + pts + '"/></svg>';
}
