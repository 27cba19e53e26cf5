package log

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ctRec is one record as the cleaner tests write and read it: a nil value
// is a tombstone.
type ctRec struct {
	off   int64
	key   string
	value []byte
	ts    int64
}

func (r ctRec) String() string {
	if r.value == nil {
		return fmt.Sprintf("%d:%s=<tombstone>", r.off, r.key)
	}
	return fmt.Sprintf("%d:%s=%s", r.off, r.key, r.value)
}

// ctBatchSpec describes a producer batch of keyed records.
type ctBatchSpec struct {
	ts          int64
	pid         int64 // 0: not idempotent
	epoch       int16
	seq         int32
	txn         bool
	codec       int
	keys        []string
	values      [][]byte // nil entry: tombstone; nil slice: "v-<key>"
	baseOffset  int64
	leaderEpoch int32
}

// ctBatch builds a batch as a producer sends it (base offset 0 unless
// set), timestamps ts, ts+1, ...
func ctBatch(tb testing.TB, s ctBatchSpec) []byte {
	tb.Helper()
	b := NewBatchBuilder(s.baseOffset)
	b.Codec = s.codec
	b.PartitionLeaderEpoch = s.leaderEpoch
	if s.pid > 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = s.pid, s.epoch, s.seq
	}
	b.Transactional = s.txn
	for i, k := range s.keys {
		v := []byte("v-" + k)
		if s.values != nil {
			v = s.values[i]
		}
		b.Add(s.ts+int64(i), []byte(k), v)
	}
	out, err := b.Build(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// ctConfig is a compacted topic's config for tests: small segments,
// cleaning as soon as anything is dirty, deletions at once.
func ctConfig() Config {
	c := ltConfig()
	c.CleanupPolicy = []string{"compact"}
	c.MinCleanableDirtyRatio = 0
	c.DeleteRetentionMs = 1000
	c.MinCompactionLagMs = 0
	c.MaxCompactionLagMs = 1<<63 - 1
	return c
}

// ctCleanerConfig is a cleaner with small buffers (so batches cross read
// chunks) and one thread.
func ctCleanerConfig() CleanerConfig {
	c := DefaultCleanerConfig()
	c.IOBufferSize = 8 << 10
	c.DedupeBufferSize = 1 << 20
	c.Backoff = 10 * time.Millisecond
	return c
}

func ctLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ctCleaner returns a cleaner over logs (not started: tests run passes
// with ctCleanOnce).
func ctCleaner(tb testing.TB, dirs []string, clock *ltClock, cfg CleanerConfig, logs ...*Log) *LogCleaner {
	tb.Helper()
	lc, err := newLogCleaner(cfg, dirs, OSFS{}, ctLogger(), clock.Now, func() []*Log { return logs })
	if err != nil {
		tb.Fatal(err)
	}
	return lc
}

// ctCleanOnce runs one cleaning pass on thread 0 and reports whether a log
// was cleaned.
func ctCleanOnce(tb testing.TB, lc *LogCleaner) bool {
	tb.Helper()
	return lc.threads[0].tryCleanFilthiestLog()
}

// ctAppend appends batches, rolls, and moves the high watermark to the
// log end, so everything but the (empty) active segment is cleanable.
func ctAppend(tb testing.TB, l *Log, batches ...[]byte) {
	tb.Helper()
	for _, b := range batches {
		ltAppend(tb, l, b)
	}
	if err := l.Roll(); err != nil {
		tb.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
}

// ctRead reads every record of the log (from the log start to the log
// end), checking CRCs and that offsets grow strictly.
func ctRead(tb testing.TB, l *Log) []ctRec {
	tb.Helper()
	var out []ctRec
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		fd, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			tb.Fatalf("read %d: %v", off, err)
		}
		b, err := fd.Records.ReadInto(nil)
		if err != nil {
			tb.Fatal(err)
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 {
			h, err := CheckBatch(b[:min(len(b), int(b[8])<<24|int(b[9])<<16|int(b[10])<<8|int(b[11])+LogOverhead)])
			if err != nil {
				tb.Fatalf("batch at offset %d: %v", off, err)
			}
			recs := ctBatchRecords(tb, b[:h.TotalSize()])
			for _, r := range recs {
				if r.off <= last {
					tb.Fatalf("offset %d after %d", r.off, last)
				}
				last = r.off
			}
			out = append(out, recs...)
			b = b[h.TotalSize():]
			off = h.NextOffset()
		}
	}
	return out
}

// ctBatchRecords decodes the records of one batch.
func ctBatchRecords(tb testing.TB, batch []byte) []ctRec {
	tb.Helper()
	h, err := CheckBatch(batch)
	if err != nil {
		tb.Fatal(err)
	}
	recs := batch[BatchHeaderSize:]
	if h.Codec() != CodecNone {
		if recs, err = Decompress(nil, h.Codec(), recs, 64<<20); err != nil {
			tb.Fatal(err)
		}
	}
	var out []ctRec
	it := NewRecordIter(recs)
	var r Record
	for {
		ok, err := it.Next(&r)
		if err != nil {
			tb.Fatal(err)
		}
		if !ok {
			break
		}
		out = append(out, ctRec{off: h.BaseOffset + int64(r.OffsetDelta), key: string(r.Key), value: append([]byte(nil), r.Value...), ts: h.BaseTimestamp + r.TimestampDelta})
		if r.Value == nil {
			out[len(out)-1].value = nil
		}
	}
	return out
}

// ctNewest is the newest record of each key among recs (tombstones
// included).
func ctNewest(recs []ctRec) map[string]ctRec {
	out := make(map[string]ctRec)
	for _, r := range recs {
		out[r.key] = r
	}
	return out
}

// ctWriteSegment writes batches (base offsets assigned from base on) as
// the segment file of base in dir, for logs the append path cannot
// produce (control batches); loading the dir recovers the indexes.
func ctWriteSegment(tb testing.TB, dir string, base int64, batches ...[]byte) int64 {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	var data []byte
	next := base
	for _, b := range batches {
		b = append([]byte(nil), b...)
		SetBaseOffset(b, next)
		h, err := ParseBatchHeader(b)
		if err != nil {
			tb.Fatal(err)
		}
		next = h.NextOffset()
		data = append(data, b...)
	}
	if err := os.WriteFile(filepath.Join(dir, FilenamePrefixFromOffset(base)+LogFileSuffix), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return next
}
