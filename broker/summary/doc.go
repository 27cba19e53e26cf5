// Package summary is a Prometheus summary that costs a few atomic adds per
// observation: Kafka's request-time percentiles (RequestMetrics'
// TotalTimeMs and the rest, exported by Kafka's JMX exporter as summaries
// with a quantile label) are observed six times per request, and
// client_golang's Summary, which inserts every observation into a
// quantile stream per age bucket, cost about 0.5 µs each (3 µs a request).
//
// # How
//
// Observations go into a log-linear histogram, in the style of
// HdrHistogram: a value, in units of Opts.Unit, below 16 is counted
// exactly; above, every power of two is split into 16 equal buckets, so a
// bucket is never wider than 1/16 of the values it holds and a quantile,
// reported as the middle of its bucket, is within about 3%. Values from
// 2^36 units up share the last power of two (with Unit 0.001 ms, that is
// above 19 hours).
//
// The quantiles are over a sliding window, as client_golang's MaxAge and
// AgeBuckets (and, loosely, Kafka's exponentially decaying reservoirs):
// the window is AgeBuckets histograms, one per MaxAge/AgeBuckets of time,
// and the oldest is cleared when time moves past it. Count and sum are
// since the start, as every Prometheus summary's.
//
// # Concurrency
//
// Observe is safe for concurrent use and takes no lock, except that the
// first observation of a new time slice takes a mutex to clear the slice
// it reuses; an observation racing with that clearing may be lost from
// the quantiles (never from count and sum). Collect takes the same mutex.
package summary
