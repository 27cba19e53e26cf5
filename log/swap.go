package log

import (
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// completeInterruptedSwaps finishes what a crash interrupted in a cleaner's
// swap (replaceSegments), before the segments are loaded, as Kafka's
// LogLoader.load does in its first three passes:
//
//  1. .swap files at or above the lowest .cleaned file's offset belong to
//     a swap whose .cleaned → .swap renames did not all happen: they are
//     deleted, and so is every .cleaned file (the swap is rolled back; the
//     old segments are still whole).
//  2. The remaining .swap files are complete: for each .log.swap the
//     offsets it covers are [its base, the offset after its last batch).
//     Every other segment file (old segments, .deleted or not) whose base
//     offset is in the range of a .swap is deleted: the cleaned segment
//     replaces it.
//  3. The .swap files are renamed to their final names and the dir fsynced.
//
// The cleaner always keeps the last batch of the segments it replaces
// (empty if need be), so the .swap's range reaches every one of them.
func completeInterruptedSwaps(fsys FS, dir string, logger *slog.Logger, tp TopicPartition) (completed int, err error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	minCleaned := int64(math.MaxInt64)
	var cleaned, swaps []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, CleanedFileSuffix):
			cleaned = append(cleaned, name)
			if off, ok := offsetFromFileName(name); ok {
				minCleaned = min(minCleaned, off)
			}
		case strings.HasSuffix(name, SwapFileSuffix):
			swaps = append(swaps, name)
		}
	}
	if len(cleaned) == 0 && len(swaps) == 0 {
		return 0, nil
	}
	remove := func(name string) error {
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	var valid []string
	for _, name := range swaps {
		if off, ok := offsetFromFileName(name); ok && off < minCleaned {
			valid = append(valid, name)
			continue
		}
		logger.Info("deleting swap file of an unfinished clean", "partition", tp.String(), "file", name)
		if err := remove(name); err != nil {
			return 0, err
		}
	}
	for _, name := range cleaned {
		if err := remove(name); err != nil {
			return 0, err
		}
	}
	type span struct{ from, to int64 }
	var spans []span
	for _, name := range valid {
		base, ok := offsetFromFileName(name)
		if !ok || name != FilenamePrefixFromOffset(base)+LogFileSuffix+SwapFileSuffix {
			continue
		}
		next, err := scanNextOffset(fsys, filepath.Join(dir, name), base)
		if err != nil {
			return 0, err
		}
		logger.Info("completing the swap of a cleaned segment interrupted by a crash", "partition", tp.String(), "file", name, "offsets_from", base, "offsets_to", next)
		spans = append(spans, span{base, next})
		completed++
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasSuffix(name, SwapFileSuffix) || strings.HasSuffix(name, CleanedFileSuffix) {
			continue
		}
		off, ok := offsetFromFileName(name)
		if !ok {
			continue
		}
		for _, s := range spans {
			if off >= s.from && off < s.to {
				if err := remove(name); err != nil {
					return 0, err
				}
				break
			}
		}
	}
	for _, name := range valid {
		if err := fsys.Rename(filepath.Join(dir, name), filepath.Join(dir, strings.TrimSuffix(name, SwapFileSuffix))); err != nil {
			return 0, err
		}
	}
	return completed, fsys.SyncDir(dir)
}

// scanNextOffset reads the batch headers of a segment file and returns the
// offset after its last whole batch (base if it has none), as Kafka's
// LogSegment.readNextOffset.
func scanNextOffset(fsys FS, path string, base int64) (int64, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, BatchHeaderSize)
	next := base
	for pos := int64(0); st.Size()-pos >= BatchHeaderSize; {
		if _, err := f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		h, err := ParseBatchHeader(buf)
		if err != nil || pos+int64(h.TotalSize()) > st.Size() {
			break // recovery deals with a torn tail
		}
		next = h.NextOffset()
		pos += int64(h.TotalSize())
	}
	return next, nil
}
