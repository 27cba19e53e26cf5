package remote

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

func TestLocalTieredStorage(t *testing.T) {
	s, err := NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testRemoteStorageManager(t, s, 3<<20+17)
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("partition directories left after deleting every segment: %v", entries)
	}
}

// failingReader returns n bytes, then an error, as a disk that fails
// mid-read.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("injected read error")
	}
	p = p[:min(len(p), f.n)]
	clear(p)
	f.n -= len(p)
	return len(p), nil
}

func (f *failingReader) Close() error { return nil }

func TestLocalTieredStorageInterruptedCopy(t *testing.T) {
	s, err := NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicIdPartition{TopicID: uuid.Random(), Topic: "t", Partition: 0}
	seg := makeTestSegment(t, tp, 0, 1<<20, true)
	for _, failOn := range []string{seg.data.LogSegment, seg.data.TimeIndex, seg.data.ProducerSnapshot} {
		s.open = func(path string) (io.ReadCloser, error) {
			if path == failOn {
				return &failingReader{n: 100}, nil
			}
			return os.Open(path)
		}
		if _, err := s.CopyLogSegmentData(context.Background(), seg.m, seg.data); err == nil {
			t.Fatalf("copy with %s failing: no error", failOn)
		}
		if ids, err := s.ListSegments(tp); err != nil || len(ids) != 0 {
			t.Fatalf("after failed copy (%s): listed %v, %v", failOn, ids, err)
		}
	}
	// A cancelled context stops the copy too.
	s.open = func(path string) (io.ReadCloser, error) { return os.Open(path) }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.CopyLogSegmentData(ctx, seg.m, seg.data); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled copy: got %v", err)
	}
	if ids, err := s.ListSegments(tp); err != nil || len(ids) != 0 {
		t.Fatalf("after cancelled copy: listed %v, %v", ids, err)
	}
	// Then a good copy is listed.
	if _, err := s.CopyLogSegmentData(context.Background(), seg.m, seg.data); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.ListSegments(tp); err != nil || len(ids) != 1 || ids[0] != seg.m.ID.ID {
		t.Fatalf("after copy: listed %v, %v; want [%s]", ids, err, seg.m.ID.ID)
	}
}
