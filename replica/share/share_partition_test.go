package share

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_800_000_000, 0)

func testConfig() Config {
	return Config{MaxInFlightRecords: 100, MaxDeliveryCount: 3, RecordLockDuration: 30 * time.Second}
}

func newTestPartition(t *testing.T, cfg Config, st LoadedState) *SharePartition {
	t.Helper()
	p, err := NewSharePartition(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// batchesOf cuts [first, last] into log batches of n records.
func batchesOf(first, last, n int64) []Batch {
	var bs []Batch
	for o := first; o <= last; o += n {
		bs = append(bs, Batch{BaseOffset: o, LastOffset: min(o+n-1, last)})
	}
	return bs
}

func accept(first, last int64) AcknowledgementBatch {
	return AcknowledgementBatch{FirstOffset: first, LastOffset: last, Types: []AcknowledgeType{AckAccept}}
}

func release(first, last int64) AcknowledgementBatch {
	return AcknowledgementBatch{FirstOffset: first, LastOffset: last, Types: []AcknowledgeType{AckRelease}}
}

func TestAcquireWholeBatchesUpToMaxRecords(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	// maxRecords is a soft limit: the batch that reaches it is acquired
	// whole, the next is not.
	got := p.Acquire("m1", 0, batchesOf(0, 29, 10), 15, false, t0)
	if want := []AcquiredRecords{{0, 19, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if p.NextFetchOffset() != 20 || p.EndOffset() != 20 || p.StartOffset() != 0 {
		t.Fatalf("next %d end %d start %d", p.NextFetchOffset(), p.EndOffset(), p.StartOffset())
	}
	// A second member gets the rest, not what m1 holds.
	got = p.Acquire("m2", 0, batchesOf(0, 29, 10), 100, false, t0)
	if want := []AcquiredRecords{{20, 29, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

func TestAcquireStopsAtMaxInFlight(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlightRecords = 20
	p := newTestPartition(t, cfg, LoadedState{StartOffset: 0})
	got := p.Acquire("m1", 0, batchesOf(0, 49, 10), 100, false, t0)
	if want := []AcquiredRecords{{0, 19, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if p.CanAcquire() {
		t.Fatal("CanAcquire with the in-flight limit reached and nothing available")
	}
	// Accepting the first batch moves the start offset and makes room.
	if _, err := p.Acknowledge("m1", []AcknowledgementBatch{accept(0, 9)}, t0); err != nil {
		t.Fatal(err)
	}
	if !p.CanAcquire() || p.StartOffset() != 10 {
		t.Fatalf("after accepting 0-9: CanAcquire %v, start %d", p.CanAcquire(), p.StartOffset())
	}
	got = p.Acquire("m1", 20, batchesOf(20, 49, 10), 100, false, t0)
	if want := []AcquiredRecords{{20, 29, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

func TestAcknowledgeAcceptReleaseReject(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 100})
	p.Acquire("m1", 100, batchesOf(100, 129, 10), 100, false, t0)
	changed, err := p.Acknowledge("m1", []AcknowledgementBatch{
		accept(100, 104),
		{FirstOffset: 105, LastOffset: 109, Types: []AcknowledgeType{AckAccept, AckRelease, AckRelease, AckReject, AckGap}},
		release(110, 119),
	}, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []StateBatch{
		{100, 105, Acknowledged, 1}, {106, 107, Available, 1},
		{108, 109, Archived, 1}, {110, 119, Available, 1},
	}
	if !reflect.DeepEqual(changed, want) {
		t.Fatalf("changed %v\nwant    %v", changed, want)
	}
	if p.StartOffset() != 106 || p.NextFetchOffset() != 106 {
		t.Fatalf("start %d next %d, want 106 106", p.StartOffset(), p.NextFetchOffset())
	}
	// The released records go out again, with their delivery count up;
	// the archived ones in between never do.
	got := p.Acquire("m2", 106, batchesOf(100, 129, 10), 100, false, t0)
	if want := []AcquiredRecords{{106, 107, 2}, {110, 119, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

func TestAcknowledgeOfRecordsNotHeldChangesNothing(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	p.Acquire("m1", 0, batchesOf(0, 9, 10), 100, false, t0)
	p.Acquire("m2", 10, batchesOf(10, 19, 10), 100, false, t0)
	before := p.StateBatches()
	for name, acks := range map[string][]AcknowledgementBatch{
		"another member's":       {accept(0, 4), accept(10, 14)},
		"past the end offset":    {accept(15, 25)},
		"bad type":               {{FirstOffset: 10, LastOffset: 10, Types: []AcknowledgeType{7}}},
		"type count off":         {{FirstOffset: 10, LastOffset: 12, Types: []AcknowledgeType{AckAccept, AckAccept}}},
		"first after last":       {{FirstOffset: 12, LastOffset: 10, Types: []AcknowledgeType{AckAccept}}},
		"acknowledged already":   nil, // filled below
		"available, not held":    nil,
		"one good, one bad":      {accept(10, 19), accept(5, 5)},
		"before start, then bad": {accept(0, 0), accept(3, 3)},
	} {
		if acks == nil {
			continue
		}
		_, err := p.Acknowledge("m2", acks, t0)
		want := kerr.InvalidRecordState
		if name == "bad type" || name == "type count off" || name == "first after last" {
			want = kerr.InvalidRequest
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: err %v, want %v", name, err, want)
		}
		if got := p.StateBatches(); !reflect.DeepEqual(got, before) {
			t.Errorf("%s: state changed to %v", name, got)
		}
	}
	// Acknowledging twice: the second is refused.
	if _, err := p.Acknowledge("m2", []AcknowledgementBatch{accept(10, 12)}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acknowledge("m2", []AcknowledgementBatch{accept(10, 10)}, t0); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("second accept: %v", err)
	}
	// A range wholly before the start offset is done with: skipped.
	if _, err := p.Acknowledge("m1", []AcknowledgementBatch{accept(0, 9)}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acknowledge("m1", []AcknowledgementBatch{accept(0, 9)}, t0); err != nil {
		t.Fatalf("acknowledging records before the start offset: %v", err)
	}
}

func TestDeliveryLimitArchives(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0}) // limit 3
	for delivery := int16(1); delivery <= 3; delivery++ {
		got := p.Acquire("m1", p.NextFetchOffset(), batchesOf(0, 4, 5), 100, false, t0)
		if want := []AcquiredRecords{{0, 4, delivery}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", delivery, got, want)
		}
		changed, err := p.Acknowledge("m1", []AcknowledgementBatch{release(0, 4)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		wantState := Available
		if delivery == 3 {
			wantState = Archived
		}
		if want := []StateBatch{{0, 4, wantState, delivery}}; !reflect.DeepEqual(changed, want) {
			t.Fatalf("delivery %d: changed %v, want %v", delivery, changed, want)
		}
	}
	if p.StartOffset() != 5 || p.NextFetchOffset() != 5 {
		t.Fatalf("after the third release: start %d next %d, want 5 5", p.StartOffset(), p.NextFetchOffset())
	}
}

func TestAcquisitionLockExpiry(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	p.Acquire("m1", 0, batchesOf(0, 9, 10), 100, false, t0)
	p.Acquire("m2", 10, batchesOf(10, 19, 10), 100, false, t0.Add(10*time.Second))
	if d, ok := p.NextLockDeadline(); !ok || !d.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("next deadline %v %v", d, ok)
	}
	if changed := p.ExpireLocks(t0.Add(29 * time.Second)); changed != nil {
		t.Fatalf("expired early: %v", changed)
	}
	changed := p.ExpireLocks(t0.Add(30 * time.Second))
	if want := []StateBatch{{0, 9, Available, 1}}; !reflect.DeepEqual(changed, want) {
		t.Fatalf("changed %v, want %v", changed, want)
	}
	// m1 lost its lock: its acknowledgement is refused.
	if _, err := p.Acknowledge("m1", []AcknowledgementBatch{accept(0, 9)}, t0); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("acknowledging after the lock expired: %v", err)
	}
	if p.NextFetchOffset() != 0 {
		t.Fatalf("next fetch %d, want 0", p.NextFetchOffset())
	}
}

func TestReleaseMember(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	p.Acquire("m1", 0, batchesOf(0, 9, 10), 100, false, t0)
	p.Acquire("m2", 10, batchesOf(10, 19, 10), 100, false, t0)
	p.Acquire("m1", 20, batchesOf(20, 29, 10), 100, false, t0)
	changed := p.ReleaseMember("m1")
	if want := []StateBatch{{0, 9, Available, 1}, {20, 29, Available, 1}}; !reflect.DeepEqual(changed, want) {
		t.Fatalf("changed %v, want %v", changed, want)
	}
	if _, err := p.Acknowledge("m2", []AcknowledgementBatch{accept(10, 19)}, t0); err != nil {
		t.Fatal(err)
	}
}

func TestLoadFromPersistedState(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StateEpoch: 3, StartOffset: 10, Batches: []StateBatch{
		{10, 14, Acknowledged, 1}, {15, 19, Available, 2}, {25, 29, Archived, 3}, {30, 34, Acquired, 1},
	}})
	// Leading terminal batches are done with; 20-24 were never delivered;
	// an acquisition does not survive a leader change.
	if p.StartOffset() != 15 || p.EndOffset() != 35 || p.NextFetchOffset() != 15 || p.StateEpoch() != 3 {
		t.Fatalf("start %d end %d next %d", p.StartOffset(), p.EndOffset(), p.NextFetchOffset())
	}
	want := []StateBatch{{15, 19, Available, 2}, {20, 24, Available, 0}, {25, 29, Archived, 3}, {30, 34, Available, 1}}
	if got := p.StateBatches(); !reflect.DeepEqual(got, want) {
		t.Fatalf("state %v\nwant  %v", got, want)
	}
	got := p.Acquire("m1", 15, batchesOf(10, 39, 5), 100, false, t0)
	if want := []AcquiredRecords{{15, 19, 3}, {20, 24, 1}, {30, 34, 2}, {35, 39, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	for _, bad := range [][]StateBatch{
		{{10, 5, Available, 1}},
		{{10, 14, Available, 1}, {12, 20, Available, 1}},
		{{5, 14, Available, 1}},
	} {
		if _, err := NewSharePartition(testConfig(), LoadedState{StartOffset: 10, Batches: bad}); err == nil {
			t.Errorf("loaded %v", bad)
		}
	}
}

func TestCompactedAwayRecordsAreArchived(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	p.Acquire("m1", 0, batchesOf(0, 19, 10), 100, false, t0)
	p.Acknowledge("m1", []AcknowledgementBatch{release(0, 19)}, t0)
	// The log no longer has 0-9 (compaction), and reading from 0 starts
	// at 10; the records past the first fetch are new, and a gap between
	// batches is never delivered.
	got := p.Acquire("m1", 0, []Batch{{BaseOffset: 10, LastOffset: 19}, {BaseOffset: 25, LastOffset: 29}}, 100, false, t0)
	if want := []AcquiredRecords{{10, 19, 2}, {25, 29, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if p.StartOffset() != 10 {
		t.Fatalf("start %d, want 10", p.StartOffset())
	}
	p.Acknowledge("m1", []AcknowledgementBatch{accept(10, 19), accept(25, 29)}, t0)
	if p.StartOffset() != 30 || p.Summary().InFlight != 0 {
		t.Fatalf("start %d in flight %d", p.StartOffset(), p.Summary().InFlight)
	}
}

func TestLogStartOffsetMoves(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	p.Acquire("m1", 0, batchesOf(0, 9, 10), 100, false, t0)
	p.Acquire("m2", 10, batchesOf(10, 19, 10), 100, false, t0)
	p.Acknowledge("m1", []AcknowledgementBatch{release(0, 9)}, t0)
	p.UpdateLogStartOffset(15)
	// 0-9 were available: archived. m2 still holds 10-19.
	if p.StartOffset() != 10 || p.NextFetchOffset() != 20 {
		t.Fatalf("start %d next %d", p.StartOffset(), p.NextFetchOffset())
	}
	// Released, the part before the log start is archived, the rest is
	// delivered again.
	changed, _ := p.Acknowledge("m2", []AcknowledgementBatch{release(10, 19)}, t0)
	if want := []StateBatch{{10, 14, Archived, 1}, {15, 19, Available, 1}}; !reflect.DeepEqual(changed, want) {
		t.Fatalf("changed %v, want %v", changed, want)
	}
	if p.StartOffset() != 15 {
		t.Fatalf("start %d, want 15", p.StartOffset())
	}
	p.UpdateLogStartOffset(100)
	if p.StartOffset() != 100 || p.EndOffset() != 100 || p.NextFetchOffset() != 100 {
		t.Fatalf("start %d end %d next %d", p.StartOffset(), p.EndOffset(), p.NextFetchOffset())
	}
}

// TestAgainstModel runs random acquisitions, acknowledgements, releases
// and expiries against a per-offset model of Kafka's rules and checks
// that the run-length state says the same of every offset.
func TestAgainstModel(t *testing.T) {
	type rec struct {
		state  RecordState
		dc     int16
		member string
		until  time.Time
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		cfg := Config{MaxInFlightRecords: 40, MaxDeliveryCount: 3, RecordLockDuration: 10 * time.Second}
		p := newTestPartition(t, cfg, LoadedState{StartOffset: 0})
		model := map[int64]*rec{}
		start, end := int64(0), int64(0)
		now := t0
		members := []string{"a", "b", "c"}
		const logEnd = 200
		settle := func() {
			for start < end && model[start].state.terminal() {
				delete(model, start)
				start++
			}
		}
		releaseRec := func(r *rec) {
			r.state, r.member, r.until = Available, "", time.Time{}
			if r.dc >= cfg.MaxDeliveryCount {
				r.state = Archived
			}
		}
		for step := range 300 {
			m := members[rng.IntN(len(members))]
			switch op := rng.IntN(10); {
			case op < 4: // acquire from the next fetch offset, 5-record batches
				from := p.NextFetchOffset()
				if from >= logEnd {
					continue
				}
				base := from - from%5
				batches := batchesOf(base, logEnd-1, 5)
				maxRecords := 1 + rng.IntN(20)
				recordLimit := rng.IntN(2) == 0
				got := p.Acquire(m, from, batches, maxRecords, recordLimit, now)
				// The model: walk batches, redeliver available, add new.
				var want []AcquiredRecords
				n := 0
				for _, b := range batches {
					if n >= maxRecords {
						break
					}
					stop := false
					for o := max(b.BaseOffset, start); o <= b.LastOffset; o++ {
						if recordLimit && n >= maxRecords {
							break
						}
						if o >= end {
							if end-start >= int64(cfg.MaxInFlightRecords) {
								stop = true
								break
							}
							for ; end <= b.LastOffset && (!recordLimit || n < maxRecords); end++ {
								model[end] = &rec{state: Acquired, dc: 1, member: m, until: now.Add(cfg.RecordLockDuration)}
								want = appendAcquired(want, end, 1)
								n++
							}
							break
						}
						if r := model[o]; r.state == Available {
							r.state, r.member, r.until = Acquired, m, now.Add(cfg.RecordLockDuration)
							r.dc++
							want = appendAcquired(want, o, r.dc)
							n++
						}
					}
					if stop {
						break
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d: acquire from %d max %d: got %v, want %v", seed, step, from, maxRecords, got, want)
				}
			case op < 8: // acknowledge some of what m holds
				var held []int64
				for o := start; o < end; o++ {
					if r := model[o]; r.state == Acquired && r.member == m {
						held = append(held, o)
					}
				}
				if len(held) == 0 {
					continue
				}
				first := held[rng.IntN(len(held))]
				last := first
				for last+1 < end && model[last+1].state == Acquired && model[last+1].member == m && rng.IntN(4) > 0 {
					last++
				}
				types := make([]AcknowledgeType, 1)
				if rng.IntN(2) == 0 {
					types = make([]AcknowledgeType, last-first+1)
				}
				for i := range types {
					types[i] = AcknowledgeType(rng.IntN(5))
				}
				ack := AcknowledgementBatch{FirstOffset: first, LastOffset: last, Types: types}
				if _, err := p.Acknowledge(m, []AcknowledgementBatch{ack}, now); err != nil {
					t.Fatalf("seed %d step %d: acknowledge %v: %v", seed, step, ack, err)
				}
				for o := first; o <= last; o++ {
					r := model[o]
					switch ack.typeAt(o) {
					case AckRenew:
						r.until = now.Add(cfg.RecordLockDuration)
						continue
					case AckAccept:
						r.state = Acknowledged
					case AckRelease:
						releaseRec(r)
					default:
						r.state = Archived
					}
					r.member, r.until = "", time.Time{}
				}
			case op < 9: // time passes, locks expire
				now = now.Add(time.Duration(rng.IntN(8)) * time.Second)
				p.ExpireLocks(now)
				for o := start; o < end; o++ {
					if r := model[o]; r.state == Acquired && !r.until.After(now) {
						releaseRec(r)
					}
				}
			default: // the member's session closes
				p.ReleaseMember(m)
				for o := start; o < end; o++ {
					if r := model[o]; r.state == Acquired && r.member == m {
						releaseRec(r)
					}
				}
			}
			settle()
			if p.StartOffset() != start || p.EndOffset() != end {
				t.Fatalf("seed %d step %d: start %d end %d, model %d %d", seed, step, p.StartOffset(), p.EndOffset(), start, end)
			}
			for i, r := range p.runs {
				if i > 0 && p.runs[i-1].alike(r) {
					t.Fatalf("seed %d step %d: runs %d and %d not merged", seed, step, i-1, i)
				}
				for o := r.first; o <= r.last; o++ {
					mr := model[o]
					if mr.state != r.state || mr.dc != r.deliveryCount || mr.member != r.member {
						t.Fatalf("seed %d step %d: offset %d is %v/%d/%q, model %v/%d/%q", seed, step, o, r.state, r.deliveryCount, r.member, mr.state, mr.dc, mr.member)
					}
				}
			}
		}
	}
}

func appendAcquired(as []AcquiredRecords, o int64, dc int16) []AcquiredRecords {
	if n := len(as); n > 0 && as[n-1].LastOffset+1 == o && as[n-1].DeliveryCount == dc {
		as[n-1].LastOffset = o
		return as
	}
	return append(as, AcquiredRecords{FirstOffset: o, LastOffset: o, DeliveryCount: dc})
}

func TestRenewExtendsTheLock(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	p.Acquire("m1", 0, batchesOf(0, 9, 10), 100, false, t0)
	renew := AcknowledgementBatch{FirstOffset: 0, LastOffset: 4, Types: []AcknowledgeType{AckRenew}}
	changed, err := p.Acknowledge("m1", []AcknowledgementBatch{renew}, t0.Add(20*time.Second))
	if err != nil || changed != nil {
		t.Fatalf("renew: changed %v, err %v", changed, err)
	}
	// At the first lock's end only the records not renewed are released.
	changed = p.ExpireLocks(t0.Add(30 * time.Second))
	if want := []StateBatch{{5, 9, Available, 1}}; !reflect.DeepEqual(changed, want) {
		t.Fatalf("changed %v, want %v", changed, want)
	}
	if _, err := p.Acknowledge("m1", []AcknowledgementBatch{accept(0, 4)}, t0.Add(40*time.Second)); err != nil {
		t.Fatalf("accepting renewed records: %v", err)
	}
}

func TestRecordLimitModeCutsBatches(t *testing.T) {
	p := newTestPartition(t, testConfig(), LoadedState{StartOffset: 0})
	got := p.Acquire("m1", 0, batchesOf(0, 29, 10), 15, true, t0)
	if want := []AcquiredRecords{{0, 14, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	// The next fetch reads from the middle of the batch.
	if p.NextFetchOffset() != 15 {
		t.Fatalf("next fetch %d, want 15", p.NextFetchOffset())
	}
	got = p.Acquire("m2", 15, batchesOf(10, 29, 10), 3, true, t0)
	if want := []AcquiredRecords{{15, 17, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}
