package raft

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A voter removed while it runs goes on as an observer (KIP-853; Kafka's
// KafkaRaftClient moves a replica missing from the voter set to the
// observer state). etcd's leader stops sending to a voter once it applied
// the voter's removal, so the removed node may never learn that the
// removal committed. The raft goroutine checks at every tick; it turns
// the node into an observer when the newest VotersRecord in its log
// (committed or not) lacks this node and either
//
//   - this node applied that removal (committed) and knows a leader
//     other than itself: it has nothing left to do as a voter, or
//   - it heard no leader (no append, heartbeat, snapshot or timeout-now)
//     for removedVoterTimeout: the leader stopped sending to it, or is
//     gone.
//
// A leader that removes itself hands its leadership off when the removal
// commits (handOffLeadership) and steps down; it then turns observer as
// soon as a new leader reaches it, or after removedVoterTimeout, so its
// sender has had time to deliver the hand-off.
//
// The transition (becomeObserver, on the raft goroutine, which returns
// after it): the node says it is an observer (the transport refuses
// messages, appends and voter changes fail with NOT_LEADER, State is
// "observer"); the voter scope is cancelled, which stops the transport's
// senders and the voter updater; the log is truncated to the commit index
// (entries after it were never known committed here, and an observer's
// log holds only committed batches, so it never diverges from the
// leader's); and the observer goroutine starts with promote set, so a
// later AddVoter makes it a voter again. The RawNode is dropped with the
// raft goroutine.

// removedVoterTimeout is how long a voter missing from the newest voter
// set waits to hear from a leader before it turns observer: twice the
// election timeout, as Kafka's follower gives up on its leader after
// controller.quorum.fetch.timeout.ms (2 s by default, twice
// controller.quorum.election.timeout.ms).
func (c Config) removedVoterTimeout() time.Duration { return 2 * c.ElectionTimeout }

// fromLeader reports whether a message of type t is one only a leader
// sends.
func fromLeader(t pb.MessageType) bool {
	switch t {
	case pb.MsgApp, pb.MsgHeartbeat, pb.MsgSnap, pb.MsgTimeoutNow:
		return true
	}
	return false
}

// removedFromVoters reports why this voter should now turn observer, if
// it should (raft goroutine, at a tick, between Readies).
func (n *Node) removedFromVoters(now time.Time) (string, bool) {
	latest, _ := n.ml.latestVoters()
	st := n.rn.BasicStatus()
	if st.RaftState == raft.StateLeader {
		// A leader whose removal is not committed yet goes on leading.
		n.leaderContact = now
		return "", false
	}
	if _, ok := latest.Get(n.cfg.NodeID); ok {
		return "", false
	}
	if _, voter := n.conf.Get(n.cfg.NodeID); !voter && st.Lead != raft.None && st.Lead != n.id {
		return "applied its own removal", true
	}
	if silent := now.Sub(n.leaderContact); silent >= n.cfg.removedVoterTimeout() {
		return fmt.Sprintf("not in the newest voter set and heard from no leader for %v", silent.Round(time.Millisecond)), true
	}
	return "", false
}

// becomeObserver turns this voter into an observer (raft goroutine, which
// returns after it; see the file comment).
func (n *Node) becomeObserver(reason string) error {
	ml := n.ml
	n.obsMode.Store(true)
	n.voter.cancel()
	dropped := 0
	if n.committed < ml.last {
		dropped = int(ml.last - n.committed)
		if err := ml.truncateTo(n.committed + 1); err != nil {
			return fmt.Errorf("raft: truncating the metadata log to its commit index %d: %w", n.committed, err)
		}
		if err := ml.sync(); err != nil {
			return fmt.Errorf("raft: fsyncing the metadata log: %w", err)
		}
	}
	leo := ml.l.LogEndOffset()
	ml.l.UpdateHighWatermark(leo)
	n.rn = nil // dropped with the raft goroutine; a new one if added back
	n.conf, n.confIndex = ml.latestVoters()
	n.inflight, n.epochStart = nil, -1
	clear(n.contact)
	clear(n.caughtUp)
	n.mu.Lock()
	if n.st.leader == n.cfg.NodeID {
		n.st.leader = -1
	}
	n.st.role, n.st.voters = raft.StateFollower, nil
	clear(n.st.observers)
	n.st.hw = max(n.st.hw, leo)
	n.st.leo, n.st.logStart, n.st.conf, n.st.kraftVersion = leo, ml.l.LogStartOffset(), n.conf, ml.kraftVersion()
	hw, epoch, leader := n.st.hw, n.st.epoch, n.st.leader
	n.notifyHighWatermark() // observers fetching from this node hear it no longer leads
	n.mu.Unlock()
	n.resolveWaiters(hw, epoch, false)
	n.promote = true
	o := newObserver(n)
	n.obs.Store(o)
	n.logger.Info("removed from the voters; continuing as an observer", "reason", reason, "voters", n.conf.IDs(),
		"leader", leader, "epoch", epoch, "commit_index", n.committed, "truncated_batches", dropped, "log_end_offset", leo)
	n.g.Go(o.run)
	return nil
}

// refuseVoterRequests fails the appends and voter changes that reached
// the queues before this node turned observer (observer goroutine).
func (n *Node) refuseVoterRequests() {
	for {
		le := n.LeaderAndEpoch()
		select {
		case p := <-n.proposals:
			p.done <- proposalResult{err: &NotLeaderError{LeaderID: le.LeaderID, Epoch: le.Epoch, Asked: p.epoch}}
		case vc := <-n.confReqs:
			var err error = &NotLeaderError{LeaderID: le.LeaderID, Epoch: le.Epoch, Asked: le.Epoch}
			if vc.update != nil {
				err = fmt.Errorf("%w: node %d is not a voter (leader %d, epoch %d)", kerr.NotLeaderForPartition, n.cfg.NodeID, le.LeaderID, le.Epoch)
			}
			vc.done <- voterChangeResult{err: err}
		default:
			return
		}
	}
}
