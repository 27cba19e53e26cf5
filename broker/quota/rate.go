package quota

import "math"

// sampledStat is Kafka's SampledStat: a value kept in samples windows of
// windowMs each, the oldest reused when they are all taken; a sample
// older than samples × windowMs counts for nothing. Times are in
// milliseconds, as Kafka's. Not safe for concurrent use.
type sampledStat struct {
	samples  int
	windowMs int64
	s        []sample
	cur      int
}

type sample struct {
	value float64
	count int64
	start int64 // Kafka's lastWindowMs: when the sample began
}

// record adds v at now: to the current sample, or to a new one if the
// current one has lasted a whole window.
func (st *sampledStat) record(v float64, now int64) {
	c := st.current(now)
	if now-c.start >= st.windowMs {
		st.cur = (st.cur + 1) % st.samples
		if st.cur >= len(st.s) {
			st.s = append(st.s, sample{start: now})
		} else {
			st.s[st.cur] = sample{start: now}
		}
		c = &st.s[st.cur]
	}
	c.value += v
	c.count++
}

func (st *sampledStat) current(now int64) *sample {
	if len(st.s) == 0 {
		st.s = append(st.s, sample{start: now})
	}
	return &st.s[st.cur]
}

// purge resets the samples that have aged out.
func (st *sampledStat) purge(now int64) {
	expire := int64(st.samples) * st.windowMs
	for i := range st.s {
		if now-st.s[i].start >= expire {
			st.s[i] = sample{start: now}
		}
	}
}

// sum is the total of the samples still in the window (Kafka's
// WindowedSum), and count the number of values recorded in them.
func (st *sampledStat) sum(now int64) (sum float64, count int64) {
	st.purge(now)
	for _, s := range st.s {
		sum += s.value
		count += s.count
	}
	return sum, count
}

// oldest is when the oldest sample began.
func (st *sampledStat) oldest(now int64) int64 {
	o := st.current(now).start
	for _, s := range st.s {
		o = min(o, s.start)
	}
	return o
}

// Rate is Kafka's Rate over a WindowedSum: the values recorded in the
// retained samples per second of the time they span. Until samples-1 whole
// windows have passed, the span is taken to be samples-1 windows plus the
// part of the current one that has passed, so that a new client is not
// measured over a few milliseconds (Rate.windowSize); this lets a new
// client send about (samples-1) windows' worth of its quota at once, as
// in Kafka.
type Rate struct{ st sampledStat }

// NewRate returns a rate of samples windows of windowMs milliseconds.
func NewRate(samples int, windowMs int64) *Rate {
	return &Rate{st: sampledStat{samples: max(samples, 1), windowMs: max(windowMs, 1)}}
}

// Record adds v at now (ms).
func (r *Rate) Record(v float64, now int64) { r.st.record(v, now) }

// WindowMs is the time, in ms, the rate at now is measured over.
func (r *Rate) WindowMs(now int64) int64 {
	r.st.purge(now)
	elapsed := now - r.st.oldest(now)
	full := elapsed / r.st.windowMs
	if minFull := int64(r.st.samples - 1); full < minFull {
		elapsed += (minFull - full) * r.st.windowMs
	}
	return max(elapsed, 1)
}

// Measure is the rate per second at now.
func (r *Rate) Measure(now int64) float64 {
	sum, _ := r.st.sum(now)
	return sum / (float64(r.WindowMs(now)) / 1000)
}

// ThrottleTimeMs is Kafka's QuotaUtils.throttleTime: how long, in ms, no
// more may be recorded for the observed rate to fall back to bound over
// the rate's window W. If O is observed over W, waiting X makes it
// O·W/(W+X); that is bound when X = (O-bound)/bound·W. Zero when the rate
// is within the bound.
func ThrottleTimeMs(observed, bound float64, windowMs int64) int64 {
	if observed <= bound || bound <= 0 {
		return 0
	}
	return int64(math.Round((observed - bound) / bound * float64(windowMs)))
}

// avgStat is Kafka's Avg over a sampled window: the mean of the values
// recorded in it, 0 if none.
type avgStat struct{ st sampledStat }

func (a *avgStat) record(v float64, now int64) { a.st.record(v, now) }

func (a *avgStat) measure(now int64) float64 {
	sum, n := a.st.sum(now)
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
