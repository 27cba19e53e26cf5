package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sort"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/moldau/moldau/log"
)

// metadataLog is the raft storage on the log package (Kafka's
// KafkaMetadataLog): it implements etcd's raft.Storage over
// __cluster_metadata-0 and the snapshot files, and persists what a Ready
// hands over. One raft entry is one record batch; raft index i is the i-th
// batch of the quorum's history, and offsets count records as in Kafka
// (see doc.go).
//
// Every method runs on the raft goroutine. The apply goroutine reads l
// (safe for concurrent use) and snapshot files, never these fields.
type metadataLog struct {
	l      *log.Log
	fsys   log.FS
	dir    string
	logger *slog.Logger
	// static is controller.quorum.voters as a voter set (kraft.version
	// 0); base the voter set at snapIndex (the snapshot's VotersRecord,
	// else static); hist the VotersRecords in the log after it, oldest
	// first. The newest is the quorum's configuration (Kafka's
	// KRaftControlRecordStateMachine); see voters.go.
	static VoterSet
	base0  VoterSet
	hist   []voterEntry
	// convertedConf are the last offsets of the conf-change proposals the
	// last append turned into VotersRecord batches (the leader's own).
	convertedConf []int64
	// segmentBytes is metadata.log.segment.bytes: append writes the
	// batches of one call in runs no larger, as the log refuses a write
	// larger than a segment.
	segmentBytes int

	hs *pb.HardState // as persisted in quorum-state
	// snap is the newest snapshot (zero Offset: none); snapIndex its raft
	// index; snapData caches its bytes once read for a follower.
	snap      OffsetAndEpoch
	snapIndex uint64
	snapData  []byte
	// base is the raft index of the first batch in the log (snapIndex+1
	// when the log is empty after a snapshot), offs[i-base] the base
	// offset of the batch of index i, for i in [base, last].
	base uint64
	offs []int64
	// first is etcd's FirstIndex: entries from it on are available, and
	// the term of first-1 is known (the snapshot's, or the first batch's
	// when the log starts before the snapshot).
	first uint64
	last  uint64 // etcd's LastIndex
	// terms maps each term to the index it starts at, over [base, last].
	terms []termStart
	// cache holds the newest entries, [cacheStart, last], so that commits
	// and appends to followers do not read the disk.
	cache      []*pb.Entry
	cacheStart uint64
	cacheBytes int
	// storageErr is the first I/O error met by a raft.Storage method;
	// those can only return raft's sentinel errors, and raft panics on
	// some of them, so the node reports this one.
	storageErr error
	buf        []byte
	// snapHasVoters: the snapshot held a VotersRecord.
	snapHasVoters bool
}

type termStart struct{ term, start uint64 }

const (
	cacheMaxBytes   = 8 << 20
	cacheMaxEntries = 1 << 16
	readChunk       = 1 << 20
)

var _ raft.Storage = (*metadataLog)(nil)

type voterEntry struct {
	index uint64
	set   VoterSet
}

// InitialState implements raft.Storage: the configuration is the newest
// voter set in the snapshot and log (see doc.go, Voters).
func (s *metadataLog) InitialState() (*pb.HardState, *pb.ConfState, error) {
	set, _ := s.latestVoters()
	return s.hs, confStateOf(set), nil
}

// latestVoters returns the newest voter set and the index it was written
// at (the snapshot's index, or 0, for the base set).
func (s *metadataLog) latestVoters() (VoterSet, uint64) {
	if k := len(s.hist); k > 0 {
		return s.hist[k-1].set, s.hist[k-1].index
	}
	if s.snap.Offset > 0 {
		return s.base0, s.snapIndex
	}
	return s.base0, 0
}

// votersAt is the voter set as of index i (i >= snapIndex).
func (s *metadataLog) votersAt(i uint64) VoterSet {
	set := s.base0
	for _, e := range s.hist {
		if e.index <= i {
			set = e.set
		}
	}
	return set
}

// kraftVersion is 1 once a VotersRecord exists, else 0.
func (s *metadataLog) kraftVersion() int16 {
	if len(s.hist) > 0 || s.snapHasVoters {
		return 1
	}
	return 0
}

// voterIDs are the newest voter set's ids.
func (s *metadataLog) voterIDs() []int32 {
	set, _ := s.latestVoters()
	return set.IDs()
}

func confStateOf(set VoterSet) *pb.ConfState {
	cs := &pb.ConfState{AutoLeave: new(false)}
	for _, v := range set {
		cs.Voters = append(cs.Voters, raftID(v.ID))
	}
	return cs
}

// setSnapshotVoters makes the voters at the snapshot the base and drops
// the records it covers.
func (s *metadataLog) setSnapshotVoters(set VoterSet, has bool) {
	if has {
		s.base0, s.snapHasVoters = set, true
	} else {
		for _, e := range s.hist {
			if e.index <= s.snapIndex {
				s.snapHasVoters = true
			}
		}
		s.base0 = s.votersAt(s.snapIndex)
	}
	s.hist = slices.DeleteFunc(s.hist, func(e voterEntry) bool { return e.index <= s.snapIndex })
}

// FirstIndex implements raft.Storage.
func (s *metadataLog) FirstIndex() (uint64, error) { return s.first, nil }

// LastIndex implements raft.Storage.
func (s *metadataLog) LastIndex() (uint64, error) { return s.last, nil }

// Term implements raft.Storage.
func (s *metadataLog) Term(i uint64) (uint64, error) {
	switch {
	case i+1 < s.first:
		return 0, raft.ErrCompacted
	case i > s.last:
		return 0, raft.ErrUnavailable
	case s.snap.Offset > 0 && i == s.snapIndex:
		return uint64(s.snap.Epoch), nil
	case i == 0:
		return 0, nil
	}
	return s.termAt(i)
}

// termAt looks i up in the term index.
func (s *metadataLog) termAt(i uint64) (uint64, error) {
	k := sort.Search(len(s.terms), func(k int) bool { return s.terms[k].start > i }) - 1
	if k < 0 {
		return 0, raft.ErrCompacted
	}
	return s.terms[k].term, nil
}

// offsetOf is the base offset of the batch of index i, for i in
// [base, last+1] (last+1: the log end offset).
func (s *metadataLog) offsetOf(i uint64) int64 {
	if i < s.base {
		return s.l.LogStartOffset()
	}
	if k := i - s.base; k < uint64(len(s.offs)) {
		return s.offs[k]
	}
	return s.l.LogEndOffset()
}

// indexOf is the raft index of the batch starting at offset, if one does.
func (s *metadataLog) indexOf(offset int64) (uint64, bool) {
	k := sort.Search(len(s.offs), func(k int) bool { return s.offs[k] >= offset })
	if k < len(s.offs) && s.offs[k] == offset {
		return s.base + uint64(k), true
	}
	return 0, false
}

// Snapshot implements raft.Storage: the newest snapshot file, whole.
func (s *metadataLog) Snapshot() (*pb.Snapshot, error) {
	if s.snap.Offset == 0 {
		return nil, raft.ErrSnapshotTemporarilyUnavailable
	}
	if s.snapData == nil {
		data, err := readWholeFile(s.fsys, filepath.Join(s.dir, snapshotFileName(s.snap)))
		if err != nil {
			// raft retries; the node stops on the error (handleReady).
			s.noteStorageErr(fmt.Errorf("reading snapshot %s for a follower: %w", s.snap, err))
			return nil, raft.ErrSnapshotTemporarilyUnavailable
		}
		s.snapData = data
	}
	return &pb.Snapshot{
		Data: s.snapData,
		Metadata: &pb.SnapshotMetadata{
			Index:     new(s.snapIndex),
			Term:      new(uint64(s.snap.Epoch)),
			ConfState: confStateOf(s.votersAt(s.snapIndex)),
		},
	}, nil
}

// Entries implements raft.Storage: entries [lo, hi), at least one, at most
// maxSize bytes of data. Recent ones come from the cache, older ones are
// read from the batches on disk.
func (s *metadataLog) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	if lo < s.first {
		return nil, raft.ErrCompacted
	}
	if hi > s.last+1 || lo >= hi {
		return nil, raft.ErrUnavailable
	}
	if lo >= s.cacheStart && len(s.cache) > 0 {
		src := s.cache[lo-s.cacheStart : hi-s.cacheStart]
		return limitEntries(append([]*pb.Entry(nil), src...), maxSize), nil
	}
	var out []*pb.Entry
	var size uint64
	idx := lo
	for idx < hi {
		off := s.offsetOf(idx)
		fd, err := s.l.Read(off, readChunk, math.MaxInt64, true)
		var chunk []byte
		if err == nil {
			chunk, err = fd.Records.ReadInto(nil)
		}
		if err == nil && len(chunk) == 0 {
			err = fmt.Errorf("no data before the log end %d", s.l.LogEndOffset())
		}
		if err != nil {
			s.noteStorageErr(fmt.Errorf("reading __cluster_metadata-0 at offset %d (index %d): %w", off, idx, err))
			return nil, raft.ErrUnavailable
		}
		_, err = splitBatches(chunk, func(b []byte, h log.BatchHeader) error {
			if h.BaseOffset < off {
				return nil // the chunk starts with an earlier batch
			}
			if h.BaseOffset != s.offsetOf(idx) {
				return fmt.Errorf("batch at offset %d, index %d expected at %d", h.BaseOffset, idx, s.offsetOf(idx))
			}
			if len(out) > 0 && size+uint64(len(b)) > maxSize {
				return errStop
			}
			size += uint64(len(b))
			out = append(out, &pb.Entry{
				Term: new(uint64(h.PartitionLeaderEpoch)), Index: new(idx),
				Type: entryType(b, h).Enum(), Data: b,
			})
			idx++
			if idx >= hi {
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			break
		}
		if err != nil {
			s.noteStorageErr(fmt.Errorf("reading __cluster_metadata-0 at offset %d: %w", off, err))
			return nil, raft.ErrUnavailable
		}
	}
	return out, nil
}

var errStop = errors.New("stop")

// limitEntries keeps at least one entry and at most maxSize bytes of data.
func limitEntries(ents []*pb.Entry, maxSize uint64) []*pb.Entry {
	var size uint64
	for i, e := range ents {
		size += uint64(len(e.GetData()))
		if i > 0 && size > maxSize {
			return ents[:i]
		}
	}
	return ents
}

func (s *metadataLog) noteStorageErr(err error) {
	if s.storageErr == nil {
		s.storageErr = err
	}
	s.logger.Error("metadata log read failed", "err", err)
}

// append persists the entries of a Ready (not yet fsynced: see sync).
// Entries at or below the last index first truncate the log there (a
// conflict with the leader's log). Each entry's batch is written at the
// log end offset, with partition leader epoch = term; an empty entry (the
// one a new leader appends) is written as a LeaderChangeMessage control
// batch, and its Data set to that batch before any message carries it, so
// every voter writes the same bytes. A batch whose base offset is already
// set (by the leader) must land where the leader put it.
func (s *metadataLog) append(ents []*pb.Entry, self int32, now int64) error {
	if len(ents) == 0 {
		return nil
	}
	first := ents[0].GetIndex()
	if first < s.first {
		return fmt.Errorf("raft: asked to overwrite entry %d below the first index %d", first, s.first)
	}
	if first <= s.last {
		if err := s.truncateTo(first); err != nil {
			return err
		}
	} else if first != s.last+1 {
		return fmt.Errorf("raft: entry %d does not follow the last index %d", first, s.last)
	}
	buf := s.buf[:0]
	next := s.l.LogEndOffset()
	offs, terms := s.offs, s.terms
	hist := s.hist
	s.convertedConf = s.convertedConf[:0]
	for i, e := range ents {
		idx, term := e.GetIndex(), e.GetTerm()
		if idx != first+uint64(i) || term > math.MaxInt32 || term < s.lastTermOr(terms, 0) {
			return fmt.Errorf("raft: entry %d (term %d) out of order", idx, term)
		}
		if len(e.GetData()) == 0 {
			e.Data = buildControlBatch(next, int32(term), now, ControlLeaderChange, leaderChangeValue(self, s.voterIDs()))
		}
		converted := false
		if e.GetType() == pb.EntryConfChangeV2 && !isBatch(e.Data) {
			data, err := s.confChangeBatch(e.Data, next, int32(term), now, hist)
			if err != nil {
				return fmt.Errorf("raft: entry %d: %w", idx, err)
			}
			e.Data, converted = data, true
		}
		h, err := log.ParseBatchHeader(e.Data)
		if err != nil || h.TotalSize() != len(e.Data) {
			return fmt.Errorf("raft: entry %d does not hold one record batch: %v", idx, err)
		}
		switch {
		case h.BaseOffset == 0 && next != 0:
			log.SetBaseOffset(e.Data, next) // a proposal of this leader
		case h.BaseOffset != next:
			return fmt.Errorf("raft: entry %d has its batch at offset %d, the log is at %d: diverged offsets", idx, h.BaseOffset, next)
		}
		if h.PartitionLeaderEpoch != int32(term) {
			log.SetPartitionLeaderEpoch(e.Data, int32(term))
		}
		offs = append(offs, next)
		if n := len(terms); n == 0 || terms[n-1].term != term {
			terms = append(terms, termStart{term: term, start: idx})
		}
		if converted {
			s.convertedConf = append(s.convertedConf, h.LastOffset()+next-h.BaseOffset)
		}
		if h.IsControl() {
			if set, ok := votersOf(e.Data); ok {
				hist = append(hist, voterEntry{index: idx, set: set})
			}
		}
		next += int64(h.LastOffsetDelta) + 1
		if len(buf) > 0 && len(buf)+len(e.Data) > s.segmentBytes {
			// Batches that each fit a segment may not fit one
			// together (a follower's entries from a leader with small
			// segments): write those so far first.
			if _, err := s.l.AppendAsFollower(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		buf = append(buf, e.Data...)
	}
	s.buf = buf
	if _, err := s.l.AppendAsFollower(buf); err != nil {
		return err
	}
	s.offs, s.terms, s.hist = offs, terms, hist
	s.last = first + uint64(len(ents)) - 1
	s.cacheAppend(ents)
	return nil
}

func (s *metadataLog) lastTermOr(terms []termStart, def uint64) uint64 {
	if len(terms) == 0 {
		return def
	}
	return terms[len(terms)-1].term
}

// cacheAppend adds the entries to the cache and trims it.
func (s *metadataLog) cacheAppend(ents []*pb.Entry) {
	first := ents[0].GetIndex()
	if len(s.cache) == 0 || s.cacheStart+uint64(len(s.cache)) != first {
		s.cache, s.cacheStart, s.cacheBytes = nil, first, 0
	}
	for _, e := range ents {
		s.cache = append(s.cache, e)
		s.cacheBytes += len(e.GetData())
	}
	n := 0
	for n < len(s.cache)-1 && (s.cacheBytes > cacheMaxBytes || len(s.cache)-n > cacheMaxEntries) {
		s.cacheBytes -= len(s.cache[n].GetData())
		n++
	}
	if n > 0 {
		s.cache = append([]*pb.Entry(nil), s.cache[n:]...)
		s.cacheStart += uint64(n)
	}
}

// truncateTo drops the entries from index on (a conflict with the
// leader).
func (s *metadataLog) truncateTo(index uint64) error {
	if index < s.base || index > s.last {
		return fmt.Errorf("raft: cannot truncate to index %d outside [%d, %d]", index, s.base, s.last)
	}
	off := s.offsetOf(index)
	if _, err := s.l.TruncateTo(off); err != nil {
		return err
	}
	if leo := s.l.LogEndOffset(); leo != off {
		return fmt.Errorf("raft: truncating to offset %d left the log ending at %d", off, leo)
	}
	s.offs = s.offs[:index-s.base]
	s.last = index - 1
	s.hist = slices.DeleteFunc(s.hist, func(e voterEntry) bool { return e.index >= index })
	for len(s.terms) > 0 && s.terms[len(s.terms)-1].start >= index {
		s.terms = s.terms[:len(s.terms)-1]
	}
	if index <= s.cacheStart {
		s.cache, s.cacheStart, s.cacheBytes = nil, index, 0
	} else if n := index - s.cacheStart; n < uint64(len(s.cache)) {
		for _, e := range s.cache[n:] {
			s.cacheBytes -= len(e.GetData())
		}
		s.cache = s.cache[:n:n]
	}
	return nil
}

// sync fsyncs the log.
func (s *metadataLog) sync() error { return s.l.Flush() }

// installSnapshot persists a snapshot received from the leader: the file
// first, then the log starts over at its end offset. loaded is called in
// between, once the file is durable: the listener must have the snapshot
// queued before the log it may be reading goes.
func (s *metadataLog) installSnapshot(snap *pb.Snapshot, loaded func(*loadedSnapshot)) (OffsetAndEpoch, snapshotHeader, error) {
	md := snap.GetMetadata()
	hdr, err := checkSnapshot(snap.GetData())
	if err != nil {
		return OffsetAndEpoch{}, hdr, fmt.Errorf("snapshot from the leader: %w", err)
	}
	if md.GetTerm() > math.MaxInt32 || hdr.LastContainedRaftIndex != md.GetIndex() || hdr.EndOffset < 0 {
		return OffsetAndEpoch{}, hdr, fmt.Errorf("snapshot from the leader: index %d term %d, its header says index %d", md.GetIndex(), md.GetTerm(), hdr.LastContainedRaftIndex)
	}
	id := OffsetAndEpoch{Offset: hdr.EndOffset, Epoch: int32(md.GetTerm())}
	if err := writeSnapshotFile(s.fsys, s.dir, id, snap.GetData()); err != nil {
		return id, hdr, err
	}
	loaded(&loadedSnapshot{id: id, hdr: hdr, data: snap.GetData()})
	if err := s.l.TruncateFullyAndStartAt(id.Offset); err != nil {
		return id, hdr, err
	}
	old := s.snap
	s.snap, s.snapIndex, s.snapData = id, md.GetIndex(), snap.GetData()
	s.hist = nil
	if set, ok := snapshotVoters(snap.GetData()); ok {
		s.base0, s.snapHasVoters = set, true
	} else if !s.snapHasVoters {
		s.base0 = s.static
	}
	s.base, s.offs, s.terms = s.snapIndex+1, nil, nil
	s.first, s.last = s.snapIndex+1, s.snapIndex
	s.cache, s.cacheStart, s.cacheBytes = nil, s.first, 0
	if old.Offset > 0 && old != id {
		if err := deleteSnapshot(s.fsys, s.dir, old); err != nil {
			s.logger.Warn("deleting old snapshot failed", "snapshot", old.String(), "err", err)
		}
	}
	return id, hdr, nil
}

// snapshotCreated records a snapshot the state machine wrote, deletes
// older ones, and, if the log is over retentionBytes, deletes its segments
// wholly before the snapshot (Kafka's KafkaMetadataLog.maybeClean).
func (s *metadataLog) snapshotCreated(id OffsetAndEpoch, index uint64, retentionBytes int64) error {
	if id.Offset <= s.snap.Offset || index > s.last || index < s.first-1 {
		// Not newer than what we have (a leader's snapshot came
		// meanwhile), or no longer matching the log.
		if id != s.snap {
			return deleteSnapshot(s.fsys, s.dir, id)
		}
		return nil
	}
	old := s.snap
	s.snap, s.snapIndex, s.snapData = id, index, nil
	s.setSnapshotVoters(nil, false)
	if old.Offset > 0 {
		if err := deleteSnapshot(s.fsys, s.dir, old); err != nil {
			s.logger.Warn("deleting old snapshot failed", "snapshot", old.String(), "err", err)
		}
	}
	if retentionBytes < 0 || s.l.Size() <= retentionBytes {
		return nil
	}
	newStart := int64(-1)
	for _, b := range s.l.SegmentBaseOffsets() {
		if b <= id.Offset {
			newStart = b
		}
	}
	if newStart <= s.l.LogStartOffset() {
		return nil
	}
	newBase, ok := s.indexOf(newStart)
	if !ok && newStart != s.l.LogEndOffset() {
		return fmt.Errorf("raft: segment base %d is not a batch boundary", newStart)
	}
	if !ok {
		newBase = s.last + 1
	}
	if s.l.HighWatermark() < newStart {
		s.l.UpdateHighWatermark(newStart)
	}
	if _, err := s.l.DeleteRecordsBefore(newStart); err != nil {
		return err
	}
	s.offs = append([]int64(nil), s.offs[newBase-s.base:]...)
	s.base = newBase
	s.setFirst()
	s.logger.Info("deleted metadata log segments before the snapshot", "snapshot", id.String(), "log_start_offset", newStart, "size", s.l.Size())
	return nil
}

// setFirst derives the first index from base and the snapshot: right after
// the snapshot if the log starts there, else one past the first batch
// (whose term is then known from the log).
func (s *metadataLog) setFirst() {
	switch {
	case s.snap.Offset > 0 && s.base == s.snapIndex+1:
		s.first = s.base
	case s.snap.Offset == 0 && s.base == 1:
		s.first = 1
	default:
		s.first = s.base + 1
	}
	k := sort.Search(len(s.terms), func(k int) bool { return s.terms[k].start > s.base }) - 1
	if k > 0 {
		s.terms = append([]termStart(nil), s.terms[k:]...)
	}
	if len(s.terms) > 0 && s.terms[0].start < s.base {
		s.terms[0].start = s.base
	}
	if s.cacheStart < s.first {
		n := min(s.first-s.cacheStart, uint64(len(s.cache)))
		for _, e := range s.cache[:n] {
			s.cacheBytes -= len(e.GetData())
		}
		s.cache = append([]*pb.Entry(nil), s.cache[n:]...)
		s.cacheStart += n
	}
}

// isBatch reports whether b is one whole record batch.
func isBatch(b []byte) bool {
	h, err := log.ParseBatchHeader(b)
	return err == nil && h.TotalSize() == len(b)
}

// entryType is the etcd entry type of a batch: a control batch holding a
// VotersRecord is a configuration change (etcd counts them before an
// election), everything else a normal entry.
func entryType(b []byte, h log.BatchHeader) pb.EntryType {
	if h.IsControl() {
		if _, ok := votersOf(b); ok {
			return pb.EntryConfChangeV2
		}
	}
	return pb.EntryNormal
}

// confChangeBatch turns a conf-change proposal (etcd's marshalled
// ConfChangeV2, whose Context is the new VotersRecord) into the control
// batch the log holds: a KRaftVersionRecord first if the quorum was still
// at kraft.version 0, then the VotersRecord.
func (s *metadataLog) confChangeBatch(data []byte, offset int64, epoch int32, now int64, hist []voterEntry) ([]byte, error) {
	cc := &pb.ConfChangeV2{}
	if err := proto.Unmarshal(data, cc); err != nil {
		return nil, fmt.Errorf("malformed conf change: %w", err)
	}
	if _, err := parseVoters(cc.GetContext()); err != nil {
		return nil, err
	}
	var recs []controlRecord
	if len(hist) == 0 && s.kraftVersion() == 0 {
		recs = append(recs, controlRecord{typ: ControlKRaftVersion, value: kraftVersionValue(1)})
	}
	recs = append(recs, controlRecord{typ: ControlVoters, value: cc.GetContext()})
	return buildControlBatchOf(offset, epoch, now, recs...), nil
}

// snapshotVoters returns the VotersRecord of a snapshot (right after its
// header), if it has one.
func snapshotVoters(data []byte) (VoterSet, bool) {
	var set VoterSet
	found := false
	_, _ = splitBatches(data, func(b []byte, h log.BatchHeader) error {
		if !h.IsControl() {
			return errStop
		}
		if v, ok := votersOf(b); ok {
			set, found = v, true
			return errStop
		}
		return nil
	})
	return set, found
}
