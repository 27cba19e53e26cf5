package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// A run is a console's snapshots over time and the events that explain
// them, exported as one JSON document (`moldau dev events`) and replayed
// by `moldau console --replay`.
const (
	// RunFormat names the document; RunVersion is its version.
	RunFormat  = "moldau-dev-run"
	RunVersion = 1
	// frameInterval is the shortest time between two recorded frames at
	// first.
	frameInterval = time.Second
	// maxFrames bounds a recording: when it is full, every two
	// neighbouring frames are merged into one and the interval doubles,
	// so a long run is kept whole at a coarser step (30 minutes at 1 s,
	// then an hour at 2 s, ...).
	maxFrames = 1800
)

// Run is a recorded run. The first frame's Patch is a whole snapshot;
// each later one holds only the snapshot's top-level fields ("brokers",
// "topics", "groups", ...) that differ from the frame before, a field
// that disappeared as null. The internal topics' records are the
// exception: "internal_added" holds the records added to the window of
// the newest ones, which keeps its bound (maxInternalEvents). Applying
// the patches in order, each over the state before, gives every frame's
// snapshot.
type Run struct {
	Format          string     `json:"format"`
	Version         int        `json:"version"`
	Events          []RunEvent `json:"events"`
	Dropped         int64      `json:"dropped"` // events lost to the recorder's bound
	FrameIntervalMs int64      `json:"frame_interval_ms"`
	Frames          []Frame    `json:"frames"`
}

// RunEvent is one event of a run's log (a fault, an election, a
// rebalance...), as `moldau dev` records them.
type RunEvent struct {
	Seq  int64          `json:"seq"`
	Time time.Time      `json:"time"`
	Kind string         `json:"kind"`
	Text string         `json:"text"`
	Data map[string]any `json:"data,omitempty"`
}

// Frame is one recorded snapshot: when its poll finished (Unix ms), its
// Seq in the recorded console, and the fields that changed.
type Frame struct {
	Time  int64                      `json:"time"`
	Seq   int64                      `json:"seq"`
	Patch map[string]json.RawMessage `json:"patch"`
}

// Recorder keeps a console's snapshots as frames, at most one per frame
// interval. It is safe for concurrent use.
type Recorder struct {
	now func() time.Time

	mu       sync.Mutex
	interval time.Duration
	frames   []Frame
	last     map[string]json.RawMessage // the last frame's whole snapshot
	// lastInternal is the last frame's internal records (a snapshot's
	// fields are never changed once published).
	lastInternal []InternalEvent
	lastAt       time.Time // when the last frame was taken
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{interval: frameInterval, now: time.Now} }

// wait is how long until the next frame may be taken (0: now).
func (r *Recorder) wait() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return 0
	}
	return max(r.lastAt.Add(r.interval).Sub(r.now()), 0)
}

// Add records s as a frame if a frame interval has passed since the last
// one; it reports whether it did.
func (r *Recorder) Add(s *Snapshot) bool {
	data := s.data
	if data == nil {
		var err error
		if data, err = json.Marshal(s); err != nil {
			return false
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.last != nil && now.Sub(r.lastAt) < r.interval {
		return false
	}
	patch := map[string]json.RawMessage{}
	for k, v := range fields {
		if old, ok := r.last[k]; !ok || !bytes.Equal(old, v) {
			patch[k] = v
		}
	}
	for k := range r.last {
		if _, ok := fields[k]; !ok {
			patch[k] = json.RawMessage("null")
		}
	}
	// The internal topics' records: the newest 500 change with every
	// offset commit, and a run would hold them whole in nearly every
	// frame (about 100 KiB each). A frame holds only the records added
	// since the frame before, when the window is the last one's with
	// them added (the poller's appendEvents); else, as after a rebuild,
	// the window whole.
	if v, ok := patch[internalField]; ok && string(v) != "null" {
		if added, ok := addedEvents(r.lastInternal, s.Internal); ok {
			delete(patch, internalField)
			if len(added) > 0 {
				patch[internalAddedField] = added
			}
		}
	}
	r.frames = append(r.frames, Frame{Time: s.Time, Seq: s.Seq, Patch: patch})
	r.last, r.lastAt, r.lastInternal = fields, now, s.Internal
	if len(r.frames) >= maxFrames {
		r.thin()
	}
	return true
}

// thin merges every even frame into the one after it (the later values
// win) and doubles the interval.
func (r *Recorder) thin() {
	out := make([]Frame, 0, len(r.frames)/2+1)
	for i := 0; i < len(r.frames); i += 2 {
		if i+1 == len(r.frames) {
			out = append(out, r.frames[i])
			break
		}
		a, b := r.frames[i], r.frames[i+1]
		out = append(out, Frame{Time: b.Time, Seq: b.Seq, Patch: mergePatches(a.Patch, b.Patch)})
	}
	r.frames = out
	r.interval *= 2
}

// The snapshot's field of the internal topics' records, and the patch
// field that adds records to it.
const (
	internalField      = "internal"
	internalAddedField = "internal_added"
)

// addedEvents returns the records of now not in was when now is was's
// window with them added (appendEvents, at most maxInternalEvents); ok
// is false when it is not.
func addedEvents(was, now []InternalEvent) (added json.RawMessage, ok bool) {
	seen := make(map[InternalEvent]bool, len(was))
	for _, e := range was {
		seen[e] = true
	}
	var fresh []InternalEvent
	for _, e := range now {
		if !seen[e] {
			fresh = append(fresh, e)
		}
	}
	if !slices.Equal(appendEvents(was, fresh, maxInternalEvents), now) {
		return nil, false
	}
	if len(fresh) == 0 {
		return nil, true
	}
	data, err := json.Marshal(fresh)
	return data, err == nil
}

// mergePatches is the patch of applying a then b: b's fields win, but
// the records b adds to the internal window follow a's (or a's whole
// window).
func mergePatches(a, b map[string]json.RawMessage) map[string]json.RawMessage {
	merged := maps.Clone(a)
	maps.Copy(merged, b)
	if _, whole := b[internalField]; whole {
		delete(merged, internalAddedField) // b's window (and records) replace a's
		return merged
	}
	bAdded, ok := b[internalAddedField]
	if !ok {
		return merged
	}
	if w, ok := a[internalField]; ok {
		// a set the window: b's records go into it.
		var was, fresh []InternalEvent
		_ = json.Unmarshal(w, &was) // null: none
		if json.Unmarshal(bAdded, &fresh) == nil {
			if data, err := json.Marshal(appendEvents(was, fresh, maxInternalEvents)); err == nil {
				merged[internalField] = data
				delete(merged, internalAddedField)
			}
		}
		return merged
	}
	if aAdded, ok := a[internalAddedField]; ok {
		var x, y []InternalEvent
		if json.Unmarshal(aAdded, &x) == nil && json.Unmarshal(bAdded, &y) == nil {
			if data, err := json.Marshal(append(x, y...)); err == nil {
				merged[internalAddedField] = data
			}
		}
	}
	return merged
}

// Frames returns a copy of the frames and the current frame interval.
func (r *Recorder) Frames() ([]Frame, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Frame(nil), r.frames...), r.interval
}

// Record follows p's snapshots into rec until ctx is done. A snapshot
// that comes too soon after the last frame waits for the interval to
// pass, unless a newer one replaces it: the last state of a quiet stretch
// is always recorded.
func Record(ctx context.Context, p *Poller, rec *Recorder) {
	var pending, seen *Snapshot
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		s, changed := p.Current()
		if s != nil && s != seen {
			seen, pending = s, s
		}
		if pending != nil {
			if w := rec.wait(); w > 0 {
				timer.Reset(w)
			} else if rec.Add(pending) {
				pending = nil
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-timer.C:
		}
	}
}

// ReadRun decodes and checks a run.
func ReadRun(data []byte) (*Run, error) {
	var run Run
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, fmt.Errorf("not a run export: %w", err)
	}
	switch {
	case run.Format != RunFormat:
		return nil, fmt.Errorf("not a run export: format %q, want %q", run.Format, RunFormat)
	case run.Version != RunVersion:
		return nil, fmt.Errorf("a run export of version %d; this console reads version %d", run.Version, RunVersion)
	case len(run.Frames) == 0:
		return nil, fmt.Errorf("the run holds no frames: nothing to replay")
	}
	return &run, nil
}
