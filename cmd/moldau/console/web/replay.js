// The replay timeline, loaded into the console page by `moldau console
// --replay`: play and pause, a slider over the run's frames, the speed,
// and the run's event log (an event's button shows the cluster at that
// moment). The frames come as the page's ordinary snapshots; this module
// reads where the replay is from each one's "replay" field and posts
// actions to /api/replay.

import { esc, clock } from './util.js';

const section = document.createElement('section');
section.id = 'replay';
section.className = 'replay';
section.setAttribute('aria-labelledby', 'replay-title');
section.innerHTML = `
<h2 id="replay-title">Replay</h2>
<div class="replay-controls">
  <button type="button" id="replay-prev" aria-label="Previous frame">◀︎</button>
  <button type="button" id="replay-play" aria-pressed="false">Play</button>
  <button type="button" id="replay-next" aria-label="Next frame">▶︎</button>
  <input type="range" id="replay-slider" min="0" max="0" value="0" aria-label="Frame of the run">
  <label>speed <select id="replay-speed">
    <option value="1">1×</option><option value="2">2×</option><option value="4">4×</option>
    <option value="8">8×</option><option value="16">16×</option></select></label>
  <span id="replay-where" aria-live="polite"></span>
</div>
<details class="replay-events-box" open>
  <summary>Events of the run</summary>
  <ol id="replay-events"></ol>
</details>
<p id="replay-error" class="warn" role="alert"></p>`;
document.querySelector('header.top').after(section);

const $ = (id) => document.getElementById(id);
let state = null; // the last ReplayState seen
let times = []; // each frame's time
let events = [];
let frameTime = null; // the time of the frame on show
clock.now = () => frameTime ?? Date.now(); // transaction ages as of the frame

async function act(body) {
  try {
    const resp = await fetch('/api/replay', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (!resp.ok) throw new Error(await resp.text());
    $('replay-error').textContent = '';
    show(await resp.json());
  } catch (err) {
    $('replay-error').textContent = String(err);
  }
}

// frameAt is the first frame at or after t (the frame showing what an
// event at t did), or the last one.
function frameAt(t) {
  const i = times.findIndex((x) => x >= t);
  return i < 0 ? times.length - 1 : i;
}

function show(st) {
  state = st;
  frameTime = st.time;
  const slider = $('replay-slider');
  slider.max = String(st.frames - 1);
  // While the user's seek is on its way, an older frame arriving does not
  // move the slider back under their hand.
  if (target !== null && st.frame === target && !seekBusy) target = null;
  if (target === null) slider.value = String(st.frame);
  slider.setAttribute('aria-valuetext', 'frame ' + (st.frame + 1) + ' of ' + st.frames + ', ' + new Date(st.time).toLocaleTimeString());
  const play = $('replay-play');
  play.textContent = st.playing ? 'Pause' : 'Play';
  play.setAttribute('aria-pressed', String(st.playing));
  $('replay-speed').value = String(st.speed);
  $('replay-where').textContent = 'frame ' + (st.frame + 1) + ' of ' + st.frames + ' · ' + new Date(st.time).toLocaleString();
  section.dataset.frame = st.frame;
  section.dataset.playing = st.playing;
  for (const li of $('replay-events').children) {
    li.dataset.past = String(Number(li.dataset.time) <= st.time);
  }
}

function renderEvents() {
  $('replay-events').innerHTML = events.map((e) => {
    const t = Date.parse(e.time);
    return '<li data-kind="' + esc(e.kind) + '" data-time="' + t + '"><button type="button" data-frame="' + frameAt(t) + '">' +
      '<time>' + esc(new Date(t).toLocaleTimeString()) + '</time> <span class="kind">' + esc(e.kind) + '</span> ' + esc(e.text) + '</button></li>';
  }).join('');
}

let target = null; // the frame the user asked for, until it is shown
let seekBusy = false;
let seekWanted = null;
async function seek(i) {
  if (!state) return;
  i = Math.min(Math.max(i, 0), state.frames - 1);
  target = seekWanted = i;
  if (seekBusy) return;
  seekBusy = true;
  while (seekWanted !== null) {
    const want = seekWanted;
    seekWanted = null;
    await act({ action: 'seek', frame: want });
  }
  seekBusy = false;
  if (state.frame === target) target = null;
}

const here = () => target ?? (state ? state.frame : 0);
$('replay-slider').addEventListener('input', (ev) => seek(Number(ev.target.value)));
$('replay-play').addEventListener('click', () => { target = null; act({ action: state && state.playing ? 'pause' : 'play', speed: Number($('replay-speed').value) }); });
$('replay-speed').addEventListener('change', (ev) => act({ action: state && state.playing ? 'play' : 'pause', speed: Number(ev.target.value) }));
$('replay-prev').addEventListener('click', () => seek(here() - 1));
$('replay-next').addEventListener('click', () => seek(here() + 1));
$('replay-events').addEventListener('click', (ev) => {
  const b = ev.target.closest('button[data-frame]');
  if (b) seek(Number(b.dataset.frame));
});
window.addEventListener('moldau-snapshot', (ev) => { if (ev.detail.replay) show(ev.detail.replay); });

(async () => {
  try {
    const resp = await fetch('/api/replay');
    const run = await resp.json();
    times = run.times;
    events = run.events;
    renderEvents();
    if (run.dropped > 0) $('replay-error').textContent = run.dropped + ' older events were not kept by the recording.';
    show(run.state);
  } catch (err) {
    $('replay-error').textContent = String(err);
  }
})();
