package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"sync"
	"time"
)

// Replay bounds.
const (
	// checkpointEvery is how many frames apart whole states are kept, so
	// that seeking applies at most that many patches.
	checkpointEvery = 64
	// maxReplayGap is the longest real-time wait between two frames at
	// speed 1: a quiet stretch of the run (nothing changed, so nothing
	// was recorded) plays in at most this long.
	maxReplayGap = 2 * time.Second
	maxSpeed     = 64.0
)

// Replay plays a recorded [Run] back as a console's snapshots: the page
// renders frame after frame as the poller's snapshots, in the recorded
// rhythm (times the speed), and can pause, seek and change speed through
// /api/replay. It is safe for concurrent use.
type Replay struct {
	run         *Run
	checkpoints []*frameState // the state at frame i*checkpointEvery
	wake        chan struct{} // pokes the player after a change

	mu      sync.Mutex
	pos     int
	playing bool
	speed   float64
	cur     *Snapshot
	changed chan struct{}
}

// NewReplay prepares run for playing, paused on its first frame.
func NewReplay(run *Run) (*Replay, error) {
	if len(run.Frames) == 0 {
		return nil, errors.New("the run holds no frames")
	}
	r := &Replay{run: run, wake: make(chan struct{}, 1), speed: 1, changed: make(chan struct{})}
	state := &frameState{fields: map[string]json.RawMessage{}}
	for i, f := range run.Frames {
		state.apply(f.Patch)
		if (i+1)%checkpointEvery == 0 {
			r.checkpoints = append(r.checkpoints, state.clone())
		}
	}
	if err := r.show(0); err != nil {
		return nil, err
	}
	return r, nil
}

// frameState is the state a replay builds from the patches: the
// snapshot's fields, with the internal topics' records decoded so that a
// frame's records are added without decoding the window again.
type frameState struct {
	fields   map[string]json.RawMessage
	internal []InternalEvent // never changed in place: appendEvents copies
}

func (st *frameState) clone() *frameState {
	return &frameState{fields: maps.Clone(st.fields), internal: st.internal}
}

func (st *frameState) apply(patch map[string]json.RawMessage) {
	for k, v := range patch {
		switch {
		case k == internalAddedField:
		case k == internalField:
			st.internal = nil
			_ = json.Unmarshal(v, &st.internal) // null: none
		case string(v) == "null":
			delete(st.fields, k)
		default:
			st.fields[k] = v
		}
	}
	if added, ok := patch[internalAddedField]; ok {
		var fresh []InternalEvent
		if json.Unmarshal(added, &fresh) == nil {
			st.internal = appendEvents(st.internal, fresh, maxInternalEvents)
		}
	}
}

// frame returns the whole state at frame i.
func (r *Replay) frame(i int) *frameState {
	state, from := &frameState{fields: map[string]json.RawMessage{}}, 0
	if c := (i+1)/checkpointEvery - 1; c >= 0 {
		state, from = r.checkpoints[c].clone(), (c+1)*checkpointEvery
	}
	for _, f := range r.run.Frames[from : i+1] {
		state.apply(f.Patch)
	}
	return state
}

// ReplayState is where a replay is, sent with every frame (the
// snapshot's "replay" field) and answered by /api/replay.
type ReplayState struct {
	Frame   int     `json:"frame"`
	Frames  int     `json:"frames"`
	Time    int64   `json:"time"` // the frame's time, Unix ms
	Playing bool    `json:"playing"`
	Speed   float64 `json:"speed"`
}

// show publishes frame i as the current snapshot; r.mu is held or r is
// not shared yet.
func (r *Replay) show(i int) error {
	st := r.frame(i)
	state := st.fields
	if len(st.internal) > 0 {
		state[internalField], _ = json.Marshal(st.internal)
	}
	seq := int64(1)
	if r.cur != nil {
		seq = r.cur.Seq + 1
	}
	// The page renders a snapshot whose seq it has not seen: every frame
	// shown gets the next one, going back in time too.
	state["seq"], _ = json.Marshal(seq)
	state["replay"], _ = json.Marshal(r.stateLocked(i))
	data, err := json.Marshal(state)
	if err != nil {
		return err
	}
	r.pos = i
	r.cur = &Snapshot{Seq: seq, Time: r.run.Frames[i].Time, data: data}
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
	return nil
}

func (r *Replay) stateLocked(i int) ReplayState {
	return ReplayState{Frame: i, Frames: len(r.run.Frames), Time: r.run.Frames[i].Time, Playing: r.playing, Speed: r.speed}
}

// Current returns the frame on show and a channel closed when another is
// shown.
func (r *Replay) Current() (*Snapshot, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur, r.changed
}

// State returns where the replay is.
func (r *Replay) State() ReplayState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateLocked(r.pos)
}

// Seek shows frame i (clamped to the run).
func (r *Replay) Seek(i int) ReplayState {
	r.mu.Lock()
	defer r.mu.Unlock()
	i = min(max(i, 0), len(r.run.Frames)-1)
	r.show(i)
	r.poke()
	return r.stateLocked(r.pos)
}

// Play starts or stops the playing at the given speed (0 keeps it); play
// from the last frame starts over.
func (r *Replay) Play(playing bool, speed float64) ReplayState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if speed > 0 {
		r.speed = min(speed, maxSpeed)
	}
	r.playing = playing
	if playing && r.pos == len(r.run.Frames)-1 {
		r.pos = 0
	}
	r.show(r.pos) // the page learns the new state with the frame
	r.poke()
	return r.stateLocked(r.pos)
}

func (r *Replay) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run plays until ctx is done: while playing, each frame is shown after
// the recorded time between it and the one before, divided by the speed
// and at most maxReplayGap; playing stops at the last frame.
func (r *Replay) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		var wait time.Duration = -1
		if r.playing {
			if r.pos+1 < len(r.run.Frames) {
				gap := time.Duration(r.run.Frames[r.pos+1].Time-r.run.Frames[r.pos].Time) * time.Millisecond
				wait = time.Duration(float64(min(max(gap, 0), maxReplayGap)) / r.speed)
			} else {
				r.playing = false
				r.show(r.pos)
			}
		}
		next := r.pos + 1
		r.mu.Unlock()
		timer.Stop()
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
			r.mu.Lock()
			if r.playing && r.pos+1 == next { // nobody seeked meanwhile
				if next == len(r.run.Frames)-1 {
					r.playing = false
				}
				r.show(next)
			}
			r.mu.Unlock()
		}
	}
}

// mount adds the replay's API: GET /api/replay answers the run's events
// and frame times with the state; POST /api/replay acts on it.
func (r *Replay) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/replay", func(w http.ResponseWriter, _ *http.Request) {
		times := make([]int64, len(r.run.Frames))
		for i, f := range r.run.Frames {
			times[i] = f.Time
		}
		events := r.run.Events
		if events == nil {
			events = []RunEvent{}
		}
		WriteJSON(w, http.StatusOK, map[string]any{
			"state": r.State(), "times": times, "events": events, "dropped": r.run.Dropped,
			"frame_interval_ms": r.run.FrameIntervalMs,
		})
	})
	mux.HandleFunc("POST /api/replay", func(w http.ResponseWriter, req *http.Request) {
		// A JSON body only: a form posted by another site cannot set
		// this content type without a preflight.
		if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt != "application/json" {
			http.Error(w, "the body must be JSON (Content-Type: application/json)", http.StatusUnsupportedMediaType)
			return
		}
		var a struct {
			Action string  `json:"action"` // play, pause, seek
			Frame  int     `json:"frame"`
			Speed  float64 `json:"speed"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 4096)).Decode(&a); err != nil {
			http.Error(w, "bad request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var st ReplayState
		switch a.Action {
		case "play":
			st = r.Play(true, a.Speed)
		case "pause":
			st = r.Play(false, a.Speed)
		case "seek":
			st = r.Seek(a.Frame)
		default:
			http.Error(w, fmt.Sprintf("unknown action %q (play, pause, seek)", a.Action), http.StatusBadRequest)
			return
		}
		WriteJSON(w, http.StatusOK, st)
	})
}
