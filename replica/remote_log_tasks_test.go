package replica

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// slowStore delays segment reads until released or the read's context
// ends.
type slowStore struct {
	*remote.LocalTieredStorage
	release chan struct{}
}

func (s *slowStore) FetchLogSegment(ctx context.Context, m *remote.RemoteLogSegmentMetadata, start, end int64) (io.ReadCloser, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.LocalTieredStorage.FetchLogSegment(ctx, m, start, end)
}

// A consumer fetch below a tiered log's local start is served from the
// store; one whose remote read outlasts remote.fetch.max.wait.ms answers
// empty, without an error, as Kafka's expired DelayedRemoteFetch.
func TestFetchFromRemoteStorage(t *testing.T) {
	m, tm := newTestManager(t)
	tm.CreateTopic("tiered", 1)
	tp := TopicPartition{Topic: "tiered", Partition: 0}
	p := m.Partition(tp)
	cfg := log.DefaultConfig()
	cfg.SegmentBytes, cfg.FileDeleteDelayMs = 16<<10, 0
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes, cfg.LocalRetentionBytes = -1, -1, 0
	p.Log.SetConfig(cfg)
	rlmTestFill(t, p.Log)
	local, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &slowStore{LocalTieredStorage: local, release: make(chan struct{})}
	rlm := NewRemoteLogManager(1, store, &rlmTestMetadata{store: remote.NewRemoteLogMetadataStore()}, slogDiscard(), nil)
	m.StartRemoteLog(RemoteLogConfig{Manager: rlm, TaskInterval: time.Hour, FetchMaxWait: 200 * time.Millisecond})
	if _, err := rlm.CopyLogSegments(context.Background(), remoteTopicIdPartition(p), p.Log, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Log.DeleteOldSegments(); err != nil || p.Log.LocalLogStartOffset() == 0 {
		t.Fatalf("local retention: local start %d, %v", p.Log.LocalLogStartOffset(), err)
	}
	fetch := func() FetchResult {
		t.Helper()
		got := make(chan []FetchResult, 1)
		m.FetchMessages(FetchParams{ReplicaID: -1, MaxBytes: 1 << 20, MinBytes: 1, MaxWait: time.Second},
			[]FetchPartition{{TopicPartition: tp, FetchOffset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1}},
			func(r []FetchResult) { got <- r })
		select {
		case r := <-got:
			return r[0]
		case <-time.After(10 * time.Second):
			t.Fatal("no fetch response")
		}
		return FetchResult{}
	}
	start := time.Now()
	if r := fetch(); r.Err != nil || r.Records.Size != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("a slow remote read: %d bytes, %v after %v", r.Records.Size, r.Err, time.Since(start))
	}
	close(store.release)
	r := fetch()
	if r.Err != nil || r.Records.Size == 0 || r.LogStartOffset != 0 {
		t.Fatalf("remote read: %d bytes, log start %d, %v", r.Records.Size, r.LogStartOffset, r.Err)
	}
	b, err := r.Records.ReadInto(nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := log.ParseBatchHeader(b); err != nil || h.BaseOffset != 0 {
		t.Fatalf("first batch %+v, %v", h, err)
	}
}
