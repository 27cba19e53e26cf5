package replica

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newFaultyManager is newTestManager over a FaultFS, with dirs log dirs,
// a fast retry and a registry.
func newFaultyManager(t *testing.T, dirs int) (*Manager, *testMetadata, *log.FaultFS, *lockedBuffer, *prometheus.Registry) {
	t.Helper()
	var paths []string
	for range dirs {
		paths = append(paths, t.TempDir())
	}
	ffs := log.NewFaultFS(nil)
	out := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(out, nil))
	logs, err := log.NewManager(log.ManagerConfig{Dirs: paths, FS: ffs, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	reg := prometheus.NewRegistry()
	tm := &testMetadata{t: t, image: metadata.Empty, ids: map[string]uuid.UUID{}}
	m, err := NewManager(Config{NodeID: 1, Logs: logs, Image: func() *metadata.Image { return tm.image },
		ConfigFor: func(*metadata.Topic) log.Config { return log.DefaultConfig() }, Logger: logger,
		Registerer: reg, RetryInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tm.m = m
	t.Cleanup(m.Close)
	return m, tm, ffs, out, reg
}

func produceTo(m *Manager, tp TopicPartition) error {
	done := make(chan []ProduceResult, 1)
	m.AppendRecords(time.Second, -1, []ProduceEntry{{TopicPartition: tp, Records: batch(1, 100)}}, func(r []ProduceResult) { done <- r })
	return (<-done)[0].Err
}

func fetchFrom(m *Manager, tp TopicPartition) FetchResult {
	done := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20}, []FetchPartition{{TopicPartition: tp, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
		func(r []FetchResult) { done <- r })
	return (<-done)[0]
}

func offlineGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kafka_server_replicamanager_offlinereplicacount" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no offlinereplicacount")
	return 0
}

func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A log that cannot be created (the process is out of file descriptors)
// leaves its partition offline, answering KAFKA_STORAGE_ERROR, while the
// others serve; the failure is logged once; creation is retried and the
// partition comes online by itself once descriptors are back.
func TestLogCreationFailureIsRetried(t *testing.T) {
	m, tm, ffs, out, reg := newFaultyManager(t, 1)
	ffs.Inject(log.Fault{Op: log.OpOpen, PathContains: "/t-1/", Sticky: true, Err: syscall.EMFILE})
	ffs.Inject(log.Fault{Op: log.OpOpen, PathContains: "/t-2/", Sticky: true, Err: syscall.EMFILE})
	tm.CreateTopic("t", 3)
	good, bad := TopicPartition{Topic: "t", Partition: 0}, TopicPartition{Topic: "t", Partition: 1}
	if err := produceTo(m, good); err != nil {
		t.Fatal(err)
	}
	for _, tp := range []TopicPartition{bad, {Topic: "t", Partition: 2}} {
		err := produceTo(m, tp)
		if !errors.Is(err, kerr.KafkaStorageError) || !strings.Contains(err.Error(), "too many open files") {
			t.Fatalf("produce to %s: %v", tp, err)
		}
		if r := fetchFrom(m, tp); !errors.Is(r.Err, kerr.KafkaStorageError) {
			t.Fatalf("fetch from %s: %v", tp, r.Err)
		}
		if _, err := m.ListOffset(tp, -1, -1, 0, -1); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("list offsets of %s: %v", tp, err)
		}
	}
	if got := offlineGauge(t, reg); got != 2 {
		t.Fatalf("offlinereplicacount = %v", got)
	}
	if !m.IsOffline(bad) || m.IsOffline(good) {
		t.Fatalf("IsOffline: %v for %s, %v for %s", m.IsOffline(bad), bad, m.IsOffline(good), good)
	}
	// A metadata change (a new leader epoch) reaches the offline
	// partition; it stays offline.
	tm.apply(&metadata.PartitionChangeRecord{TopicID: tm.ids["t"], PartitionID: 1, Leader: 1, LeaderRecoveryState: -1})
	// Retries fail for a while without a line each.
	eventuallyTrue(t, "retries", func() bool { return ffs.Count(log.OpOpen) > 20 })
	ffs.Reset()
	eventuallyTrue(t, "the partitions to come online", func() bool {
		return produceTo(m, bad) == nil && produceTo(m, TopicPartition{Topic: "t", Partition: 2}) == nil
	})
	if got := offlineGauge(t, reg); got != 0 {
		t.Fatalf("offlinereplicacount = %v after the retry", got)
	}
	if p := m.Partition(bad); p == nil || p.LeaderEpoch() != 1 || !p.IsLeader() {
		t.Fatalf("partition after the retry: %+v", p)
	}
	logs := out.String()
	if n := strings.Count(logs, "creating logs failed"); n != 1 || !strings.Contains(logs, "partitions=2") {
		t.Fatalf("%d failure lines:\n%s", n, logs)
	}
	if n := strings.Count(logs, "created logs that had failed"); n < 1 || n > 2 {
		t.Fatalf("%d recovery lines:\n%s", n, logs)
	}
}

// Deleting a topic whose log could not be created forgets the partition
// (no retry creates it later) without an error.
func TestOfflinePartitionDeleted(t *testing.T) {
	m, tm, ffs, out, _ := newFaultyManager(t, 1)
	ffs.Inject(log.Fault{Op: log.OpOpen, PathContains: "/t-0/", Sticky: true, Err: syscall.ENOSPC})
	tm.CreateTopic("t", 1)
	if err := produceTo(m, TopicPartition{Topic: "t", Partition: 0}); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatal(err)
	}
	tm.DeleteTopic("t")
	ffs.Reset()
	n := ffs.Count(log.OpOpen)
	m.retryOfflineLogs() // what the retry goroutine does: nothing is left to retry
	if got := ffs.Count(log.OpOpen); got != n {
		t.Fatalf("%d opens after the topic was deleted", got-n)
	}
	if len(m.OfflinePartitions()) != 0 || m.cfg.Logs.GetLog(TopicPartition{Topic: "t", Partition: 0}) != nil {
		t.Fatal("the deleted partition came back")
	}
	if err := produceTo(m, TopicPartition{Topic: "t", Partition: 0}); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to a deleted topic: %v", err)
	}
	if strings.Contains(out.String(), "deleting log") {
		t.Fatalf("deleting logged an error:\n%s", out.String())
	}
}

// A log dir that fails takes its partitions offline (KAFKA_STORAGE_ERROR
// to produce and fetch, a waiting fetch answers at once) while those of
// the other dir serve; a full disk fails produces without taking anything
// offline, and is logged once per interval.
func TestLogDirFailureAnswersStorageError(t *testing.T) {
	m, tm, ffs, out, reg := newFaultyManager(t, 2)
	tm.CreateTopic("t", 4)
	dirOf := map[string][]TopicPartition{}
	for i := range int32(4) {
		tp := TopicPartition{Topic: "t", Partition: i}
		if err := produceTo(m, tp); err != nil {
			t.Fatal(err)
		}
		d := m.Partition(tp).Log.Dir()
		d = d[:strings.LastIndexByte(d, '/')]
		dirOf[d] = append(dirOf[d], tp)
	}
	var badDir string
	var bad, good []TopicPartition
	for d, tps := range dirOf {
		if badDir == "" {
			badDir, bad = d, tps
		} else {
			good = tps
		}
	}
	// Full disk: produces fail, nothing goes offline, one line.
	ffs.Inject(log.Fault{Op: log.OpWrite, PathContains: badDir, Sticky: true, Err: syscall.ENOSPC})
	for range 5 {
		if err := produceTo(m, bad[0]); !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("produce on a full disk: %v", err)
		}
	}
	if len(m.OfflinePartitions()) != 0 {
		t.Fatal("a full disk took partitions offline")
	}
	if n := strings.Count(out.String(), "append failed"); n != 1 {
		t.Fatalf("%d append failure lines", n)
	}
	ffs.Reset()
	if err := produceTo(m, bad[0]); err != nil {
		t.Fatalf("produce once space is back: %v", err)
	}

	// A consumer waits on a partition of the dir that is about to fail.
	waiting := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxWait: 30 * time.Second, MinBytes: 1 << 20, MaxBytes: 1 << 20},
		[]FetchPartition{{TopicPartition: bad[1], FetchOffset: 1, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
		func(r []FetchResult) { waiting <- r })
	ffs.Inject(log.Fault{Op: log.OpWrite, PathContains: badDir, Sticky: true, Err: syscall.EIO})
	if err := produceTo(m, bad[0]); !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("produce on a failing disk: %v", err)
	}
	// The fetch waits on another partition of the failed dir: it is
	// answered at once all the same.
	select {
	case r := <-waiting:
		if !errors.Is(r[0].Err, kerr.KafkaStorageError) {
			t.Fatalf("waiting fetch: %v", r[0].Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting fetch did not answer")
	}
	for _, tp := range bad {
		if r := fetchFrom(m, tp); !errors.Is(r.Err, kerr.KafkaStorageError) {
			t.Fatalf("fetch from %s: %v", tp, r.Err)
		}
	}
	for _, tp := range good {
		if err := produceTo(m, tp); err != nil {
			t.Fatalf("produce to %s in the good dir: %v", tp, err)
		}
		if r := fetchFrom(m, tp); r.Err != nil || r.Records.Size == 0 {
			t.Fatalf("fetch from %s in the good dir: %v", tp, r.Err)
		}
	}
	if got := offlineGauge(t, reg); got != float64(len(bad)) {
		t.Fatalf("offlinereplicacount = %v, want %d", got, len(bad))
	}
	for _, tp := range bad {
		if !m.IsOffline(tp) {
			t.Fatalf("IsOffline(%s) = false in the failed dir", tp)
		}
	}
	for _, tp := range good {
		if m.IsOffline(tp) {
			t.Fatalf("IsOffline(%s) = true in the good dir", tp)
		}
	}
	if infos := m.DescribeLogDirs(); len(infos) != 2 {
		t.Fatalf("%d dirs", len(infos))
	}
}

// A batch the scrubber found corrupt is not served: a fetch stops before
// it, and a fetch from it answers CORRUPT_MESSAGE naming its offset; the
// batches after it are served.
func TestFetchStopsBeforeCorruptBatch(t *testing.T) {
	dir := t.TempDir()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 8 << 10
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}, ConfigFor: func(string) log.Config { return cfg },
		Scrub: log.ScrubConfig{Enable: true, Interval: 10 * time.Millisecond, BytesPerSecond: 100 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	tm := &testMetadata{t: t, image: metadata.Empty, ids: map[string]uuid.UUID{}}
	m, err := NewManager(Config{NodeID: 1, Logs: logs, Image: func() *metadata.Image { return tm.image },
		ConfigFor: func(*metadata.Topic) log.Config { return cfg }})
	if err != nil {
		t.Fatal(err)
	}
	tm.m = m
	t.Cleanup(m.Close)
	tm.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	for range 150 {
		if err := produceTo(m, tp); err != nil {
			t.Fatal(err)
		}
	}
	l := m.Partition(tp).Log
	if l.NumSegments() < 2 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	// Damage the 4th batch of the first segment (offset 3).
	seg := l.Dir() + "/" + log.FilenamePrefixFromOffset(0) + log.LogFileSuffix
	b, _ := osReadFile(seg)
	pos := 0
	for range 3 {
		h, _ := log.ParseBatchHeader(b[pos:])
		pos += h.TotalSize()
	}
	b[pos+log.BatchHeaderSize+3] ^= 0xff
	if err := osWriteFile(seg, b); err != nil {
		t.Fatal(err)
	}
	logs.Start()
	eventuallyTrue(t, "the scrubber to find the batch", func() bool { return len(l.CorruptBatches()) == 1 })

	r := fetchFrom(m, tp)
	if r.Err != nil || r.Records.Size != int64(pos) {
		t.Fatalf("fetch from 0: %v, %d bytes (want the %d before the corrupt batch)", r.Err, r.Records.Size, pos)
	}
	done := make(chan []FetchResult, 1)
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20}, []FetchPartition{{TopicPartition: tp, FetchOffset: 3, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
		func(r []FetchResult) { done <- r })
	if r := (<-done)[0]; !errors.Is(r.Err, kerr.CorruptMessage) || !strings.Contains(r.Err.Error(), "offset 3 ") {
		t.Fatalf("fetch from the corrupt batch: %v", r.Err)
	}
	m.FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20}, []FetchPartition{{TopicPartition: tp, FetchOffset: 4, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
		func(r []FetchResult) { done <- r })
	if r := (<-done)[0]; r.Err != nil || r.Records.Size == 0 {
		t.Fatalf("fetch after the corrupt batch: %v", r.Err)
	}
}

func osReadFile(p string) ([]byte, error) { return os.ReadFile(p) }

func osWriteFile(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt(b, 0)
	return err
}
