package config

import (
	"time"

	"github.com/moldau/moldau/log"
)

// CleanerConfig returns the log cleaner's configuration (Kafka's
// LogCleaner.cleanerConfig) from the log.cleaner.* properties and
// message.max.bytes, dynamic values included, as they are now.
func (c *KafkaConfig) CleanerConfig() log.CleanerConfig {
	f64 := func(name string) float64 { v, _ := c.Get(name).(float64); return v }
	return log.CleanerConfig{
		Enable:                 c.GetBool("log.cleaner.enable"),
		Threads:                int(c.GetInt("log.cleaner.threads")),
		DedupeBufferSize:       c.GetLong("log.cleaner.dedupe.buffer.size"),
		DedupeBufferLoadFactor: f64("log.cleaner.io.buffer.load.factor"),
		IOBufferSize:           int(c.GetInt("log.cleaner.io.buffer.size")),
		MaxMessageSize:         int(c.GetInt("message.max.bytes")),
		MaxIOBytesPerSecond:    f64("log.cleaner.io.max.bytes.per.second"),
		Backoff:                time.Duration(c.GetLong("log.cleaner.backoff.ms")) * time.Millisecond,
	}
}

// ScrubConfig returns the log scrubber's configuration from the
// moldau.log.scrub.* properties.
func (c *KafkaConfig) ScrubConfig() log.ScrubConfig {
	return log.ScrubConfig{
		Enable:         c.GetBool("moldau.log.scrub.enable"),
		Interval:       time.Duration(c.GetLong("moldau.log.scrub.interval.ms")) * time.Millisecond,
		BytesPerSecond: float64(c.GetLong("moldau.log.scrub.bytes.per.second")),
	}
}
