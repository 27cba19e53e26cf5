package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Producer state snapshots, Kafka's "%020d.snapshot" files
// (ProducerStateManager.writeSnapshot/readSnapshot): the ProducerSnapshot
// message, version 1, not flexible, big-endian:
//
//	version                int16   1
//	crc                    uint32  CRC-32C of everything after this field
//	count                  int32   number of entries
//	entries, 46 bytes each:
//	  producerId             int64
//	  epoch                  int16
//	  lastSequence           int32   -1 if no batch is remembered
//	  lastOffset             int64   last offset of the last batch, -1 if none
//	  offsetDelta            int32   lastOffset - firstOffset of the last batch
//	  timestamp              int64   the producer's last timestamp
//	  coordinatorEpoch       int32
//	  currentTxnFirstOffset  int64   -1: no open transaction
//
// A snapshot named N holds the state of every batch below offset N. Only
// the last batch of each producer is kept, as in Kafka, so after a restart
// a retry is recognised as a duplicate only if it is of that batch.
// Entries are written in producer id order (Kafka: hash map order).

const (
	producerSnapshotVersion   = 1
	producerSnapshotCRCOffset = 2
	producerSnapshotHeader    = 10 // version, crc, count
	producerSnapshotEntrySize = 46
)

// SnapshotEntry is one entry of a producer snapshot file.
type SnapshotEntry struct {
	ProducerID            int64
	Epoch                 int16
	LastSequence          int32
	LastOffset            int64
	OffsetDelta           int32
	Timestamp             int64
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
}

// EncodeProducerSnapshot encodes entries as a snapshot file.
func EncodeProducerSnapshot(entries []SnapshotEntry) []byte {
	b := make([]byte, producerSnapshotHeader, producerSnapshotHeader+len(entries)*producerSnapshotEntrySize)
	be := binary.BigEndian
	be.PutUint16(b, producerSnapshotVersion)
	be.PutUint32(b[6:], uint32(len(entries)))
	for _, e := range entries {
		b = be.AppendUint64(b, uint64(e.ProducerID))
		b = be.AppendUint16(b, uint16(e.Epoch))
		b = be.AppendUint32(b, uint32(e.LastSequence))
		b = be.AppendUint64(b, uint64(e.LastOffset))
		b = be.AppendUint32(b, uint32(e.OffsetDelta))
		b = be.AppendUint64(b, uint64(e.Timestamp))
		b = be.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	be.PutUint32(b[producerSnapshotCRCOffset:], crc32.Checksum(b[producerSnapshotCRCOffset+4:], crc32c))
	return b
}

// errCorruptSnapshot is Kafka's CorruptSnapshotException.
var errCorruptSnapshot = errors.New("corrupt producer snapshot")

// DecodeProducerSnapshot decodes a snapshot file, checking its version,
// CRC and size.
func DecodeProducerSnapshot(b []byte) ([]SnapshotEntry, error) {
	be := binary.BigEndian
	if len(b) < producerSnapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", errCorruptSnapshot, len(b), producerSnapshotHeader)
	}
	if v := int16(be.Uint16(b)); v != producerSnapshotVersion {
		return nil, fmt.Errorf("%w: unknown file version %d", errCorruptSnapshot, v)
	}
	if stored, got := be.Uint32(b[producerSnapshotCRCOffset:]), crc32.Checksum(b[producerSnapshotCRCOffset+4:], crc32c); stored != got {
		return nil, fmt.Errorf("%w: stored crc %d, computed crc %d", errCorruptSnapshot, stored, got)
	}
	n := int32(be.Uint32(b[6:]))
	if n < 0 || int64(n)*producerSnapshotEntrySize != int64(len(b)-producerSnapshotHeader) {
		return nil, fmt.Errorf("%w: %d entries do not fill %d bytes", errCorruptSnapshot, n, len(b)-producerSnapshotHeader)
	}
	out := make([]SnapshotEntry, 0, n)
	for p := producerSnapshotHeader; p < len(b); p += producerSnapshotEntrySize {
		e := b[p:]
		out = append(out, SnapshotEntry{
			ProducerID:            int64(be.Uint64(e[0:])),
			Epoch:                 int16(be.Uint16(e[8:])),
			LastSequence:          int32(be.Uint32(e[10:])),
			LastOffset:            int64(be.Uint64(e[14:])),
			OffsetDelta:           int32(be.Uint32(e[22:])),
			Timestamp:             int64(be.Uint64(e[26:])),
			CoordinatorEpoch:      int32(be.Uint32(e[34:])),
			CurrentTxnFirstOffset: int64(be.Uint64(e[38:])),
		})
	}
	return out, nil
}

// snapshotEntries is the state as snapshot entries, by producer id.
func (m *producerStateManager) snapshotEntries() []SnapshotEntry {
	out := make([]SnapshotEntry, 0, len(m.producers))
	for pid, e := range m.producers {
		se := SnapshotEntry{
			ProducerID: pid, Epoch: e.epoch, LastSequence: -1, LastOffset: -1,
			Timestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnFirstOffset: e.currentTxnFirstOffset,
		}
		if e.n > 0 {
			last := e.batches[e.n-1]
			se.LastSequence, se.LastOffset, se.OffsetDelta = last.lastSeq, last.lastOffset, int32(last.lastOffset-last.firstOffset)
		}
		out = append(out, se)
	}
	slices.SortFunc(out, func(a, b SnapshotEntry) int { return cmpInt64(a.ProducerID, b.ProducerID) })
	return out
}

// entryFromSnapshot is the producerEntry a snapshot entry describes.
func entryFromSnapshot(se SnapshotEntry) producerEntry {
	e := emptyProducerEntry()
	e.epoch, e.coordinatorEpoch, e.lastTimestamp = se.Epoch, se.CoordinatorEpoch, se.Timestamp
	if se.CurrentTxnFirstOffset >= 0 {
		e.currentTxnFirstOffset = se.CurrentTxnFirstOffset
	}
	if se.LastOffset >= 0 {
		e.push(batchMeta{
			firstSeq: decrementSequence(se.LastSequence, se.OffsetDelta), lastSeq: se.LastSequence,
			firstOffset: se.LastOffset - int64(se.OffsetDelta), lastOffset: se.LastOffset, timestamp: se.Timestamp,
		})
	}
	return e
}

func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, FilenamePrefixFromOffset(offset)+SnapshotFileSuffix)
}

// writeSnapshotFile writes a snapshot (fsynced if sync). A failed write
// leaves no file behind.
func writeSnapshotFile(fsys FS, path string, data []byte, sync bool) error {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(path)
	}
	return err
}

// takeSnapshotAt writes the producer state as the snapshot of offset if
// none is newer (Kafka's takeSnapshot: only when lastMapOffset passed
// lastSnapOffset). It returns the path written ("" if none). l.mu held.
func (l *Log) takeSnapshotAt(offset int64, sync bool) (string, error) {
	if offset <= l.lastSnap {
		return "", nil
	}
	path := snapshotPath(l.dir, offset)
	start := time.Now()
	if err := writeSnapshotFile(l.fsys, path, EncodeProducerSnapshot(l.pstate.snapshotEntries()), sync); err != nil {
		return "", fmt.Errorf("%w: writing producer snapshot %s: %w", kerr.KafkaStorageError, path, err)
	}
	i := sort.Search(len(l.snapshots), func(i int) bool { return l.snapshots[i] >= offset })
	if i == len(l.snapshots) || l.snapshots[i] != offset {
		l.snapshots = slices.Insert(l.snapshots, i, offset)
	}
	l.lastSnap = offset
	l.logger.Debug("wrote producer snapshot", "partition", l.tp.String(), "offset", offset,
		"producers", l.pstate.numProducers(), "took", time.Since(start))
	return path, nil
}

// deleteSnapshotNow removes the snapshot of offset; l.mu held (or loading).
func (l *Log) deleteSnapshotNow(offset int64) {
	i := sort.Search(len(l.snapshots), func(i int) bool { return l.snapshots[i] >= offset })
	if i == len(l.snapshots) || l.snapshots[i] != offset {
		return
	}
	l.snapshots = slices.Delete(l.snapshots, i, i+1)
	if err := l.fsys.Remove(snapshotPath(l.dir, offset)); err != nil && !os.IsNotExist(err) {
		l.logger.Warn("removing producer snapshot failed", "partition", l.tp.String(), "offset", offset, "err", err)
	}
}

// deleteSnapshotAsync renames the snapshot of a deleted segment ".deleted"
// and removes it after file.delete.delay.ms, with the segment (Kafka's
// deleteProducerSnapshots with asyncDelete). l.mu held.
func (l *Log) deleteSnapshotAsync(offset int64) {
	i := sort.Search(len(l.snapshots), func(i int) bool { return l.snapshots[i] >= offset })
	if i == len(l.snapshots) || l.snapshots[i] != offset {
		return
	}
	l.snapshots = slices.Delete(l.snapshots, i, i+1)
	path := snapshotPath(l.dir, offset)
	if err := l.fsys.Rename(path, path+DeletedFileSuffix); err != nil {
		if !os.IsNotExist(err) {
			l.logger.Warn("renaming deleted producer snapshot failed", "partition", l.tp.String(), "offset", offset, "err", err)
		}
		return
	}
	del := func() {
		if err := l.fsys.Remove(path + DeletedFileSuffix); err != nil && !os.IsNotExist(err) {
			l.logger.Warn("removing deleted producer snapshot failed", "partition", l.tp.String(), "offset", offset, "err", err)
		}
	}
	if l.scheduleDelete == nil {
		del()
		return
	}
	l.scheduleDelete(time.Duration(l.cfg.FileDeleteDelayMs)*time.Millisecond, del)
}

// removeStraySnapshots deletes snapshots that belong to no segment, but
// keeps the newest one if it is past every segment's base offset (the
// one written at clean shutdown): Kafka's removeStraySnapshots.
func (l *Log) removeStraySnapshots() {
	bases := make(map[int64]bool, len(l.segs))
	maxBase := int64(-1)
	for _, s := range l.segs {
		bases[s.baseOffset] = true
		maxBase = max(maxBase, s.baseOffset)
	}
	var strays []int64
	for _, off := range l.snapshots {
		if !bases[off] {
			strays = append(strays, off)
		}
	}
	if len(strays) == 0 {
		return
	}
	keep := strays[len(strays)-1]
	for _, off := range strays[:len(strays)-1] {
		l.deleteSnapshotNow(off)
	}
	if maxBase >= 0 && keep < maxBase {
		l.deleteSnapshotNow(keep)
	}
}

// loadLatestSnapshot loads the newest readable snapshot at or below
// maxOffset into the (empty) producer state, skipping expired producers;
// a corrupt one is deleted and the next older one tried (Kafka's
// loadFromSnapshot). It returns the snapshot's offset, or -1.
func (l *Log) loadLatestSnapshot(maxOffset int64) int64 {
	nowMs, expMs := l.now().UnixMilli(), l.pidExpirationMs()
	for i := len(l.snapshots) - 1; i >= 0; i-- {
		off := l.snapshots[i]
		if off > maxOffset {
			continue
		}
		b, err := ReadFile(l.fsys, snapshotPath(l.dir, off))
		var entries []SnapshotEntry
		if err == nil {
			entries, err = DecodeProducerSnapshot(b)
		}
		if err != nil {
			l.logger.Warn("failed to load producer snapshot; deleting it", "partition", l.tp.String(), "offset", off, "err", err)
			l.deleteSnapshotNow(off)
			continue
		}
		for _, se := range entries {
			e := entryFromSnapshot(se)
			if !isExpired(&e, nowMs, expMs) {
				l.pstate.loadEntry(se.ProducerID, e)
			}
		}
		l.logger.Debug("loaded producer snapshot", "partition", l.tp.String(), "offset", off, "producers", l.pstate.numProducers())
		return off
	}
	return -1
}

// SnapshotOffsets returns the offsets of the producer snapshot files.
func (l *Log) SnapshotOffsets() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.snapshots)
}
