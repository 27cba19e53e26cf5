package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/moldau/moldau/broker/uuid"
)

// File suffixes of a remote segment's files, as Kafka's LocalTieredStorage
// and RemoteLogSegmentFileset name them.
const (
	suffixLog              = ".log"
	suffixOffsetIndex      = ".index"
	suffixTimeIndex        = ".timeindex"
	suffixTxnIndex         = ".txnindex"
	suffixProducerSnapshot = ".snapshot"
	suffixLeaderEpoch      = ".leader_epoch_checkpoint"
	suffixTemp             = ".tmp"
)

// indexSuffix maps an index type to its file suffix.
func indexSuffix(t IndexType) (string, error) {
	switch t {
	case IndexOffset:
		return suffixOffsetIndex, nil
	case IndexTimestamp:
		return suffixTimeIndex, nil
	case IndexProducerSnapshot:
		return suffixProducerSnapshot, nil
	case IndexTransaction:
		return suffixTxnIndex, nil
	case IndexLeaderEpoch:
		return suffixLeaderEpoch, nil
	}
	return "", fmt.Errorf("unknown index type %s", t)
}

// allSuffixes lists every file a segment may have, the log first.
var allSuffixes = [...]string{suffixLog, suffixOffsetIndex, suffixTimeIndex,
	suffixTxnIndex, suffixProducerSnapshot, suffixLeaderEpoch}

// partitionDirName is "<topic>-<partition>-<topicId>", Kafka's
// LocalTieredStorage partition directory.
func partitionDirName(tp TopicIdPartition) string {
	return fmt.Sprintf("%s-%d-%s", tp.Topic, tp.Partition, tp.TopicID)
}

// segmentFileBase is "<startOffset %020d>-<segmentId>".
func segmentFileBase(m *RemoteLogSegmentMetadata) string {
	return fmt.Sprintf("%020d-%s", m.StartOffset, m.ID.ID)
}

// sourceFile is one file to upload: a local path or in-memory bytes.
type sourceFile struct {
	suffix string
	path   string
	data   []byte
	inMem  bool
}

// segmentSources lists the files of data to upload; the transaction
// index only when given.
func segmentSources(data LogSegmentData) []sourceFile {
	s := []sourceFile{
		{suffix: suffixLog, path: data.LogSegment},
		{suffix: suffixOffsetIndex, path: data.OffsetIndex},
		{suffix: suffixTimeIndex, path: data.TimeIndex},
	}
	if data.TransactionIndex != "" {
		s = append(s, sourceFile{suffix: suffixTxnIndex, path: data.TransactionIndex})
	}
	s = append(s,
		sourceFile{suffix: suffixProducerSnapshot, path: data.ProducerSnapshot},
		sourceFile{suffix: suffixLeaderEpoch, data: data.LeaderEpochIndex, inMem: true})
	return s
}

// LocalTieredStorage is a RemoteStorageManager over a local directory
// (Kafka's test LocalTieredStorage), the default store. Each segment is
// <dir>/<topic>-<partition>-<topicId>/<startOffset>-<segmentId>.<suffix>.
//
// Guarantees: every file is written under a temporary name, fsynced, then
// renamed, and the directory is fsynced, so a crash never leaves a
// complete-looking partial file; a copy that fails removes what it wrote.
// Files of a segment whose copy was interrupted by a crash may remain
// (under their final names for those already renamed); ListSegments
// reports them so that orphans can be deleted. Safe for concurrent use.
type LocalTieredStorage struct {
	dir string
	// mu serializes the removal of an empty partition directory with
	// copies creating it.
	mu sync.RWMutex
	// open opens a source file; tests replace it to inject read failures.
	open func(path string) (io.ReadCloser, error)
}

var _ RemoteStorageManager = (*LocalTieredStorage)(nil)

// NewLocalTieredStorage returns a store rooted at dir, creating it.
func NewLocalTieredStorage(dir string) (*LocalTieredStorage, error) {
	if dir == "" {
		return nil, errors.New("local tiered storage: empty directory")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("local tiered storage: %w", err)
	}
	open := func(path string) (io.ReadCloser, error) { return os.Open(path) }
	return &LocalTieredStorage{dir: dir, open: open}, nil
}

// Dir returns the store's root directory.
func (s *LocalTieredStorage) Dir() string { return s.dir }

func (s *LocalTieredStorage) partitionDir(tp TopicIdPartition) string {
	return filepath.Join(s.dir, partitionDirName(tp))
}

func (s *LocalTieredStorage) segmentPath(m *RemoteLogSegmentMetadata, suffix string) string {
	return filepath.Join(s.partitionDir(m.ID.TopicIdPartition), segmentFileBase(m)+suffix)
}

// CopyLogSegmentData writes the segment's files; on error nothing of the
// segment is left. It returns no custom metadata.
func (s *LocalTieredStorage) CopyLogSegmentData(ctx context.Context, m *RemoteLogSegmentMetadata, data LogSegmentData) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	pdir := s.partitionDir(m.ID.TopicIdPartition)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return nil, fmt.Errorf("copy %s: %w", m.ID, err)
	}
	var written []string
	for _, src := range segmentSources(data) {
		dst := s.segmentPath(m, src.suffix)
		written = append(written, dst)
		if err := copyFileAtomic(ctx, s.open, src, dst); err != nil {
			for _, p := range written {
				_ = os.Remove(p)
				_ = os.Remove(p + suffixTemp)
			}
			_ = syncDir(pdir)
			return nil, fmt.Errorf("copy %s %s: %w", m.ID, src.suffix, err)
		}
	}
	if err := syncDir(pdir); err != nil {
		return nil, fmt.Errorf("copy %s: %w", m.ID, err)
	}
	return nil, nil
}

// copyChunkBytes is how much copyFileAtomic copies between checks of its
// context.
const copyChunkBytes = 8 << 20

// copyFileAtomic writes src to dst+".tmp", fsyncs it and renames it to dst.
func copyFileAtomic(ctx context.Context, open func(string) (io.ReadCloser, error), src sourceFile, dst string) (err error) {
	var r io.Reader
	if src.inMem {
		r = strings.NewReader(string(src.data))
	} else {
		if src.path == "" {
			return errors.New("no source file")
		}
		f, err := open(src.path)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	tmp := dst + suffixTemp
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = out.Close()
			_ = os.Remove(tmp)
		}
	}()
	// In chunks, ctx checked between them: a file source goes through
	// the kernel's copy (copy_file_range), not this process's buffers.
	for {
		if err = ctx.Err(); err != nil {
			return err
		}
		var n int64
		if n, err = io.CopyN(out, r, copyChunkBytes); err == io.EOF || err == nil && n < copyChunkBytes {
			break
		}
		if err != nil {
			return err
		}
	}
	if err = out.Sync(); err != nil {
		return err
	}
	if err = out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// sectionReadCloser reads a section of an open file and closes the file.
type sectionReadCloser struct {
	*io.SectionReader
	f *os.File
}

func (s sectionReadCloser) Close() error { return s.f.Close() }

// openStored opens a stored file; a missing one is ErrResourceNotFound.
func (s *LocalTieredStorage) openStored(m *RemoteLogSegmentMetadata, suffix string) (*os.File, int64, error) {
	f, err := os.Open(s.segmentPath(m, suffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, fmt.Errorf("%s%s: %w", m.ID, suffix, ErrResourceNotFound)
	}
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// FetchLogSegment returns the log's bytes from startPos to endPos
// inclusive (endPos < 0 or past the end: to the end), read from the open
// file as the caller reads.
func (s *LocalTieredStorage) FetchLogSegment(ctx context.Context, m *RemoteLogSegmentMetadata, startPos, endPos int64) (io.ReadCloser, error) {
	if startPos < 0 || (endPos >= 0 && endPos < startPos) {
		return nil, fmt.Errorf("fetch %s: bad range %d-%d", m.ID, startPos, endPos)
	}
	f, size, err := s.openStored(m, suffixLog)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", m.ID, err)
	}
	end := size // exclusive
	if endPos >= 0 && endPos+1 < size {
		end = endPos + 1
	}
	if startPos > end {
		startPos = end
	}
	return sectionReadCloser{io.NewSectionReader(f, startPos, end-startPos), f}, nil
}

// FetchIndex returns one index file; a missing one (a transaction index
// never uploaded) is ErrResourceNotFound.
func (s *LocalTieredStorage) FetchIndex(ctx context.Context, m *RemoteLogSegmentMetadata, t IndexType) (io.ReadCloser, error) {
	suffix, err := indexSuffix(t)
	if err != nil {
		return nil, err
	}
	f, _, err := s.openStored(m, suffix)
	if err != nil {
		return nil, fmt.Errorf("fetch %s index: %w", t, err)
	}
	return f, nil
}

// DeleteLogSegmentData removes the segment's files, including temporary
// ones; it succeeds for a segment never stored, and removes the partition
// directory once empty.
func (s *LocalTieredStorage) DeleteLogSegmentData(ctx context.Context, m *RemoteLogSegmentMetadata) error {
	for _, suffix := range allSuffixes {
		p := s.segmentPath(m, suffix)
		for _, q := range []string{p, p + suffixTemp} {
			if err := os.Remove(q); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("delete %s: %w", m.ID, err)
			}
		}
	}
	pdir := s.partitionDir(m.ID.TopicIdPartition)
	s.mu.Lock()
	defer s.mu.Unlock()
	if entries, err := os.ReadDir(pdir); err == nil && len(entries) == 0 {
		if err := os.Remove(pdir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", m.ID, err)
		}
		return syncDir(s.dir)
	} else if err == nil {
		return syncDir(pdir)
	}
	return nil
}

// ListSegments returns the ids of the partition's segments with at least
// one file stored (complete or not), for tests and orphan cleanup.
func (s *LocalTieredStorage) ListSegments(tp TopicIdPartition) ([]uuid.UUID, error) {
	entries, err := os.ReadDir(s.partitionDir(tp))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", tp, err)
	}
	seen := map[uuid.UUID]bool{}
	var ids []uuid.UUID
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), suffixTemp)
		_, rest, ok := strings.Cut(name, "-")
		if !ok {
			continue
		}
		idStr, _, ok := strings.Cut(rest, ".")
		if !ok {
			continue
		}
		id, err := uuid.Parse(idStr)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids, nil
}

// Close does nothing: the store holds no resources.
func (s *LocalTieredStorage) Close() error { return nil }
