package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// One member joins (KIP-394), waits out the initial delay, syncs, and
// heartbeats; the group is durable and comes back on reload.
func TestClassicJoinSyncHeartbeat(t *testing.T) {
	ts := newTestShard(t)
	id, j := ts.joinNew("g")
	if j.done() {
		t.Fatalf("join answered before group.initial.rebalance.delay.ms: %+v", j.resp)
	}
	if g := ts.classic("g"); g.state != statePreparingRebalance {
		t.Fatalf("state %s", g.state)
	}
	ts.advance(2999 * time.Millisecond)
	if j.done() {
		t.Fatal("join answered before the initial delay passed")
	}
	ts.advance(time.Millisecond)
	r := j.resp
	if r == nil || r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != id || len(r.Members) != 1 || *r.Protocol != "range" {
		t.Fatalf("join response %+v", r)
	}
	if code := ts.heartbeat("g", id, 1); code != 0 {
		t.Fatalf("heartbeat during CompletingRebalance: %v", kerr.ErrorForCode(code))
	}
	s := ts.sync("g", id, nil, 1, map[string]string{id: "assignment"})
	if s.resp == nil || s.resp.ErrorCode != 0 || string(s.resp.MemberAssignment) != "assignment" {
		t.Fatalf("sync %+v", s.resp)
	}
	g := ts.classic("g")
	if g.state != stateStable {
		t.Fatalf("state %s after sync", g.state)
	}
	if code := ts.heartbeat("g", id, 0); code != kerr.IllegalGeneration.Code {
		t.Fatalf("old generation: %v", kerr.ErrorForCode(code))
	}
	if code := ts.heartbeat("g", "nobody", 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %v", kerr.ErrorForCode(code))
	}
	// The generation and assignment survive a reload.
	ts.reload()
	g = ts.classic("g")
	if g.state != stateStable || g.generationID != 1 || g.leaderID != id || string(g.members[id].assignment) != "assignment" {
		t.Fatalf("reloaded group: state %s gen %d leader %s", g.state, g.generationID, g.leaderID)
	}
	if code := ts.heartbeat("g", id, 1); code != 0 {
		t.Fatalf("heartbeat after reload: %v", kerr.ErrorForCode(code))
	}
}

// A second member triggers a rebalance: the first learns of it from its
// heartbeat, rejoins, and both get the new generation.
func TestClassicRebalanceOnNewMember(t *testing.T) {
	ts := newTestShard(t)
	a, ja := ts.joinNew("g")
	ts.advance(3 * time.Second)
	ts.sync("g", a, nil, 1, map[string]string{a: "a1"})

	b, jb := ts.joinNew("g")
	if jb.done() {
		t.Fatal("new member answered before the others rejoined")
	}
	if code := ts.heartbeat("g", a, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %v", kerr.ErrorForCode(code))
	}
	ja = ts.join(9, "g", a, nil)
	if !ja.done() || !jb.done() {
		t.Fatalf("joins not answered once every member rejoined: %+v %+v", ja.resp, jb.resp)
	}
	if ja.resp.Generation != 2 || jb.resp.Generation != 2 {
		t.Fatalf("generations %d %d", ja.resp.Generation, jb.resp.Generation)
	}
	leader, follower := a, b
	if ja.resp.LeaderID != a {
		leader, follower = b, a
	}
	// The follower's sync waits for the leader's.
	sf := ts.sync("g", follower, nil, 2, nil)
	if sf.resp != nil {
		t.Fatalf("follower sync answered before the leader's: %+v", sf.resp)
	}
	sl := ts.sync("g", leader, nil, 2, map[string]string{a: "A", b: "B"})
	if sl.resp == nil || sf.resp == nil || sf.resp.ErrorCode != 0 {
		t.Fatalf("syncs: leader %+v follower %+v", sl.resp, sf.resp)
	}
	if string(ts.classic("g").members[b].assignment) != "B" {
		t.Fatal("assignment of b not kept")
	}
}

// A member that stops heartbeating is removed after its session timeout;
// the last one leaving makes the group Empty, durably.
func TestClassicSessionTimeout(t *testing.T) {
	ts := newTestShard(t)
	a, _ := ts.joinNew("g")
	ts.advance(3 * time.Second)
	ts.sync("g", a, nil, 1, map[string]string{a: "x"})
	ts.advance(9 * time.Second)
	if code := ts.heartbeat("g", a, 1); code != 0 {
		t.Fatalf("heartbeat within the session: %v", kerr.ErrorForCode(code))
	}
	ts.advance(9 * time.Second) // 9s after the heartbeat: still alive
	if !ts.classic("g").hasMember(a) {
		t.Fatal("member removed within its session timeout")
	}
	ts.advance(2 * time.Second)
	g := ts.classic("g")
	if g.hasMember(a) || g.state != stateEmpty || g.generationID != 2 {
		t.Fatalf("after the session timeout: member present %v, state %s, generation %d", g.hasMember(a), g.state, g.generationID)
	}
	ts.reload()
	if g := ts.classic("g"); g.state != stateEmpty || g.numMembers() != 0 {
		t.Fatalf("reloaded: %s with %d members", g.state, g.numMembers())
	}
}

// A member id handed out with MEMBER_ID_REQUIRED expires if the member
// never comes back with it.
func TestClassicPendingMemberExpires(t *testing.T) {
	ts := newTestShard(t)
	first := ts.join(9, "g", "", nil)
	id := first.resp.MemberID
	if !ts.classic("g").isPendingMember(id) {
		t.Fatal("not pending")
	}
	ts.advance(10 * time.Second)
	if ts.classic("g").isPendingMember(id) {
		t.Fatal("pending member not expired after its session timeout")
	}
	// Before v4 a member joins at once without the round trip.
	j := ts.join(3, "g", "", nil)
	if j.done() {
		t.Fatalf("v3 join answered during the initial delay: %+v", j.resp)
	}
	ts.advance(3 * time.Second)
	if !j.done() || j.resp.ErrorCode != 0 {
		t.Fatalf("v3 join: %+v", j.resp)
	}
}

// Static membership (KIP-345): a static member restarting with an unknown
// member id takes over its old member id's place and assignment without a
// rebalance; the old id is fenced.
func TestClassicStaticMemberRejoins(t *testing.T) {
	ts := newTestShard(t)
	inst := ptr("instance-1")
	j := ts.join(9, "g", "", inst) // static members need no member id round trip
	ts.advance(3 * time.Second)
	old := j.resp.MemberID
	if j.resp.ErrorCode != 0 || old == "" {
		t.Fatalf("static join: %+v", j.resp)
	}
	ts.sync("g", old, inst, 1, map[string]string{old: "mine"})

	j2 := ts.join(9, "g", "", inst)
	r := j2.resp
	if r == nil || r.ErrorCode != 0 || r.MemberID == old || r.Generation != 1 || !r.SkipAssignment || r.LeaderID != r.MemberID {
		t.Fatalf("rejoin of the static leader: %+v", r)
	}
	g := ts.classic("g")
	if g.state != stateStable || g.generationID != 1 || string(g.members[r.MemberID].assignment) != "mine" {
		t.Fatalf("group after the static rejoin: %s gen %d", g.state, g.generationID)
	}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation, req.InstanceID = "g", old, 1, inst
	if _, err := ts.s.classicGroupHeartbeat(req); errCode(err) != kerr.FencedInstanceID.Code {
		t.Fatalf("heartbeat of the replaced member id: %v", err)
	}
	// The new member id is durable.
	ts.reload()
	if ts.classic("g").staticMemberID("instance-1") != r.MemberID {
		t.Fatal("new member id not persisted")
	}
	// LeaveGroup by instance id removes it.
	lreq := kmsg.NewPtrLeaveGroupRequest()
	lreq.Group = "g"
	lreq.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: inst}, {InstanceID: ptr("other")}}
	res, err := ts.s.classicGroupLeave(lreq)
	resp := commit(ts, res, err)
	if resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", resp.Members)
	}
	if g := ts.classic("g"); g.numMembers() != 0 || g.state != stateEmpty {
		t.Fatalf("after leave: %d members, %s", g.numMembers(), g.state)
	}
}

// group.max.size refuses members beyond the limit.
func TestClassicMaxSize(t *testing.T) {
	ts := newTestShard(t, func(c *Config) { c.ClassicMaxSize = 1 })
	ts.joinNew("g")
	second := ts.join(9, "g", "", nil)
	id := second.resp.MemberID
	third := ts.join(9, "g", id, nil)
	if third.resp == nil || third.resp.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("join beyond group.max.size: %+v", third.resp)
	}
}

// Protocols must be compatible with the group's.
func TestClassicInconsistentProtocol(t *testing.T) {
	ts := newTestShard(t)
	ts.joinNew("g")
	ts.advance(3 * time.Second)
	j := ts.join(9, "g", "", nil, "roundrobin")
	if j.resp == nil || j.resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("incompatible protocol: %+v", j.resp)
	}
}

// Unloading answers parked requests NOT_COORDINATOR.
func TestClassicUnloadAnswersParkedJoins(t *testing.T) {
	ts := newTestShard(t)
	_, j := ts.joinNew("g")
	ts.s.OnUnloaded()
	if j.resp == nil || j.resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("parked join after unload: %+v", j.resp)
	}
}
