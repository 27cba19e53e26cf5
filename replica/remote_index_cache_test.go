package replica

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log/remote"
)

// indexStore serves fixed-size indexes and counts the fetches.
type indexStore struct {
	remote.RemoteStorageManager
	size    int
	fetches int
}

func (s *indexStore) FetchIndex(_ context.Context, _ *remote.RemoteLogSegmentMetadata, _ remote.IndexType) (io.ReadCloser, error) {
	s.fetches++
	return io.NopCloser(bytes.NewReader(make([]byte, s.size))), nil
}

// The remote index cache fetches an index once, evicts the least recently
// used past its bound, and forgets a deleted segment's indexes.
func TestRemoteIndexCache(t *testing.T) {
	st := &indexStore{size: 100}
	c := newRemoteIndexCache(250)
	seg := func() *remote.RemoteLogSegmentMetadata {
		return &remote.RemoteLogSegmentMetadata{ID: remote.RemoteLogSegmentId{ID: uuid.Random()}}
	}
	a, b, d := seg(), seg(), seg()
	ctx := context.Background()
	get := func(m *remote.RemoteLogSegmentMetadata, wantFetches int) {
		t.Helper()
		if ix, err := c.get(ctx, st, m, remote.IndexOffset); err != nil || len(ix) != 100 {
			t.Fatalf("%d bytes, %v", len(ix), err)
		}
		if st.fetches != wantFetches {
			t.Fatalf("%d fetches, want %d", st.fetches, wantFetches)
		}
	}
	get(a, 1)
	get(a, 1)
	get(b, 2)
	get(a, 2) // a is now the most recent
	get(d, 3) // over 250 bytes: b goes
	get(a, 3)
	get(b, 4)
	c.remove(b.ID.ID)
	get(b, 5)
	if c.size > 250 || c.size != int64(100*len(c.items)) {
		t.Fatalf("size %d with %d entries", c.size, len(c.items))
	}
}
