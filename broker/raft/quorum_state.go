package raft

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/moldau/moldau/log"
)

// quorumStateFile is Kafka's FileQuorumStateStore.DEFAULT_FILE_NAME.
const quorumStateFile = "quorum-state"

// quorumState is Kafka's QuorumStateData, version 0, as
// FileQuorumStateStore writes it: one line of JSON with a data_version.
// It holds etcd's HardState: term = leaderEpoch, vote = votedId (-1 for
// none). appliedOffset is written 0, as Kafka does: the commit index is not
// persisted here (see doc.go).
type quorumState struct {
	ClusterID     string        `json:"clusterId"`
	LeaderID      int32         `json:"leaderId"`
	LeaderEpoch   int32         `json:"leaderEpoch"`
	VotedID       int32         `json:"votedId"`
	AppliedOffset int64         `json:"appliedOffset"`
	CurrentVoters []quorumVoter `json:"currentVoters"`
	DataVersion   int16         `json:"data_version"`
}

type quorumVoter struct {
	VoterID int32 `json:"voterId"`
}

// readQuorumState reads the file; ok is false if it does not exist.
func readQuorumState(fsys log.FS, path string) (qs quorumState, ok bool, err error) {
	b, err := readWholeFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return qs, false, nil
	}
	if err != nil {
		return qs, false, err
	}
	qs.DataVersion = -1
	if err := json.Unmarshal(b, &qs); err != nil {
		return qs, false, fmt.Errorf("raft: malformed %s: %w", path, err)
	}
	if qs.DataVersion < 0 || qs.DataVersion > 1 {
		return qs, false, fmt.Errorf("raft: %s has data_version %d, only 0 and 1 are known", path, qs.DataVersion)
	}
	if qs.LeaderEpoch < -1 {
		return qs, false, fmt.Errorf("raft: %s has leaderEpoch %d", path, qs.LeaderEpoch)
	}
	return qs, true, nil
}

// writeQuorumState writes the file atomically (temp file, fsync, rename,
// dir fsync).
func writeQuorumState(fsys log.FS, path string, qs quorumState) error {
	b, err := json.Marshal(qs)
	if err != nil {
		return err
	}
	return log.WriteFileAtomic(fsys, path, append(b, '\n'))
}

// newQuorumState is the file's content for a term, vote and leader (Kafka
// ids, -1 for none).
func newQuorumState(epoch, voted, leader int32, voters []int32) quorumState {
	qs := quorumState{LeaderID: leader, LeaderEpoch: epoch, VotedID: voted}
	for _, v := range slices.Sorted(slices.Values(voters)) {
		qs.CurrentVoters = append(qs.CurrentVoters, quorumVoter{VoterID: v})
	}
	return qs
}
