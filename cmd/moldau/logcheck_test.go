package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moldau/moldau/log"
)

// brokerLogDir writes, with the broker's log package, a log dir of two
// partitions of several segments each, and returns it with the positions
// and base offsets of the batches of orders-1's first segment.
func brokerLogDir(t *testing.T) (dir string, pos, offsets []int64) {
	t.Helper()
	dir = t.TempDir()
	m, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 4096
	now := time.Now().UnixMilli()
	for p := range int32(2) {
		l, err := m.GetOrCreateLog(log.TopicPartition{Topic: "orders", Partition: p}, fixtureTopicID, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 60; i++ {
			b := log.NewBatchBuilder(0)
			b.Codec = []int{log.CodecNone, log.CodecGzip, log.CodecLZ4}[i%3]
			for j := 0; j < 10; j++ {
				b.Add(now+int64(i), []byte(fmt.Sprintf("k%d", j)), []byte(strings.Repeat("v", 20)))
			}
			batch, err := b.Build(nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(batch, 0); err != nil {
				t.Fatal(err)
			}
		}
		if l.NumSegments() < 3 {
			t.Fatalf("%d segments", l.NumSegments())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "orders-1", log.FilenamePrefixFromOffset(0)+log.LogFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for p := 0; p+log.BatchHeaderSize <= len(b); {
		h, err := log.ParseBatchHeader(b[p:])
		if err != nil {
			t.Fatal(err)
		}
		pos, offsets = append(pos, int64(p)), append(offsets, h.BaseOffset)
		p += h.TotalSize()
	}
	return dir, pos, offsets
}

func TestLogCheckClean(t *testing.T) {
	dir, _, _ := brokerLogDir(t)
	code, out, errOut := runInProcess(t, "", nil, "log", "check", dir)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PARTITION") {
		t.Fatalf("output:\n%s", out)
	}
	for i, line := range lines[1:] {
		f := strings.Fields(line)
		if f[0] != fmt.Sprintf("orders-%d", i) || f[2] != "60" || f[3] != "600" || f[5] != "0" {
			t.Fatalf("row %q", line)
		}
	}
}

// Three bytes flipped in an old segment, in three batches: the check names
// each (partition, offset, file, position) and exits 1 with one line
// naming the partition and the offsets; the other partition is clean.
func TestLogCheckFindsFlippedBytes(t *testing.T) {
	dir, pos, offsets := brokerLogDir(t)
	seg := filepath.Join(dir, "orders-1", log.FilenamePrefixFromOffset(0)+log.LogFileSuffix)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, i := range []int{0, len(pos) / 2, len(pos) - 1} {
		b[pos[i]+log.BatchHeaderSize+5] ^= 0x40
		want = append(want, offsets[i])
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, shallow := range []bool{false, true} {
		args := []string{"log", "check", dir}
		if shallow {
			args = append(args, "--shallow")
		}
		code, out, errOut := runInProcess(t, "", nil, args...)
		if code != exitError {
			t.Fatalf("exit %d:\n%s%s", code, out, errOut)
		}
		for i, off := range want {
			line := fmt.Sprintf("error: orders-1: offset %d: %s position %d: ", off, seg, pos[[]int{0, len(pos) / 2, len(pos) - 1}[i]])
			if !strings.Contains(errOut, line) || !strings.Contains(errOut, "CRC mismatch") {
				t.Fatalf("stderr lacks %q:\n%s", line, errOut)
			}
		}
		last := fmt.Sprintf("moldau: problems in 1 partition(s): orders-1 at offsets %d, %d, %d\n", want[0], want[1], want[2])
		if !strings.HasSuffix(errOut, last) {
			t.Fatalf("last line is not %q:\n%s", last, errOut)
		}
		if !strings.Contains(out, "orders-0") || strings.Count(errOut, "orders-0") != 0 {
			t.Fatalf("orders-0:\n%s\n%s", out, errOut)
		}
	}
	// --json: one object per partition with its problems.
	code, out, _ := runInProcess(t, "", nil, "log", "check", filepath.Join(dir, "orders-1"), "--json")
	if code != exitError {
		t.Fatalf("--json: exit %d", code)
	}
	var r partitionCheck
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Partition != "orders-1" || len(r.Problems) != 3 || r.Problems[1].Offset != want[1] {
		t.Fatalf("--json: %v %+v\n%s", err, r, out)
	}
}

// Damage that breaks the framing (a length running past the segment) is
// reported at the offset of the batch; the time index entry that points
// into what can no longer be read is reported by file.
func TestLogCheckFramingAndIndex(t *testing.T) {
	dir, pos, offsets := brokerLogDir(t)
	seg := filepath.Join(dir, "orders-1", log.FilenamePrefixFromOffset(0)+log.LogFileSuffix)
	mutate(t, seg, func(b []byte) []byte {
		b[pos[2]+8] = 0x7f // batch length
		return b
	})
	code, _, errOut := runInProcess(t, "", nil, "log", "check", dir)
	if code != exitError || !strings.Contains(errOut, fmt.Sprintf("error: orders-1: offset %d: %s position %d: the batch at offset %d claims", offsets[2], seg, pos[2], offsets[2])) {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if !strings.HasSuffix(errOut, fmt.Sprintf("orders-1 at offset %d and in %s.timeindex\n", offsets[2], log.FilenamePrefixFromOffset(0))) {
		t.Fatalf("summary:\n%s", errOut)
	}
}

func TestLogCheckArguments(t *testing.T) {
	code, _, errOut := runInProcess(t, "", nil, "log", "check", filepath.Join(fixtureDir, "meta.properties"))
	if code != exitError || !strings.Contains(errOut, "not a directory") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, _, errOut = runInProcess(t, "", nil, "log", "check", filepath.Join(t.TempDir(), "nope"))
	if code != exitError || !strings.Contains(errOut, "no such file or directory") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, out, errOut := runInProcess(t, "", nil, "log", "check", fixtureDir)
	if code != exitOK || !strings.Contains(out, "orders-0") {
		t.Fatalf("the dump fixture: exit %d\n%s%s", code, out, errOut)
	}
}
