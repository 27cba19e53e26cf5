package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The log scrubber finds bit rot: a background goroutine that reads every
// closed segment (not the active one, which is being written) and checks
// each batch as recovery does — the header, the length, the CRC-32C, the
// offsets within the segment — throttled to moldau.log.scrub.bytes.per.second.
// A pass starts when the Manager starts and then every
// moldau.log.scrub.interval.ms (at once after a pass that took longer).
// Kafka has no such check: a batch damaged on disk after it was written is
// served until a client's CRC check fails.
//
// A corrupt batch is logged once (partition, segment file, offset,
// position, what is wrong) and counted in
// moldau_log_scrubber_corrupt_batches_total; the log remembers it
// (Log.CorruptBatches) while its segment exists. The replica manager then
// serves fetches up to it but not the batch itself: a fetch from its
// offset answers CORRUPT_MESSAGE, so no client, whatever its CRC setting,
// gets bytes known to be damaged. With one replica the data cannot be
// repaired here; the operator learns exactly where it is (and `moldau log
// check` says the same offline).
//
// The CRC covers the batch from its attributes on; damage in the base
// offset or the length shows as offsets out of order or a batch that does
// not fit its segment, and the rest of that segment cannot be framed, so
// the scrubber reports it and goes to the next segment. Damage in the
// partition leader epoch (not covered by anything) is not found.

// ScrubConfig configures the log scrubber (moldau.log.scrub.*).
type ScrubConfig struct {
	Enable         bool          // moldau.log.scrub.enable
	Interval       time.Duration // moldau.log.scrub.interval.ms: between the starts of passes
	BytesPerSecond float64       // moldau.log.scrub.bytes.per.second: read rate, all logs together
}

// CorruptBatch is a batch the scrubber found damaged.
type CorruptBatch struct {
	Segment  string // the segment's .log file
	seg      *Segment
	Position int64
	Size     int64 // bytes up to the next batch; the rest of the segment if it cannot be framed
	// Offset is the batch's base offset, or the offset the segment was at
	// (where the next batch should start) if the header is not to be
	// trusted.
	Offset int64
	Reason string
}

// scrubChunk is how much the scrubber reads at once.
const scrubChunk = 1 << 20

type scrubber struct {
	cfg       ScrubConfig
	m         *Manager
	logger    *slog.Logger
	throttler *throttler

	corrupt, checked, passes prometheus.Counter
	lastPass                 prometheus.Gauge
}

func newScrubber(m *Manager, cfg ScrubConfig) *scrubber {
	return &scrubber{
		cfg: cfg, m: m, logger: m.logger, throttler: newThrottler(cfg.BytesPerSecond, nil),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{Name: "moldau_log_scrubber_corrupt_batches_total",
			Help: "Corrupt batches the log scrubber found in closed segments (each counted once)."}),
		checked: prometheus.NewCounter(prometheus.CounterOpts{Name: "moldau_log_scrubber_bytes_checked_total",
			Help: "Bytes of closed segments the log scrubber read and checked."}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "moldau_log_scrubber_passes_total",
			Help: "Passes of the log scrubber over every closed segment that completed."}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "moldau_log_scrubber_last_pass_completed_timestamp_seconds",
			Help: "When the last completed pass of the log scrubber ended (Unix seconds; 0: none yet)."}),
	}
}

func (s *scrubber) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.corrupt, s.checked, s.passes, s.lastPass}
}

// run scrubs until done closes.
func (s *scrubber) run(done <-chan struct{}) {
	for {
		start := time.Now()
		if !s.pass(done) {
			return
		}
		t := time.NewTimer(max(s.cfg.Interval-time.Since(start), 0))
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// pass checks every closed segment of every online log; false if done
// closed first.
func (s *scrubber) pass(done <-chan struct{}) bool {
	for _, l := range s.m.Logs() {
		if !s.scrubLog(l, done) {
			return false
		}
	}
	s.passes.Inc()
	s.lastPass.Set(float64(time.Now().UnixNano()) / 1e9)
	return true
}

// scrubLog checks the closed segments of l and records what it found.
func (s *scrubber) scrubLog(l *Log, done <-chan struct{}) bool {
	l.segMu.RLock()
	n := len(l.segs) - 1 // not the active segment
	segs := make([]*Segment, 0, max(n, 0))
	sizes := make([]int64, 0, max(n, 0))
	nexts := make([]int64, 0, max(n, 0))
	for i := 0; i < n; i++ {
		segs = append(segs, l.segs[i])
		sizes = append(sizes, l.segs[i].size)
		nexts = append(nexts, l.segs[i+1].baseOffset)
	}
	l.segMu.RUnlock()

	// Forget what was found in segments that are gone.
	known := l.CorruptBatches()
	known = slices.DeleteFunc(known, func(c CorruptBatch) bool { return !slices.Contains(segs, c.seg) })
	for i, seg := range segs {
		found, ok := s.scrubSegment(l, seg, sizes[i], nexts[i], done)
		var fresh []CorruptBatch
		for _, c := range found {
			if !slices.ContainsFunc(known, func(k CorruptBatch) bool { return k.seg == c.seg && k.Position == c.Position }) {
				fresh = append(fresh, c)
			}
		}
		if len(fresh) > 0 {
			// The log knows a corrupt batch (fetches stop before
			// it) before anyone is told of it.
			known = append(known, fresh...)
			l.setCorrupt(slices.Clone(known))
		}
		for _, c := range fresh {
			s.logger.Error("corrupt batch found by the log scrubber: the data is damaged on disk; fetches stop before it (CORRUPT_MESSAGE)",
				"partition", l.tp.String(), "segment", c.Segment, "offset", c.Offset, "position", c.Position, "size", c.Size, "reason", c.Reason)
			s.corrupt.Inc()
		}
		if !ok {
			l.setCorrupt(known)
			return false
		}
	}
	l.setCorrupt(known)
	return true
}

// scrubSegment reads seg's first size bytes and returns its corrupt
// batches; false if done closed.
func (s *scrubber) scrubSegment(l *Log, seg *Segment, size, nextBase int64, done <-chan struct{}) ([]CorruptBatch, bool) {
	var found []CorruptBatch
	r := &segmentReader{f: seg.log, size: size, onRead: func(n int) {
		s.checked.Add(float64(n))
		s.throttler.maybeThrottle(n, done)
	}}
	next := seg.baseOffset // where the next batch should start
	for pos := int64(0); pos < size; {
		select {
		case <-done:
			return found, false
		default:
		}
		c, h, total, err := checkStoredBatch(r, pos, seg.baseOffset, nextBase, next)
		if err != nil {
			s.readFailed(l, seg, pos, err)
			break
		}
		if c != nil {
			c.Segment, c.seg = seg.logPath(), seg
			found = append(found, *c)
		}
		if total == 0 {
			break // the rest of the segment cannot be framed
		}
		if c == nil {
			next = h.NextOffset()
		}
		pos += total
	}
	return found, true
}

// segmentReader reads a segment through a window of scrubChunk bytes (or
// one batch, if larger), so small batches do not cost a read each.
type segmentReader struct {
	f      File
	size   int64
	buf    []byte
	start  int64 // file position of buf[0]
	onRead func(n int)
}

// bytes returns the segment's bytes [pos, pos+n); n <= size-pos.
func (r *segmentReader) bytes(pos, n int64) ([]byte, error) {
	if pos >= r.start && pos+n <= r.start+int64(len(r.buf)) {
		return r.buf[pos-r.start : pos-r.start+n], nil
	}
	want := min(max(n, scrubChunk), r.size-pos)
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	r.buf, r.start = r.buf[:want], pos
	if err := readFull(r.f, r.buf, pos); err != nil {
		r.buf = r.buf[:0]
		return nil, err
	}
	r.onRead(int(want))
	return r.buf[:n], nil
}

// checkStoredBatch checks the batch at position pos of a segment whose
// offsets are [base, nextBase), where the previous batch ended at offset
// next (Kafka's recovery checks, and the offsets' order). It returns what
// is wrong with it (nil: nothing), its header and size; a size of 0 means
// the rest of the segment cannot be framed (the corrupt batch then covers
// it). err is a read error.
func checkStoredBatch(r *segmentReader, pos, base, nextBase, next int64) (c *CorruptBatch, h BatchHeader, total int64, err error) {
	rest := r.size - pos
	unframed := func(reason string) (*CorruptBatch, BatchHeader, int64, error) {
		return &CorruptBatch{Position: pos, Size: rest, Offset: next, Reason: reason + "; the rest of the segment cannot be read as batches"}, h, 0, nil
	}
	if rest < BatchHeaderSize {
		return unframed(fmt.Sprintf("%d bytes at the end are not a whole batch", rest))
	}
	hdr, err := r.bytes(pos, BatchHeaderSize)
	if err != nil {
		return nil, h, 0, err
	}
	if h, err = ParseBatchHeader(hdr); err != nil {
		return unframed(reasonOf(err))
	}
	total = int64(h.TotalSize())
	if total > rest {
		return unframed(fmt.Sprintf("the batch claims %d bytes but the segment has %d left", total, rest))
	}
	b, err := r.bytes(pos, total)
	if err != nil {
		return nil, h, 0, err
	}
	bad := func(offset int64, reason string) (*CorruptBatch, BatchHeader, int64, error) {
		return &CorruptBatch{Position: pos, Size: total, Offset: offset, Reason: reason}, h, total, nil
	}
	switch {
	case h.BaseOffset < next || h.BaseOffset < base || h.LastOffsetDelta < 0 || h.LastOffset() >= nextBase:
		return bad(next, fmt.Sprintf("batch offsets %d-%d are outside [%d, %d)", h.BaseOffset, h.LastOffset(), max(next, base), nextBase))
	case h.NumRecords < 0 || h.LastOffsetDelta < h.NumRecords-1:
		return bad(h.BaseOffset, fmt.Sprintf("lastOffsetDelta %d with %d records", h.LastOffsetDelta, h.NumRecords))
	}
	if _, err := CheckBatch(b); err != nil {
		return bad(h.BaseOffset, reasonOf(err))
	}
	return nil, h, total, nil
}

// reasonOf is an error of the batch checks without Kafka's description of
// CORRUPT_MESSAGE.
func reasonOf(err error) string {
	return strings.TrimPrefix(err.Error(), kerr.CorruptMessage.Error()+": ")
}

// readFull reads len(b) bytes at off.
func readFull(f File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readFailed notes a read that failed: a segment deleted meanwhile is
// skipped quietly; any other error was reported to the dir's failure
// handling by the Manager's FS.
func (s *scrubber) readFailed(l *Log, seg *Segment, pos int64, err error) {
	if errors.Is(err, os.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return
	}
	s.logger.Warn("log scrubber could not read a segment", "partition", l.tp.String(), "segment", seg.logPath(), "position", pos, "err", err)
}

// setCorrupt records the corrupt batches of l.
func (l *Log) setCorrupt(cs []CorruptBatch) {
	if len(cs) == 0 {
		if l.corrupt.Load() != nil {
			l.corrupt.Store(nil)
		}
		return
	}
	l.corrupt.Store(&cs)
}

// CorruptBatches returns the corrupt batches the scrubber found in the
// segments the log still has.
func (l *Log) CorruptBatches() []CorruptBatch {
	if p := l.corrupt.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// CorruptBatchIn returns the first known corrupt batch that starts in
// [pos, pos+size) of the segment based at segBase (a fetch's slice). It
// takes no lock unless the log has corrupt batches.
func (l *Log) CorruptBatchIn(segBase, pos, size int64) (CorruptBatch, bool) {
	p := l.corrupt.Load()
	if p == nil {
		return CorruptBatch{}, false
	}
	l.segMu.RLock()
	var seg *Segment
	if i := l.segmentFloor(segBase); i >= 0 && l.segs[i].baseOffset == segBase {
		seg = l.segs[i]
	}
	l.segMu.RUnlock()
	var first *CorruptBatch
	for i, c := range *p {
		if c.seg == seg && c.Position >= pos && c.Position < pos+size && (first == nil || c.Position < first.Position) {
			first = &(*p)[i]
		}
	}
	if first == nil {
		return CorruptBatch{}, false
	}
	return *first, true
}
