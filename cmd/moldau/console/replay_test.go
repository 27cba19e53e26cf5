package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// recordRun records n snapshots one second apart, each changing the
// controller and, every third, the brokers; it returns the run and each
// snapshot's JSON as published.
func recordRun(t *testing.T, n int) (*Run, [][]byte) {
	t.Helper()
	p := testPoller()
	now := time.Unix(1_700_000_000, 0)
	rec := NewRecorder()
	rec.now = func() time.Time { return now }
	var want [][]byte
	var internal []InternalEvent
	for i := range n {
		s := baseSnapshot()
		s.ControllerID = int32(i % 5)
		// The internal topics' window grows by a record or two most
		// frames, past its bound, and starts over once (a rebuild).
		var got []InternalEvent
		for j := range i % 3 {
			got = append(got, InternalEvent{Time: int64(i), Offset: int64(j), Kind: kindOffsetCommit, Text: fmt.Sprint("commit ", i, ".", j)})
		}
		if i == n*2/3 {
			internal = nil
		}
		internal = appendEvents(internal, got, maxInternalEvents)
		s.Internal = internal
		if i%3 == 0 {
			s.Brokers = append(s.Brokers, Broker{ID: int32(100 + i), Alive: true})
		}
		if i%4 == 1 {
			s.Errors = map[string]string{"groups": fmt.Sprint("failure ", i)}
		}
		s.Time = now.UnixMilli()
		if err := p.publish(s); err != nil {
			t.Fatal(err)
		}
		if !rec.Add(s) {
			t.Fatalf("frame %d not recorded", i)
		}
		data, _ := json.Marshal(s)
		want = append(want, data)
		now = now.Add(time.Second)
	}
	frames, interval := rec.Frames()
	return &Run{Format: RunFormat, Version: RunVersion, Frames: frames, FrameIntervalMs: interval.Milliseconds()}, want
}

// frameJSON is what a replayed frame says, without the fields the replay
// sets itself, in a canonical encoding.
func frameJSON(t *testing.T, data []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "seq")
	delete(m, "replay")
	out, _ := json.Marshal(m)
	return string(out)
}

// Every frame replayed is the snapshot recorded, whichever frame is shown
// before it (the checkpoints and the patches agree), and a frame's patch
// holds only what changed.
func TestRecordAndReplayFrames(t *testing.T) {
	const n = 150 // more than two checkpoints
	run, want := recordRun(t, n)
	if len(run.Frames) != n {
		t.Fatalf("%d frames, want %d", len(run.Frames), n)
	}
	if _, ok := run.Frames[1].Patch["topics"]; ok {
		t.Errorf("frame 1 repeats the unchanged topics: %v", run.Frames[1].Patch)
	}
	if v, ok := run.Frames[2].Patch["errors"]; !ok || string(v) != "null" {
		t.Errorf("frame 2 does not drop frame 1's errors: %s", v)
	}
	// The internal records: only those added, but the whole window when
	// it starts over.
	for i, f := range run.Frames[1:] {
		_, whole := f.Patch[internalField]
		added, _ := f.Patch[internalAddedField]
		switch i + 1 {
		case n * 2 / 3:
			if !whole {
				t.Errorf("frame %d starts the window over with %s", i+1, added)
			}
		default:
			if whole || (i+1)%3 == 0 && added != nil || (i+1)%3 != 0 && added == nil {
				t.Errorf("frame %d: internal %v, added %s", i+1, whole, added)
			}
		}
	}
	// Through the JSON document, as a file would carry it.
	doc, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	run, err = ReadRun(doc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReplay(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 149, 63, 64, 65, 127, 128, 1, 100, 0} {
		st := r.Seek(i)
		s, _ := r.Current()
		if st.Frame != i || frameJSON(t, s.data) != frameJSON(t, want[i]) {
			t.Fatalf("frame %d replayed as\n%s\nrecorded as\n%s", i, s.data, want[i])
		}
	}
}

// A recording kept under its bound merges neighbouring frames and keeps
// recording at twice the interval; the frames kept still replay as
// recorded.
func TestRecorderThins(t *testing.T) {
	run, want := recordRun(t, maxFrames)
	if len(run.Frames) != maxFrames/2 || run.FrameIntervalMs != 2000 {
		t.Fatalf("%d frames at %d ms after %d snapshots", len(run.Frames), run.FrameIntervalMs, maxFrames)
	}
	r, err := NewReplay(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 500, len(run.Frames) - 1} {
		r.Seek(i)
		s, _ := r.Current()
		if got, w := frameJSON(t, s.data), frameJSON(t, want[2*i+1]); got != w {
			t.Fatalf("merged frame %d replayed as\n%s\nrecorded as\n%s", i, got, w)
		}
	}
}

func TestReadRunRefuses(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{`, "not a run export"},
		{`{"format":"other","version":1}`, `format "other"`},
		{`{"format":"moldau-dev-run","version":9,"frames":[{"time":1,"patch":{}}]}`, "version 9"},
		{`{"format":"moldau-dev-run","version":1,"frames":[]}`, "no frames"},
	} {
		if _, err := ReadRun([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadRun(%s) = %v, want %q", c.doc, err, c.want)
		}
	}
}

// The replay API over HTTP: seek, play to the end (frames on the event
// stream in order), pause; bad actions refused.
func TestReplayServer(t *testing.T) {
	run, want := recordRun(t, 5)
	run.Events = []RunEvent{{Seq: 1, Time: time.UnixMilli(run.Frames[2].Time), Kind: "fault", Text: "kill -9 node 2"}}
	r, err := NewReplay(run)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{}
	cfg.defaults()
	h := newHandler(r, cfg)
	r.mount(h.mux)
	srv := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; h.cancel(); srv.Close() })

	post := func(body string) (int, ReplayState) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/api/replay", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st ReplayState
		data, _ := io.ReadAll(resp.Body)
		json.Unmarshal(data, &st)
		return resp.StatusCode, st
	}
	resp, err := http.Get(srv.URL + "/api/replay")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		State  ReplayState
		Times  []int64
		Events []RunEvent
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if info.State.Frame != 0 || info.State.Frames != 5 || len(info.Times) != 5 || len(info.Events) != 1 || info.Events[0].Kind != "fault" {
		t.Fatalf("GET /api/replay: %+v", info)
	}

	ev := openEvents(t, srv.URL)
	defer ev.body.Close()
	if got := ev.nextSnapshot(t); frameJSON(t, []byte(got)) != frameJSON(t, want[0]) {
		t.Fatalf("first frame on the stream: %s", got)
	}
	if code, st := post(`{"action":"seek","frame":3}`); code != http.StatusOK || st.Frame != 3 || st.Playing {
		t.Fatalf("seek: %d %+v", code, st)
	}
	if got := ev.nextSnapshot(t); frameJSON(t, []byte(got)) != frameJSON(t, want[3]) {
		t.Fatalf("frame after the seek: %s", got)
	}
	// Played at the fastest speed the last frames come in order and the
	// replay stops on the last.
	if code, st := post(`{"action":"play","speed":64}`); code != http.StatusOK || !st.Playing || st.Speed != maxSpeed {
		t.Fatalf("play: %d %+v", code, st)
	}
	var last ReplayState
	for last.Frame != 4 || last.Playing {
		var m struct{ Replay ReplayState }
		got := ev.nextSnapshot(t)
		json.Unmarshal([]byte(got), &m)
		if m.Replay.Frame < last.Frame {
			t.Fatalf("frame %d after frame %d while playing", m.Replay.Frame, last.Frame)
		}
		if frameJSON(t, []byte(got)) != frameJSON(t, want[m.Replay.Frame]) {
			t.Fatalf("frame %d played as %s", m.Replay.Frame, got)
		}
		last = m.Replay
	}
	if code, _ := post(`{"action":"rewind"}`); code != http.StatusBadRequest {
		t.Errorf("an unknown action answered %d", code)
	}
	resp, err = http.Post(srv.URL+"/api/replay", "text/plain", bytes.NewReader([]byte(`{"action":"play"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a non-JSON post answered %s", resp.Status)
	}
}
