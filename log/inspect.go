package log

import (
	"encoding/binary"
	"math"
)

// Read-only access to the on-disk formats for tools that inspect a log dir
// offline (moldau log dump). Nothing here opens a file for writing or
// changes one.

// DecodeOffsetIndex decodes an offset index file (.index) of the segment
// starting at baseOffset. Entries are read as they are on disk, up to the
// first all-zero entry (the preallocated tail of an active segment's index)
// or the last whole entry; sanityErr is what the broker's own loader
// reports for the file, which makes it rebuild the index: a size that is
// not a multiple of the entry size, or entries that do not strictly grow.
func DecodeOffsetIndex(b []byte, baseOffset int64) (entries []OffsetPosition, sanityErr error) {
	for i := 0; i+OffsetIndexEntrySize <= len(b); i += OffsetIndexEntrySize {
		rel, pos := binary.BigEndian.Uint32(b[i:]), binary.BigEndian.Uint32(b[i+4:])
		if rel == 0 && pos == 0 {
			break
		}
		entries = append(entries, OffsetPosition{Offset: baseOffset + int64(rel), Position: int32(min(pos, math.MaxInt32))})
	}
	_, sanityErr = decodeOffsetIndex(b)
	return entries, sanityErr
}

// DecodeTimeIndex decodes a time index file (.timeindex) of the segment
// starting at baseOffset, as DecodeOffsetIndex does an offset index:
// entries up to the zero tail, and the broker loader's verdict.
func DecodeTimeIndex(b []byte, baseOffset int64) (entries []TimestampOffsetEntry, sanityErr error) {
	for i := 0; i+TimeIndexEntrySize <= len(b); i += TimeIndexEntrySize {
		ts, rel := int64(binary.BigEndian.Uint64(b[i:])), binary.BigEndian.Uint32(b[i+8:])
		if ts == 0 && rel == 0 {
			break
		}
		entries = append(entries, TimestampOffsetEntry{Timestamp: ts, Offset: baseOffset + int64(rel)})
	}
	_, sanityErr = decodeTimeIndex(b)
	return entries, sanityErr
}

// ReadLeaderEpochCheckpoint reads the leader-epoch-checkpoint of the
// partition dir dir ("0", the count, then "epoch startOffset" lines). A
// missing file is no entries and no error.
func ReadLeaderEpochCheckpoint(fsys FS, dir string) ([]EpochEntry, error) {
	c, err := loadLeaderEpochCache(fsys, dir)
	if err != nil {
		return nil, err
	}
	return c.entries, nil
}

// ReadPartitionMetadata reads the partition.metadata of the partition dir
// dir and returns its topic ID; ok is false if the file is missing.
func ReadPartitionMetadata(fsys FS, dir string) (topicID [16]byte, ok bool, err error) {
	return readPartitionMetadata(fsys, dir)
}
