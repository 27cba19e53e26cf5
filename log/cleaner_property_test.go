package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ptValue is a property-test value: the global write sequence number,
// then padding.
func ptValue(seq uint64, size int) []byte {
	v := make([]byte, size)
	binary.BigEndian.PutUint64(v, seq)
	return v
}

// The property test of issue 9: random keyed records and tombstones go to
// a compacted log with 1 MiB segments while the cleaner (two threads)
// runs and three consumers read it from the start again and again. Every
// consumer sees offsets strictly increase and never an older value of a
// key after a newer one. Once writing stops and the cleaner caught up, a
// full read gives exactly the newest record of every key (tombstones
// included: their delete horizon has not passed); once delete.retention.ms
// has passed and the cleaner ran again, exactly the newest value of every
// key not deleted.
func TestCleanerProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	total := 6 << 20
	if testing.Short() || raceEnabled {
		total = 3 << 20
	}
	clock := newLtClock()
	cc := DefaultCleanerConfig()
	cc.Threads, cc.Backoff, cc.IOBufferSize, cc.DedupeBufferSize = 2, 5*time.Millisecond, 128<<10, 8<<20
	m, err := NewManager(ManagerConfig{Dirs: []string{t.TempDir()}, Logger: ctLogger(), Now: clock.Now, Cleaner: cc})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Start()
	cfg := ctConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentIndexBytes = 10 << 20
	cfg.IndexIntervalBytes = 4096
	cfg.FileDeleteDelayMs = 60_000 // readers keep reading replaced segments
	cfg.DeleteRetentionMs = 10_000
	tp := TopicPartition{"prop", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var consumerErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { consumerErr = err }); stop.Store(true) }
	var passes atomic.Int64
	for c := 0; c < 3; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := ptConsume(l); err != nil {
					fail(err)
					return
				}
				passes.Add(1)
			}
		}()
	}

	newest := make(map[string]ctRec)
	var seq uint64
	for written := 0; written < total && !stop.Load(); {
		n := 1 + rng.IntN(20)
		s := ctBatchSpec{ts: clock.Now().UnixMilli()}
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("key-%d", rng.IntN(2000))
			seq++
			v := ptValue(seq, 8+rng.IntN(400))
			if rng.IntN(10) == 0 {
				v = nil
			}
			s.keys, s.values = append(s.keys, k), append(s.values, v)
			written += len(k) + len(v)
		}
		segs := l.NumSegments()
		info := ltAppend(t, l, ctBatch(t, s))
		l.UpdateHighWatermark(l.LogEndOffset())
		for i, k := range s.keys {
			newest[k] = ctRec{off: info.FirstOffset + int64(i), key: k, value: s.values[i]}
		}
		if l.NumSegments() > segs {
			// A segment rolled: let the cleaner clean it while the
			// consumers read, before writing on.
			before := m.cleaner.cleanings.Load()
			for deadline := time.Now().Add(time.Minute); m.cleaner.cleanings.Load() == before && !stop.Load(); {
				if time.Now().After(deadline) {
					t.Fatal("the cleaner did not clean a rolled segment within a minute")
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	if n := m.cleaner.cleanings.Load(); n < 3 {
		t.Fatalf("only %d cleanings while writing", n)
	} else {
		t.Logf("%d cleanings while writing", n)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	waitCleaned := func(what string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			bases := l.SegmentBaseOffsets()
			if cp, ok := m.CleanerCheckpoint(tp); ok && cp == bases[len(bases)-1] {
				return
			}
			if time.Now().After(deadline) || stop.Load() {
				t.Fatalf("%s: cleaner did not catch up (checkpoint %v, segments %v; consumer error %v)", what, cp(m, tp), bases, consumerErr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitCleaned("after writing")
	check := func(what string, want map[string]ctRec) {
		t.Helper()
		got := ctRead(t, l)
		if len(got) != len(want) {
			t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
		}
		for _, r := range got {
			w, ok := want[r.key]
			if !ok || w.off != r.off || !bytes.Equal(w.value, r.value) || (w.value == nil) != (r.value == nil) {
				t.Fatalf("%s: read %v, newest is %v", what, r, w)
			}
		}
	}
	check("after cleaning", newest)

	// Past delete.retention.ms, with a little more dirty data, the
	// tombstones go.
	clock.Advance(10*time.Second + time.Millisecond)
	info := ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: []string{"last"}}))
	newest["last"] = ctRec{off: info.FirstOffset, key: "last", value: []byte("v-last")}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	waitCleaned("after the delete horizon")
	live := make(map[string]ctRec)
	for k, r := range newest {
		if r.value != nil {
			live[k] = r
		}
	}
	check("after the delete horizon", live)
	stop.Store(true)
	wg.Wait()
	if consumerErr != nil {
		t.Fatal(consumerErr)
	}
	t.Logf("%d keys live of %d; consumers made %d full passes", len(live), len(newest), passes.Load())
	if passes.Load() < 3 {
		t.Fatalf("consumers made only %d passes", passes.Load())
	}
}

func cp(m *Manager, tp TopicPartition) string {
	off, ok := m.CleanerCheckpoint(tp)
	return fmt.Sprint(off, ok)
}

// ptConsume reads the log from its start to the high watermark, as a
// consumer does, and checks offsets grow strictly and no key's value goes
// back in write order.
func ptConsume(l *Log) error {
	last := make(map[string]uint64)
	prev := int64(-1)
	var r Record
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		fd, err := l.Read(off, 256<<10, l.HighWatermark(), true)
		if err != nil {
			return fmt.Errorf("read at %d: %w", off, err)
		}
		b, err := fd.Records.ReadInto(nil)
		if err != nil {
			return fmt.Errorf("read at %d: %w", off, err)
		}
		if len(b) == 0 {
			return nil
		}
		for len(b) > 0 {
			h, err := CheckBatch(b[:int(binary.BigEndian.Uint32(b[8:]))+LogOverhead])
			if err != nil {
				return fmt.Errorf("batch at %d: %w", off, err)
			}
			it := NewRecordIter(b[BatchHeaderSize:h.TotalSize()])
			for {
				ok, err := it.Next(&r)
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o <= prev {
					return fmt.Errorf("offset %d after %d", o, prev)
				}
				prev = o
				if len(r.Value) >= 8 {
					s := binary.BigEndian.Uint64(r.Value)
					if s <= last[string(r.Key)] {
						return fmt.Errorf("key %s: value %d at offset %d after value %d", r.Key, s, o, last[string(r.Key)])
					}
					last[string(r.Key)] = s
				}
			}
			b = b[h.TotalSize():]
			off = h.NextOffset()
		}
	}
	return nil
}
