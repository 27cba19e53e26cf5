package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
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
// that disappeared as null. Applying the patches in order, each over the
// state before, gives every frame's snapshot.
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
	lastAt   time.Time                  // when the last frame was taken
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
	// The internal topics' records are left out: the newest 500 change
	// with every offset commit, and a run would hold them whole in
	// nearly every frame (about 100 KiB each, up to maxFrames).
	delete(fields, "internal")
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
	r.frames = append(r.frames, Frame{Time: s.Time, Seq: s.Seq, Patch: patch})
	r.last, r.lastAt = fields, now
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
		merged := maps.Clone(a.Patch)
		maps.Copy(merged, b.Patch)
		out = append(out, Frame{Time: b.Time, Seq: b.Seq, Patch: merged})
	}
	r.frames = out
	r.interval *= 2
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
