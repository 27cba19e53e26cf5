package replica

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// rlmTestMetadata keeps remote segment metadata in memory, applying each
// event through remote.RemoteLogMetadataStore, as the topic-based manager
// applies what it consumes.
type rlmTestMetadata struct {
	mu    sync.Mutex
	store *remote.RemoteLogMetadataStore
}

func (m *rlmTestMetadata) AddRemoteLogSegmentMetadata(_ context.Context, s *remote.RemoteLogSegmentMetadata) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.store.Apply(s.Clone())
}

func (m *rlmTestMetadata) UpdateRemoteLogSegmentMetadata(_ context.Context, u remote.RemoteLogSegmentMetadataUpdate) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.store.Apply(&u)
}

func (m *rlmTestMetadata) ListRemoteLogSegments(tp remote.TopicIdPartition) ([]*remote.RemoteLogSegmentMetadata, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.store.Cache(tp)
	if !ok {
		return nil, nil
	}
	return c.ListRemoteLogSegments(), nil
}

func rlmTestLog(t *testing.T) (*log.Log, remote.TopicIdPartition) {
	t.Helper()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.FileDeleteDelayMs = 0
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes, cfg.LocalRetentionBytes = -1, -1, 0
	id := uuid.Random()
	l, err := logs.GetOrCreateLog(log.TopicPartition{Topic: "tiered", Partition: 0}, id, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, remote.TopicIdPartition{TopicID: id, Topic: "tiered", Partition: 0}
}

// Segments copied by the RemoteLogManager leave the local disk by local
// retention and are read back byte for byte from the store; expiration
// deletes them from the store and moves the log start.
func TestRemoteLogManagerCopyReadExpire(t *testing.T) {
	l, tp := rlmTestLog(t)
	rsm, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	md := &rlmTestMetadata{store: remote.NewRemoteLogMetadataStore()}
	rlm := NewRemoteLogManager(1, rsm, md, slogDiscard(), nil)
	var want []byte
	rlmTestFill(t, l)
	for off := int64(0); off < l.LogEndOffset(); {
		d, err := l.Read(off, 1<<30, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if want, err = d.Records.ReadInto(want); err != nil {
			t.Fatal(err)
		}
		off = d.NextOffset
	}
	segs := l.NumSegments()
	n, err := rlm.CopyLogSegments(context.Background(), tp, l, func() bool { return true })
	if err != nil || n != segs-1 {
		t.Fatalf("copied %d of %d segments: %v", n, segs, err)
	}
	if got := l.HighestOffsetInRemoteStorage(); got != l.SegmentBaseOffsets()[segs-1]-1 {
		t.Fatalf("highest offset in remote storage %d", got)
	}
	if _, err := l.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || l.LogStartOffset() != 0 || l.LocalLogStartOffset() == 0 {
		t.Fatalf("after local retention: %d segments, start %d, local start %d", l.NumSegments(), l.LogStartOffset(), l.LocalLogStartOffset())
	}
	// Read everything back: remote segments, then the local one.
	var got []byte
	for off := int64(0); off < l.LogEndOffset(); {
		var d log.FetchData
		if off < l.LocalLogStartOffset() {
			d, err = rlm.Read(context.Background(), tp, off, 5000, true, false)
		} else {
			d, err = l.Read(off, 5000, l.HighWatermark(), true)
		}
		if err != nil || d.NextOffset <= off {
			t.Fatalf("read at %d: next %d, %v", off, d.NextOffset, err)
		}
		if got, err = d.Records.ReadInto(got); err != nil {
			t.Fatal(err)
		}
		off = d.NextOffset
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, differing from the %d written", len(got), len(want))
	}
	// A read from the middle of a batch starts at that batch.
	if d, err := rlm.Read(context.Background(), tp, 5, 1, true, false); err != nil || d.FirstBatchOffset != 4 || d.NextOffset != 8 {
		t.Fatalf("read at 5: first %d next %d, %v", d.FirstBatchOffset, d.NextOffset, err)
	}

	// A new leader learns the copied offset from the metadata.
	l2, _ := rlmTestLog(t)
	rlmTestFill(t, l2)
	if err := rlm.SyncCopiedOffset(tp, l2); err != nil || l2.HighestOffsetInRemoteStorage() != l.HighestOffsetInRemoteStorage() {
		t.Fatalf("synced copied offset %d, want %d: %v", l2.HighestOffsetInRemoteStorage(), l.HighestOffsetInRemoteStorage(), err)
	}
	// Expiration by the log start offset (DeleteRecords below the local
	// start) deletes the remote segments below it.
	target := l.LocalLogStartOffset() - 1
	if _, err := l.DeleteRecordsBefore(target); err != nil {
		t.Fatal(err)
	}
	removed, err := rlm.ExpireRemoteSegments(context.Background(), tp, l, -1, -1)
	if err != nil || removed != segs-2 {
		t.Fatalf("expired %d of %d remote segments: %v", removed, segs-1, err)
	}
	left, _ := md.ListRemoteLogSegments(tp)
	if len(left) != 1 || left[0].State != remote.CopySegmentFinished || left[0].EndOffset < target {
		t.Fatalf("remote segments left: %v", left)
	}
	if d, err := rlm.Read(context.Background(), tp, target, 1<<20, true, false); err != nil || d.NextOffset <= target {
		t.Fatalf("read at the log start %d: %+v %v", target, d, err)
	}
	// Retention by bytes: everything remote goes.
	if _, err := rlm.ExpireRemoteSegments(context.Background(), tp, l, -1, 0); err != nil {
		t.Fatal(err)
	}
	left, _ = md.ListRemoteLogSegments(tp)
	if slices.ContainsFunc(left, func(s *remote.RemoteLogSegmentMetadata) bool { return s.State == remote.CopySegmentFinished }) {
		t.Fatalf("remote segments left after retention.bytes 0: %v", left)
	}
	if l.LogStartOffset() != l.LocalLogStartOffset() {
		t.Fatalf("log start %d, local start %d", l.LogStartOffset(), l.LocalLogStartOffset())
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// rlmTestFill appends 200 batches of 4 records at leader epoch 3.
func rlmTestFill(t *testing.T, l *log.Log) {
	t.Helper()
	for i := 0; i < 200; i++ {
		b := log.NewBatchBuilder(0)
		for j := 0; j < 4; j++ {
			b.Add(time.Now().UnixMilli(), fmt.Appendf(nil, "k%d", j), bytes.Repeat([]byte{byte(i)}, 100))
		}
		raw, _ := b.Build(nil)
		if _, err := l.Append(raw, 3); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(l.LogEndOffset())
}
