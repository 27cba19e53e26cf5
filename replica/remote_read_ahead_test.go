package replica

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// countingStore counts the streams opened on each segment, those still
// open, and the bytes read from them; failReads makes every read fail,
// as a store that went away.
type countingStore struct {
	*remote.LocalTieredStorage
	mu        sync.Mutex
	opens     map[uuid.UUID]int
	live      int
	bytesRead int64
	failReads bool
}

func (s *countingStore) FetchLogSegment(ctx context.Context, m *remote.RemoteLogSegmentMetadata, start, end int64) (io.ReadCloser, error) {
	rc, err := s.LocalTieredStorage.FetchLogSegment(ctx, m, start, end)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opens[m.ID.ID]++
	s.live++
	return &countingReader{rc: rc, s: s}, nil
}

func (s *countingStore) counts() (opens map[uuid.UUID]int, live int, bytesRead int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	opens = map[uuid.UUID]int{}
	for k, v := range s.opens {
		opens[k] = v
	}
	return opens, s.live, s.bytesRead
}

func (s *countingStore) setFailReads(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failReads = fail
}

type countingReader struct {
	rc     io.ReadCloser
	s      *countingStore
	closed bool
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.s.mu.Lock()
	fail := r.s.failReads
	r.s.mu.Unlock()
	if fail {
		return 0, errors.New("store unavailable")
	}
	n, err := r.rc.Read(p)
	r.s.mu.Lock()
	r.s.bytesRead += int64(n)
	r.s.mu.Unlock()
	return n, err
}

func (r *countingReader) Close() error {
	r.s.mu.Lock()
	if !r.closed {
		r.closed = true
		r.s.live--
	}
	r.s.mu.Unlock()
	return r.rc.Close()
}

// readAheadTest is a tiered log whose closed segments are only in a
// countingStore, with the bytes they held.
type readAheadTest struct {
	rlm   *RemoteLogManager
	store *countingStore
	md    *rlmTestMetadata
	tp    remote.TopicIdPartition
	l     *log.Log
	want  []byte // the remote segments' bytes, in order
}

func newReadAheadTest(t *testing.T) *readAheadTest {
	t.Helper()
	l, tp := rlmTestLog(t)
	local, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{LocalTieredStorage: local, opens: map[uuid.UUID]int{}}
	md := &rlmTestMetadata{store: remote.NewRemoteLogMetadataStore()}
	rlm := NewRemoteLogManager(1, store, md, slogDiscard(), nil)
	t.Cleanup(rlm.Close)
	rlmTestFill(t, l)
	if _, err := rlm.CopyLogSegments(context.Background(), tp, l, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	end := l.HighestOffsetInRemoteStorage() + 1
	var want []byte
	for off := int64(0); off < end; {
		d, err := l.Read(off, 1<<30, end, true)
		if err != nil {
			t.Fatal(err)
		}
		if want, err = d.Records.ReadInto(want); err != nil {
			t.Fatal(err)
		}
		off = d.NextOffset
	}
	if _, err := l.DeleteOldSegments(); err != nil || l.LocalLogStartOffset() != end {
		t.Fatalf("local retention: local start %d, want %d: %v", l.LocalLogStartOffset(), end, err)
	}
	return &readAheadTest{rlm: rlm, store: store, md: md, tp: tp, l: l, want: want}
}

// fetch is one consumer fetch from the store.
func (rt *readAheadTest) fetch(t *testing.T, offset int64, maxBytes int32) log.FetchData {
	t.Helper()
	d, err := rt.rlm.Read(context.Background(), rt.tp, offset, maxBytes, true, false)
	if err != nil {
		t.Fatalf("read at %d: %v", offset, err)
	}
	return d
}

// readAll reads every remote offset in order, maxBytes a fetch, and
// returns the bytes.
func (rt *readAheadTest) readAll(t *testing.T, maxBytes int32) []byte {
	t.Helper()
	var got []byte
	for off := int64(0); off < rt.l.LocalLogStartOffset(); {
		d := rt.fetch(t, off, maxBytes)
		if d.NextOffset <= off {
			t.Fatalf("read at %d: next %d", off, d.NextOffset)
		}
		b, ok := d.Records.Bytes()
		if !ok {
			t.Fatal("remote records are not in memory")
		}
		got = append(got, b...)
		off = d.NextOffset
	}
	return got
}

func (rt *readAheadTest) segments(t *testing.T) []*remote.RemoteLogSegmentMetadata {
	t.Helper()
	segs, err := rt.md.ListRemoteLogSegments(rt.tp)
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d remote segments: %v", len(segs), err)
	}
	return segs
}

// waitFor polls cond until it holds, or fails after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Sequential fetches of a segment, of any size, open it once and read
// each of its bytes from the store once (a batch past one fetch's
// maxBytes is kept for the next, not read again), return the same bytes
// as the log held, and leave no stream open once every segment is read
// to its end.
func TestRemoteReadAheadSequentialFetchesOpenOnce(t *testing.T) {
	for _, maxBytes := range []int32{1, 700, 2000, 5000, 1 << 20} {
		rt := newReadAheadTest(t)
		got := rt.readAll(t, maxBytes)
		if !bytes.Equal(got, rt.want) {
			t.Fatalf("maxBytes %d: read %d bytes differing from the %d the log held", maxBytes, len(got), len(rt.want))
		}
		waitFor(t, "the streams to close", func() bool { _, live, _ := rt.store.counts(); return live == 0 })
		opens, _, read := rt.store.counts()
		var size int64
		for _, s := range rt.segments(t) {
			size += int64(s.SegmentSizeInBytes)
			if opens[s.ID.ID] != 1 {
				t.Fatalf("maxBytes %d: segment %d-%d opened %d times", maxBytes, s.StartOffset, s.EndOffset, opens[s.ID.ID])
			}
		}
		if read != size {
			t.Fatalf("maxBytes %d: %d bytes read from the store for %d bytes of segments", maxBytes, read, size)
		}
		if n := rt.rlm.readAhead.openStreams(); n != 0 {
			t.Fatalf("maxBytes %d: %d streams kept after the last segment's end", maxBytes, n)
		}
	}
}

// A fetch at another offset than where a stream stopped (a consumer
// seeking back, or forward) opens the segment again, and answers from
// there.
func TestRemoteReadAheadSeekReopens(t *testing.T) {
	rt := newReadAheadTest(t)
	seg := rt.segments(t)[0]
	d1 := rt.fetch(t, 0, 1000)
	d2 := rt.fetch(t, d1.NextOffset, 1000)
	if opens, _, _ := rt.store.counts(); opens[seg.ID.ID] != 1 {
		t.Fatalf("two sequential fetches opened the segment %d times", opens[seg.ID.ID])
	}
	back := rt.fetch(t, 0, 1000) // back to the start
	if opens, _, _ := rt.store.counts(); opens[seg.ID.ID] != 2 {
		t.Fatalf("a fetch back to offset 0 opened the segment %d times in all, want 2", opens[seg.ID.ID])
	}
	b1, _ := d1.Records.Bytes()
	bb, _ := back.Records.Bytes()
	if !bytes.Equal(b1, bb) {
		t.Fatal("the fetch back to offset 0 answered other bytes")
	}
	ahead := rt.fetch(t, d2.NextOffset+8, 1000) // forward, past a batch
	if opens, _, _ := rt.store.counts(); opens[seg.ID.ID] != 3 {
		t.Fatalf("a fetch forward opened the segment %d times in all, want 3", opens[seg.ID.ID])
	}
	if ahead.FirstBatchOffset > d2.NextOffset+8 || ahead.NextOffset <= d2.NextOffset+8 {
		t.Fatalf("fetch at %d: batches %d to %d", d2.NextOffset+8, ahead.FirstBatchOffset, ahead.NextOffset)
	}
	// Each of the three streams is kept where it stopped.
	if n := rt.rlm.readAhead.openStreams(); n != 3 {
		t.Fatalf("%d streams kept, want 3", n)
	}
}

// A fetch whose maxBytes no batch fits (the response is nearly full)
// answers nothing and keeps its stream where it was: the next fetch at
// that offset continues it.
func TestRemoteReadAheadKeepsStreamWhenNothingFits(t *testing.T) {
	rt := newReadAheadTest(t)
	seg := rt.segments(t)[0]
	d := rt.fetch(t, 0, 1000)
	for i := 0; i < 2; i++ {
		e, err := rt.rlm.Read(context.Background(), rt.tp, d.NextOffset, 10, false, false)
		if err != nil || e.Records.Size != 0 || e.NextOffset != -1 {
			t.Fatalf("a fetch of 10 bytes: %d bytes, next %d, %v", e.Records.Size, e.NextOffset, err)
		}
	}
	got := rt.fetch(t, d.NextOffset, 1<<20)
	if opens, _, _ := rt.store.counts(); opens[seg.ID.ID] != 1 {
		t.Fatalf("the segment was opened %d times", opens[seg.ID.ID])
	}
	if got.FirstBatchOffset != d.NextOffset || got.NextOffset != seg.EndOffset+1 {
		t.Fatalf("after the empty answers: batches %d to %d, want %d to %d", got.FirstBatchOffset, got.NextOffset, d.NextOffset, seg.EndOffset+1)
	}
	// A new stream that answers nothing is kept too.
	other := rt.segments(t)[1]
	if e, err := rt.rlm.Read(context.Background(), rt.tp, other.StartOffset+5, 10, false, false); err != nil || e.Records.Size != 0 {
		t.Fatalf("a fetch of 10 bytes: %d bytes, %v", e.Records.Size, err)
	}
	got = rt.fetch(t, other.StartOffset+5, 1000)
	if opens, _, _ := rt.store.counts(); opens[other.ID.ID] != 1 || got.FirstBatchOffset > other.StartOffset+5 || got.NextOffset <= other.StartOffset+5 {
		t.Fatalf("opened %d times; batches %d to %d for offset %d", opens[other.ID.ID], got.FirstBatchOffset, got.NextOffset, other.StartOffset+5)
	}
}

// A stream no fetch continues is closed after the idle time.
func TestRemoteReadAheadClosesIdleStreams(t *testing.T) {
	rt := newReadAheadTest(t)
	rt.rlm.readAhead.idleTimeout = 20 * time.Millisecond
	rt.fetch(t, 0, 1000)
	if _, live, _ := rt.store.counts(); live != 1 {
		t.Fatalf("%d streams open after a fetch, want 1", live)
	}
	waitFor(t, "the idle stream to close", func() bool {
		_, live, _ := rt.store.counts()
		return live == 0 && rt.rlm.readAhead.openStreams() == 0
	})
}

// At most maxStreams streams stay open, least recently used closed
// first; the one kept still serves its consumer's next fetch.
func TestRemoteReadAheadBoundsOpenStreams(t *testing.T) {
	rt := newReadAheadTest(t)
	rt.rlm.readAhead.maxStreams = 2
	segs := rt.segments(t)
	var last log.FetchData
	for _, s := range segs {
		last = rt.fetch(t, s.StartOffset, 1000)
		if n := rt.rlm.readAhead.openStreams(); n > 2 {
			t.Fatalf("%d streams kept, bound 2", n)
		}
	}
	waitFor(t, "the streams over the bound to close", func() bool { _, live, _ := rt.store.counts(); return live == 2 })
	lastSeg := segs[len(segs)-1]
	rt.fetch(t, last.NextOffset, 1000)
	if opens, _, _ := rt.store.counts(); opens[lastSeg.ID.ID] != 1 {
		t.Fatalf("the most recent stream was not continued: %d opens", opens[lastSeg.ID.ID])
	}
	rt.rlm.Close()
	if _, live, _ := rt.store.counts(); live != 0 || rt.rlm.readAhead.openStreams() != 0 {
		t.Fatalf("%d streams open after Close", live)
	}
}

// A stream whose segment is deleted (remote retention) is closed, and a
// fetch there answers that the segment is gone; a stream whose store
// fails is dropped, and once the store is back the next fetch opens the
// segment again and answers the same bytes.
func TestRemoteReadAheadDropsDeletedAndFailedStreams(t *testing.T) {
	rt := newReadAheadTest(t)
	segs := rt.segments(t)
	d := rt.fetch(t, 0, 1000)
	if _, err := rt.l.DeleteRecordsBefore(segs[0].EndOffset + 1); err != nil {
		t.Fatal(err)
	}
	if n, err := rt.rlm.ExpireRemoteSegments(context.Background(), rt.tp, rt.l, -1, -1); err != nil || n != 1 {
		t.Fatalf("expired %d segments: %v", n, err)
	}
	waitFor(t, "the deleted segment's stream to close", func() bool { _, live, _ := rt.store.counts(); return live == 0 })
	if _, err := rt.rlm.Read(context.Background(), rt.tp, d.NextOffset, 1000, true, false); !errors.Is(err, remote.ErrResourceNotFound) {
		t.Fatalf("a fetch in the deleted segment: %v", err)
	}

	// The store fails while a stream is open and reading ahead.
	seg := segs[1]
	d1 := rt.fetch(t, seg.StartOffset, 1000)
	waitFor(t, "the read-ahead", func() bool {
		rt.rlm.readAhead.mu.Lock()
		defer rt.rlm.readAhead.mu.Unlock()
		for _, s := range rt.rlm.readAhead.streams {
			return s.readingAhead == nil
		}
		return false
	})
	rt.store.setFailReads(true)
	// The kept stream has read ahead: it may answer from its buffer;
	// past that the store's failure is the fetch's.
	off := d1.NextOffset
	var failed error
	for off <= seg.EndOffset && failed == nil {
		d, err := rt.rlm.Read(context.Background(), rt.tp, off, 1000, true, false)
		if err != nil {
			failed = err
			break
		}
		off = d.NextOffset
	}
	if failed == nil {
		t.Fatal("reads through a failed store did not fail")
	}
	if _, live, _ := rt.store.counts(); live != 0 {
		t.Fatalf("%d streams open after the store failed", live)
	}
	rt.store.setFailReads(false)
	opens, _, _ := rt.store.counts()
	got := rt.fetch(t, off, 1000)
	if opens2, _, _ := rt.store.counts(); opens2[seg.ID.ID] != opens[seg.ID.ID]+1 {
		t.Fatalf("the fetch after the failure opened the segment %d times, want once", opens2[seg.ID.ID]-opens[seg.ID.ID])
	}
	b, _ := got.Records.Bytes()
	fresh := NewRemoteLogManager(1, rt.store.LocalTieredStorage, rt.md, slogDiscard(), nil)
	defer fresh.Close()
	w, err := fresh.Read(context.Background(), rt.tp, off, 1000, true, false)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := w.Records.Bytes()
	if len(b) == 0 || !bytes.Equal(b, wb) {
		t.Fatalf("after the failure: %d bytes, a new reader reads %d others", len(b), len(wb))
	}
}

// A request that ends while its read waits keeps nothing open: the
// stream is opened on the RemoteLogManager's context, but a request
// ending mid-read drops it.
func TestRemoteReadAheadRequestEndsMidRead(t *testing.T) {
	rt := newReadAheadTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rt.rlm.Read(ctx, rt.tp, 0, 1000, true, false); err == nil {
		t.Fatal("a read for a request already ended succeeded")
	}
	if _, live, _ := rt.store.counts(); live != 0 || rt.rlm.readAhead.openStreams() != 0 {
		t.Fatalf("%d streams open after a cancelled read", live)
	}
	// The stream outlives the request that opened it.
	before, _, _ := rt.store.counts()
	ctx, cancel = context.WithCancel(context.Background())
	d, err := rt.rlm.Read(ctx, rt.tp, 0, 1000, true, false)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	rt.fetch(t, d.NextOffset, 1000)
	if opens, _, _ := rt.store.counts(); opens[rt.segments(t)[0].ID.ID] != before[rt.segments(t)[0].ID.ID]+1 {
		t.Fatal("the stream did not outlive its request")
	}
}

// hangingStore's streams deliver their first limit bytes, then hang
// until their context ends, as a store that stops answering.
type hangingStore struct {
	*remote.LocalTieredStorage
	limit int
	mu    sync.Mutex
	live  int
}

func (s *hangingStore) FetchLogSegment(ctx context.Context, m *remote.RemoteLogSegmentMetadata, start, end int64) (io.ReadCloser, error) {
	rc, err := s.LocalTieredStorage.FetchLogSegment(ctx, m, start, end)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.live++
	s.mu.Unlock()
	return &hangingReader{rc: rc, ctx: ctx, left: s.limit, s: s}, nil
}

func (s *hangingStore) liveStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

type hangingReader struct {
	rc     io.ReadCloser
	ctx    context.Context
	left   int
	s      *hangingStore
	closed bool
}

func (r *hangingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		<-r.ctx.Done()
		return 0, r.ctx.Err()
	}
	n, err := r.rc.Read(p[:min(len(p), r.left)])
	r.left -= n
	return n, err
}

func (r *hangingReader) Close() error {
	r.s.mu.Lock()
	if !r.closed {
		r.closed = true
		r.s.live--
	}
	r.s.mu.Unlock()
	return r.rc.Close()
}

// A fetch that gives up waiting for its stream's read-ahead (the store
// hangs) cancels it: the stream is closed, nothing is left reading.
func TestRemoteReadAheadCancelsHangingReadAhead(t *testing.T) {
	rt := newReadAheadTest(t)
	store := &hangingStore{LocalTieredStorage: rt.store.LocalTieredStorage, limit: 1000}
	rlm := NewRemoteLogManager(1, store, rt.md, slogDiscard(), nil)
	t.Cleanup(rlm.Close)
	d, err := rlm.Read(context.Background(), rt.tp, 0, 1000, true, false)
	if err != nil || d.NextOffset <= 0 {
		t.Fatalf("first fetch: next %d, %v", d.NextOffset, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rlm.Read(ctx, rt.tp, d.NextOffset, 1000, true, false) // waits for the hanging read-ahead, then gives up
	waitFor(t, "the hanging stream to close", func() bool { return store.liveStreams() == 0 })
	if n := rlm.readAhead.openStreams(); n != 0 {
		t.Fatalf("%d streams kept", n)
	}
}
