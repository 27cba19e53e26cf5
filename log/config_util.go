package log

import (
	"math/rand/v2"
	"slices"
)

// randomSegmentJitter is a segment's random roll jitter in
// [0, min(segment.jitter.ms, segment.ms)) (Kafka's randomSegmentJitter).
func (c Config) randomSegmentJitter() int64 {
	if c.SegmentJitterMs <= 0 {
		return 0
	}
	m := c.SegmentJitterMs
	if c.SegmentMs > 0 && c.SegmentMs < m {
		m = c.SegmentMs
	}
	return rand.Int64N(m)
}

// Delete reports whether cleanup.policy contains delete.
func (c Config) Delete() bool { return slices.Contains(c.CleanupPolicy, "delete") }

// Compact reports whether cleanup.policy contains compact.
func (c Config) Compact() bool { return slices.Contains(c.CleanupPolicy, "compact") }

// withDefaults fills zero fields that would break the log with Kafka's
// defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.FlushIntervalMessages <= 0 {
		c.FlushIntervalMessages = d.FlushIntervalMessages
	}
	if c.FlushIntervalMs <= 0 {
		c.FlushIntervalMs = d.FlushIntervalMs
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.MessageTimestampType == "" {
		c.MessageTimestampType = d.MessageTimestampType
	}
	if c.MessageTimestampBeforeMaxMs <= 0 {
		c.MessageTimestampBeforeMaxMs = d.MessageTimestampBeforeMaxMs
	}
	if c.MessageTimestampAfterMaxMs <= 0 {
		c.MessageTimestampAfterMaxMs = d.MessageTimestampAfterMaxMs
	}
	if c.CompressionType == "" {
		c.CompressionType = d.CompressionType
	}
	if c.CleanupPolicy == nil {
		c.CleanupPolicy = d.CleanupPolicy
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	return c
}
