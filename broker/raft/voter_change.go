package raft

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Voter changes (KIP-853; Kafka's AddVoterHandler and RemoveVoterHandler).
// The leader proposes an etcd ConfChangeV2 whose Context is the new
// VotersRecord; the storage writes it as a control batch holding that
// VotersRecord (and a KRaftVersionRecord, kraft.version 1, with the first
// change of a quorum started from controller.quorum.voters). Every voter
// applies it to etcd raft (ApplyConfChange) when it commits, one change at
// a time; the transport learns the new voter's endpoints from it; an
// observer it names becomes a voter. A leader that removes itself hands
// its leadership to the most caught-up voter first, then steps down
// (StepDownOnRemoval).

// voterChangeCaughtUpWindow is how recently an observer must have fetched
// up to the leader's high watermark to be added.
const voterChangeCaughtUpWindow = 5 * time.Second

type voterChange struct {
	add       *Voter // nil: remove (or update)
	removeID  int32
	removeDir [16]byte
	// update: the voter's new endpoints and kraft.version range
	// (UpdateRaftVoter, voter_update.go), at the leader epoch the
	// request names.
	update      *Voter
	updateEpoch int32
	done        chan voterChangeResult // buffered 1
}

type voterChangeResult struct {
	epoch  int32
	offset int64
	err    error
}

// AddVoter adds v to the voter set (Kafka's AddRaftVoter): v must be an
// observer that fetched up to the high watermark lately, this node the
// leader that has committed in its epoch, and no other change in flight
// (REQUEST_TIMED_OUT otherwise; DUPLICATE_VOTER if v.ID is a voter). It
// returns once the new VotersRecord is committed.
func (n *Node) AddVoter(ctx context.Context, v Voter) error {
	if len(v.Endpoints) == 0 {
		return fmt.Errorf("%w: voter %d has no endpoints", kerr.InvalidRequest, v.ID)
	}
	return n.changeVoters(ctx, &voterChange{add: &v})
}

// RemoveVoter removes voter id (Kafka's RemoveRaftVoter): VOTER_NOT_FOUND
// if it is not a voter or has another directory id (a zero directory id
// matches any). It returns once the new VotersRecord is committed. A
// leader that removes itself steps down once it commits.
func (n *Node) RemoveVoter(ctx context.Context, id int32, dir [16]byte) error {
	return n.changeVoters(ctx, &voterChange{removeID: id, removeDir: dir})
}

func (n *Node) changeVoters(ctx context.Context, vc *voterChange) error {
	if n.isObserver() {
		le := n.LeaderAndEpoch()
		return &NotLeaderError{LeaderID: le.LeaderID, Epoch: le.Epoch, Asked: le.Epoch}
	}
	vc.done = make(chan voterChangeResult, 1)
	stop := n.g.Stopping()
	select {
	case n.confReqs <- vc:
	case <-stop:
		return n.stoppedErr()
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", kerr.RequestTimedOut, ctx.Err())
	}
	var r voterChangeResult
	select {
	case r = <-vc.done:
	case <-stop:
		return n.stoppedErr()
	}
	if r.err != nil || vc.update != nil {
		return r.err // Kafka answers an update once appended
	}
	if err := n.WaitForCommit(ctx, r.epoch, r.offset); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: the new voter set is not committed yet: %v", kerr.RequestTimedOut, ctx.Err())
		}
		return err
	}
	return nil
}

// proposeVoterChange checks and proposes a change (raft goroutine).
func (n *Node) proposeVoterChange(vc *voterChange) {
	if vc.update != nil {
		n.proposeVoterUpdate(vc)
		return
	}
	st := n.rn.BasicStatus()
	epoch := int32(st.GetTerm())
	fail := func(err error) { vc.done <- voterChangeResult{err: err} }
	if st.RaftState != raft.StateLeader {
		fail(&NotLeaderError{LeaderID: nodeID(st.Lead), Epoch: epoch, Asked: epoch})
		return
	}
	if n.epochStart < 0 || n.ml.offsetOf(n.committed+1) <= n.epochStart {
		fail(fmt.Errorf("%w: the leader has not committed an offset in its epoch %d yet", kerr.RequestTimedOut, epoch))
		return
	}
	latest, latestIdx := n.ml.latestVoters()
	if n.confWait != nil || latestIdx > n.committed {
		fail(fmt.Errorf("%w: a voter change is in flight (one at a time)", kerr.RequestTimedOut))
		return
	}
	var next VoterSet
	cs := &pb.ConfChangeSingle{}
	if v := vc.add; v != nil {
		if _, ok := latest.Get(v.ID); ok {
			fail(fmt.Errorf("%w: node %d is already a voter", kerr.DuplicateVoter, v.ID))
			return
		}
		n.mu.Lock()
		o, seen := n.st.observers[v.ID]
		n.mu.Unlock()
		now := n.cfg.Now()
		if !seen || now.Sub(o.caughtUp) > voterChangeCaughtUpWindow {
			fail(fmt.Errorf("%w: node %d is not an observer caught up with the leader", kerr.RequestTimedOut, v.ID))
			return
		}
		if v.MaxKRaftVersion == 0 {
			v.MinKRaftVersion, v.MaxKRaftVersion = 0, 1
		}
		next = latest.with(*v)
		cs.Type, cs.NodeId = pb.ConfChangeAddNode.Enum(), new(raftID(v.ID))
	} else {
		cur, ok := latest.Get(vc.removeID)
		if !ok || (vc.removeDir != [16]byte{} && cur.DirectoryID != [16]byte{} && cur.DirectoryID != vc.removeDir) {
			fail(fmt.Errorf("%w: node %d (directory %x) is not a voter", kerr.VoterNotFound, vc.removeID, vc.removeDir))
			return
		}
		if len(latest) == 1 {
			fail(fmt.Errorf("%w: cannot remove the only voter", kerr.InvalidRequest))
			return
		}
		next = latest.without(vc.removeID)
		cs.Type, cs.NodeId = pb.ConfChangeRemoveNode.Enum(), new(raftID(vc.removeID))
	}
	n.proposeConf(vc, next, cs, epoch)
}

// proposeConf proposes the change cs to etcd with next, the new voter
// set, as its VotersRecord; vc is answered once it is in the log.
func (n *Node) proposeConf(vc *voterChange, next VoterSet, cs *pb.ConfChangeSingle, epoch int32) {
	cc := &pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{cs}, Context: votersValue(next)}
	if err := n.rn.ProposeConfChange(cc); err != nil {
		vc.done <- voterChangeResult{err: fmt.Errorf("%w: the voter change was dropped: %v", kerr.RequestTimedOut, err)}
		return
	}
	n.confWait = vc
	n.logger.Info("proposed a voter change", "voters", next.IDs(), "epoch", epoch)
}

// confAppended answers the change waiting for its offset once its batch
// is in the log (persist, raft goroutine).
func (n *Node) confAppended(leader bool, epoch int32) {
	if n.confWait == nil || !leader || len(n.ml.convertedConf) == 0 {
		return
	}
	n.confWait.done <- voterChangeResult{epoch: epoch, offset: n.ml.convertedConf[0]}
	n.confWait = nil
}

// voterChangeAppended fails a proposed change etcd did not append (it
// appends a proposal in the Ready right after it).
func (n *Node) voterChangeAppended() {
	if n.confWait != nil {
		n.confWait.done <- voterChangeResult{err: fmt.Errorf("%w: the voter change was not appended", kerr.RequestTimedOut)}
		n.confWait = nil
	}
}

// applyConfEntries applies the committed VotersRecords newer than the
// configuration in force (raft goroutine, before Advance).
func (n *Node) applyConfEntries(ents []*pb.Entry) {
	for _, e := range ents {
		if e.GetIndex() <= n.confIndex {
			continue
		}
		h, err := parseHeader(e.GetData())
		if err != nil || !h.IsControl() {
			continue
		}
		if set, ok := votersOf(e.GetData()); ok {
			n.applyVoters(set, e.GetIndex())
		}
	}
}

// applyVoters makes set, committed at index, the configuration.
func (n *Node) applyVoters(set VoterSet, index uint64) {
	add, remove := confChangeBetween(n.conf, set)
	for _, id := range remove {
		if id == n.cfg.NodeID && n.rn.BasicStatus().RaftState == raft.StateLeader {
			n.handOffLeadership(set)
		}
	}
	for _, id := range add {
		n.rn.ApplyConfChange(&pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(raftID(id))}}})
	}
	for _, id := range remove {
		n.rn.ApplyConfChange(&pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeRemoveNode.Enum(), NodeId: new(raftID(id))}}})
	}
	n.logger.Info("voter set changed", "voters", set.IDs(), "added", add, "removed", remove, "index", index)
	n.setConf(set, index)
}

// handOffLeadership asks the most caught-up remaining voter to campaign
// at once (etcd's MsgTimeoutNow), so the quorum does not wait an election
// timeout after this leader removed itself and stepped down.
func (n *Node) handOffLeadership(set VoterSet) {
	st := n.rn.Status()
	var best uint64
	var match uint64
	for _, v := range set {
		rid := raftID(v.ID)
		if pr, ok := st.Progress[rid]; ok && rid != n.id && (best == 0 || pr.Match > match) {
			best, match = rid, pr.Match
		}
	}
	if best != 0 {
		n.rn.TransferLeader(best)
	}
}

// setConf records the configuration in force and tells the transport.
func (n *Node) setConf(set VoterSet, index uint64) {
	n.conf, n.confIndex = set, index
	n.tr.setPeers(set)
	n.mu.Lock()
	n.st.conf, n.st.kraftVersion = set, n.ml.kraftVersion()
	n.mu.Unlock()
}

// Voters returns the voter set in force on this node.
func (n *Node) Voters() VoterSet {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.st.conf
}

// voterAddr is the controller listener address of voter id.
func (n *Node) voterAddr(id int32) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if v, ok := n.st.conf.Get(id); ok {
		if a := v.Addr(n.cfg.ListenerName); a != "" {
			return a, true
		}
	}
	return "", false
}

func (n *Node) isObserver() bool { return n.obsMode.Load() }

// errPromoted stops the observer goroutine: a committed VotersRecord
// names this node, which now starts as a voter on the same log.
var errPromoted = errors.New("raft: added to the voters")
