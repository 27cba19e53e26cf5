package log

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// batchPositions returns the position and base offset of every batch of
// a .log file.
func batchPositions(t *testing.T, path string) (pos, offsets []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for p := int64(0); p+BatchHeaderSize <= int64(len(b)); {
		h, err := ParseBatchHeader(b[p:])
		if err != nil {
			t.Fatal(err)
		}
		pos, offsets = append(pos, p), append(offsets, h.BaseOffset)
		p += int64(h.TotalSize())
	}
	return pos, offsets
}

// flipByte inverts the byte at off of path, as bit rot would.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func scrubManager(t *testing.T, dir string, reg prometheus.Registerer, out io.Writer, interval time.Duration) *Manager {
	t.Helper()
	m, err := NewManager(ManagerConfig{
		Dirs: []string{dir}, Logger: slog.New(slog.NewTextHandler(out, nil)), Now: newLtClock().Now,
		ConfigFor: func(string) Config { return ltConfig() }, Registerer: reg,
		Scrub: ScrubConfig{Enable: true, Interval: interval, BytesPerSecond: 100 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// Three bytes flipped in three batches of an old segment, as bit rot
// would: the scrubber reports each — partition, segment file and offset —
// within its interval, once, counts them, and the log knows them.
func TestScrubberFindsFlippedBytes(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	out := &syncBuffer{}
	m := scrubManager(t, dir, reg, out, 50*time.Millisecond)
	defer m.Close()
	l := dfFill(t, m, 1)[dir][0]
	ts := newLtClock().Now().UnixMilli()
	for i := 0; i < 100; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: ts}))
	}
	if l.NumSegments() < 3 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	seg := filepath.Join(l.Dir(), FilenamePrefixFromOffset(0)+LogFileSuffix)
	pos, offsets := batchPositions(t, seg)
	var want []int64
	for _, i := range []int{1, len(pos) / 2, len(pos) - 1} {
		flipByte(t, seg, pos[i]+BatchHeaderSize+7)
		want = append(want, offsets[i])
	}
	m.Start()
	waitFor(t, "the scrubber to find 3 corrupt batches", func() bool {
		return counterValue(t, reg, "moldau_log_scrubber_corrupt_batches_total") == 3
	})
	cs := l.CorruptBatches()
	if len(cs) != 3 {
		t.Fatalf("CorruptBatches: %+v", cs)
	}
	for i, c := range cs {
		if c.Offset != want[i] || c.Segment != seg || !strings.Contains(c.Reason, "CRC") {
			t.Fatalf("corrupt batch %d: %+v, want offset %d in %s", i, c, want[i], seg)
		}
		line := fmt.Sprintf("partition=t-0 segment=%s offset=%d", seg, want[i])
		if !strings.Contains(out.String(), line) {
			t.Fatalf("no line with %q:\n%s", line, out.String())
		}
	}
	// Later passes find them again but report nothing new.
	passes := counterValue(t, reg, "moldau_log_scrubber_passes_total")
	waitFor(t, "two more passes", func() bool { return counterValue(t, reg, "moldau_log_scrubber_passes_total") >= passes+2 })
	if n := strings.Count(out.String(), "corrupt batch found"); n != 3 {
		t.Fatalf("%d lines for 3 corrupt batches", n)
	}
	if got := counterValue(t, reg, "moldau_log_scrubber_bytes_checked_total"); got < float64(l.Size()/2) {
		t.Fatalf("bytes checked %v of a %d-byte log", got, l.Size())
	}
	// A fetch's slice that covers the second corrupt batch is told where it is.
	c, ok := l.CorruptBatchIn(0, 0, 1<<30)
	if !ok || c.Offset != want[0] {
		t.Fatalf("CorruptBatchIn: %+v %v", c, ok)
	}
	if _, ok := l.CorruptBatchIn(0, c.Position+1, 10); ok {
		t.Fatal("CorruptBatchIn found a batch outside the range")
	}
}

// Damage outside the CRC: a base offset out of order is reported as
// such; a length that runs past the segment ends the framing of the
// segment, and the offset reported is where the segment was.
func TestScrubberDamageOutsideTheCRC(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	out := &syncBuffer{}
	m := scrubManager(t, dir, reg, out, time.Hour)
	defer m.Close()
	l := dfFill(t, m, 1)[dir][0]
	ts := newLtClock().Now().UnixMilli()
	for i := 0; i < 100; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: ts}))
	}
	bases := l.SegmentBaseOffsets()
	seg0 := filepath.Join(l.Dir(), FilenamePrefixFromOffset(bases[0])+LogFileSuffix)
	seg1 := filepath.Join(l.Dir(), FilenamePrefixFromOffset(bases[1])+LogFileSuffix)
	pos0, off0 := batchPositions(t, seg0)
	pos1, off1 := batchPositions(t, seg1)
	// Segment 0: the 3rd batch's base offset goes back to 0.
	f, _ := os.OpenFile(seg0, os.O_RDWR, 0)
	f.WriteAt(binary.BigEndian.AppendUint64(nil, 0), pos0[2])
	f.Close()
	// Segment 1: the 2nd batch's length claims 1 GiB.
	f, _ = os.OpenFile(seg1, os.O_RDWR, 0)
	f.WriteAt(binary.BigEndian.AppendUint32(nil, 1<<30), pos1[1]+8)
	f.Close()
	m.Start()
	waitFor(t, "a pass", func() bool { return counterValue(t, reg, "moldau_log_scrubber_passes_total") >= 1 })
	cs := l.CorruptBatches()
	if len(cs) != 2 {
		t.Fatalf("corrupt batches: %+v", cs)
	}
	if cs[0].Offset != off0[2] || !strings.Contains(cs[0].Reason, "outside") {
		t.Fatalf("offset damage: %+v (want offset %d)", cs[0], off0[2])
	}
	if cs[1].Offset != off1[1] || !strings.Contains(cs[1].Reason, "cannot be read as batches") || cs[1].Position != pos1[1] {
		t.Fatalf("length damage: %+v (want offset %d)", cs[1], off1[1])
	}
}

// The scrubber keeps to moldau.log.scrub.bytes.per.second: what its
// throttle asks to sleep adds up to what the bytes read take at that rate.
func TestScrubberIsThrottled(t *testing.T) {
	dir := t.TempDir()
	m, err := NewManager(ManagerConfig{
		Dirs: []string{dir}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: newLtClock().Now,
		ConfigFor: func(string) Config { return ltConfig() },
		Scrub:     ScrubConfig{Enable: true, Interval: time.Hour, BytesPerSecond: 64 << 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l := dfFill(t, m, 1)[dir][0]
	ts := newLtClock().Now().UnixMilli()
	for i := 0; i < 400; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: ts}))
	}
	// A fake clock for the throttle: each look at it takes 50ms, and
	// sleeping advances it.
	clock := time.Now()
	start := clock
	m.scrubber.throttler.sleep = func(d time.Duration, _ <-chan struct{}) { clock = clock.Add(d) }
	m.scrubber.throttler.now = func() time.Time { clock = clock.Add(50 * time.Millisecond); return clock }
	m.scrubber.throttler.periodStart = clock
	if !m.scrubber.pass(make(chan struct{})) {
		t.Fatal("pass stopped")
	}
	read := int64(0)
	for _, s := range l.segs[:len(l.segs)-1] {
		read += s.size
	}
	want := time.Duration(float64(read) / (64 << 10) * float64(time.Second))
	if took := clock.Sub(start); took < want*8/10 {
		t.Fatalf("the pass took %v for %d bytes at 64 KiB/s (want about %v)", took, read, want)
	}
}
