package replica

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// A follower of a tiered partition whose log ends before the leader's
// local log start gets OFFSET_MOVED_TO_TIERED_STORAGE: what lies between
// is only in remote storage. It starts over past the leader's local log
// start with the state below rebuilt from the store (Kafka's
// TierStateMachine.start and buildRemoteLogAuxState):
//
//  1. the leader's local log start and its epoch (ListOffsets -4) and its
//     log start (-2);
//  2. the epoch of the offset just below the local start: the leader's
//     answer to OffsetForLeaderEpoch(epoch-1) if that epoch ends past it
//     (epochs without records are skipped so), else the local start's;
//  3. the finished remote segment holding that offset in that epoch, from
//     the remote log metadata (none: the build fails and is retried after
//     replica.fetch.backoff.ms, as Kafka's RemoteStorageException);
//  4. its LEADER_EPOCH and PRODUCER_SNAPSHOT indexes, read before the log
//     is touched; then the log starts over at the segment's end plus one
//     with those as its leader-epoch cache and producer state, and the
//     leader's log start below (log.Log.RestoreRemoteLogAuxState);
//  5. the log start offsets are checkpointed at once (not in Kafka, whose
//     log loads a start missing from the checkpoint as 0; Moldau's as the
//     first local offset, which would drop the epochs below it).
//
// A segment copied without one of the indexes (the store lost it) is
// still used: that part of the state starts empty, with a warning, as
// before the indexes were read.

// errRemoteLogAuxState is the failure of a build that waits for the
// remote metadata or the tiered-storage configuration (Kafka's
// RemoteStorageException from buildRemoteLogAuxState).
var errRemoteLogAuxState = errors.New("couldn't build the state from remote storage")

// handleMovedToTiered answers OFFSET_MOVED_TO_TIERED_STORAGE (Kafka's
// TierStateMachine.start).
func (t *ReplicaFetcherThread) handleMovedToTiered(ctx context.Context, s sentPartition) error {
	p := s.st.p
	tp, l := p.TopicPartition, p.Log
	localStart, epoch, err := t.leaderOffset(ctx, tp, s.st.leaderEpoch, -4)
	if err != nil {
		return err
	}
	earliest, _, err := t.leaderOffset(ctx, tp, s.st.leaderEpoch, -2)
	if err != nil {
		return err
	}
	if localStart <= l.LogEndOffset() {
		return nil // the leader's local start moved back: fetch again
	}
	t.m.log.Info("a follower's log ends before the leader's local log start: rebuilding the state below it from remote storage",
		"partition", tp.String(), "log_end", l.LogEndOffset(), "leader_local_log_start", localStart, "leader_log_start", earliest)
	err = t.buildRemoteLogAuxState(ctx, p, s.st.leaderEpoch, localStart, epoch, earliest)
	if rlm := t.m.remoteLogManager(); rlm != nil {
		rlm.metrics.builtAuxState(tp.Topic, err)
	}
	if err == nil && t.m.cfg.Logs != nil {
		// The log start below the local one is checkpointed at once:
		// loaded without it, the log would drop the epochs below.
		if cerr := t.m.cfg.Logs.CheckpointLogStartOffsets(); cerr != nil {
			t.m.log.Warn("checkpointing log start offsets failed", "partition", tp.String(), "err", cerr)
		}
	}
	return err
}

// buildRemoteLogAuxState starts p's log over past the leader's local log
// start localStart (written in epoch), with the leader epochs and producer
// state below it from the remote segment that ends there (Kafka's
// buildRemoteLogAuxState).
func (t *ReplicaFetcherThread) buildRemoteLogAuxState(ctx context.Context, p *Partition, currentLeaderEpoch int32, localStart int64, epoch int32, leaderLogStart int64) error {
	tp, l := p.TopicPartition, p.Log
	rlm := t.m.remoteLogManager()
	if rlm == nil || !l.Tiered() {
		return fmt.Errorf("%w for %s: remote log storage is not enabled here yet", errRemoteLogAuxState, tp)
	}
	previous := localStart - 1
	target := epoch
	if epoch != 0 {
		e, end, err := t.fetchEarlierEpochEndOffset(ctx, tp, currentLeaderEpoch, epoch)
		if err != nil {
			return err
		}
		if end > previous {
			target = e
		}
	}
	m, ok, err := rlm.FetchRemoteLogSegmentMetadata(remoteTopicIdPartition(p), target, previous)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w for %s: no remote segment holds offset %d in epoch %d (leader's local log start %d, log start %d, current leader epoch %d)",
			errRemoteLogAuxState, tp, previous, target, localStart, leaderLogStart, currentLeaderEpoch)
	}
	// The fetcher thread waits for the store: bounded as a request to
	// the leader is.
	ctx, cancel := context.WithTimeout(ctx, t.m.cfg.Replication.SocketTimeout)
	defer cancel()
	epochs, err := rlm.readLeaderEpochCheckpoint(ctx, m)
	if err := t.unlessAbsent(err, tp, m, "the follower's leader epochs start at its local log start"); err != nil {
		return err
	}
	snapshot, err := rlm.fetchProducerSnapshot(ctx, m)
	if err := t.unlessAbsent(err, tp, m, "the follower's producer state starts empty at its local log start"); err != nil {
		return err
	}
	return l.RestoreRemoteLogAuxState(m.EndOffset+1, leaderLogStart, epochs, snapshot)
}

// unlessAbsent is err, but nil (logged, with what follows) when the
// segment lacks the index read.
func (t *ReplicaFetcherThread) unlessAbsent(err error, tp TopicPartition, m *remote.RemoteLogSegmentMetadata, consequence string) error {
	if !errors.Is(err, remote.ErrResourceNotFound) {
		return err
	}
	t.m.log.Warn("a remote segment lacks an index: "+consequence, "partition", tp.String(), "segment", m.ID.ID.String(), "err", err)
	return nil
}

// fetchEarlierEpochEndOffset asks the leader for the epoch before epoch
// and its end offset (OffsetForLeaderEpoch of epoch-1, as a replica):
// the largest epoch at or below it and where it ends.
func (t *ReplicaFetcherThread) fetchEarlierEpochEndOffset(ctx context.Context, tp TopicPartition, currentLeaderEpoch, epoch int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = t.m.cfg.NodeID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tp.Partition, currentLeaderEpoch, epoch-1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := t.sendToLeader(ctx, req)
	if err != nil {
		return -1, -1, err
	}
	resp := r.(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1, fmt.Errorf("%w: no OffsetForLeaderEpoch answer for %s", kerr.UnknownServerError, tp)
	}
	ep := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(ep.ErrorCode); err != nil {
		return -1, -1, err
	}
	return ep.LeaderEpoch, ep.EndOffset, nil
}

// FetchRemoteLogSegmentMetadata returns tp's finished remote segment
// holding offset within epochForOffset's range in it; false if none
// (Kafka's RemoteLogManager.fetchRemoteLogSegmentMetadata).
func (r *RemoteLogManager) FetchRemoteLogSegmentMetadata(tp remote.TopicIdPartition, epochForOffset int32, offset int64) (*remote.RemoteLogSegmentMetadata, bool, error) {
	return r.rlmm.RemoteLogSegmentMetadata(tp, epochForOffset, offset)
}

// maxAuxIndexBytes bounds the LEADER_EPOCH and PRODUCER_SNAPSHOT indexes
// read (a snapshot has 46 bytes a producer).
const maxAuxIndexBytes = 64 << 20

// readIndex reads one of a segment's indexes whole.
func (r *RemoteLogManager) readIndex(ctx context.Context, m *remote.RemoteLogSegmentMetadata, typ remote.IndexType) ([]byte, error) {
	rc, err := r.rsm.FetchIndex(ctx, m, typ)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxAuxIndexBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the %s index of %s: %w", typ, m.ID, err)
	}
	if len(b) > maxAuxIndexBytes {
		return nil, fmt.Errorf("the %s index of %s is larger than %d bytes", typ, m.ID, maxAuxIndexBytes)
	}
	return b, nil
}

// readLeaderEpochCheckpoint reads a segment's LEADER_EPOCH index: the
// leader-epoch checkpoint up to the segment's end when it was copied.
func (r *RemoteLogManager) readLeaderEpochCheckpoint(ctx context.Context, m *remote.RemoteLogSegmentMetadata) ([]log.EpochEntry, error) {
	b, err := r.readIndex(ctx, m, remote.IndexLeaderEpoch)
	if err != nil {
		return nil, err
	}
	epochs, err := log.ParseLeaderEpochCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("the %s index of %s: %w", remote.IndexLeaderEpoch, m.ID, err)
	}
	return epochs, nil
}

// fetchProducerSnapshot reads a segment's PRODUCER_SNAPSHOT index: the
// producer state at the segment's end, checked to decode.
func (r *RemoteLogManager) fetchProducerSnapshot(ctx context.Context, m *remote.RemoteLogSegmentMetadata) ([]byte, error) {
	b, err := r.readIndex(ctx, m, remote.IndexProducerSnapshot)
	if err != nil {
		return nil, err
	}
	if _, err := log.DecodeProducerSnapshot(b); err != nil {
		return nil, fmt.Errorf("the %s index of %s: %w", remote.IndexProducerSnapshot, m.ID, err)
	}
	return b, nil
}
