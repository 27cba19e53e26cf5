package replica

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// The read-ahead's bounds. They are not settings: Kafka has no read-ahead
// of its own (a RemoteStorageManager plugin may have one), so there is no
// Kafka name to take, and these bound memory and open files, not
// behaviour.
const (
	// remoteReadAheadBytes bounds what an idle stream reads ahead: the
	// consumer's fetch size for the partition, at most this much
	// (Kafka's max.partition.fetch.bytes default, 1 MiB).
	remoteReadAheadBytes = 1 << 20
	// maxRemoteStreams bounds the idle streams kept open, least recently
	// used closed first: at most this many open files (directory store)
	// or HTTP bodies (S3), each holding at most remoteReadAheadBytes
	// plus the part of one batch already read.
	maxRemoteStreams = 64
	// remoteStreamIdleTimeout closes a stream no fetch continued for
	// this long (looked for every half of it: closed within 1.5 times
	// it).
	remoteStreamIdleTimeout = 30 * time.Second
)

// remoteStreamKey is where an open stream continues: its segment copy and
// the offset of the next batch it returns (the NextOffset of the last
// answer, which is the consumer's next fetch offset).
type remoteStreamKey struct {
	segment uuid.UUID
	next    int64
}

// remoteLogInputStream is an open read of one remote segment, left open
// between the fetches of a consumer reading it in order (Kafka's
// RemoteLogInputStream over the store's InputStream, kept for the next
// fetch instead of closed). buf holds what was read from the store and
// not yet returned, from a batch boundary: whole batches read ahead, then
// possibly part of the next batch (a batch past a fetch's maxBytes is
// kept for the next fetch, not read again).
//
// A stream belongs to one goroutine at a time: the fetch that took it
// from remoteReadAhead, or its read-ahead (while readingAhead is set; a
// fetch that takes it waits for the read-ahead to end).
type remoteLogInputStream struct {
	m      *remote.RemoteLogSegmentMetadata
	rc     io.ReadCloser
	cancel context.CancelFunc // ends the store read (the stream's own context)
	pos    int64              // position of buf[0] in the segment
	next   int64              // offset of the next batch to return; -1: from the first at or after the fetch offset
	buf    []byte
	eof    bool  // rc is drained
	err    error // a read-ahead failed: the stream is not used again

	// Under remoteReadAhead.mu.
	key          remoteStreamKey
	elem         *list.Element // in idle while kept
	idleSince    time.Time
	readingAhead chan struct{} // closed when the running read-ahead ends; nil: none
	dropped      bool          // dropped while reading ahead: the read-ahead closes it
}

func (s *remoteLogInputStream) close() {
	s.cancel()
	s.rc.Close()
}

// segmentLeft is how many bytes the segment has from buf[0] on, by its
// metadata.
func (s *remoteLogInputStream) segmentLeft() int64 {
	return int64(s.m.SegmentSizeInBytes) - s.pos
}

// fill reads from the store until buf holds want bytes or the segment
// ends. A buffer too small for want is replaced by one of at least chunk
// bytes (no more than the segment has left) and what was pending copied
// into it; reads fill the buffer's capacity, so one read from the store
// serves several batches.
func (s *remoteLogInputStream) fill(want, chunk int) error {
	if len(s.buf) >= want || s.eof {
		return nil
	}
	if cap(s.buf) < want {
		c := int64(max(want, chunk))
		c = max(min(c, s.segmentLeft()), int64(want))
		nb := make([]byte, len(s.buf), c)
		copy(nb, s.buf)
		s.buf = nb
	}
	for len(s.buf) < want {
		n, err := s.rc.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			s.eof = true
			return nil
		case err != nil:
			return err
		}
	}
	return nil
}

// readBatches returns whole batches from the stream: it skips those
// ending before offset, then takes the batch holding offset (whole, if
// minOneMessage, whatever its size) and the following ones while they fit
// in maxBytes, never past the segment. The bytes returned are the
// stream's own buffer, never written again; a batch that did not fit
// stays buffered for the next fetch. next is the offset after the last
// batch returned (-1 if none).
func (s *remoteLogInputStream) readBatches(offset, maxBytes int64, minOneMessage bool) (recs []byte, first, next int64, err error) {
	first, next = -1, -1
	chunk := int(min(max(maxBytes, log.BatchHeaderSize), s.segmentLeft()))
	n := 0 // bytes of whole batches taken from buf
	for {
		taking := n > 0 || !minOneMessage
		if taking && maxBytes-int64(n) < log.BatchHeaderSize {
			break // no batch fits in what is left
		}
		if err := s.fill(n+log.BatchHeaderSize, chunk); err != nil {
			return nil, -1, -1, err
		}
		if len(s.buf) < n+log.BatchHeaderSize {
			if len(s.buf) > n {
				return nil, -1, -1, fmt.Errorf("the segment ends %d bytes into a batch header", len(s.buf)-n)
			}
			break // the segment's end
		}
		h, err := log.ParseBatchHeader(s.buf[n:])
		if err != nil {
			return nil, -1, -1, err
		}
		size := int64(h.TotalSize())
		if left := s.segmentLeft() - int64(n); size > left {
			return nil, -1, -1, fmt.Errorf("batch at offset %d claims %d bytes, past the segment's end (%d left)", h.BaseOffset, size, left)
		}
		if h.LastOffset() < offset && n == 0 {
			// Before the fetch offset (from the index's entry): skipped.
			if err := s.fill(int(size), chunk); err != nil {
				return nil, -1, -1, err
			}
			if int64(len(s.buf)) < size {
				return nil, -1, -1, io.ErrUnexpectedEOF
			}
			s.buf, s.pos = s.buf[size:], s.pos+size
			continue
		}
		if int64(n)+size > maxBytes && taking {
			break
		}
		if err := s.fill(n+int(size), chunk); err != nil {
			return nil, -1, -1, err
		}
		if int64(len(s.buf)) < int64(n)+size {
			return nil, -1, -1, io.ErrUnexpectedEOF
		}
		if first < 0 {
			first = h.BaseOffset
		}
		next = h.NextOffset()
		n += int(size)
	}
	recs = s.buf[:n:n]
	s.buf, s.pos = s.buf[n:], s.pos+int64(n)
	s.next = next
	if next < 0 {
		// Nothing fitted: the stream is where it was, at or before the
		// batch holding offset, so a fetch at offset continues it.
		s.next = offset
	}
	return recs, first, next, nil
}

// done reports whether the stream has nothing more to return: its
// segment is read to the end.
func (s *remoteLogInputStream) done() bool {
	return len(s.buf) == 0 && (s.eof || s.segmentLeft() <= 0 || s.next > s.m.EndOffset)
}

// remoteReadAhead keeps the remote segment streams that consumers read
// in order, so that a consumer's next fetch continues the stream its
// last fetch left (no new open of the object, no index lookup, no
// skipping to the offset, no batch read twice), and reads ahead up to
// that consumer's fetch size (remoteReadAheadBytes at most) while the
// consumer handles the answer. Streams are opened on the
// RemoteLogManager's context, not a request's: they outlive the request.
// A fetch at another offset opens a stream of its own; at most
// maxRemoteStreams idle streams are kept, least recently used closed
// first, and one idle for remoteStreamIdleTimeout is closed. A stream
// whose read fails, or whose segment is deleted, is closed, and the next
// fetch opens the segment again.
type remoteReadAhead struct {
	rsm         remote.RemoteStorageManager
	ctx         context.Context // the RemoteLogManager's; ends at Close
	maxStreams  int
	maxAhead    int
	idleTimeout time.Duration
	now         func() time.Time
	// group runs the read-aheads and the idle sweep; Close stops it.
	group     routine.Group
	sweepOnce sync.Once

	mu      sync.Mutex
	streams map[remoteStreamKey]*remoteLogInputStream
	idle    *list.List // of *remoteLogInputStream, least recently kept first
	closed  bool
}

func newRemoteReadAhead(ctx context.Context, rsm remote.RemoteStorageManager, now func() time.Time) *remoteReadAhead {
	return &remoteReadAhead{rsm: rsm, ctx: ctx, maxStreams: maxRemoteStreams, maxAhead: remoteReadAheadBytes,
		idleTimeout: remoteStreamIdleTimeout, now: now,
		streams: map[remoteStreamKey]*remoteLogInputStream{}, idle: list.New()}
}

// read reads whole batches of segment m from offset (see readBatches):
// from the stream a previous fetch left at offset if there is one, else
// from a new stream opened at position() (the offset index's entry at or
// below offset). A kept stream that fails is closed and the read done
// again from a new one. ctx is the request's: when it ends during a read
// from the store, that read is cut short and its stream closed.
func (ra *remoteReadAhead) read(ctx context.Context, m *remote.RemoteLogSegmentMetadata, offset, maxBytes int64, minOneMessage bool, position func() (int64, error)) (recs []byte, first, next, pos int64, err error) {
	if s := ra.take(ctx, remoteStreamKey{m.ID.ID, offset}); s != nil {
		pos = s.pos
		recs, first, next, err = ra.readFrom(ctx, s, offset, maxBytes, minOneMessage)
		if err == nil || ctx.Err() != nil {
			return recs, first, next, pos, err
		}
		// A stream left open may have gone stale (an S3 connection the
		// server closed): once more from the store.
	}
	if pos, err = position(); err != nil {
		return nil, -1, -1, -1, err
	}
	s, err := ra.open(ctx, m, pos)
	if err != nil {
		return nil, -1, -1, -1, err
	}
	recs, first, next, err = ra.readFrom(ctx, s, offset, maxBytes, minOneMessage)
	return recs, first, next, pos, err
}

// open opens a stream of m at pos on the RemoteLogManager's context; ctx
// (the request's) only bounds the wait.
func (ra *remoteReadAhead) open(ctx context.Context, m *remote.RemoteLogSegmentMetadata, pos int64) (*remoteLogInputStream, error) {
	sctx, cancel := context.WithCancel(ra.ctx)
	stop := context.AfterFunc(ctx, cancel)
	rc, err := ra.rsm.FetchLogSegment(sctx, m, pos, -1)
	if !stop() && err == nil {
		rc.Close()
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("fetching remote segment %s: %w", m.ID, err)
	}
	return &remoteLogInputStream{m: m, rc: rc, cancel: cancel, pos: pos, next: -1}, nil
}

// readFrom reads batches from s, then keeps it for the next fetch (or
// closes it: it failed, ended, or ctx ended during the read).
func (ra *remoteReadAhead) readFrom(ctx context.Context, s *remoteLogInputStream, offset, maxBytes int64, minOneMessage bool) ([]byte, int64, int64, error) {
	if s.err != nil {
		s.close()
		return nil, -1, -1, s.err
	}
	stop := context.AfterFunc(ctx, s.cancel)
	recs, first, next, err := s.readBatches(offset, maxBytes, minOneMessage)
	cut := !stop()
	if err != nil || cut || s.done() {
		s.close()
		if err != nil {
			return nil, -1, -1, fmt.Errorf("reading remote segment %s: %w", s.m.ID, err)
		}
		return recs, first, next, nil
	}
	ra.keep(s, int(min(maxBytes, int64(ra.maxAhead))))
	return recs, first, next, nil
}

// take removes the idle stream at key and returns it, once its
// read-ahead (if one runs) has ended; nil if there is none, or ctx ended
// first (the read-ahead is then cancelled, and the stream closed).
func (ra *remoteReadAhead) take(ctx context.Context, key remoteStreamKey) *remoteLogInputStream {
	ra.mu.Lock()
	s := ra.streams[key]
	if s == nil {
		ra.mu.Unlock()
		return nil
	}
	ra.removeLocked(s)
	ahead := s.readingAhead
	ra.mu.Unlock()
	if ahead == nil {
		return s
	}
	select {
	case <-ahead:
		return s
	case <-ctx.Done():
	}
	// The read-ahead is cut short (a store that hangs would hold it
	// otherwise) and closes the stream; or it ended meanwhile.
	s.cancel()
	ra.mu.Lock()
	if s.readingAhead != nil {
		s.dropped = true
		s = nil
	}
	ra.mu.Unlock()
	if s != nil {
		s.close()
	}
	return nil
}

// keep makes s idle, keyed by where it continues, and reads ahead up to
// ahead bytes. A stream already kept at that key (another consumer at
// the same offset) is closed, and so is the least recently kept one over
// maxStreams.
func (ra *remoteReadAhead) keep(s *remoteLogInputStream, ahead int) {
	var drop []*remoteLogInputStream
	ra.mu.Lock()
	if ra.closed {
		ra.mu.Unlock()
		s.close()
		return
	}
	s.key = remoteStreamKey{s.m.ID.ID, s.next}
	if old := ra.streams[s.key]; old != nil {
		drop = append(drop, ra.dropLocked(old)...)
	}
	s.idleSince = ra.now()
	s.elem = ra.idle.PushBack(s)
	ra.streams[s.key] = s
	for len(ra.streams) > ra.maxStreams {
		drop = append(drop, ra.dropLocked(ra.idle.Front().Value.(*remoteLogInputStream))...)
	}
	readAhead := len(s.buf) < ahead && !s.eof
	if readAhead {
		s.readingAhead = make(chan struct{})
	}
	ra.mu.Unlock()
	for _, d := range drop {
		d.close()
	}
	ra.sweepOnce.Do(func() { ra.group.Every(ra.idleTimeout/2, ra.closeIdle) })
	if readAhead && !ra.group.Go(func(<-chan struct{}) { ra.readAhead(s, ahead) }) {
		ra.readAheadDone(s)
	}
}

// readAhead fills s up to ahead bytes (a partial batch pending is
// reallocated to the front of a buffer that holds ahead bytes), then
// marks it ready. A failure is kept in s.err: the next fetch closes the
// stream and opens another.
func (ra *remoteReadAhead) readAhead(s *remoteLogInputStream, ahead int) {
	want := max(ahead, len(s.buf))
	if c := cap(s.buf); c < want || c > 2*want {
		// Too small for the read-ahead, or holding on to a larger
		// fetch's buffer: a buffer of its own.
		nb := make([]byte, len(s.buf), int(max(min(int64(want), s.segmentLeft()), int64(len(s.buf)))))
		copy(nb, s.buf)
		s.buf = nb
	}
	if err := s.fill(cap(s.buf), cap(s.buf)); err != nil {
		s.err = err
	}
	ra.readAheadDone(s)
}

// readAheadDone ends s's read-ahead: a fetch waiting for it gets it, or,
// if s was dropped meanwhile, s is closed.
func (ra *remoteReadAhead) readAheadDone(s *remoteLogInputStream) {
	ra.mu.Lock()
	ahead, dropped := s.readingAhead, s.dropped
	s.readingAhead = nil
	ra.mu.Unlock()
	close(ahead)
	if dropped {
		s.close()
	}
}

// removeLocked takes s out of the idle streams.
func (ra *remoteReadAhead) removeLocked(s *remoteLogInputStream) {
	delete(ra.streams, s.key)
	ra.idle.Remove(s.elem)
	s.elem = nil
}

// dropLocked removes s and returns it to be closed by the caller, or
// nothing if a read-ahead runs on it (which then closes it); the store
// read of that read-ahead is cancelled.
func (ra *remoteReadAhead) dropLocked(s *remoteLogInputStream) []*remoteLogInputStream {
	ra.removeLocked(s)
	if s.readingAhead != nil {
		s.dropped = true
		s.cancel()
		return nil
	}
	return []*remoteLogInputStream{s}
}

// dropIf closes the idle streams for which pred holds.
func (ra *remoteReadAhead) dropIf(pred func(*remoteLogInputStream) bool) {
	var drop []*remoteLogInputStream
	ra.mu.Lock()
	for e := ra.idle.Front(); e != nil; {
		s := e.Value.(*remoteLogInputStream)
		e = e.Next()
		if pred(s) {
			drop = append(drop, ra.dropLocked(s)...)
		}
	}
	ra.mu.Unlock()
	for _, s := range drop {
		s.close()
	}
}

// closeIdle closes the streams idle for idleTimeout.
func (ra *remoteReadAhead) closeIdle() {
	now := ra.now()
	ra.dropIf(func(s *remoteLogInputStream) bool { return now.Sub(s.idleSince) >= ra.idleTimeout })
}

// removeSegment closes the streams of a deleted segment.
func (ra *remoteReadAhead) removeSegment(id uuid.UUID) {
	ra.dropIf(func(s *remoteLogInputStream) bool { return s.m.ID.ID == id })
}

// openStreams returns the number of idle streams.
func (ra *remoteReadAhead) openStreams() int {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return len(ra.streams)
}

// close closes every stream and waits for the read-aheads. Idempotent.
func (ra *remoteReadAhead) close() {
	ra.mu.Lock()
	ra.closed = true
	ra.mu.Unlock()
	ra.dropIf(func(*remoteLogInputStream) bool { return true })
	ra.group.StopAndWait()
}
