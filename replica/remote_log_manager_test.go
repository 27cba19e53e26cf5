package replica

import (
	"bytes"
	"context"
	"errors"
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

func (m *rlmTestMetadata) RemoteLogSegmentMetadata(tp remote.TopicIdPartition, leaderEpoch int32, offset int64) (*remote.RemoteLogSegmentMetadata, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.store.Cache(tp)
	if !ok {
		return nil, false, nil
	}
	s, ok := c.RemoteLogSegmentMetadata(leaderEpoch, offset)
	return s, ok, nil
}

func (m *rlmTestMetadata) PutRemotePartitionDeleteMetadata(_ context.Context, d remote.RemotePartitionDeleteMetadata) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.store.Apply(&d)
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

// failingCopies fails the copies it is told to, after the store wrote
// part of them, as a store that goes away mid-upload.
type failingCopies struct {
	*remote.LocalTieredStorage
	fail int
}

func (f *failingCopies) CopyLogSegmentData(ctx context.Context, m *remote.RemoteLogSegmentMetadata, d remote.LogSegmentData) ([]byte, error) {
	if f.fail > 0 {
		f.fail--
		d.ProducerSnapshot = "/nonexistent/snapshot" // the store fails after writing the log and indexes
	}
	return f.LocalTieredStorage.CopyLogSegmentData(ctx, m, d)
}

// A copy the store fails is not counted: local retention keeps the
// segment, the store keeps nothing of it, its metadata goes
// through DELETE_SEGMENT_FINISHED, and the next pass copies it again. A copy cut
// short by a crash (registered, never finished) is deleted by expiration
// once a later copy covers its offsets.
func TestRemoteLogManagerFailedAndAbandonedCopies(t *testing.T) {
	l, tp := rlmTestLog(t)
	local, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rsm := &failingCopies{LocalTieredStorage: local, fail: 1}
	md := &rlmTestMetadata{store: remote.NewRemoteLogMetadataStore()}
	rlm := NewRemoteLogManager(1, rsm, md, slogDiscard(), nil)
	rlmTestFill(t, l)
	ctx := context.Background()
	if n, err := rlm.CopyLogSegments(ctx, tp, l, func() bool { return true }); err == nil || n != 0 {
		t.Fatalf("copied %d with a failing store: %v", n, err)
	}
	if l.HighestOffsetInRemoteStorage() != -1 {
		t.Fatalf("a failed copy counted: highest offset %d", l.HighestOffsetInRemoteStorage())
	}
	if n, _ := l.DeleteOldSegments(); n != 0 {
		t.Fatalf("local retention deleted %d segments that are not in the store", n)
	}
	if ids, _ := local.ListSegments(tp); len(ids) != 0 {
		t.Fatalf("a failed copy left %d segments in the store", len(ids))
	}
	// DELETE_SEGMENT_FINISHED removes it from the metadata cache.
	if segs, _ := md.ListRemoteLogSegments(tp); len(segs) != 0 {
		t.Fatalf("metadata of the failed copy: %v", segs)
	}

	// A crash after registering a copy: COPY_SEGMENT_STARTED, files
	// partly written, never finished. It is the second segment: the
	// cleanup must look past the first, which retention keeps.
	cands := l.CopyableSegments()
	crashed := &remote.RemoteLogSegmentMetadata{
		ID:          remote.RemoteLogSegmentId{TopicIdPartition: tp, ID: uuid.Random()},
		StartOffset: cands[1].BaseOffset, EndOffset: cands[1].NextOffset - 1,
		SegmentLeaderEpochs: cands[1].LeaderEpochs, SegmentSizeInBytes: int32(cands[1].Size), State: remote.CopySegmentStarted,
	}
	if err := md.AddRemoteLogSegmentMetadata(ctx, crashed); err != nil {
		t.Fatal(err)
	}
	if _, err := local.CopyLogSegmentData(ctx, crashed, remote.LogSegmentData{LogSegment: cands[1].LogPath, OffsetIndex: cands[1].OffsetIndex,
		TimeIndex: cands[1].TimeIndex, ProducerSnapshot: cands[1].ProducerSnapshot, LeaderEpochIndex: cands[1].LeaderEpochCheckpoint}); err != nil {
		t.Fatal(err)
	}
	n, err := rlm.CopyLogSegments(ctx, tp, l, func() bool { return true })
	if err != nil || n != len(cands) {
		t.Fatalf("copied %d of %d: %v", n, len(cands), err)
	}
	if _, err := rlm.ExpireRemoteSegments(ctx, tp, l, -1, -1); err != nil {
		t.Fatal(err)
	}
	ids, _ := local.ListSegments(tp)
	if len(ids) != len(cands) || slices.Contains(ids, crashed.ID.ID) {
		t.Fatalf("store holds %d segments (crashed copy kept: %v), want %d", len(ids), slices.Contains(ids, crashed.ID.ID), len(cands))
	}
	if l.LogStartOffset() != 0 {
		t.Fatalf("cleaning up an abandoned copy moved the log start to %d", l.LogStartOffset())
	}
}

// A batch from the store claiming more bytes than its segment has left is
// refused before anything is allocated for it.
func TestRemoteReadRefusesOversizedBatch(t *testing.T) {
	b := log.NewBatchBuilder(0)
	b.Add(time.Now().UnixMilli(), nil, []byte("v"))
	raw, _ := b.Build(nil)
	bad := slices.Clone(raw)
	bad[8], bad[9], bad[10], bad[11] = 0x7f, 0xff, 0xff, 0xff // length
	stream := func(b []byte) *remoteLogInputStream {
		m := &remote.RemoteLogSegmentMetadata{SegmentSizeInBytes: int32(len(b))}
		return &remoteLogInputStream{m: m, rc: io.NopCloser(bytes.NewReader(b)), cancel: func() {}, next: -1}
	}
	if _, _, _, err := stream(bad).readBatches(0, 1<<20, true); err == nil {
		t.Fatal("a batch claiming 2 GiB was read")
	}
	recs, first, next, err := stream(raw).readBatches(0, 1<<20, true)
	if err != nil || !bytes.Equal(recs, raw) || first != 0 || next != 1 {
		t.Fatalf("good batch: %v first %d next %d", err, first, next)
	}
}

// failingDeletes fails the deletions it is told to after the store
// deleted the segment's objects, as a broker killed before it recorded
// DELETE_SEGMENT_FINISHED leaves it.
type failingDeletes struct {
	*remote.LocalTieredStorage
	fail int
}

func (f *failingDeletes) DeleteLogSegmentData(ctx context.Context, m *remote.RemoteLogSegmentMetadata) error {
	if err := f.LocalTieredStorage.DeleteLogSegmentData(ctx, m); err != nil || f.fail == 0 {
		return err
	}
	f.fail--
	return errors.New("killed before recording the deletion")
}

// A deletion cut short (DELETE_SEGMENT_STARTED recorded, the objects
// deleted, DELETE_SEGMENT_FINISHED not, as a kill -9 leaves it) is
// finished by the next expiration
// pass of another RemoteLogManager on the same metadata and store, as
// after a restart: nothing of the segment is left in the store, its
// metadata ends DELETE_SEGMENT_FINISHED, the log start moves past it, and
// the segments retention keeps are untouched.
func TestRemoteLogManagerResumesCutDeletion(t *testing.T) {
	l, tp := rlmTestLog(t)
	local, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	md := &rlmTestMetadata{store: remote.NewRemoteLogMetadataStore()}
	rlmTestFill(t, l)
	ctx := context.Background()
	first := NewRemoteLogManager(1, &failingDeletes{LocalTieredStorage: local, fail: 1}, md, slogDiscard(), nil)
	copied, err := first.CopyLogSegments(ctx, tp, l, func() bool { return true })
	if err != nil || copied < 3 {
		t.Fatalf("copied %d: %v", copied, err)
	}
	if _, err := l.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	segs, _ := md.ListRemoteLogSegments(tp)
	oldest := segs[0]
	// DeleteRecords past the oldest segment: expiration deletes it, and
	// the deletion is cut short.
	if _, err := l.DeleteRecordsBefore(oldest.EndOffset + 1); err != nil {
		t.Fatal(err)
	}
	if _, err := first.ExpireRemoteSegments(ctx, tp, l, -1, -1); err == nil {
		t.Fatal("a deletion cut short was not reported")
	}
	if segs, _ := md.ListRemoteLogSegments(tp); len(segs) == 0 || segs[0].ID != oldest.ID || segs[0].State != remote.DeleteSegmentStarted {
		t.Fatalf("after the cut deletion the oldest segment's metadata is %+v, want DELETE_SEGMENT_STARTED", segs[0])
	}

	restarted := NewRemoteLogManager(1, local, md, slogDiscard(), nil)
	n, err := restarted.ExpireRemoteSegments(ctx, tp, l, -1, -1)
	if err != nil || n != 1 {
		t.Fatalf("the next pass deleted %d segments: %v", n, err)
	}
	ids, _ := local.ListSegments(tp)
	if slices.Contains(ids, oldest.ID.ID) || len(ids) != copied-1 {
		t.Fatalf("the store holds %d segments (the cut one among them: %v), want %d", len(ids), slices.Contains(ids, oldest.ID.ID), copied-1)
	}
	left, _ := md.ListRemoteLogSegments(tp)
	for _, s := range left {
		if s.ID == oldest.ID || s.State != remote.CopySegmentFinished {
			t.Fatalf("metadata after the resumed deletion: %+v", s)
		}
	}
	if l.LogStartOffset() != oldest.EndOffset+1 {
		t.Fatalf("log start %d, want %d", l.LogStartOffset(), oldest.EndOffset+1)
	}
}
