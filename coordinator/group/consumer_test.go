package group

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// hb sends a ConsumerGroupHeartbeat (v1) and commits its records.
type hbReq struct {
	group, member string
	epoch         int32
	instance      *string
	topics        []string
	regex         *string
	assignor      *string
	owned         assignment // nil: not sent
	full          bool       // send every field, as on join
}

func (ts *testShard) hb(r hbReq) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	ts.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = r.group, r.member, r.epoch, r.instance
	if r.epoch == 0 || r.full {
		req.RebalanceTimeoutMillis = 30000
		if r.regex == nil {
			req.SubscribedTopicNames = r.topics
			if req.SubscribedTopicNames == nil {
				req.SubscribedTopicNames = []string{}
			}
		}
		req.SubscribedTopicRegex = r.regex
		req.ServerAssignor = r.assignor
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if r.owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range r.owned.sortedTopics() {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t, Partitions: r.owned[t]})
		}
	}
	res, err := ts.s.consumerGroupHeartbeat(RequestContext{ClientID: "c", ClientHost: "/127.0.0.1", APIVersion: 1}, req)
	if err != nil {
		return nil, err
	}
	return commit(ts, res, nil), nil
}

func (ts *testShard) mustHB(r hbReq) *kmsg.ConsumerGroupHeartbeatResponse {
	ts.t.Helper()
	resp, err := ts.hb(r)
	if err != nil {
		ts.t.Fatalf("heartbeat %+v: %v", r, err)
	}
	return resp
}

func (ts *testShard) consumer(group string) *ConsumerGroup {
	ts.t.Helper()
	g, ok := ts.s.groups[group].(*ConsumerGroup)
	if !ok {
		ts.t.Fatalf("group %s is not a consumer group: %T", group, ts.s.groups[group])
	}
	return g
}

func (ts *testShard) id(topic string) [16]byte {
	t, _ := ts.topics.TopicByName(topic)
	return t.ID
}

// respAssignment turns a heartbeat's assignment into an assignment.
func respAssignment(r *kmsg.ConsumerGroupHeartbeatResponse) assignment {
	if r.Assignment == nil {
		return nil
	}
	a := assignment{}
	for _, t := range r.Assignment.Topics {
		if len(t.Partitions) > 0 {
			a[t.TopicID] = t.Partitions
		}
	}
	return a
}

func TestConsumerGroupJoinAndRebalance(t *testing.T) {
	ts := newTestShard(t)
	foo := ts.id("foo")
	r := ts.mustHB(hbReq{group: "g", member: "m1", topics: []string{"foo"}})
	if r.MemberEpoch != 1 || !respAssignment(r).equal(assignment{foo: {0, 1, 2}}) || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: epoch %d assignment %v", r.MemberEpoch, respAssignment(r))
	}
	g := ts.consumer("g")
	if g.state != cgStable || g.groupEpoch != 1 || g.assignmentEpoch != 1 {
		t.Fatalf("group %s epoch %d assignment epoch %d", g.state, g.groupEpoch, g.assignmentEpoch)
	}

	// A second member: the target moves a partition to it, but m1 must
	// revoke it first.
	r2 := ts.mustHB(hbReq{group: "g", member: "m2", topics: []string{"foo"}})
	if r2.MemberEpoch != 2 || respAssignment(r2).count() != 0 {
		t.Fatalf("m2 join: epoch %d assignment %v (its partition is not released yet)", r2.MemberEpoch, respAssignment(r2))
	}
	if g := ts.consumer("g"); g.state != cgReconciling {
		t.Fatalf("state %s", g.state)
	}
	r = ts.mustHB(hbReq{group: "g", member: "m1", epoch: 1, owned: assignment{foo: {0, 1, 2}}})
	kept := respAssignment(r)
	if r.MemberEpoch != 1 || kept.count() != 2 {
		t.Fatalf("m1 asked to revoke: epoch %d assignment %v", r.MemberEpoch, kept)
	}
	if m := ts.consumer("g").members["m1"]; m.state != memberUnrevokedPartitions {
		t.Fatalf("m1 state %d", m.state)
	}
	// Still owning the revoked partition: nothing moves.
	r = ts.mustHB(hbReq{group: "g", member: "m1", epoch: 1, owned: assignment{foo: {0, 1, 2}}})
	if r.MemberEpoch != 1 {
		t.Fatalf("m1 epoch %d while it still owns the revoked partition", r.MemberEpoch)
	}
	r = ts.mustHB(hbReq{group: "g", member: "m1", epoch: 1, owned: kept})
	if r.MemberEpoch != 2 {
		t.Fatalf("m1 after revoking: epoch %d", r.MemberEpoch)
	}
	r2 = ts.mustHB(hbReq{group: "g", member: "m2", epoch: 2, owned: assignment{}})
	if got := respAssignment(r2); got.count() != 1 || kept.has(foo, got[foo][0]) {
		t.Fatalf("m2 gets %v; m1 keeps %v", got, kept)
	}
	if g := ts.consumer("g"); g.state != cgStable {
		t.Fatalf("state %s after reconciliation", g.state)
	}

	// Everything survives a reload.
	before := ts.consumer("g")
	ts.reload()
	after := ts.consumer("g")
	if after.groupEpoch != before.groupEpoch || after.assignmentEpoch != before.assignmentEpoch || after.state != cgStable ||
		!after.members["m1"].equal(before.members["m1"]) || !after.members["m2"].equal(before.members["m2"]) ||
		!reflect.DeepEqual(after.partitionEpochs, before.partitionEpochs) {
		t.Fatalf("reloaded group differs: %+v vs %+v", after, before)
	}
}

func TestConsumerGroupEpochErrorsAndLeave(t *testing.T) {
	ts := newTestShard(t)
	foo := ts.id("foo")
	ts.mustHB(hbReq{group: "g", member: "m1", topics: []string{"foo"}})
	if _, err := ts.hb(hbReq{group: "g", member: "m1", epoch: 5}); errCode(err) != kerr.FencedMemberEpoch.Code {
		t.Fatalf("greater epoch: %v", err)
	}
	if _, err := ts.hb(hbReq{group: "g", member: "nobody", epoch: 1}); errCode(err) != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %v", err)
	}
	if _, err := ts.hb(hbReq{group: "other", member: "m", epoch: 1}); errCode(err) != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %v", err)
	}
	if _, err := ts.hb(hbReq{group: "g", member: "", epoch: 0, topics: []string{"foo"}}); errCode(err) != kerr.InvalidRequest.Code {
		t.Fatalf("v1 without member id: %v", err)
	}
	if _, err := ts.hb(hbReq{group: "g", member: "x", epoch: 0, regex: ptr("(")}); errCode(err) != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad regex: %v", err)
	}
	if _, err := ts.hb(hbReq{group: "g", member: "x", epoch: 0, topics: []string{"foo"}, assignor: ptr("nope")}); errCode(err) != kerr.UnsupportedAssignor.Code {
		t.Fatalf("unknown assignor: %v", err)
	}
	// Offset commits check the member epoch (v9+).
	if _, err := ts.commitOffsets(9, "g", "m1", 0, map[int32]int64{0: 1}); errCode(err) != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale commit: %v", err)
	}
	if _, err := ts.commitOffsets(8, "g", "m1", 1, map[int32]int64{0: 1}); errCode(err) != kerr.UnsupportedVersion.Code {
		t.Fatalf("v8 commit from a consumer-protocol member: %v", err)
	}
	if _, err := ts.commitOffsets(9, "g", "m1", 1, map[int32]int64{0: 1}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// Leaving bumps the epoch and empties the group.
	r := ts.mustHB(hbReq{group: "g", member: "m1", epoch: -1})
	if r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	g := ts.consumer("g")
	if g.state != cgEmpty || g.groupEpoch != 2 || len(g.targetAssignment) != 0 || g.currentPartitionEpoch(foo, 0) != -1 {
		t.Fatalf("after leave: %s epoch %d targets %v", g.state, g.groupEpoch, g.targetAssignment)
	}
	// An empty consumer group's offsets expire and it is deleted.
	ts.reload()
	res, _ := ts.s.deleteGroups([]string{"g"})
	if got := commit(ts, res, nil); got[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", got)
	}
	ts.reload()
	if _, ok := ts.s.groups["g"]; ok {
		t.Fatal("deleted consumer group back after reload")
	}
}

func TestConsumerGroupSessionTimeout(t *testing.T) {
	ts := newTestShard(t)
	ts.mustHB(hbReq{group: "g", member: "m1", topics: []string{"foo"}})
	ts.mustHB(hbReq{group: "g", member: "m2", topics: []string{"foo"}})
	for range 10 {
		ts.advance(5 * time.Second)
		ts.mustHB(hbReq{group: "g", member: "m1", epoch: ts.consumer("g").members["m1"].memberEpoch, owned: ts.consumer("g").members["m1"].assigned})
	}
	g := ts.consumer("g")
	if g.hasMember("m2") || !g.hasMember("m1") {
		t.Fatalf("after 50s: m1 %v m2 %v (m2 stopped heartbeating 50s ago, session 45s)", g.hasMember("m1"), g.hasMember("m2"))
	}
}

// A static member leaves for now (-2) and comes back with a new member
// id: it takes its old place and assignment.
func TestConsumerGroupStaticMember(t *testing.T) {
	ts := newTestShard(t)
	inst := ptr("i1")
	r := ts.mustHB(hbReq{group: "g", member: "a", instance: inst, topics: []string{"foo"}})
	held := respAssignment(r)
	ts.mustHB(hbReq{group: "g", member: "b", topics: []string{"foo"}})
	// Another instance with the same id while "a" is active: refused.
	if _, err := ts.hb(hbReq{group: "g", member: "a2", instance: inst, topics: []string{"foo"}}); errCode(err) != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("duplicate instance: %v", err)
	}
	r = ts.mustHB(hbReq{group: "g", member: "a", instance: inst, epoch: -2})
	if r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	epoch := ts.consumer("g").groupEpoch
	r = ts.mustHB(hbReq{group: "g", member: "a2", instance: inst, topics: []string{"foo"}})
	g := ts.consumer("g")
	if g.hasMember("a") || !g.hasMember("a2") || g.groupEpoch != epoch {
		t.Fatalf("rejoin: a %v a2 %v epoch %d (was %d)", g.hasMember("a"), g.hasMember("a2"), g.groupEpoch, epoch)
	}
	if got := g.targetAssignmentOf("a2"); got.count() == 0 || held.count() == 0 {
		t.Fatalf("a2 target %v, a held %v", got, held)
	}
	// The old member id is fenced.
	if _, err := ts.hb(hbReq{group: "g", member: "a", instance: inst, epoch: 1}); errCode(err) != kerr.FencedInstanceID.Code {
		t.Fatalf("old static member id: %v", err)
	}
}

// Regular expressions are resolved by the coordinator after the heartbeat
// that brought them.
func TestConsumerGroupRegex(t *testing.T) {
	ts := newTestShard(t)
	foo, bar := ts.id("foo"), ts.id("bar")
	r := ts.mustHB(hbReq{group: "g", member: "m", regex: ptr("f.*|ba.")})
	if r.MemberEpoch != 1 || respAssignment(r).count() != 0 {
		t.Fatalf("join: epoch %d assignment %v", r.MemberEpoch, respAssignment(r))
	}
	if !ts.timer.IsScheduled(regexRefreshKey("g")) {
		t.Fatal("no resolution scheduled")
	}
	ts.advance(0)
	g := ts.consumer("g")
	if got := g.resolvedRegexes["f.*|ba."].topics; !reflect.DeepEqual(got, []string{"bar", "foo"}) || g.groupEpoch != 2 {
		t.Fatalf("resolved %v, epoch %d", got, g.groupEpoch)
	}
	r = ts.mustHB(hbReq{group: "g", member: "m", epoch: 1, owned: assignment{}})
	if want := (assignment{foo: {0, 1, 2}, bar: {0, 1}}); !respAssignment(r).equal(want) || r.MemberEpoch != 2 {
		t.Fatalf("assignment %v epoch %d", respAssignment(r), r.MemberEpoch)
	}
	if !g.isSubscribedToTopic("foo") {
		t.Fatal("regex topics not subscribed")
	}
	// A new topic is picked up after the refresh interval.
	ts.topics.add(TopicInfo{Name: "fizz", Partitions: 1})
	v := ts.versions.version.Add(1)
	ts.versions.newTopicsVersion.Store(v)
	ts.advance(11 * time.Second)
	ts.mustHB(hbReq{group: "g", member: "m", epoch: 2, owned: assignment{foo: {0, 1, 2}, bar: {0, 1}}})
	ts.advance(0)
	if got := ts.consumer("g").resolvedRegexes["f.*|ba."].topics; !reflect.DeepEqual(got, []string{"bar", "fizz", "foo"}) {
		t.Fatalf("after a topic creation: %v", got)
	}
	ts.reload()
	if got := ts.consumer("g").resolvedRegexes["f.*|ba."].topics; len(got) != 3 {
		t.Fatalf("reloaded regex: %v", got)
	}
	// The last member leaving deletes the regex.
	ts.mustHB(hbReq{group: "g", member: "m", epoch: -1})
	if _, ok := ts.consumer("g").resolvedRegexes["f.*|ba."]; ok {
		t.Fatal("regex kept after its last member left")
	}
}

// A classic group using the consumer embedded protocol is upgraded when a
// consumer-protocol member joins; its classic member keeps working
// through JoinGroup/SyncGroup/Heartbeat; when the consumer member leaves,
// the group is downgraded back.
func TestConsumerGroupOnlineUpgradeAndDowngrade(t *testing.T) {
	ts := newTestShard(t)
	foo := ts.id("foo")
	classicID, _ := ts.joinNew("g")
	ts.advance(3 * time.Second)
	ca := kmsg.NewConsumerMemberAssignment()
	ca.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "foo", Partitions: []int32{0, 1, 2}}}
	ts.sync("g", classicID, nil, 1, map[string]string{classicID: string(ca.AppendTo(nil))})

	r := ts.mustHB(hbReq{group: "g", member: "new", topics: []string{"foo"}})
	g := ts.consumer("g")
	if !g.members[classicID].useClassicProtocol() || g.members["new"].useClassicProtocol() || g.groupEpoch != 2 {
		t.Fatalf("upgraded group: epoch %d, classic member %+v", g.groupEpoch, g.members[classicID])
	}
	if respAssignment(r).count() != 0 {
		t.Fatalf("new member got %v before the classic member released anything", respAssignment(r))
	}
	// The classic member is told to rejoin.
	if code := ts.heartbeat("g", classicID, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after upgrade: %v", kerr.ErrorForCode(code))
	}
	j := ts.join(9, "g", classicID, nil)
	// Its v0 subscription reports no owned partitions (eager): it moves
	// to the new epoch at once, keeping two partitions.
	if j.resp == nil || j.resp.ErrorCode != 0 || j.resp.Generation != 2 || *j.resp.ProtocolType != "consumer" {
		t.Fatalf("classic rejoin: %+v", j.resp)
	}
	s := ts.sync("g", classicID, nil, j.resp.Generation, nil)
	var got kmsg.ConsumerMemberAssignment
	if s.resp == nil || s.resp.ErrorCode != 0 || got.ReadFrom(s.resp.MemberAssignment) != nil || len(got.Topics) != 1 {
		t.Fatalf("classic sync: %+v", s.resp)
	}
	if n := len(got.Topics[0].Partitions); n != 2 {
		t.Fatalf("classic member keeps %v, want 2 partitions", got.Topics[0].Partitions)
	}
	_ = foo
	// The consumer member leaves: only classic members remain, so the
	// group is a classic group again.
	ts.mustHB(hbReq{group: "g", member: "new", epoch: ts.consumer("g").members["new"].memberEpoch, owned: assignment{}})
	ts.mustHB(hbReq{group: "g", member: "new", epoch: -1})
	cg := ts.classic("g")
	if !cg.hasMember(classicID) || cg.state != statePreparingRebalance {
		t.Fatalf("downgraded group: %s, members %v", cg.state, cg.order)
	}
	ts.reload()
	if g := ts.classic("g"); !g.hasMember(classicID) {
		t.Fatal("downgrade not durable")
	}
}

func TestConsumerGroupDescribe(t *testing.T) {
	ts := newTestShard(t)
	ts.mustHB(hbReq{group: "g", member: "m1", topics: []string{"foo"}, assignor: ptr("range")})
	d := ts.s.consumerGroupDescribe([]string{"g", "nope"})
	if d[0].ErrorCode != 0 || d[0].State != "Stable" || d[0].AssignorName != "range" || len(d[0].Members) != 1 {
		t.Fatalf("describe: %+v", d[0])
	}
	m := d[0].Members[0]
	if m.MemberID != "m1" || m.MemberType != 1 || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "foo" ||
		len(m.Assignment.TopicPartitions[0].Partitions) != 3 || len(m.TargetAssignment.TopicPartitions) != 1 {
		t.Fatalf("member: %+v", m)
	}
	if d[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %+v", d[1])
	}
	// DescribeGroups (classic) does not describe consumer groups.
	if dg := ts.s.describeGroups([]string{"g"}, 6); dg[0].ErrorCode != kerr.GroupIDNotFound.Code || dg[0].State != "Dead" {
		t.Fatalf("DescribeGroups of a consumer group: %+v", dg[0])
	}
	if l := ts.s.listGroups(nil, []string{"consumer"}); len(l) != 1 || l[0].GroupType != "consumer" || l[0].GroupState != "Stable" {
		t.Fatalf("ListGroups: %+v", l)
	}
}

func TestAssignors(t *testing.T) {
	t1, t2 := [16]byte{1}, [16]byte{2}
	sub := map[[16]byte]bool{t1: true, t2: true}
	members := func(n int) []assignorMember {
		var ms []assignorMember
		for i := range n {
			ms = append(ms, assignorMember{id: string(rune('a' + i)), subscribed: sub, current: assignment{}})
		}
		return ms
	}
	spec := assignorSpec{members: members(3), topics: map[[16]byte]int32{t1: 7, t2: 4}}
	for _, a := range []partitionAssignor{uniformAssignor{}, rangeAssignor{}} {
		out := a.assign(spec)
		seen := map[tp]bool{}
		for _, m := range spec.members {
			for tid, ps := range out[m.id] {
				for _, p := range ps {
					if seen[tp{tid, p}] {
						t.Fatalf("%s: partition %v twice", a.name(), tp{tid, p})
					}
					seen[tp{tid, p}] = true
				}
			}
		}
		if len(seen) != 11 {
			t.Fatalf("%s: %d partitions assigned", a.name(), len(seen))
		}
	}
	// uniform: balanced and sticky.
	out := uniformAssignor{}.assign(spec)
	for _, m := range spec.members {
		if n := out[m.id].count(); n < 3 || n > 4 {
			t.Fatalf("uniform: %s has %d", m.id, n)
		}
	}
	spec2 := assignorSpec{members: members(4), topics: spec.topics}
	for i := range spec.members {
		spec2.members[i].current = out[spec.members[i].id]
	}
	out2 := uniformAssignor{}.assign(spec2)
	moved := 0
	for _, m := range spec.members {
		for tid, ps := range out[m.id] {
			for _, p := range ps {
				if !out2[m.id].has(tid, p) {
					moved++
				}
			}
		}
	}
	if out2["d"].count() < 2 || moved > 3 {
		t.Fatalf("uniform stickiness: new member has %d, %d partitions moved", out2["d"].count(), moved)
	}
	// range: contiguous ranges per topic, co-partitioned.
	r := rangeAssignor{}.assign(assignorSpec{members: members(2), topics: map[[16]byte]int32{t1: 4, t2: 4}})
	if !r["a"].equal(assignment{t1: {0, 1}, t2: {0, 1}}) || !r["b"].equal(assignment{t1: {2, 3}, t2: {2, 3}}) {
		t.Fatalf("range: %v", r)
	}
}
