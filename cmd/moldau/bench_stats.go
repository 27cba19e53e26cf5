package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// benchStats collects what the workers observe: the records and bytes done,
// their latencies (for the whole run and for the current progress interval)
// and errors by message. It is safe for concurrent use.
type benchStats struct {
	mu       sync.Mutex
	records  int64
	bytes    int64
	errors   int64
	aborted  int64
	errCount map[string]int64
	total    histogram
	interval histogram
	// intervalRecords, intervalBytes and intervalErrors are reset by
	// takeInterval.
	intervalRecords, intervalBytes, intervalErrors int64
	// transactions counts the transactions committed (produce with
	// --transaction-records).
	transactions atomic.Int64
}

func newBenchStats() *benchStats { return &benchStats{errCount: make(map[string]int64)} }

// done counts one record of size bytes, with its latency if lat >= 0.
func (s *benchStats) done(size int, lat time.Duration) {
	s.mu.Lock()
	s.records++
	s.bytes += int64(size)
	s.intervalRecords++
	s.intervalBytes += int64(size)
	if lat >= 0 {
		s.total.RecordDuration(lat)
		s.interval.RecordDuration(lat)
	}
	s.mu.Unlock()
}

// latency records a latency sample without counting a record (the poll
// latency of a consumer).
func (s *benchStats) latency(lat time.Duration) {
	s.mu.Lock()
	s.total.RecordDuration(lat)
	s.interval.RecordDuration(lat)
	s.mu.Unlock()
}

// failed counts one failed record.
func (s *benchStats) failed(err error) {
	s.mu.Lock()
	s.errors++
	s.intervalErrors++
	s.errCount[err.Error()]++
	s.mu.Unlock()
}

// count is the number of records done so far.
func (s *benchStats) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records
}

// abort counts one record cut off by an interrupt (Ctrl-C): not an error.
func (s *benchStats) abort() {
	s.mu.Lock()
	s.aborted++
	s.mu.Unlock()
}

type intervalStats struct {
	records, bytes, errors int64
	p50, p99               time.Duration
	samples                uint64
}

// takeInterval returns the figures since the last call and starts a new
// interval.
func (s *benchStats) takeInterval() intervalStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	iv := intervalStats{
		records: s.intervalRecords, bytes: s.intervalBytes, errors: s.intervalErrors,
		p50:     time.Duration(s.interval.Quantile(0.50)),
		p99:     time.Duration(s.interval.Quantile(0.99)),
		samples: s.interval.Count(),
	}
	s.intervalRecords, s.intervalBytes, s.intervalErrors = 0, 0, 0
	s.interval.Reset()
	return iv
}

// snapshot copies the totals.
func (s *benchStats) snapshot() (records, bytes, errors, aborted int64, h *histogram, errs []errorCount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h = new(histogram)
	h.Merge(&s.total)
	for msg, n := range s.errCount {
		errs = append(errs, errorCount{Error: msg, Count: n})
	}
	sort.Slice(errs, func(i, j int) bool {
		if errs[i].Count != errs[j].Count {
			return errs[i].Count > errs[j].Count
		}
		return errs[i].Error < errs[j].Error
	})
	if len(errs) > maxErrorKinds {
		errs = errs[:maxErrorKinds]
	}
	return s.records, s.bytes, s.errors, s.aborted, h, errs
}

// maxErrorKinds is how many distinct error messages a summary lists.
const maxErrorKinds = 5

// progress prints one line per second to w until ctx ends; label names the
// latency. It returns when ctx is done.
func progress(ctx context.Context, w io.Writer, s *benchStats, label string) {
	start := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			iv := s.takeInterval()
			secs := now.Sub(last).Seconds()
			last = now
			lat := "-"
			if iv.samples > 0 {
				lat = fmt.Sprintf("p50 %s p99 %s", fmtMs(iv.p50), fmtMs(iv.p99))
			}
			fmt.Fprintf(w, "%6.0fs %10.0f records/s %9.2f MiB/s  %s latency %s  errors %d\n",
				now.Sub(start).Seconds(), float64(iv.records)/secs, float64(iv.bytes)/secs/mib,
				label, lat, iv.errors)
		}
	}
}

const (
	mib = 1 << 20
	gib = 1 << 30
)

// fmtMs formats a duration as milliseconds with microsecond precision.
func fmtMs(d time.Duration) string { return strconv.FormatFloat(ms(d), 'f', 3, 64) + " ms" }

// ms is d in milliseconds rounded to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
