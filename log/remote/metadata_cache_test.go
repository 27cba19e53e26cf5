package remote

import (
	"errors"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

func metaTestSeg(start, end int64, epochs map[int32]int64) *RemoteLogSegmentMetadata {
	return &RemoteLogSegmentMetadata{
		ID:                  RemoteLogSegmentId{TopicIdPartition: metaTestTP(), ID: uuid.Random()},
		StartOffset:         start,
		EndOffset:           end,
		SegmentLeaderEpochs: epochs,
		State:               CopySegmentStarted,
	}
}

func metaTestMove(t *testing.T, c *RemoteLogMetadataCache, m *RemoteLogSegmentMetadata, s RemoteLogSegmentState) {
	t.Helper()
	if err := c.UpdateRemoteLogSegmentMetadata(RemoteLogSegmentMetadataUpdate{ID: m.ID, State: s}); err != nil {
		t.Fatal(err)
	}
}

func TestRemoteLogMetadataCacheTransitions(t *testing.T) {
	states := []RemoteLogSegmentState{CopySegmentStarted, CopySegmentFinished, DeleteSegmentStarted, DeleteSegmentFinished}
	for _, from := range states[:3] {
		for _, to := range states {
			c := NewRemoteLogMetadataCache()
			m := metaTestSeg(0, 9, map[int32]int64{0: 0})
			if err := c.AddCopyInProgressSegment(m); err != nil {
				t.Fatal(err)
			}
			// walk to from along the valid path
			for _, s := range states[1:] {
				if s > from {
					break
				}
				if from == DeleteSegmentStarted && s == CopySegmentFinished {
					continue
				}
				metaTestMove(t, c, m, s)
			}
			err := c.UpdateRemoteLogSegmentMetadata(RemoteLogSegmentMetadataUpdate{ID: m.ID, State: to})
			if from.ValidTransition(to) != (err == nil) {
				t.Errorf("%s → %s: err %v", from, to, err)
			}
			if err != nil && !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("%s → %s: err %v, want ErrInvalidTransition", from, to, err)
			}
		}
	}
	c := NewRemoteLogMetadataCache()
	err := c.UpdateRemoteLogSegmentMetadata(RemoteLogSegmentMetadataUpdate{ID: metaTestSeg(0, 1, nil).ID, State: CopySegmentFinished})
	if !errors.Is(err, ErrUnknownSegment) {
		t.Errorf("unknown id: err %v", err)
	}
	m := metaTestSeg(0, 9, map[int32]int64{0: 0})
	m.State = CopySegmentFinished
	if err := c.AddCopyInProgressSegment(m); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("add finished: err %v", err)
	}
	m.State = CopySegmentStarted
	if err := c.AddCopyInProgressSegment(m); err != nil {
		t.Fatal(err)
	}
	if err := c.AddCopyInProgressSegment(m); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("add twice: err %v", err)
	}
}

func TestRemoteLogMetadataCacheLookups(t *testing.T) {
	c := NewRemoteLogMetadataCache()
	a := metaTestSeg(0, 99, map[int32]int64{0: 0, 1: 50}) // spans epochs 0 and 1
	b := metaTestSeg(100, 199, map[int32]int64{1: 100, 3: 150})
	for _, m := range []*RemoteLogSegmentMetadata{a, b} {
		if err := c.AddCopyInProgressSegment(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.RemoteLogSegmentMetadata(0, 10); ok {
		t.Fatal("copy in progress found")
	}
	if got := c.UnreferencedSegments(); len(got) != 2 {
		t.Fatalf("unreferenced %d, want 2", len(got))
	}
	metaTestMove(t, c, a, CopySegmentFinished)
	metaTestMove(t, c, b, CopySegmentFinished)
	for _, tc := range []struct {
		epoch  int32
		offset int64
		want   *RemoteLogSegmentMetadata
	}{
		{0, 0, a}, {0, 49, a}, {0, 50, nil}, {1, 50, a}, {1, 99, a}, {1, 100, b},
		{1, 149, b}, {1, 150, nil}, {3, 150, b}, {3, 199, b}, {3, 200, nil}, {2, 120, nil}, {1, 10, nil},
	} {
		got, ok := c.RemoteLogSegmentMetadata(tc.epoch, tc.offset)
		if (tc.want == nil) == ok || (ok && got.ID != tc.want.ID) {
			t.Errorf("epoch %d offset %d: got %v %v", tc.epoch, tc.offset, got, ok)
		}
	}
	for epoch, want := range map[int32]int64{0: 49, 1: 149, 3: 199} {
		if got, ok := c.HighestOffsetForEpoch(epoch); !ok || got != want {
			t.Errorf("highest of %d: %d %v, want %d", epoch, got, ok, want)
		}
	}
	if _, ok := c.HighestOffsetForEpoch(2); ok {
		t.Error("highest of epoch 2")
	}
	if got := c.ListRemoteLogSegmentsForEpoch(1); len(got) != 2 || got[0].ID != a.ID || got[1].ID != b.ID {
		t.Errorf("segments of epoch 1: %v", got)
	}
	if got := c.ListRemoteLogSegments(); len(got) != 2 || got[0].ID != a.ID {
		t.Errorf("all segments: %v", got)
	}
	if got := c.UnreferencedSegments(); len(got) != 0 {
		t.Errorf("unreferenced %v", got)
	}

	// a second copy of b's range after a leadership change replaces b
	b2 := metaTestSeg(100, 199, map[int32]int64{1: 100, 3: 150})
	if err := c.AddCopyInProgressSegment(b2); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.RemoteLogSegmentMetadata(3, 160); got.ID != b.ID {
		t.Fatal("unfinished copy replaced the finished one")
	}
	metaTestMove(t, c, b2, CopySegmentFinished)
	if got, _ := c.RemoteLogSegmentMetadata(3, 160); got.ID != b2.ID {
		t.Fatal("second copy not found")
	}
	if got := c.UnreferencedSegments(); len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("unreferenced %v, want b", got)
	}

	// delete a: gone from lookups at DELETE_SEGMENT_STARTED, from lists at FINISHED
	metaTestMove(t, c, a, DeleteSegmentStarted)
	if _, ok := c.RemoteLogSegmentMetadata(0, 10); ok {
		t.Fatal("deleting segment found")
	}
	if got := c.ListRemoteLogSegmentsForEpoch(0); len(got) != 1 {
		t.Fatalf("epoch 0 lists %d", len(got))
	}
	metaTestMove(t, c, a, DeleteSegmentFinished)
	if got := c.ListRemoteLogSegmentsForEpoch(0); len(got) != 0 {
		t.Fatalf("epoch 0 lists %d after delete", len(got))
	}
	if got, ok := c.HighestOffsetForEpoch(1); !ok || got != 149 {
		t.Errorf("highest of 1 after delete: %d %v", got, ok)
	}
	if got := c.ListRemoteLogSegments(); len(got) != 2 {
		t.Errorf("all segments after delete: %d", len(got))
	}
}

func TestRemoteLogMetadataStoreApply(t *testing.T) {
	s := NewRemoteLogMetadataStore()
	m := metaTestSeg(0, 9, map[int32]int64{0: 0})
	events := []any{m, &RemoteLogSegmentMetadataUpdate{ID: m.ID, State: CopySegmentFinished}}
	for _, e := range events {
		b, err := EncodeRemoteLogMetadata(e)
		if err != nil {
			t.Fatal(err)
		}
		v, err := DecodeRemoteLogMetadata(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(v); err != nil {
			t.Fatal(err)
		}
	}
	c, ok := s.Cache(metaTestTP())
	if !ok {
		t.Fatal("no cache")
	}
	if _, ok := c.RemoteLogSegmentMetadata(0, 5); !ok {
		t.Fatal("segment not found")
	}
	other := metaTestTP()
	other.Partition = 9
	if err := s.Apply(&RemoteLogSegmentMetadataUpdate{ID: RemoteLogSegmentId{TopicIdPartition: other}, State: CopySegmentFinished}); !errors.Is(err, ErrUnknownSegment) {
		t.Errorf("update of unknown partition: %v", err)
	}
	if err := s.Apply(&RemotePartitionDeleteMetadata{TopicIdPartition: metaTestTP(), State: DeletePartitionStarted}); err != nil {
		t.Fatal(err)
	}
	if d, ok := s.PartitionDeleteMetadata(metaTestTP()); !ok || d.State != DeletePartitionStarted {
		t.Errorf("delete state %v %v", d, ok)
	}
	if err := s.Apply(&RemotePartitionDeleteMetadata{TopicIdPartition: metaTestTP(), State: DeletePartitionFinished}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Cache(metaTestTP()); ok {
		t.Error("cache kept after partition delete finished")
	}
	if err := s.Apply(3); err == nil {
		t.Error("applied an int")
	}
}

func TestRemoteLogMetadataCacheNextSegmentWithTxnIndex(t *testing.T) {
	c := NewRemoteLogMetadataCache()
	a := metaTestSeg(0, 99, map[int32]int64{0: 0})
	a.TxnIdxEmpty = true
	b := metaTestSeg(100, 199, map[int32]int64{0: 100})
	d := metaTestSeg(200, 299, map[int32]int64{0: 200})
	for _, m := range []*RemoteLogSegmentMetadata{a, b, d} {
		if err := c.AddCopyInProgressSegment(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.NextSegmentWithTxnIndex(0, 0); ok {
		t.Fatal("found a segment whose copy did not finish")
	}
	for _, m := range []*RemoteLogSegmentMetadata{a, b, d} {
		metaTestMove(t, c, m, CopySegmentFinished)
	}
	for _, tc := range []struct {
		offset int64
		want   *RemoteLogSegmentMetadata
	}{{0, b}, {150, b}, {200, d}, {300, nil}} {
		got, ok := c.NextSegmentWithTxnIndex(0, tc.offset)
		if (tc.want == nil) == ok || (ok && got.ID != tc.want.ID) {
			t.Errorf("offset %d: got %v %v", tc.offset, got, ok)
		}
	}
	if _, ok := c.NextSegmentWithTxnIndex(1, 0); ok {
		t.Error("found in an unknown epoch")
	}
}
