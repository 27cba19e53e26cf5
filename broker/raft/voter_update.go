package raft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// UpdateRaftVoter (KIP-853; Kafka's UpdateVoterHandler and the follower's
// side of KafkaRaftClient). A voter whose entry in the voter set differs
// from what it is now (its controller listeners' endpoints, its directory
// id where the set has none, its kraft.version range) asks the leader to
// write a new VotersRecord with the same id and directory id and its
// current endpoints. So a controller restarted on another port is found
// again: the leader commits the new set with the other voters and then
// sends to the new address. The voter checks every UpdateVoterPeriod,
// and sooner after a retriable answer; a leader whose own entry is stale
// writes the new set itself at its next check (newer Kafka leaders write
// it with the start of their epoch). Nothing is sent at kraft.version 0
// (no VotersRecord yet).

// UpdateVoter is the leader's side of UpdateRaftVoter: v replaces the
// voter of its id (and directory id, if the set has one) in a new
// VotersRecord. epoch is the request's CurrentLeaderEpoch. It returns
// once the record is in the leader's log, not committed, as Kafka
// answers. Errors, in Kafka's order: FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH for another epoch, NOT_LEADER_OR_FOLLOWER off the
// leader, INVALID_REQUEST without a directory id, without an endpoint on
// the controller listener or with a bad version range,
// REQUEST_TIMED_OUT while a voter change is pending or before the leader
// committed in its epoch, UNSUPPORTED_VERSION at kraft.version 0,
// INVALID_REQUEST if v does not support the finalized kraft.version,
// VOTER_NOT_FOUND if v is not a voter.
func (n *Node) UpdateVoter(ctx context.Context, epoch int32, v Voter) error {
	if n.isObserver() {
		le := n.LeaderAndEpoch()
		return fmt.Errorf("%w: node %d is not a voter (leader %d, epoch %d)", kerr.NotLeaderForPartition, n.cfg.NodeID, le.LeaderID, le.Epoch)
	}
	return n.changeVoters(ctx, &voterChange{update: &v, updateEpoch: epoch})
}

// proposeVoterUpdate checks and proposes an update (raft goroutine). To
// etcd it is a change that adds a voter already there, which changes
// nothing but rides the one-change-at-a-time machinery of the others.
func (n *Node) proposeVoterUpdate(vc *voterChange) {
	v := vc.update
	st := n.rn.BasicStatus()
	epoch := int32(st.GetTerm())
	latest, latestIdx := n.ml.latestVoters()
	var err error
	switch kv := n.ml.kraftVersion(); {
	case vc.updateEpoch < epoch:
		err = fmt.Errorf("%w: epoch %d, the leader's is %d", kerr.FencedLeaderEpoch, vc.updateEpoch, epoch)
	case vc.updateEpoch > epoch:
		err = fmt.Errorf("%w: epoch %d, this node's is %d", kerr.UnknownLeaderEpoch, vc.updateEpoch, epoch)
	case st.RaftState != raft.StateLeader:
		err = fmt.Errorf("%w: node %d does not lead epoch %d (leader %d)", kerr.NotLeaderForPartition, n.cfg.NodeID, epoch, nodeID(st.Lead))
	case v.DirectoryID == [16]byte{}:
		err = fmt.Errorf("%w: voter %d has no directory id", kerr.InvalidRequest, v.ID)
	case !slices.ContainsFunc(v.Endpoints, func(e Endpoint) bool { return e.Name == n.cfg.ListenerName }):
		err = fmt.Errorf("%w: voter %d has no endpoint on listener %s", kerr.InvalidRequest, v.ID, n.cfg.ListenerName)
	case v.MinKRaftVersion < 0 || v.MaxKRaftVersion < v.MinKRaftVersion:
		err = fmt.Errorf("%w: kraft.version range [%d, %d]", kerr.InvalidRequest, v.MinKRaftVersion, v.MaxKRaftVersion)
	case n.confWait != nil:
		err = fmt.Errorf("%w: a voter change is in flight (one at a time)", kerr.RequestTimedOut)
	case n.epochStart < 0 || n.ml.offsetOf(n.committed+1) <= n.epochStart:
		err = fmt.Errorf("%w: the leader has not committed an offset in its epoch %d yet", kerr.RequestTimedOut, epoch)
	case kv == 0:
		err = fmt.Errorf("%w: kraft.version is 0 (a static quorum): the voters cannot be updated", kerr.UnsupportedVersion)
	case latestIdx > n.committed:
		err = fmt.Errorf("%w: the newest voter set is not committed yet", kerr.RequestTimedOut)
	case kv < v.MinKRaftVersion || kv > v.MaxKRaftVersion:
		err = fmt.Errorf("%w: voter %d supports kraft.version [%d, %d], the quorum is at %d", kerr.InvalidRequest, v.ID, v.MinKRaftVersion, v.MaxKRaftVersion, kv)
	default:
		if cur, ok := latest.Get(v.ID); !ok || (cur.DirectoryID != [16]byte{} && cur.DirectoryID != v.DirectoryID) {
			err = fmt.Errorf("%w: node %d (directory %x) is not a voter", kerr.VoterNotFound, v.ID, v.DirectoryID)
		}
	}
	if err != nil {
		vc.done <- voterChangeResult{err: err}
		return
	}
	cs := &pb.ConfChangeSingle{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(raftID(v.ID))}
	n.proposeConf(vc, latest.with(*v), cs, epoch)
}

// localVoter is this node as the voter set should hold it, if it knows
// its directory id and endpoints.
func (n *Node) localVoter() (Voter, bool) {
	if n.cfg.DirectoryID == [16]byte{} || n.cfg.LocalEndpoints == nil {
		return Voter{}, false
	}
	eps := n.cfg.LocalEndpoints()
	if len(eps) == 0 {
		return Voter{}, false
	}
	return Voter{ID: n.cfg.NodeID, DirectoryID: n.cfg.DirectoryID, Endpoints: eps, MinKRaftVersion: 0, MaxKRaftVersion: 1}, true
}

// voterNeedsUpdate reports whether set holds local's voter (same id, and
// same directory id unless the set has none) with anything else
// different (Kafka's VoterSet.voterNodeNeedsUpdate).
func voterNeedsUpdate(set VoterSet, local Voter) bool {
	cur, ok := set.Get(local.ID)
	if !ok || (cur.DirectoryID != [16]byte{} && cur.DirectoryID != local.DirectoryID) {
		return false
	}
	return cur.DirectoryID != local.DirectoryID || !sameEndpoints(cur.Endpoints, local.Endpoints) ||
		cur.MinKRaftVersion != local.MinKRaftVersion || cur.MaxKRaftVersion != local.MaxKRaftVersion
}

// sameEndpoints compares two voters' endpoints by listener name.
func sameEndpoints(a, b []Endpoint) bool {
	byName := func(x, y Endpoint) int {
		if x.Name < y.Name {
			return -1
		}
		if x.Name > y.Name {
			return 1
		}
		return 0
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, byName)
	slices.SortFunc(b, byName)
	return slices.Equal(a, b)
}

// voterUpdater is the voter's side: it runs on the node's routine group
// while the node is a voter.
type voterUpdater struct {
	n *Node
	// The leader the last answer named, and its controller address.
	leader, epoch int32
	addr          string
	next          int // the voter tried next when no leader is known
}

// runVoterUpdater checks every UpdateVoterPeriod whether the voter set
// holds this node's current endpoints, and asks the leader to update
// them if not; after a retriable failure it tries again within a second.
// It returns when scope (the voter scope's context) ends.
func (n *Node) runVoterUpdater(scope context.Context) {
	u := &voterUpdater{n: n, leader: -1, epoch: -1}
	wait := n.cfg.UpdateVoterPeriod
	for sleep(scope.Done(), wait) {
		wait = n.cfg.UpdateVoterPeriod
		if err := u.maybeUpdate(scope); err != nil {
			n.logger.Info("updating this voter's endpoints in the voter set failed", "err", err)
			var ke *kerr.Error
			if !errors.As(err, &ke) || ke.Retriable {
				wait = min(wait, maxBackoff)
			}
		}
	}
}

// maybeUpdate sends one UpdateRaftVoter if the voter set needs it.
func (u *voterUpdater) maybeUpdate(scope context.Context) error {
	n := u.n
	local, ok := n.localVoter()
	if !ok || n.isObserver() {
		return nil
	}
	n.mu.Lock()
	set, kv := n.st.conf, n.st.kraftVersion
	n.mu.Unlock()
	if kv == 0 || !voterNeedsUpdate(set, local) {
		return nil
	}
	le := n.LeaderAndEpoch()
	ctx, cancel := context.WithTimeout(scope, n.cfg.RequestTimeout)
	defer cancel()
	if le.LeaderID == n.cfg.NodeID {
		n.logger.Info("this leader's entry in the voter set is stale; updating it", "endpoints", local.Endpoints)
		return n.UpdateVoter(ctx, le.Epoch, local)
	}
	if u.epoch < le.Epoch || (le.LeaderID >= 0 && u.leader != le.LeaderID) {
		u.leader, u.epoch, u.addr = le.LeaderID, le.Epoch, ""
		if le.LeaderID >= 0 {
			u.addr, _ = n.voterAddr(le.LeaderID)
		}
	}
	addr := u.addr
	if addr == "" { // no leader known: ask the voters in turn
		var others []string
		for _, v := range set {
			if a := v.Addr(n.cfg.ListenerName); v.ID != n.cfg.NodeID && a != "" {
				others = append(others, a)
			}
		}
		if len(others) == 0 {
			return nil
		}
		addr = others[u.next%len(others)]
		u.next++
	}
	n.logger.Info("the voter set holds other endpoints for this voter; asking the leader to update them",
		"to", addr, "epoch", max(u.epoch, le.Epoch), "endpoints", local.Endpoints)
	resp, err := u.send(ctx, addr, max(u.epoch, le.Epoch), local)
	if err != nil {
		u.addr = "" // try another voter next
		return err
	}
	if cl := resp.CurrentLeader; cl.LeaderID >= 0 && cl.LeaderEpoch >= u.epoch {
		u.leader, u.epoch, u.addr = cl.LeaderID, cl.LeaderEpoch, ""
		if cl.Host != "" {
			u.addr = net.JoinHostPort(cl.Host, strconv.Itoa(int(cl.Port)))
		} else {
			u.addr, _ = n.voterAddr(cl.LeaderID)
		}
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("UpdateRaftVoter to %s: %w", addr, err)
	}
	return nil
}

// send sends one UpdateRaftVoter to addr.
func (u *voterUpdater) send(ctx context.Context, addr string, epoch int32, local Voter) (*kmsg.UpdateRaftVoterResponse, error) {
	n := u.n
	conn, err := dialController(ctx, n, addr, fmt.Sprintf("moldau-raft-voter-%d", n.cfg.NodeID))
	if err != nil {
		return nil, err
	}
	defer conn.close()
	// Turning observer cuts the request short.
	defer context.AfterFunc(ctx, func() { conn.c.Close() })()
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	if n.cfg.ClusterID != "" {
		req.ClusterID = &n.cfg.ClusterID
	}
	req.CurrentLeaderEpoch, req.VoterID, req.VoterDirectoryID = epoch, local.ID, local.DirectoryID
	for _, e := range local.Endpoints {
		l := kmsg.NewUpdateRaftVoterRequestListener()
		l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
		req.Listeners = append(req.Listeners, l)
	}
	req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = local.MinKRaftVersion, local.MaxKRaftVersion
	r, err := conn.roundTrip(req, n.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.UpdateRaftVoterResponse), nil
}

// HandleUpdateRaftVoter answers an UpdateRaftVoter request (the
// controller listener's handler calls it): INCONSISTENT_CLUSTER_ID if it
// names another cluster, else as UpdateVoter, with the leader this node
// knows and its controller endpoint in CurrentLeader, as Kafka answers.
func (n *Node) HandleUpdateRaftVoter(ctx context.Context, req *kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse {
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	var err error
	if req.ClusterID != nil && *req.ClusterID != n.cfg.ClusterID {
		err = fmt.Errorf("%w: cluster %q, this is %q", kerr.InconsistentClusterID, *req.ClusterID, n.cfg.ClusterID)
	} else {
		v := Voter{ID: req.VoterID, DirectoryID: req.VoterDirectoryID,
			MinKRaftVersion: req.KRaftVersionFeature.MinSupportedVersion, MaxKRaftVersion: req.KRaftVersionFeature.MaxSupportedVersion}
		for _, l := range req.Listeners {
			v.Endpoints = append(v.Endpoints, Endpoint{Name: l.Name, Host: l.Host, Port: l.Port})
		}
		err = n.UpdateVoter(ctx, req.CurrentLeaderEpoch, v)
	}
	if err != nil {
		n.logger.Info("refused UpdateRaftVoter", "voter", req.VoterID, "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		var ke *kerr.Error
		if errors.As(err, &ke) {
			resp.ErrorCode = ke.Code
		}
	}
	le := n.LeaderAndEpoch()
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = le.LeaderID, le.Epoch
	if addr, ok := n.ControllerAddress(le.LeaderID); ok && le.LeaderID >= 0 {
		if host, port, err := net.SplitHostPort(addr); err == nil {
			p, _ := strconv.Atoi(port)
			resp.CurrentLeader.Host, resp.CurrentLeader.Port = host, int32(p)
		}
	}
	return resp
}
