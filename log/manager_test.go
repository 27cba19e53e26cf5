package log

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/broker/uuid"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func ltManager(t *testing.T, dirs []string, clock *ltClock, reg prometheus.Registerer, out io.Writer) *Manager {
	t.Helper()
	if out == nil {
		out = io.Discard
	}
	m, err := NewManager(ManagerConfig{
		Dirs: dirs, Logger: slog.New(slog.NewTextHandler(out, nil)), Now: clock.Now,
		ConfigFor: func(string) Config { return ltConfig() }, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCheckpointFormats(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, RecoveryPointCheckpointFile)
	in := map[TopicPartition]int64{{"orders", 1}: 42, {"orders", 0}: 7, {"__consumer_offsets", 12}: 0}
	if err := WriteOffsetCheckpoint(OSFS{}, path, in); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "0\n3\n__consumer_offsets 12 0\norders 0 7\norders 1 42\n"
	if string(got) != want {
		t.Fatalf("checkpoint file:\n%q\nwant\n%q", got, want)
	}
	out, err := ReadOffsetCheckpoint(OSFS{}, path)
	if err != nil || len(out) != 3 || out[TopicPartition{"orders", 1}] != 42 {
		t.Fatalf("round trip: %v %v", out, err)
	}
	for name, bad := range map[string]string{
		"version": "1\n0\n", "count": "0\n2\na 0 1\n", "fields": "0\n1\na 0\n", "number": "0\n1\na x 1\n",
	} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := ReadOffsetCheckpoint(OSFS{}, path); err == nil {
			t.Errorf("%s: malformed checkpoint accepted", name)
		}
	}
	if m, err := ReadOffsetCheckpoint(OSFS{}, filepath.Join(dir, "missing")); err != nil || len(m) != 0 {
		t.Fatalf("missing checkpoint: %v %v", m, err)
	}

	// partition.metadata and leader-epoch-checkpoint.
	id := [16]byte{0: 0xfb, 15: 0x01}
	if err := writePartitionMetadata(OSFS{}, dir, id); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(filepath.Join(dir, PartitionMetadataFile))
	if string(got) != "version: 0\ntopic_id: "+uuid.UUID(id).String()+"\n" || strings.ContainsAny(uuid.UUID(id).String(), "=+/") {
		t.Fatalf("partition.metadata: %q", got)
	}
	if rid, ok, err := readPartitionMetadata(OSFS{}, dir); err != nil || !ok || rid != id {
		t.Fatalf("partition.metadata round trip: %v %v %v", rid, ok, err)
	}
	c, _ := loadLeaderEpochCache(OSFS{}, dir)
	c.assign(0, 0)
	c.assign(3, 100)
	c.assign(2, 150) // older: ignored
	c.assign(5, 200)
	got, _ = os.ReadFile(filepath.Join(dir, LeaderEpochCheckpointFile))
	if string(got) != "0\n3\n0 0\n3 100\n5 200\n" {
		t.Fatalf("leader-epoch-checkpoint: %q", got)
	}
	c.truncateFromStart(120)
	c.truncateFromEnd(200)
	c2, err := loadLeaderEpochCache(OSFS{}, dir)
	if err != nil || len(c2.entries) != 1 || c2.entries[0] != (EpochEntry{3, 120}) {
		t.Fatalf("after truncation: %+v %v", c2.entries, err)
	}
}

func TestManagerCleanShutdownAndRecovery(t *testing.T) {
	clock := newLtClock()
	dirs := []string{t.TempDir(), t.TempDir()}
	// Junk that must be ignored or cleaned.
	os.WriteFile(filepath.Join(dirs[0], "meta.properties"), []byte("node.id=1\n"), 0o644)
	os.MkdirAll(filepath.Join(dirs[0], "not_a_partition"), 0o755)
	os.MkdirAll(filepath.Join(dirs[0], "old-0.abcdef-delete"), 0o755)

	reg := prometheus.NewRegistry()
	var logs syncBuffer
	m := ltManager(t, dirs, clock, reg, &logs)
	id := [16]byte{1, 2, 3}
	var created []*Log
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"orders", p}, id, ltConfig())
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, l)
		for i := 0; i < 30; i++ {
			if _, err := l.Append(ltBatch(t, ltBatchSpec{n: 2, valueSize: 200, ts: clock.Now().UnixMilli()}), 3); err != nil {
				t.Fatal(err)
			}
		}
		l.UpdateHighWatermark(50)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "old-0.abcdef-delete")); !os.IsNotExist(err) {
		t.Fatal("-delete dir not removed at start-up")
	}
	// JBOD: two partitions per dir.
	for _, di := range m.DirInfos() {
		if len(di.Partitions) != 2 || di.Err != nil || di.TotalBytes <= 0 {
			t.Fatalf("dir info %+v", di)
		}
	}
	if _, err := m.GetOrCreateLog(TopicPartition{"orders", 0}, [16]byte{9}, ltConfig()); !errors.Is(err, kerr.InconsistentTopicID) {
		t.Fatalf("other topic id: %v", err)
	}
	if l, _ := m.GetOrCreateLog(TopicPartition{"orders", 0}, id, ltConfig()); l != created[0] {
		t.Fatal("GetOrCreateLog did not return the existing log")
	}
	mfs, err := reg.Gather()
	// size, start, end, segments, LSO lag; offline dirs (count and per
	// dir); the scrubber's corrupt batches, bytes, passes, last pass.
	if err != nil || len(mfs) != 11 {
		t.Fatalf("metrics: %d families, %v", len(mfs), err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "kafka_log_logmanager_") || strings.HasPrefix(mf.GetName(), "moldau_log_scrubber_") {
			continue // per dir or per broker: see TestLogDirFailure*, TestScrubber*
		}
		if len(mf.GetMetric()) != 4 {
			t.Fatalf("%s: %d series", mf.GetName(), len(mf.GetMetric()))
		}
		if mf.GetName() == "kafka_log_log_logendoffset" {
			for _, m := range mf.GetMetric() {
				if m.GetGauge().GetValue() != 60 || len(m.GetLabel()) != 2 {
					t.Fatalf("logendoffset %v", m)
				}
			}
		}
	}
	if _, err := created[1].DeleteRecordsBefore(10); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Fatalf("metrics still registered after Close: %d", len(mfs))
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFile)); err != nil {
			t.Fatalf("no clean shutdown marker in %s", d)
		}
		b, _ := os.ReadFile(filepath.Join(d, ReplicationCheckpointFile))
		if !strings.HasPrefix(string(b), "0\n2\norders ") || !strings.Contains(string(b), " 50\n") {
			t.Fatalf("replication checkpoint: %q", b)
		}
	}

	// Clean restart: recovery skipped, state back from checkpoints.
	m2 := ltManager(t, dirs, clock, reg, &logs)
	for _, r := range m2.LoadResults() {
		if !r.CleanShutdown || r.RecoveredSegments != 0 || r.Logs != 2 {
			t.Fatalf("clean restart: %+v", r)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, CleanShutdownFile)); !os.IsNotExist(err) {
			t.Fatal("clean shutdown marker not removed at start-up")
		}
	}
	if !strings.Contains(logs.String(), "clean shutdown: recovery skipped") {
		t.Fatalf("no clean shutdown log line:\n%s", logs.String())
	}
	l1 := m2.GetLog(TopicPartition{"orders", 1})
	if l1.LogStartOffset() != 10 || l1.HighWatermark() != 50 || l1.LogEndOffset() != 60 || l1.TopicID() != id || l1.LatestEpoch() != 3 {
		t.Fatalf("after restart: start %d hw %d end %d id %v epoch %d", l1.LogStartOffset(), l1.HighWatermark(), l1.LogEndOffset(), l1.TopicID(), l1.LatestEpoch())
	}
	// Crash: append, no Close. Checkpoints are stale; recovery must run.
	for i := 0; i < 5; i++ {
		if _, err := l1.Append(ltBatch(t, ltBatchSpec{n: 2, valueSize: 200, ts: clock.Now().UnixMilli()}), 3); err != nil {
			t.Fatal(err)
		}
	}
	m2.bg.Stop()
	reg.Unregister(m2.metrics)
	for _, l := range m2.Logs() {
		for _, s := range l.segs {
			s.closeFiles() // the process died: nothing trimmed or flushed
		}
	}
	m3 := ltManager(t, dirs, clock, reg, &logs)
	defer m3.Close()
	for _, r := range m3.LoadResults() {
		if r.CleanShutdown || r.RecoveredSegments == 0 {
			t.Fatalf("after crash: %+v", r)
		}
	}
	if !strings.Contains(logs.String(), "unclean shutdown: recovery ran") {
		t.Fatal("no recovery log line")
	}
	if got := m3.GetLog(TopicPartition{"orders", 1}).LogEndOffset(); got != 70 {
		t.Fatalf("after crash end %d, want 70 (page cache survived)", got)
	}

	// DeleteLog renames, then removes after the delay.
	tp := TopicPartition{"orders", 2}
	dir := m3.GetLog(tp).Dir()
	if err := m3.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	if m3.GetLog(tp) != nil {
		t.Fatal("deleted log still served")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("deleted log dir not renamed")
	}
	clock.Advance(2 * time.Minute)
	if n := m3.deletes.runDue(clock.Now(), false); n == 0 {
		t.Fatal("no deletion ran")
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*-delete"))
	if len(matches) != 0 {
		t.Fatalf("deleted dir remains: %v", matches)
	}
}

func TestManagerRetentionDelayedDelete(t *testing.T) {
	clock := newLtClock()
	m := ltManager(t, []string{t.TempDir()}, clock, nil, nil)
	defer m.Close()
	cfg := ltConfig()
	cfg.RetentionBytes = 20 << 10
	cfg.FileDeleteDelayMs = 60000
	l, err := m.GetOrCreateLog(TopicPartition{"r", 0}, [16]byte{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 400, ts: clock.Now().UnixMilli()}))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	// A reader holds a slice of the first segment across its deletion.
	fd, err := l.Read(0, 1<<20, l.HighWatermark(), true)
	if err != nil {
		t.Fatal(err)
	}
	m.cleanupLogs()
	if l.LogStartOffset() == 0 {
		t.Fatal("retention did not move the log start")
	}
	deleted, _ := filepath.Glob(filepath.Join(l.Dir(), "*"+DeletedFileSuffix))
	if len(deleted) == 0 {
		t.Fatal("no .deleted files")
	}
	if _, err := fd.Records.ReadInto(nil); err != nil {
		t.Fatalf("reader cut off before file.delete.delay.ms: %v", err)
	}
	var sink bytes.Buffer
	if n, err := fd.Records.WriteTo(&sink); err != nil || n != fd.Records.Size {
		t.Fatalf("WriteTo: %d %v", n, err)
	}
	clock.Advance(61 * time.Second)
	m.deletes.runDue(clock.Now(), false)
	if deleted, _ := filepath.Glob(filepath.Join(l.Dir(), "*"+DeletedFileSuffix)); len(deleted) != 0 {
		t.Fatalf(".deleted files remain: %v", deleted)
	}
}

// A file slice written to a socket carries exactly the bytes a pread of
// the same range gives.
func TestFileSliceWriteToSocket(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	for i := 0; i < 20; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: clock.Now().UnixMilli()}))
	}
	fd, err := l.Read(4, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fd.Records.ReadInto(nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := fd.Records.WriteTo(c.(*net.TCPConn))
	if err != nil || n != fd.Records.Size {
		t.Fatalf("WriteTo: %d %v", n, err)
	}
	c.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("WriteTo sent %d bytes differing from pread's %d", len(b), len(want))
	}
}

// The metadata quorum's log in a log dir is not a partition of the
// manager: it is neither loaded nor deleted as a stray.
func TestManagerSkipsMetadataLog(t *testing.T) {
	dir := t.TempDir()
	meta := filepath.Join(dir, MetadataLogDirName)
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(meta, "00000000000000000000.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := len(m.Logs()); n != 0 {
		t.Fatalf("%d logs loaded, want 0", n)
	}
	if m.GetLog(TopicPartition{Topic: "__cluster_metadata", Partition: 0}) != nil {
		t.Fatal("the metadata log is a partition of the manager")
	}
}

// The clean shutdown marker holds the broker epoch as Kafka 4's
// CleanShutdownFileHandler writes it; the next start reads it back only if
// every dir had it (Kafka's readBrokerEpochFromCleanShutdownFiles). An
// empty marker (Kafka 3, older Moldau) is clean but names no epoch.
func TestCleanShutdownBrokerEpoch(t *testing.T) {
	clock := newLtClock()
	dirs := []string{t.TempDir(), t.TempDir()}
	var logs syncBuffer
	m := ltManager(t, dirs, clock, prometheus.NewRegistry(), &logs)
	if e := m.PreviousBrokerEpoch(); e != -1 {
		t.Fatalf("first start: previous epoch %d", e)
	}
	m.SetBrokerEpoch(42)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dirs[1], CleanShutdownFile))
	if err != nil || string(b) != `{"version":0,"brokerEpoch":42}` {
		t.Fatalf("marker %q %v", b, err)
	}
	m = ltManager(t, dirs, clock, prometheus.NewRegistry(), &logs)
	if e := m.PreviousBrokerEpoch(); e != 42 {
		t.Fatalf("after a clean shutdown: previous epoch %d", e)
	}
	m.Close() // epoch unknown: -1 written
	m = ltManager(t, dirs, clock, prometheus.NewRegistry(), &logs)
	if e := m.PreviousBrokerEpoch(); e != -1 {
		t.Fatalf("after a shutdown with no epoch: %d", e)
	}
	m.SetBrokerEpoch(7)
	m.Close()
	// One dir crashed (no marker), one is empty (Kafka 3): no epoch.
	os.Remove(filepath.Join(dirs[0], CleanShutdownFile))
	m = ltManager(t, dirs, clock, prometheus.NewRegistry(), &logs)
	if e := m.PreviousBrokerEpoch(); e != -1 {
		t.Fatalf("one dir without a marker: %d", e)
	}
	m.SetBrokerEpoch(8)
	m.Close()
	os.WriteFile(filepath.Join(dirs[0], CleanShutdownFile), nil, 0o644)
	m = ltManager(t, dirs, clock, prometheus.NewRegistry(), &logs)
	if e := m.PreviousBrokerEpoch(); e != -1 {
		t.Fatalf("an empty marker: %d", e)
	}
	for _, r := range m.LoadResults() {
		if !r.CleanShutdown {
			t.Fatalf("%s not clean: %+v", r.Dir, r)
		}
	}
	m.Close()
}
