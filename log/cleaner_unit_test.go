package log

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func TestSkimpyOffsetMap(t *testing.T) {
	m := newSkimpyOffsetMap(100 * offsetMapEntrySize)
	m.reset(1000) // capped at the budget
	if m.slots != 100 {
		t.Fatalf("slots %d, want 100", m.slots)
	}
	for i := 0; i < 90; i++ {
		if err := m.put([]byte(fmt.Sprintf("key-%d", i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 90; i++ {
		if err := m.put([]byte(fmt.Sprintf("key-%d", i)), int64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	if m.size() != 90 || m.latestOffset() != 1089 {
		t.Fatalf("size %d latest %d", m.size(), m.latestOffset())
	}
	for i := 0; i < 90; i++ {
		if got := m.get([]byte(fmt.Sprintf("key-%d", i))); got != int64(1000+i) {
			t.Fatalf("key-%d: %d", i, got)
		}
	}
	if got := m.get([]byte("absent")); got != -1 {
		t.Fatalf("absent key: %d", got)
	}
	for i := 90; i < 100; i++ {
		if err := m.put([]byte(fmt.Sprintf("key-%d", i)), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.put([]byte("one too many"), 1); err == nil {
		t.Fatal("put into a full map succeeded")
	}
	if got := m.get([]byte("absent")); got != -1 {
		t.Fatalf("absent key in a full map: %d", got)
	}
	if m.utilization() != 1 {
		t.Fatalf("utilization %v", m.utilization())
	}
	m.reset(10)
	if m.size() != 0 || m.latestOffset() != -1 || m.get([]byte("key-1")) != -1 || len(m.buf) != 10*offsetMapEntrySize {
		t.Fatalf("after reset: size %d latest %d buf %d", m.size(), m.latestOffset(), len(m.buf))
	}
}

func TestThrottler(t *testing.T) {
	now := time.Unix(0, 0)
	var slept time.Duration
	th := newThrottler(1000, func() time.Time { return now }) // 1000 B/s
	th.sleep = func(d time.Duration, _ <-chan struct{}) { slept += d; now = now.Add(d) }
	th.maybeThrottle(500, nil) // within the check interval: nothing
	if slept != 0 {
		t.Fatalf("slept %v inside the check interval", slept)
	}
	now = now.Add(time.Second)
	th.maybeThrottle(1500, nil) // 2000 B in 1 s: sleep 1 s more
	if slept != time.Second {
		t.Fatalf("slept %v, want 1s", slept)
	}
	now = now.Add(2 * time.Second)
	th.maybeThrottle(1000, nil) // 1000 B in 2 s: under the rate
	if slept != time.Second {
		t.Fatalf("slept %v under the rate", slept)
	}
	unlimited := newThrottler(DefaultCleanerConfig().MaxIOBytesPerSecond, nil)
	unlimited.sleep = func(time.Duration, <-chan struct{}) { t.Fatal("unlimited throttler slept") }
	unlimited.maybeThrottle(1<<30, nil)
}

// The cleaner never cleans the active segment, past the high watermark,
// or segments within min.compaction.lag.ms; max.compaction.lag.ms makes a
// log cleanable under min.cleanable.dirty.ratio.
func TestCleanerCleanableRange(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := ctConfig()
	cfg.MinCleanableDirtyRatio = 0.99
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	ts := clock.Now().UnixMilli()
	batch := func(k string, at int64) []byte { return ctBatch(t, ctBatchSpec{ts: at, keys: []string{k, k}}) }
	for i := 0; i < 3; i++ { // three segments: 0-1, 2-3, 4-5, then active
		ltAppend(t, l, batch("a", ts-int64(10-i)*1000))
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	ltAppend(t, l, batch("a", ts))
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	grab := func() *logToClean {
		var pre preCleanStats
		ltc := lc.mgr.grabFilthiestCompactedLog(&pre)
		if ltc != nil {
			lc.mgr.doneCleaning(l.tp, logDirOf(l), 0, false)
		}
		return ltc
	}
	v := l.cleanerView()
	offs := func(lastClean int64, has bool) string {
		first, unc, _ := lc.mgr.cleanableOffsets(l, &v, lastClean, has, clock.Now().UnixMilli())
		return fmt.Sprintf("%d-%d", first, unc)
	}
	// High watermark 0: nothing.
	if got := offs(0, false); got != "0-0" {
		t.Fatalf("hw 0: %s", got)
	}
	l.UpdateHighWatermark(3) // inside the second segment
	v = l.cleanerView()
	if got := offs(0, false); got != "0-3" {
		t.Fatalf("hw 3: %s", got)
	}
	if first, n := calculateCleanableBytes(&v, 0, 3); first != 2 || n != v.segs[0].size {
		t.Fatalf("cleanable bytes below hw 3: first uncleanable %d, %d bytes", first, n)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	v = l.cleanerView()
	if got := offs(0, false); got != "0-6" { // the active segment's base
		t.Fatalf("hw at the end: %s", got)
	}
	// A checkpoint outside the log resets to the log start.
	if first, _, force := lc.mgr.cleanableOffsets(l, &v, 100, true, ts); first != 0 || !force {
		t.Fatalf("checkpoint past the end: first %d force %v", first, force)
	}
	// min.compaction.lag.ms: segments whose newest record is younger
	// than 8.5 s stay (the third's is 8 s old).
	cfg.MinCompactionLagMs = 8500
	l.SetConfig(cfg)
	v = l.cleanerView()
	if got := offs(0, false); got != "0-4" {
		t.Fatalf("min lag: %s", got)
	}
	cfg.MinCompactionLagMs = 0
	l.SetConfig(cfg)
	// A checkpoint makes the log mostly clean: under the dirty ratio.
	lc.mgr.mu.Lock()
	lc.mgr.checkpoints[filepath.Dir(dir)][l.tp] = 4
	lc.mgr.mu.Unlock()
	if ltc := grab(); ltc != nil {
		t.Fatalf("cleanable under the dirty ratio: %+v", ltc)
	}
	// max.compaction.lag.ms: the dirty segment (first batch 8 s old) is
	// overdue at 5 s.
	cfg.MaxCompactionLagMs = 5000
	l.SetConfig(cfg)
	ltc := grab()
	if ltc == nil || !ltc.needCompactionNow || ltc.firstDirtyOffset != 4 || ltc.firstUncleanableOffset != 6 {
		t.Fatalf("max lag: %+v", ltc)
	}
	// A log whose policy is delete is never chosen.
	cfg.CleanupPolicy = []string{"delete"}
	l.SetConfig(cfg)
	if ltc := grab(); ltc != nil {
		t.Fatalf("log with cleanup.policy=delete chosen: %+v", ltc)
	}
}

// With a map too small for the dirty section, a pass cleans what the map
// covers and checkpoints there (inside a segment); later passes finish.
func TestCleanerOffsetMapFull(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _ := ltOpen(t, dir, ctConfig(), clock, false, nil)
	var all []ctRec
	for i := 0; i < 200; i++ {
		k := fmt.Sprintf("k%03d", i%60)
		v := []byte(fmt.Sprintf("v%d", i))
		info := ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: []string{k}, values: [][]byte{v}}))
		all = append(all, ctRec{off: info.FirstOffset, key: k, value: v})
	}
	ctAppend(t, l)
	cc := ctCleanerConfig()
	cc.DedupeBufferSize = 25 * offsetMapEntrySize // 22 keys at 0.9
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, cc, l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	cp := lc.mgr.allCleanerCheckpoints()[l.tp]
	if cp <= 0 || cp >= 200 {
		t.Fatalf("checkpoint after a partial pass: %d", cp)
	}
	for i := 0; i < 20 && ctCleanOnce(t, lc); i++ {
	}
	if cp := lc.mgr.allCleanerCheckpoints()[l.tp]; cp != 200 {
		t.Fatalf("checkpoint %d after the passes, want 200", cp)
	}
	got := ctRead(t, l)
	want := ctNewest(all)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for _, r := range got {
		if w := want[r.key]; w.off != r.off {
			t.Fatalf("kept %v, newest %v", r, w)
		}
	}
}

// Compressed batches are rebuilt with their codec when they lose records
// and copied as they are when not; a batch larger than the I/O buffers
// grows them.
func TestCleanerCompressedAndLargeBatches(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := ctConfig()
	cfg.SegmentBytes = 256 << 10
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	ts := clock.Now().UnixMilli()
	big := make([]byte, 40<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	var codecs []int
	for _, codec := range []int{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: ts, codec: codec, keys: []string{"a", fmt.Sprint("keep", codec), "b"}}))
		codecs = append(codecs, codec)
	}
	ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: ts, codec: CodecZstd, keys: []string{"untouched1", "untouched2"}}))
	ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: ts, keys: []string{"big"}, values: [][]byte{big}}))
	ctAppend(t, l, ctBatch(t, ctBatchSpec{ts: ts, keys: []string{"a", "b"}}))
	cc := ctCleanerConfig()
	cc.IOBufferSize = 4 << 10 // 2 KiB read and write buffers: the big batch must grow them
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, cc, l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	hs := ltReadAll(t, l, 0)
	for i, codec := range codecs {
		if hs[i].Codec() != codec || hs[i].NumRecords != 1 || hs[i].LastOffsetDelta != 2 {
			t.Fatalf("batch %d: %+v, want codec %d with one record", i, hs[i], codec)
		}
	}
	got := fmt.Sprint(ctRead(t, l))
	want := "[1:keep1=v-keep1 4:keep2=v-keep2 7:keep3=v-keep3 10:keep4=v-keep4 12:untouched1=v-untouched1 13:untouched2=v-untouched2"
	if got[:len(want)] != want {
		t.Fatalf("records %s", got)
	}
	if recs := ctRead(t, l); string(recs[6].value) != string(big) || recs[7].key != "a" || recs[8].key != "b" {
		t.Fatalf("big record or the newest a and b lost: %v", recs[6:])
	}
	if len(lc.threads[0].cleaner.readBuf) != 2<<10 {
		t.Fatalf("read buffer not restored: %d", len(lc.threads[0].cleaner.readBuf))
	}
}
