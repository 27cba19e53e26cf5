package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ltClock is an injectable clock for log tests.
type ltClock struct {
	mu sync.Mutex
	t  time.Time
}

func newLtClock() *ltClock { return &ltClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *ltClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *ltClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ltBatchSpec describes a test batch.
type ltBatchSpec struct {
	n         int   // records
	valueSize int   // bytes per value
	ts        int64 // first timestamp (ms); records at ts+i
	pid       int64 // -1: not idempotent
	epoch     int16
	seq       int32
	codec     int
}

// ltBatch builds one magic-v2 batch with kmsg, CRC-32C over the bytes
// from the attributes on, base offset 0, as a producer sends it.
func ltBatch(tb testing.TB, s ltBatchSpec) []byte {
	tb.Helper()
	if s.n == 0 {
		s.n = 1
	}
	if s.pid == 0 {
		s.pid = -1
	}
	if s.pid < 0 {
		s.epoch, s.seq = -1, -1
	}
	var raw []byte
	for i := 0; i < s.n; i++ {
		r := kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              fmt.Appendf(nil, "k%d", i),
			Value:            bytes.Repeat([]byte{byte('a' + i%26)}, s.valueSize),
		}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		raw = r.AppendTo(raw)
	}
	payload := raw
	if s.codec != CodecNone {
		var err error
		if payload, err = Compress(nil, s.codec, raw); err != nil {
			tb.Fatal(err)
		}
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(s.codec),
		LastOffsetDelta: int32(s.n - 1), FirstTimestamp: s.ts, MaxTimestamp: s.ts + int64(s.n-1),
		ProducerID: s.pid, ProducerEpoch: s.epoch, FirstSequence: s.seq, NumRecords: int32(s.n),
		Records: payload,
	}
	rb.Length = int32(BatchHeaderSize - LogOverhead + len(payload))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// ltConfig is a config with small segments and indexes for tests.
func ltConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 16 << 10
	c.IndexIntervalBytes = 512
	c.SegmentIndexBytes = 4096
	c.FileDeleteDelayMs = 0
	return c
}

func ltLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// ltOpen loads (or creates) a log in dir.
func ltOpen(tb testing.TB, dir string, cfg Config, clock *ltClock, clean bool, fsys FS) (*Log, LoadResult) {
	tb.Helper()
	if fsys == nil {
		fsys = OSFS{}
	}
	l, res, err := loadLog(logParams{
		dir: dir, tp: TopicPartition{"t", 0}, cfg: cfg, fsys: fsys, logger: ltLogger(tb), now: clock.Now,
		hadCleanShutdown: clean, logStartOffset: -1, highWatermark: -1,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return l, res
}

// ltAppend appends one batch and fails the test on error.
func ltAppend(tb testing.TB, l *Log, b []byte) AppendInfo {
	tb.Helper()
	info, err := l.Append(b, 0)
	if err != nil {
		tb.Fatalf("append: %v", err)
	}
	return info
}

// ltReadAll reads the whole log from offset through the high watermark
// (or log end if hw < 0) and returns the batch headers.
func ltReadAll(tb testing.TB, l *Log, from int64) []BatchHeader {
	tb.Helper()
	var out []BatchHeader
	for off := from; off < l.LogEndOffset(); {
		fd, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			tb.Fatalf("read %d: %v", off, err)
		}
		b, err := fd.Records.ReadInto(nil)
		if err != nil {
			tb.Fatal(err)
		}
		if len(b) == 0 {
			tb.Fatalf("read %d: empty before log end %d", off, l.LogEndOffset())
		}
		for len(b) > 0 {
			h, err := ParseBatchHeader(b)
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := CheckBatch(b[:h.TotalSize()]); err != nil {
				tb.Fatal(err)
			}
			out = append(out, h)
			b = b[h.TotalSize():]
			off = h.NextOffset()
		}
	}
	return out
}

// ltCheckIndexes checks every segment's offset index entry points at a
// batch whose last offset is the entry's offset, and that time index
// entries are within the segment.
func ltCheckIndexes(tb testing.TB, l *Log) {
	tb.Helper()
	buf := make([]byte, BatchHeaderSize)
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	for _, s := range l.segs {
		for i := 0; i < s.offIdx.Entries(); i++ {
			e := s.offIdx.Entry(i)
			if int64(e.Position) >= s.size {
				tb.Fatalf("segment %d: index entry %d position %d past size %d", s.baseOffset, i, e.Position, s.size)
			}
			h, err := s.readHeader(int64(e.Position), buf)
			if err != nil {
				tb.Fatalf("segment %d: index entry %d: %v", s.baseOffset, i, err)
			}
			if h.LastOffset() != e.Offset {
				tb.Fatalf("segment %d: index entry %d offset %d, batch there ends at %d", s.baseOffset, i, e.Offset, h.LastOffset())
			}
		}
		for i := 0; i < s.timeIdx.Entries(); i++ {
			e := s.timeIdx.Entry(i)
			if e.Offset < s.baseOffset || e.Offset >= s.nextOffset {
				tb.Fatalf("segment %d: time index entry %d offset %d outside [%d, %d)", s.baseOffset, i, e.Offset, s.baseOffset, s.nextOffset)
			}
		}
	}
}

func ltCopyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
