package log

import (
	"math"
	"sync"
	"time"
)

// throttler limits the I/O rate of all cleaner threads together to
// log.cleaner.io.max.bytes.per.second (Kafka's Throttler): every
// checkInterval it compares the bytes observed with the desired rate and
// sleeps long enough to fall back to it. The sleep is cut short when done
// closes (shutdown).
type throttler struct {
	mu            sync.Mutex
	ratePerSec    float64
	checkInterval time.Duration
	now           func() time.Time
	sleep         func(d time.Duration, done <-chan struct{})
	periodStart   time.Time
	observed      float64
}

func newThrottler(ratePerSec float64, now func() time.Time) *throttler {
	if now == nil {
		now = time.Now
	}
	return &throttler{ratePerSec: ratePerSec, checkInterval: 300 * time.Millisecond, now: now, sleep: sleepOrDone, periodStart: now()}
}

func sleepOrDone(d time.Duration, done <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// maybeThrottle records n bytes of I/O and sleeps if the rate is above the
// desired one.
func (t *throttler) maybeThrottle(n int, done <-chan struct{}) {
	if t == nil || t.ratePerSec <= 0 || t.ratePerSec == math.MaxFloat64 || math.IsInf(t.ratePerSec, 1) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observed += float64(n)
	now := t.now()
	elapsed := now.Sub(t.periodStart)
	if elapsed <= t.checkInterval || t.observed <= 0 {
		return
	}
	if rate := t.observed / elapsed.Seconds(); rate > t.ratePerSec {
		want := time.Duration(t.observed / t.ratePerSec * float64(time.Second))
		if d := want - elapsed; d > 0 {
			t.sleep(d, done)
		}
	}
	t.periodStart = t.now()
	t.observed = 0
}
