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
	total := 6 << 20
	if testing.Short() || raceEnabled {
		total = 3 << 20
	}
	pt := newPropertyTest(t, seed)
	defer pt.m.Close()
	pt.startConsumers(3)
	pt.write(total)
	if n := pt.m.cleaner.cleanings.Load(); n < 3 {
		t.Fatalf("only %d cleanings while writing", n)
	} else {
		t.Logf("%d cleanings while writing", n)
	}
	if err := pt.l.Roll(); err != nil {
		t.Fatal(err)
	}
	pt.waitCleaned("after writing")
	pt.check("after cleaning", pt.newest)

	// Past delete.retention.ms, with a little more dirty data, the
	// tombstones go.
	pt.clock.Advance(10*time.Second + time.Millisecond)
	info := ltAppend(t, pt.l, ctBatch(t, ctBatchSpec{ts: pt.clock.Now().UnixMilli(), keys: []string{"last"}}))
	pt.newest["last"] = ctRec{off: info.FirstOffset, key: "last", value: []byte("v-last")}
	if err := pt.l.Roll(); err != nil {
		t.Fatal(err)
	}
	pt.l.UpdateHighWatermark(pt.l.LogEndOffset())
	pt.waitCleaned("after the delete horizon")
	live := make(map[string]ctRec)
	for k, r := range pt.newest {
		if r.value != nil {
			live[k] = r
		}
	}
	pt.check("after the delete horizon", live)
	pt.stop.Store(true)
	pt.wg.Wait()
	if pt.consumerErr != nil {
		t.Fatal(pt.consumerErr)
	}
	t.Logf("%d keys live of %d; consumers made %d full passes", len(live), len(pt.newest), pt.passes.Load())
	if pt.passes.Load() < 3 {
		t.Fatalf("consumers made only %d passes", pt.passes.Load())
	}
}

// propertyTest is the state of TestCleanerProperty: a Manager with two
// cleaner threads, one compacted log with 1 MiB segments, consumers, and
// the newest record written of each key.
type propertyTest struct {
	t      *testing.T
	rng    *rand.Rand
	clock  *ltClock
	m      *Manager
	l      *Log
	tp     TopicPartition
	newest map[string]ctRec

	stop        atomic.Bool
	wg          sync.WaitGroup
	errOnce     sync.Once
	consumerErr error
	passes      atomic.Int64
}

func newPropertyTest(t *testing.T, seed uint64) *propertyTest {
	pt := &propertyTest{t: t, rng: rand.New(rand.NewPCG(seed, seed>>7)), clock: newLtClock(), tp: TopicPartition{"prop", 0}, newest: make(map[string]ctRec)}
	cc := DefaultCleanerConfig()
	cc.Threads, cc.Backoff, cc.IOBufferSize, cc.DedupeBufferSize = 2, 5*time.Millisecond, 128<<10, 8<<20
	var err error
	pt.m, err = NewManager(ManagerConfig{Dirs: []string{t.TempDir()}, Logger: ctLogger(), Now: pt.clock.Now, Cleaner: cc})
	if err != nil {
		t.Fatal(err)
	}
	pt.m.Start()
	cfg := ctConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentIndexBytes = 10 << 20
	cfg.IndexIntervalBytes = 4096
	cfg.FileDeleteDelayMs = 60_000 // readers keep reading replaced segments
	cfg.DeleteRetentionMs = 10_000
	if pt.l, err = pt.m.GetOrCreateLog(pt.tp, [16]byte{1}, cfg); err != nil {
		t.Fatal(err)
	}
	return pt
}

// startConsumers starts n consumers reading the log from its start, again
// and again, until stop.
func (pt *propertyTest) startConsumers(n int) {
	for c := 0; c < n; c++ {
		pt.wg.Add(1)
		go func() {
			defer pt.wg.Done()
			for !pt.stop.Load() {
				if err := ptConsume(pt.l); err != nil {
					pt.errOnce.Do(func() { pt.consumerErr = err })
					pt.stop.Store(true)
					return
				}
				pt.passes.Add(1)
			}
		}()
	}
}

// write appends random batches of 1-20 records (2000 keys, values of up
// to 400 bytes, one in ten a tombstone) until total bytes were written.
// After each roll it waits for the cleaner to clean, so cleaning and
// reading overlap.
func (pt *propertyTest) write(total int) {
	t, l := pt.t, pt.l
	var seq uint64
	for written := 0; written < total && !pt.stop.Load(); {
		s := ctBatchSpec{ts: pt.clock.Now().UnixMilli()}
		for i := 1 + pt.rng.IntN(20); i > 0; i-- {
			k := fmt.Sprintf("key-%d", pt.rng.IntN(2000))
			seq++
			v := ptValue(seq, 8+pt.rng.IntN(400))
			if pt.rng.IntN(10) == 0 {
				v = nil
			}
			s.keys, s.values = append(s.keys, k), append(s.values, v)
			written += len(k) + len(v)
		}
		segs := l.NumSegments()
		info := ltAppend(t, l, ctBatch(t, s))
		l.UpdateHighWatermark(l.LogEndOffset())
		for i, k := range s.keys {
			pt.newest[k] = ctRec{off: info.FirstOffset + int64(i), key: k, value: s.values[i]}
		}
		if l.NumSegments() > segs {
			before := pt.m.cleaner.cleanings.Load()
			for deadline := time.Now().Add(time.Minute); pt.m.cleaner.cleanings.Load() == before && !pt.stop.Load(); {
				if time.Now().After(deadline) {
					t.Fatal("the cleaner did not clean a rolled segment within a minute")
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}

// waitCleaned waits until the cleaner checkpoint reaches the active
// segment.
func (pt *propertyTest) waitCleaned(what string) {
	pt.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		bases := pt.l.SegmentBaseOffsets()
		if cp, ok := pt.m.CleanerCheckpoint(pt.tp); ok && cp == bases[len(bases)-1] {
			return
		}
		if time.Now().After(deadline) || pt.stop.Load() {
			pt.t.Fatalf("%s: cleaner did not catch up (checkpoint %v, segments %v; consumer error %v)", what, cp(pt.m, pt.tp), bases, pt.consumerErr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// check reads the whole log and compares it with want, record by record.
func (pt *propertyTest) check(what string, want map[string]ctRec) {
	pt.t.Helper()
	got := ctRead(pt.t, pt.l)
	if len(got) != len(want) {
		pt.t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for _, r := range got {
		w, ok := want[r.key]
		if !ok || w.off != r.off || !bytes.Equal(w.value, r.value) || (w.value == nil) != (r.value == nil) {
			pt.t.Fatalf("%s: read %v, newest is %v", what, r, w)
		}
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
