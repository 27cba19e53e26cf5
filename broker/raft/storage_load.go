package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/moldau/moldau/log"
)

// loadedSnapshot is the newest snapshot found at start-up.
type loadedSnapshot struct {
	id   OffsetAndEpoch
	hdr  snapshotHeader
	data []byte
}

// openMetadataLog loads the metadata log dir (Kafka's
// KafkaMetadataLog.apply): the newest snapshot (older ones and partial
// writes are deleted), the log (recovered: a torn tail is truncated), made
// consistent with the snapshot (truncateToLatestSnapshot), and
// quorum-state.
func openMetadataLog(cfg Config, logger *slog.Logger) (*metadataLog, *loadedSnapshot, error) {
	dir := filepath.Join(cfg.Dir, MetadataTopicPartition.String())
	if err := cfg.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	snap, err := loadNewestSnapshot(cfg.FS, dir, logger)
	if err != nil {
		return nil, nil, err
	}
	lcfg := log.DefaultConfig()
	lcfg.SegmentBytes = cfg.SegmentBytes
	lcfg.RetentionMs, lcfg.RetentionBytes = -1, -1
	lcfg.FileDeleteDelayMs = 0
	lcfg.MaxMessageBytes = math.MaxInt32
	l, res, err := log.OpenLog(log.OpenLogParams{
		Dir: dir, TopicPartition: MetadataTopicPartition, Config: lcfg, FS: cfg.FS,
		Logger: logger, Now: cfg.Now,
	})
	if err != nil {
		return nil, nil, err
	}
	if res.TruncatedBytes > 0 {
		logger.Warn("truncated a torn tail of the metadata log", "bytes", res.TruncatedBytes, "log_end_offset", l.LogEndOffset())
	}
	static := staticVoterSet(cfg.Voters, cfg.ListenerName)
	s := &metadataLog{l: l, fsys: cfg.FS, dir: dir, logger: logger, static: static, base0: static, segmentBytes: int(cfg.SegmentBytes)}
	if snap != nil {
		if set, ok := snapshotVoters(snap.data); ok {
			s.base0, s.snapHasVoters = set, true
		}
	}
	if err := s.load(snap); err != nil {
		l.Close()
		return nil, nil, err
	}
	if err := s.loadHardState(cfg); err != nil {
		l.Close()
		return nil, nil, err
	}
	return s, snap, nil
}

// loadNewestSnapshot returns the newest snapshot in dir (nil if none) and
// deletes the older ones.
func loadNewestSnapshot(fsys log.FS, dir string, logger *slog.Logger) (*loadedSnapshot, error) {
	if err := removeSnapshotLeftovers(fsys, dir); err != nil {
		return nil, err
	}
	ids, err := listSnapshots(fsys, dir)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	newest := ids[len(ids)-1]
	data, err := readWholeFile(fsys, filepath.Join(dir, snapshotFileName(newest)))
	if err != nil {
		return nil, err
	}
	hdr, err := checkSnapshot(data)
	if err == nil && hdr.EndOffset != newest.Offset {
		err = fmt.Errorf("its header says end offset %d", hdr.EndOffset)
	}
	if err != nil {
		return nil, fmt.Errorf("raft: snapshot %s is corrupt: %w", snapshotFileName(newest), err)
	}
	for _, id := range ids[:len(ids)-1] {
		logger.Info("deleting older snapshot", "snapshot", id.String())
		if err := deleteSnapshot(fsys, dir, id); err != nil {
			return nil, err
		}
	}
	return &loadedSnapshot{id: newest, hdr: hdr, data: data}, nil
}

// load makes the log consistent with the snapshot and builds the index
// map and term index from the batch headers.
func (s *metadataLog) load(snap *loadedSnapshot) error {
	l := s.l
	if snap == nil {
		if l.LogStartOffset() != 0 {
			return fmt.Errorf("raft: the metadata log starts at offset %d but there is no snapshot", l.LogStartOffset())
		}
		s.base = 1
	} else {
		s.snap, s.snapIndex = snap.id, snap.hdr.LastContainedRaftIndex
		end := snap.id.Offset
		if l.LogStartOffset() > end {
			return fmt.Errorf("raft: the metadata log starts at offset %d, after the end %d of snapshot %s", l.LogStartOffset(), end, snap.id)
		}
		if l.LogEndOffset() < end {
			if err := l.TruncateFullyAndStartAt(end); err != nil {
				return err
			}
		}
	}
	for {
		bases, epochs, confs, err := scanBatchHeaders(l)
		if err != nil {
			return err
		}
		if snap != nil {
			ok, before := s.matchSnapshot(bases, epochs)
			if !ok {
				s.logger.Warn("the metadata log does not match the snapshot; starting it over after the snapshot", "snapshot", s.snap.String())
				if err := l.TruncateFullyAndStartAt(s.snap.Offset); err != nil {
					return err
				}
				continue
			}
			s.base = s.snapIndex + 1 - uint64(before)
		}
		s.offs = bases
		s.hist = nil
		for _, c := range confs {
			if idx := s.base + uint64(c.index); snap == nil || idx > s.snapIndex {
				s.hist = append(s.hist, voterEntry{index: idx, set: c.set})
			}
		}
		for i, e := range epochs {
			if len(s.terms) == 0 || s.terms[len(s.terms)-1].term != uint64(e) {
				s.terms = append(s.terms, termStart{term: uint64(e), start: s.base + uint64(i)})
			}
		}
		break
	}
	s.last = s.base + uint64(len(s.offs)) - 1
	s.setFirst()
	s.cacheStart = s.last + 1
	if snap != nil {
		l.UpdateHighWatermark(snap.id.Offset)
	}
	return nil
}

// matchSnapshot checks that a batch ends right before the snapshot's end
// offset with the snapshot's epoch (or that the log starts at it), and
// returns how many batches lie before it.
func (s *metadataLog) matchSnapshot(bases []int64, epochs []int32) (bool, int) {
	end := s.snap.Offset
	before := 0
	for before < len(bases) && bases[before] < end {
		before++
	}
	if before == 0 {
		return s.l.LogStartOffset() == end, 0
	}
	boundary := s.l.LogEndOffset()
	if before < len(bases) {
		boundary = bases[before]
	}
	if boundary != end || epochs[before-1] != s.snap.Epoch || uint64(before) > s.snapIndex {
		return false, 0
	}
	return true, before
}

// scanBatchHeaders reads every batch header of the log, in order, and
// the VotersRecords (confs: their position in bases).
func scanBatchHeaders(l *log.Log) (bases []int64, epochs []int32, confs []voterEntry, err error) {
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		fd, err := l.Read(off, readChunk, math.MaxInt64, true)
		if err != nil {
			return nil, nil, nil, err
		}
		chunk, err := fd.Records.ReadInto(nil)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(chunk) == 0 {
			return nil, nil, nil, fmt.Errorf("raft: no batch at offset %d before the log end %d", off, l.LogEndOffset())
		}
		if _, err := splitBatches(chunk, func(b []byte, h log.BatchHeader) error {
			if h.BaseOffset < off {
				return nil
			}
			if len(bases) > 0 && epochs[len(epochs)-1] > h.PartitionLeaderEpoch {
				return fmt.Errorf("raft: batch at offset %d has epoch %d after epoch %d", h.BaseOffset, h.PartitionLeaderEpoch, epochs[len(epochs)-1])
			}
			if h.IsControl() {
				if set, ok := votersOf(b); ok {
					confs = append(confs, voterEntry{index: uint64(len(bases)), set: set})
				}
			}
			bases = append(bases, h.BaseOffset)
			epochs = append(epochs, h.PartitionLeaderEpoch)
			off = h.NextOffset()
			return nil
		}); err != nil {
			return nil, nil, nil, err
		}
	}
	return bases, epochs, confs, nil
}

// loadHardState reads quorum-state into etcd's HardState. The commit index
// starts at the snapshot's (see doc.go).
func (s *metadataLog) loadHardState(cfg Config) error {
	qs, ok, err := readQuorumState(cfg.FS, filepath.Join(s.dir, quorumStateFile))
	if err != nil {
		return err
	}
	var term, vote uint64
	if ok {
		term = uint64(max(qs.LeaderEpoch, 0))
		if qs.VotedID >= 0 {
			vote = raftID(qs.VotedID)
		}
	}
	if lt, err := s.Term(s.last); err == nil && lt > term {
		if !cfg.observer { // an observer keeps no quorum-state
			s.logger.Warn("quorum-state is behind the log; raising the epoch", "quorum_state_epoch", term, "log_epoch", lt)
		}
		term, vote = lt, 0
	} else if err != nil {
		return errors.Join(errors.New("raft: no term for the last entry"), err)
	}
	commit := uint64(0)
	if s.snap.Offset > 0 {
		commit = s.snapIndex
	}
	s.hs = &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
	return nil
}
