package raft

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moldau/moldau/log"
)

// Snapshot file suffixes, as Kafka's Snapshots class names them.
const (
	snapshotSuffix        = ".checkpoint"
	partialSnapshotSuffix = ".checkpoint.part"
	deletedSnapshotSuffix = ".checkpoint.deleted"
)

// OffsetAndEpoch identifies a snapshot as Kafka does: it holds every
// record below Offset (its end offset), and Epoch is the epoch of the
// record at Offset-1. In raft terms the snapshot's index is Offset-1 and
// its term Epoch.
type OffsetAndEpoch struct {
	Offset int64
	Epoch  int32
}

func (id OffsetAndEpoch) String() string { return fmt.Sprintf("%d-%d", id.Offset, id.Epoch) }

// snapshotFileName is "%020d-%010d.checkpoint".
func snapshotFileName(id OffsetAndEpoch) string {
	return fmt.Sprintf("%020d-%010d%s", id.Offset, id.Epoch, snapshotSuffix)
}

// parseSnapshotFileName parses a finished snapshot's file name.
func parseSnapshotFileName(name string) (OffsetAndEpoch, bool) {
	if !strings.HasSuffix(name, snapshotSuffix) {
		return OffsetAndEpoch{}, false
	}
	base := strings.TrimSuffix(name, snapshotSuffix)
	if len(base) != 31 || base[20] != '-' {
		return OffsetAndEpoch{}, false
	}
	off, err1 := strconv.ParseInt(base[:20], 10, 64)
	ep, err2 := strconv.ParseInt(base[21:], 10, 32)
	if err1 != nil || err2 != nil || off < 0 || ep < 0 {
		return OffsetAndEpoch{}, false
	}
	return OffsetAndEpoch{Offset: off, Epoch: int32(ep)}, true
}

// listSnapshots returns the finished snapshots in dir, oldest first.
func listSnapshots(fsys log.FS, dir string) ([]OffsetAndEpoch, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []OffsetAndEpoch
	for _, e := range ents {
		if id, ok := parseSnapshotFileName(e.Name()); ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Offset < ids[j].Offset })
	return ids, nil
}

// removeSnapshotLeftovers removes what unfinished writes and deletes left
// (Kafka deletes .checkpoint.part and .checkpoint.deleted files at
// start-up).
func removeSnapshotLeftovers(fsys log.FS, dir string) error {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, partialSnapshotSuffix) || strings.HasSuffix(name, deletedSnapshotSuffix) {
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// readWholeFile reads a file through fsys; a short read is
// io.ErrUnexpectedEOF.
func readWholeFile(fsys log.FS, name string) ([]byte, error) {
	b, err := log.ReadFile(fsys, name)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// checkSnapshot checks a snapshot's bytes: whole CRC-valid batches, a
// SnapshotHeader control record first and a SnapshotFooter last. It
// returns the header.
func checkSnapshot(data []byte) (snapshotHeader, error) {
	var hdr snapshotHeader
	first, footer := true, false
	rest, err := splitBatches(data, func(b []byte, h log.BatchHeader) error {
		if footer {
			return errors.New("raft: snapshot has batches after its footer")
		}
		batch, ctype, err := decodeBatch(b)
		if err != nil {
			return err
		}
		switch {
		case first:
			if !batch.Control || ctype != ControlSnapshotHeader || len(batch.Records) == 0 {
				return errors.New("raft: snapshot does not start with a SnapshotHeader record")
			}
			if hdr, err = parseSnapshotHeader(batch.Records[0]); err != nil {
				return err
			}
		case batch.Control && ctype == ControlSnapshotFooter:
			footer = true
		}
		first = false
		return nil
	})
	if err != nil {
		return hdr, err
	}
	if len(rest) != 0 || !footer {
		return hdr, errors.New("raft: snapshot ends without a SnapshotFooter record")
	}
	return hdr, nil
}

// SnapshotReader reads a snapshot (Kafka's SnapshotReader): the batches
// between its header and footer, in order.
type SnapshotReader struct {
	id   OffsetAndEpoch
	hdr  snapshotHeader
	data []byte
	pos  int
}

// newSnapshotReader checks data and returns a reader over it.
func newSnapshotReader(id OffsetAndEpoch, data []byte) (*SnapshotReader, error) {
	hdr, err := checkSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if hdr.EndOffset != id.Offset {
		return nil, fmt.Errorf("snapshot %s: its header says end offset %d", id, hdr.EndOffset)
	}
	return &SnapshotReader{id: id, hdr: hdr, data: data}, nil
}

// SnapshotID is the snapshot's end offset and epoch.
func (r *SnapshotReader) SnapshotID() OffsetAndEpoch { return r.id }

// LastContainedLogOffset is the offset of the last record the snapshot
// covers (SnapshotID().Offset - 1).
func (r *SnapshotReader) LastContainedLogOffset() int64 { return r.id.Offset - 1 }

// LastContainedLogTimestamp is the append time of that record.
func (r *SnapshotReader) LastContainedLogTimestamp() int64 { return r.hdr.LastContainedLogTimestamp }

// Next returns the next batch of records; ok is false after the last.
// Control batches (header, footer) are skipped.
func (r *SnapshotReader) Next() (b Batch, ok bool, err error) {
	for r.pos < len(r.data) {
		h, err := log.ParseBatchHeader(r.data[r.pos:])
		if err != nil {
			return Batch{}, false, err
		}
		n := h.TotalSize()
		if r.pos+n > len(r.data) {
			return Batch{}, false, io.ErrUnexpectedEOF
		}
		batch, _, err := decodeBatch(r.data[r.pos : r.pos+n])
		r.pos += n
		if err != nil {
			return Batch{}, false, err
		}
		if !batch.Control {
			return batch, true, nil
		}
	}
	return Batch{}, false, nil
}

// SnapshotWriter writes a snapshot (Kafka's RecordsSnapshotWriter): the
// state machine appends its records; they go to disk in batches of about
// maxBatchBytes, between a SnapshotHeader and a SnapshotFooter control
// batch. Batches inside a snapshot carry offsets from 0 and the snapshot's
// epoch. The file is written as "<name>.checkpoint.part", fsynced and
// renamed, so a crash never leaves a partial ".checkpoint".
type SnapshotWriter struct {
	fsys       log.FS
	dir        string
	id         OffsetAndEpoch
	appendTime int64 // the header's lastContainedLogTimestamp
	maxBatch   int

	f          log.File
	pos        int64
	nextOffset int64
	bb         *log.BatchBuilder
	buf        []byte
	err        error
}

// voters, if not nil, are written right after the header with a
// KRaftVersionRecord (kraft.version 1), as Kafka's snapshot writer does.
func newSnapshotWriter(fsys log.FS, dir string, id OffsetAndEpoch, h snapshotHeader, maxBatchBytes int, voters VoterSet) (*SnapshotWriter, error) {
	w := &SnapshotWriter{fsys: fsys, dir: dir, id: id, appendTime: h.LastContainedLogTimestamp, maxBatch: maxBatchBytes}
	f, err := fsys.OpenFile(w.partPath(), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w.f = f
	hdr := buildControlBatch(0, id.Epoch, h.LastContainedLogTimestamp, ControlSnapshotHeader, h.value())
	w.nextOffset = 1
	if err := w.write(hdr); err != nil {
		w.abort()
		return nil, err
	}
	if voters != nil {
		b := buildControlBatchOf(w.nextOffset, id.Epoch, h.LastContainedLogTimestamp,
			controlRecord{typ: ControlKRaftVersion, value: kraftVersionValue(1)}, controlRecord{typ: ControlVoters, value: votersValue(voters)})
		w.nextOffset += 2
		if err := w.write(b); err != nil {
			w.abort()
			return nil, err
		}
	}
	return w, nil
}

func (w *SnapshotWriter) partPath() string {
	return filepath.Join(w.dir, strings.TrimSuffix(snapshotFileName(w.id), snapshotSuffix)+partialSnapshotSuffix)
}

// SnapshotID is the id of the snapshot being written.
func (w *SnapshotWriter) SnapshotID() OffsetAndEpoch { return w.id }

// Append adds records (values) to the snapshot.
func (w *SnapshotWriter) Append(records ...[]byte) error {
	if w.err != nil {
		return w.err
	}
	for _, r := range records {
		if w.bb == nil {
			w.bb = log.NewBatchBuilder(w.nextOffset)
			w.bb.PartitionLeaderEpoch = w.id.Epoch
		}
		w.bb.Add(w.appendTime, nil, r)
		if w.bb.EstimatedSize() >= w.maxBatch {
			if err := w.flushBatch(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *SnapshotWriter) flushBatch() error {
	if w.bb == nil || w.bb.NumRecords() == 0 {
		return nil
	}
	var err error
	if w.buf, err = w.bb.Build(w.buf[:0]); err != nil {
		w.err = err
		return err
	}
	w.nextOffset += int64(w.bb.NumRecords())
	w.bb = nil
	return w.write(w.buf)
}

func (w *SnapshotWriter) write(b []byte) error {
	if _, err := w.f.WriteAt(b, w.pos); err != nil {
		w.err = err
		return err
	}
	w.pos += int64(len(b))
	return nil
}

// freeze writes the footer, fsyncs and renames the file into place, and
// fsyncs the dir (Kafka's freeze). It returns the snapshot's size.
func (w *SnapshotWriter) freeze() (int64, error) {
	if err := w.flushBatch(); err != nil {
		w.abort()
		return 0, err
	}
	if w.err != nil {
		w.abort()
		return 0, w.err
	}
	if err := w.write(buildControlBatch(w.nextOffset, w.id.Epoch, w.appendTime, ControlSnapshotFooter, snapshotFooterValue())); err != nil {
		w.abort()
		return 0, err
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err == nil {
		err = w.fsys.Rename(w.partPath(), filepath.Join(w.dir, snapshotFileName(w.id)))
	}
	if err == nil {
		err = w.fsys.SyncDir(w.dir)
	}
	if err != nil {
		w.abort()
		return 0, err
	}
	return w.pos, nil
}

// abort closes and removes the partial file.
func (w *SnapshotWriter) abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	_ = w.fsys.Remove(w.partPath())
}

// writeSnapshotFile writes a snapshot received whole from the leader,
// checked by the caller, through a .part file as SnapshotWriter does.
func writeSnapshotFile(fsys log.FS, dir string, id OffsetAndEpoch, data []byte) error {
	w := &SnapshotWriter{fsys: fsys, dir: dir, id: id}
	f, err := fsys.OpenFile(w.partPath(), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(w.partPath(), filepath.Join(dir, snapshotFileName(id)))
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		_ = fsys.Remove(w.partPath())
	}
	return err
}

// deleteSnapshot removes a snapshot file (renamed .deleted first, as Kafka
// does, so a crash in between leaves a file start-up removes).
func deleteSnapshot(fsys log.FS, dir string, id OffsetAndEpoch) error {
	path := filepath.Join(dir, snapshotFileName(id))
	del := strings.TrimSuffix(path, snapshotSuffix) + deletedSnapshotSuffix
	if err := fsys.Rename(path, del); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	return fsys.Remove(del)
}
