package main

import (
	"github.com/moldau/moldau/broker/uuid"

	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moldau/moldau/log"
)

var updateGolden = flag.Bool("update", false, "rewrite the log dump fixture and golden files in testdata/logdump")

const (
	fixtureDir = "testdata/logdump/data"
	fixtureSeg = fixtureDir + "/orders-0/00000000000000000000"
	fixtureTs  = int64(1700000000000)
)

var fixtureTopicID = [16]byte{0x4d, 0x6f, 0x6c, 0x64, 0x61, 0x75, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}

// appendAbortedTxn encodes a transaction index entry in Kafka's layout
// (AbortedTxn): the format decodeTxnIndex reads, written independently.
func appendAbortedTxn(dst []byte, t abortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(t.Version))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(t.LastStableOffset))
}

// encodeProducerSnapshot writes a producer snapshot as Kafka's
// ProducerStateManager.writeSnapshot does: version 1, the CRC-32C of what
// follows the CRC, the entry count, the entries.
func encodeProducerSnapshot(entries []producerSnapshotEntry) []byte {
	b := binary.BigEndian.AppendUint16(nil, 1)
	b = binary.BigEndian.AppendUint32(b, 0) // CRC, filled in below
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.LastSequence))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.OffsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fixtureBatches builds the fixture segment: an idempotent batch with
// headers, a gzip batch with binary and null fields, a transactional batch,
// its ABORT marker and a LogAppendTime batch. It returns the .log bytes
// and each batch's position.
func fixtureBatches(t *testing.T) ([]byte, []int64) {
	t.Helper()
	var seg []byte
	var pos []int64
	add := func(b []byte, err error) {
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, int64(len(seg)))
		seg = append(seg, b...)
	}
	b := log.NewBatchBuilder(0)
	b.PartitionLeaderEpoch, b.ProducerID, b.ProducerEpoch, b.BaseSequence = 0, 7, 0, 0
	b.Add(fixtureTs, []byte("k0"), []byte("v0"), log.Header{Key: "source", Value: []byte("cli")})
	b.Add(fixtureTs+1, []byte("k1"), []byte("line\nbreak"))
	b.Add(fixtureTs+2, []byte("k2"), []byte("v2"))
	add(b.Build(nil))

	b = log.NewBatchBuilder(3)
	b.PartitionLeaderEpoch, b.Codec = 0, log.CodecGzip
	b.Add(fixtureTs+10, nil, []byte{0xff, 0x00, 0x80}, log.Header{Key: "bin", Value: []byte{0xfe}}, log.Header{Key: "null"})
	b.Add(fixtureTs+11, []byte("k4"), nil)
	add(b.Build(nil))

	b = log.NewBatchBuilder(5)
	b.PartitionLeaderEpoch, b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = 1, 9, 1, 0, true
	b.Add(fixtureTs+20, []byte("t5"), []byte("aborted"))
	b.Add(fixtureTs+21, []byte("t6"), []byte("aborted too"))
	add(b.Build(nil))

	add(log.BuildControlBatch(7, fixtureTs+30, 9, 1, 1, log.ControlAbort, 3), nil)

	b = log.NewBatchBuilder(8)
	b.PartitionLeaderEpoch, b.LogAppendTime = 1, true
	b.Add(fixtureTs+40, []byte("k8"), []byte("appended"))
	lat, err := b.Build(nil)
	log.SetLogAppendTime(lat, fixtureTs+1000)
	add(lat, err)
	return seg, pos
}

func writeFixture(t *testing.T, dir string) {
	t.Helper()
	seg, pos := fixtureBatches(t)
	pdir := filepath.Join(dir, "orders-0")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(pdir, "00000000000000000000")
	var idx, tidx []byte
	// Index entries name the last offset of a batch (relative) and its
	// position; time index entries its max timestamp and last offset.
	for _, e := range []struct{ rel, pos int }{{4, 1}, {7, 3}} {
		idx = binary.BigEndian.AppendUint32(idx, uint32(e.rel))
		idx = binary.BigEndian.AppendUint32(idx, uint32(pos[e.pos]))
	}
	for _, e := range []struct{ ts, rel int64 }{{fixtureTs + 11, 4}, {fixtureTs + 1000, 8}} {
		tidx = binary.BigEndian.AppendUint64(tidx, uint64(e.ts))
		tidx = binary.BigEndian.AppendUint32(tidx, uint32(e.rel))
	}
	txn := appendAbortedTxn(nil, abortedTxn{Version: 0, ProducerID: 9, FirstOffset: 5, LastOffset: 7, LastStableOffset: 5})
	snap := encodeProducerSnapshot([]producerSnapshotEntry{
		{ProducerID: 7, Epoch: 0, LastSequence: 2, LastOffset: 2, OffsetDelta: 2, Timestamp: fixtureTs + 2, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 9, Epoch: 1, LastSequence: 1, LastOffset: 6, OffsetDelta: 1, Timestamp: fixtureTs + 21, CoordinatorEpoch: 3, CurrentTxnFirstOffset: -1},
		{ProducerID: 11, Epoch: 0, LastSequence: -1, LastOffset: -1, OffsetDelta: 0, Timestamp: -1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
	})
	files := map[string][]byte{
		base + ".log":       seg,
		base + ".index":     idx,
		base + ".timeindex": tidx,
		base + ".txnindex":  txn,
		filepath.Join(pdir, "00000000000000000009.snapshot"):    snap,
		filepath.Join(pdir, log.LeaderEpochCheckpointFile):      []byte("0\n2\n0 0\n1 5\n"),
		filepath.Join(pdir, log.PartitionMetadataFile):          []byte("version: 0\ntopic_id: " + uuid.UUID(fixtureTopicID).String() + "\n"),
		filepath.Join(dir, log.RecoveryPointCheckpointFile):     []byte("0\n1\norders 0 9\n"),
		filepath.Join(dir, log.ReplicationCheckpointFile):       []byte("0\n1\norders 0 9\n"),
		filepath.Join(dir, log.LogStartOffsetCheckpointFile):    []byte("0\n1\norders 0 0\n"),
		filepath.Join(dir, "cleaner-offset-checkpoint"):         []byte("0\n0\n"),
		filepath.Join(dir, "meta.properties"):                   []byte("node.id=1\n"), // skipped: not a log file
		filepath.Join(pdir, "00000000000000000000.log.deleted"): nil,                   // looked through: an empty .log
	}
	for name, b := range files {
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var goldenRuns = []struct {
	name string
	args []string
}{
	{"dir.txt", []string{"log", "dump", fixtureDir}},
	{"deep.txt", []string{"log", "dump", fixtureSeg + ".log", "--deep-iteration"}},
	{"data.txt", []string{"log", "dump", fixtureSeg + ".log", "--print-data-log"}},
	{"dir.json", []string{"log", "dump", fixtureDir, "--print-data-log", "--json"}},
}

// TestLogDumpGolden dumps a log dir in Kafka's formats (a segment with
// idempotent, compressed, transactional, control and LogAppendTime batches,
// both indexes, a transaction index, a producer snapshot and every
// checkpoint) and compares with the golden output. go test -run
// TestLogDumpGolden -update rewrites the fixture and the golden files.
func TestLogDumpGolden(t *testing.T) {
	if *updateGolden {
		if err := os.RemoveAll(fixtureDir); err != nil {
			t.Fatal(err)
		}
		writeFixture(t, fixtureDir)
	}
	for _, run := range goldenRuns {
		code, out, errOut := runInProcess(t, "", nil, run.args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%v: exit %d, stderr:\n%s", run.args, code, errOut)
		}
		golden := filepath.Join("testdata/logdump", run.name)
		if *updateGolden {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%v: output differs from %s (go test -run TestLogDumpGolden -update to rewrite):\n%s", run.args, golden, out)
		}
	}
}

// TestLogDumpFixtureIsKafkasFormat checks the fixture against the Kafka
// layouts independently of the dump: it catches a fixture rewritten by
// -update from a broken writer.
func TestLogDumpFixtureIsKafkasFormat(t *testing.T) {
	seg, _ := fixtureBatches(t)
	onDisk, err := os.ReadFile(fixtureSeg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	// gzip output may differ between library versions; the rest may not.
	if len(onDisk) < 100 || !bytes.Equal(onDisk[:61], seg[:61]) {
		t.Errorf("fixture .log does not start with the first fixture batch")
	}
	txn, _ := os.ReadFile(fixtureSeg + ".txnindex")
	want := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 5}
	if !bytes.Equal(txn, want) {
		t.Errorf("txnindex = %v, want %v", txn, want)
	}
	snap, _ := os.ReadFile(filepath.Join(fixtureDir, "orders-0/00000000000000000009.snapshot"))
	if len(snap) != 10+3*46 || snap[0] != 0 || snap[1] != 1 {
		t.Errorf("snapshot: %d bytes, version bytes %v", len(snap), snap[:2])
	}
}

// TestLogDumpJSONParses checks that every line of --json is an object with
// a type and a file, and that binary values round-trip.
func TestLogDumpJSONParses(t *testing.T) {
	code, out, errOut := runInProcess(t, "", nil, "log", "dump", fixtureDir, "--print-data-log", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	types := map[string]int{}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Type    string       `json:"type"`
			File    string       `json:"file"`
			Records []dumpRecord `json:"records"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Type == "" || m.File == "" {
			t.Fatalf("bad line %q: %v", line, err)
		}
		types[m.Type]++
		for _, r := range m.Records {
			if r.Offset == 3 {
				v, err := decodeBytes(r.Data.Value, r.Data.ValueEncoding)
				if err != nil || !bytes.Equal(v, []byte{0xff, 0x00, 0x80}) || r.Data.Key != nil {
					t.Errorf("offset 3: key %v value %q (%v)", r.Data.Key, v, err)
				}
				found = true
			}
		}
	}
	want := map[string]int{"file": 12, "batch": 5, "index_entry": 2, "time_index_entry": 2, "aborted_txn": 1,
		"producer": 3, "epoch": 2, "partition_metadata": 1, "checkpoint_entry": 3}
	for k, v := range want {
		if types[k] != v {
			t.Errorf("%d lines of type %s, want %d (all: %v)", types[k], k, v, types)
		}
	}
	if !found {
		t.Error("record at offset 3 not found")
	}
}

// copyFixture copies the fixture log dir to a temp dir.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(fixtureDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixtureDir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func mutate(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLogDumpReportsCorruption checks that each kind of damage is reported
// with the file and position, and exits 1, while the rest is still dumped.
func TestLogDumpReportsCorruption(t *testing.T) {
	_, pos := fixtureBatches(t)
	seg := "orders-0/00000000000000000000"
	tests := []struct {
		name   string
		file   string
		damage func([]byte) []byte
		want   string // in stderr, after "error: <file>"
		still  string // still in stdout
	}{
		{"crc", seg + ".log", func(b []byte) []byte { b[pos[2]+70] ^= 0xff; return b },
			fmt.Sprintf(": position %d: CORRUPT_MESSAGE: This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.: record batch CRC mismatch", pos[2]),
			"baseOffset: 8 lastOffset: 8"},
		{"torn", seg + ".log", func(b []byte) []byte { return b[:len(b)-5] },
			fmt.Sprintf(": position %d: the batch at offset 8 claims", pos[4]), "baseOffset: 7 lastOffset: 7"},
		{"trailing", seg + ".log", func(b []byte) []byte { return append(b, 1, 2, 3) },
			fmt.Sprintf(": position %d: 3 bytes at the end are not a whole batch", len(b0(t))), "baseOffset: 8"},
		{"offsets", seg + ".log", func(b []byte) []byte { log.SetBaseOffset(b[pos[1]:], 1); return b },
			fmt.Sprintf(": position %d: batch offsets 1-2 do not follow offset 2", pos[1]), "baseOffset: 8"},
		{"index", seg + ".index", func(b []byte) []byte { binary.BigEndian.PutUint32(b[8+4:], uint32(pos[2])); return b },
			fmt.Sprintf(": position 8: entry 1 says offset 7 at position %d, but the batch there ends at offset 6", pos[2]), "offset: 4 position"},
		{"index-order", seg + ".index", func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 2); return b },
			": offset index entry 1 (2, ", "offset: 2 position"},
		{"timeindex", seg + ".timeindex", func(b []byte) []byte { binary.BigEndian.PutUint64(b, uint64(fixtureTs+12)); return b },
			": position 0: entry 0 says timestamp 1700000000012 at offset 4, but that batch's max timestamp is 1700000000011", "timestamp: 1700000001000 offset: 8"},
		{"txnindex", seg + ".txnindex", func(b []byte) []byte { return append(b, 0, 0, 0) },
			": position 34: 3 trailing bytes are not a whole 34-byte entry", "producerId: 9 firstOffset: 5"},
		{"txnindex-version", seg + ".txnindex", func(b []byte) []byte { b[1] = 1; return b },
			": position 0: unknown aborted transaction version 1", "lastStableOffset: 5"},
		{"snapshot", "orders-0/00000000000000000009.snapshot", func(b []byte) []byte { b[20] ^= 1; return b },
			": position 2: CRC mismatch", "Dumping"},
		{"snapshot-short", "orders-0/00000000000000000009.snapshot", func(b []byte) []byte { return b[:7] },
			": position 0: 7 bytes: shorter than the 10-byte header", "Dumping"},
		{"epochs", "orders-0/" + log.LeaderEpochCheckpointFile, func([]byte) []byte { return []byte("0\n3\n0 0\n1 5\n") },
			": count line \"3\" does not match 2 entries", "Dumping"},
		{"checkpoint", log.RecoveryPointCheckpointFile, func([]byte) []byte { return []byte("0\n1\norders zero 9\n") },
			": line 3: malformed \"orders zero 9\"", "Dumping"},
		{"epochs-order", "orders-0/" + log.LeaderEpochCheckpointFile, func([]byte) []byte { return []byte("0\n2\n1 5\n0 0\n") },
			": entry 1 (epoch 0 at 0) does not follow (epoch 1 at 5)", "epoch: 1 startOffset: 5"},
		{"partition-metadata", "orders-0/" + log.PartitionMetadataFile, func([]byte) []byte { return []byte("version: 1\n") },
			": unsupported version \"1\"", "Dumping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyFixture(t)
			path := filepath.Join(dir, tt.file)
			mutate(t, path, tt.damage)
			code, out, errOut := runInProcess(t, "", nil, "log", "dump", dir)
			if code != exitError {
				t.Errorf("exit %d, want 1", code)
			}
			if want := "error: " + path + tt.want; !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks\n  %q\nin\n%s", want, errOut)
			}
			if !strings.Contains(errOut, "\nmoldau: ") || !strings.Contains(errOut, "problem(s) found in") {
				t.Errorf("no summary line:\n%s", errOut)
			}
			if !strings.Contains(out, tt.still) {
				t.Errorf("stdout lacks %q:\n%s", tt.still, out)
			}
			// --json reports the same problem as an object.
			code, out, _ = runInProcess(t, "", nil, "log", "dump", dir, "--json")
			if code != exitError || !strings.Contains(out, `"type":"error","file":"`+path) {
				t.Errorf("--json: exit %d, no error object:\n%s", code, out)
			}
		})
	}
}

// b0 is the fixture segment, for sizes.
func b0(t *testing.T) []byte {
	b, err := os.ReadFile(fixtureSeg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLogDumpUnknownFile(t *testing.T) {
	code, _, errOut := runInProcess(t, "", nil, "log", "dump", filepath.Join(fixtureDir, "meta.properties"))
	if code != exitError || !strings.Contains(errOut, "not a file log dump knows") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = runInProcess(t, "", nil, "log", "dump", filepath.Join(t.TempDir(), "nope.log"))
	if code != exitError || !strings.Contains(errOut, "no such file or directory") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestLogDumpOfBrokerLog dumps what the broker's own log package writes
// (segments rolled, indexes, checkpoints, partition.metadata, epochs): it
// must decode and validate without a single problem.
func TestLogDumpOfBrokerLog(t *testing.T) {
	dir := t.TempDir()
	m, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := log.DefaultConfig()
	cfg.IndexIntervalBytes = 1 // an index entry for every batch
	cfg.SegmentBytes = 4096
	l, err := m.GetOrCreateLog(log.TopicPartition{Topic: "orders", Partition: 0}, fixtureTopicID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := 0; i < 60; i++ {
		b := log.NewBatchBuilder(0)
		b.Codec = []int{log.CodecNone, log.CodecGzip, log.CodecLZ4, log.CodecZstd, log.CodecSnappy}[i%5]
		for j := 0; j < 10; j++ {
			b.Add(now+int64(i), []byte(fmt.Sprintf("k%d", j)), bytes.Repeat([]byte{byte(i)}, 20))
		}
		batch, err := b.Build(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(batch, int32(i/20)); err != nil {
			t.Fatal(err)
		}
	}
	if l.NumSegments() < 2 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runInProcess(t, "", nil, "log", "dump", dir, "--deep-iteration")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if n := strings.Count(out, "| offset: "); n != 600 {
		t.Errorf("%d records dumped, want 600", n)
	}
	// One entry per batch but the first of each segment (at position 0).
	if n := strings.Count(out, "\noffset: "); n < 60-l.NumSegments() {
		t.Errorf("%d index entries dumped, want at least %d", n, 60-l.NumSegments())
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
