package config

import (
	"testing"
	"time"

	"github.com/moldau/moldau/log"
)

// The log.cleaner.* keys reach log.CleanerConfig with Kafka's defaults,
// and the compaction topic configs reach log.Config, with their
// log.cleaner.* synonyms as broker defaults.
func TestCleanerConfig(t *testing.T) {
	if got, want := Default().CleanerConfig(), log.DefaultCleanerConfig(); got != want {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
	c, _, err := Load("", []string{
		"log.cleaner.enable=false", "log.cleaner.threads=3", "log.cleaner.dedupe.buffer.size=1000000",
		"log.cleaner.io.buffer.load.factor=0.5", "log.cleaner.io.buffer.size=65536", "message.max.bytes=2000000",
		"log.cleaner.io.max.bytes.per.second=1e6", "log.cleaner.backoff.ms=250",
		"log.cleaner.delete.retention.ms=1000", "log.cleaner.min.cleanable.ratio=0.25",
		"log.cleaner.min.compaction.lag.ms=5", "log.cleaner.max.compaction.lag.ms=60000",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := log.CleanerConfig{
		Enable: false, Threads: 3, DedupeBufferSize: 1000000, DedupeBufferLoadFactor: 0.5, IOBufferSize: 65536,
		MaxMessageSize: 2000000, MaxIOBytesPerSecond: 1e6, Backoff: 250 * time.Millisecond,
	}
	if got := c.CleanerConfig(); got != want {
		t.Fatalf("overrides:\n got %+v\nwant %+v", got, want)
	}
	lc := c.LogConfig(nil)
	if lc.DeleteRetentionMs != 1000 || lc.MinCleanableDirtyRatio != 0.25 || lc.MinCompactionLagMs != 5 || lc.MaxCompactionLagMs != 60000 {
		t.Fatalf("broker defaults of the topic configs: %+v", lc)
	}
	lc = c.LogConfig(map[string]string{"delete.retention.ms": "7", "min.cleanable.dirty.ratio": "0.9", "min.compaction.lag.ms": "8", "max.compaction.lag.ms": "9"})
	if lc.DeleteRetentionMs != 7 || lc.MinCleanableDirtyRatio != 0.9 || lc.MinCompactionLagMs != 8 || lc.MaxCompactionLagMs != 9 {
		t.Fatalf("topic overrides: %+v", lc)
	}
	d := Default().LogConfig(nil)
	if d.DeleteRetentionMs != 86400000 || d.MinCleanableDirtyRatio != 0.5 || d.MinCompactionLagMs != 0 || d.MaxCompactionLagMs != 1<<63-1 {
		t.Fatalf("Kafka's defaults: %+v", d)
	}
}
