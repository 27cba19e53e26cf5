package raft

import (
	"fmt"
	"log/slog"
	"slices"

	"go.etcd.io/raft/v3"

	"github.com/moldau/moldau/log"
)

// ReplicaState is one voter as the leader sees it (Kafka's
// DescribeQuorumResponse ReplicaState). Timestamps are ms, -1 if unknown.
type ReplicaState struct {
	ReplicaID    int32
	DirectoryID  [16]byte
	LogEndOffset int64 // -1 if unknown
	// LastFetchTimestamp is when the leader last heard from the voter
	// (an append or heartbeat response; etcd pushes where KRaft fetches).
	LastFetchTimestamp int64
	// LastCaughtUpTimestamp is the last such time at which the voter had
	// every entry of the leader's log.
	LastCaughtUpTimestamp int64
}

// QuorumInfo is what DescribeQuorum reports (Kafka's
// DescribeQuorumResponse partition data).
type QuorumInfo struct {
	LeaderID      int32
	LeaderEpoch   int32
	HighWatermark int64
	Voters        []ReplicaState
	// Observers are the metadata observers (broker-only nodes) that
	// fetched from this leader since it was elected; LogEndOffset is
	// their last fetch offset.
	Observers []ReplicaState
}

// DescribeQuorum returns the quorum's state. As in Kafka only the leader
// knows the voters' progress: elsewhere it fails with a *NotLeaderError.
func (n *Node) DescribeQuorum() (QuorumInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.err != nil {
		return QuorumInfo{}, n.err
	}
	if n.st.leader != n.cfg.NodeID || n.st.voters == nil {
		return QuorumInfo{}, &NotLeaderError{LeaderID: n.st.leader, Epoch: n.st.epoch, Asked: n.st.epoch}
	}
	info := QuorumInfo{
		LeaderID: n.st.leader, LeaderEpoch: n.st.epoch, HighWatermark: n.st.hw,
		Voters: append([]ReplicaState(nil), n.st.voters...),
	}
	for id, o := range n.st.observers {
		if _, voter := n.st.conf.Get(id); voter {
			continue // an observer since added to the voters
		}
		rs := ReplicaState{ReplicaID: id, LogEndOffset: o.leo, LastFetchTimestamp: o.lastFetch.UnixMilli(), LastCaughtUpTimestamp: -1}
		if o.leo >= n.st.hw {
			rs.LastCaughtUpTimestamp = rs.LastFetchTimestamp
		}
		info.Observers = append(info.Observers, rs)
	}
	slices.SortFunc(info.Observers, func(a, b ReplicaState) int { return int(a.ReplicaID) - int(b.ReplicaID) })
	return info, nil
}

// State names the node's raft role (Kafka's current-state metric:
// "leader", "candidate", "follower"; etcd's pre-candidate is "prospective").
func (n *Node) State() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.isObserver() {
		return "observer"
	}
	return roleName(n.st.role)
}

func roleName(r raft.StateType) string {
	switch r {
	case raft.StateLeader:
		return "leader"
	case raft.StateCandidate:
		return "candidate"
	case raft.StatePreCandidate:
		return "prospective"
	default:
		return "follower"
	}
}

// parseHeader parses an entry's batch header.
func parseHeader(b []byte) (log.BatchHeader, error) { return log.ParseBatchHeader(b) }

// raftLogger adapts slog to etcd raft's Logger. Fatal and Panic panic; the
// raft goroutine recovers and stops the node with an error.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)                 { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(format string, v ...any) { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r raftLogger) Info(v ...any)                  { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Infof(format string, v ...any)  { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r raftLogger) Warning(v ...any)               { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.l.Warn(fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any)                 { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) { r.l.Error(fmt.Sprintf(format, v...)) }
func (r raftLogger) Fatal(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
func (r raftLogger) Panic(v ...any)                 { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...any) { panic(fmt.Sprintf(format, v...)) }
