package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

// testSegment is a segment of real files and its metadata.
type testSegment struct {
	m    *RemoteLogSegmentMetadata
	data LogSegmentData
	want map[string][]byte // suffix → content
}

// makeTestSegment writes a segment's files of logSize random bytes (and
// small indexes) under t.TempDir(); withTxn adds a transaction index.
func makeTestSegment(t *testing.T, tp TopicIdPartition, start int64, logSize int, withTxn bool) *testSegment {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(uint64(start), uint64(logSize)))
	gen := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	seg := &testSegment{
		m: &RemoteLogSegmentMetadata{
			ID:          RemoteLogSegmentId{TopicIdPartition: tp, ID: uuid.Random()},
			StartOffset: start, EndOffset: start + 99,
			SegmentSizeInBytes: int32(logSize), TxnIdxEmpty: !withTxn,
		},
		want: map[string][]byte{},
	}
	write := func(suffix string, n int) string {
		b := gen(n)
		seg.want[suffix] = b
		p := filepath.Join(dir, fmt.Sprintf("%020d%s", start, suffix))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	seg.data.LogSegment = write(suffixLog, logSize)
	seg.data.OffsetIndex = write(suffixOffsetIndex, 800)
	seg.data.TimeIndex = write(suffixTimeIndex, 1200)
	seg.data.ProducerSnapshot = write(suffixProducerSnapshot, 300)
	if withTxn {
		seg.data.TransactionIndex = write(suffixTxnIndex, 340)
	}
	seg.data.LeaderEpochIndex = []byte("0\n2\n0 0\n3 17\n")
	seg.want[suffixLeaderEpoch] = seg.data.LeaderEpochIndex
	return seg
}

func readAllClose(t *testing.T, rc io.ReadCloser, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testRemoteStorageManager is the conformance test every
// RemoteStorageManager passes; bigLog is the size of the large segment's
// log (more than one upload part for S3).
func testRemoteStorageManager(t *testing.T, rsm RemoteStorageManager, bigLog int) {
	ctx := context.Background()
	tp := TopicIdPartition{TopicID: uuid.Random(), Topic: "orders", Partition: 3}
	seg := makeTestSegment(t, tp, 1000, bigLog, false)
	if _, err := rsm.CopyLogSegmentData(ctx, seg.m, seg.data); err != nil {
		t.Fatalf("copy: %v", err)
	}
	log := seg.want[suffixLog]
	n := int64(len(log))
	for _, r := range [][2]int64{{0, -1}, {0, 0}, {n / 3, n/3 + 4096}, {n - 1, n - 1}, {n - 10, -1}, {5, n + 100}} {
		rc, err := rsm.FetchLogSegment(ctx, seg.m, r[0], r[1])
		got := readAllClose(t, rc, err)
		end := r[1] + 1
		if r[1] < 0 || end > n {
			end = n
		}
		if !bytes.Equal(got, log[r[0]:end]) {
			t.Errorf("fetch %d-%d: got %d bytes, want %d (content differs)", r[0], r[1], len(got), end-r[0])
		}
	}
	for it, suffix := range map[IndexType]string{IndexOffset: suffixOffsetIndex,
		IndexTimestamp: suffixTimeIndex, IndexProducerSnapshot: suffixProducerSnapshot,
		IndexLeaderEpoch: suffixLeaderEpoch} {
		rc, err := rsm.FetchIndex(ctx, seg.m, it)
		if got := readAllClose(t, rc, err); !bytes.Equal(got, seg.want[suffix]) {
			t.Errorf("index %s: content differs (%d bytes, want %d)", it, len(got), len(seg.want[suffix]))
		}
	}
	if _, err := rsm.FetchIndex(ctx, seg.m, IndexTransaction); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("missing txn index: got %v, want ErrResourceNotFound", err)
	}

	// A segment with a transaction index, and concurrent copies.
	segs := make([]*testSegment, 4)
	for i := range segs {
		segs[i] = makeTestSegment(t, tp, int64(2000+100*i), 64<<10+i, true)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(segs))
	for i, s := range segs {
		wg.Go(func() { _, errs[i] = rsm.CopyLogSegmentData(ctx, s.m, s.data) })
	}
	wg.Wait()
	for i, s := range segs {
		if errs[i] != nil {
			t.Fatalf("concurrent copy %d: %v", i, errs[i])
		}
		rc, err := rsm.FetchLogSegment(ctx, s.m, 0, -1)
		if !bytes.Equal(readAllClose(t, rc, err), s.want[suffixLog]) {
			t.Errorf("segment %d: log differs", i)
		}
		rc, err = rsm.FetchIndex(ctx, s.m, IndexTransaction)
		if !bytes.Equal(readAllClose(t, rc, err), s.want[suffixTxnIndex]) {
			t.Errorf("segment %d: txn index differs", i)
		}
	}

	// Delete, twice, and of a segment never stored.
	for range 2 {
		if err := rsm.DeleteLogSegmentData(ctx, seg.m); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if _, err := rsm.FetchLogSegment(ctx, seg.m, 0, -1); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("fetch deleted: got %v, want ErrResourceNotFound", err)
	}
	if _, err := rsm.FetchIndex(ctx, seg.m, IndexOffset); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("fetch deleted index: got %v, want ErrResourceNotFound", err)
	}
	never := &RemoteLogSegmentMetadata{ID: RemoteLogSegmentId{TopicIdPartition: tp, ID: uuid.Random()}}
	if err := rsm.DeleteLogSegmentData(ctx, never); err != nil {
		t.Errorf("delete never stored: %v", err)
	}
	rc, err := rsm.FetchLogSegment(ctx, segs[0].m, 0, -1)
	if !bytes.Equal(readAllClose(t, rc, err), segs[0].want[suffixLog]) {
		t.Errorf("other segment damaged by delete")
	}
	for _, s := range segs {
		if err := rsm.DeleteLogSegmentData(ctx, s.m); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
}
