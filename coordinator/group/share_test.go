package group

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shb sends a ShareGroupHeartbeat (v1), commits its records and, as the
// Service does with no persister, initializes the share state it asks
// for at once.
func (ts *testShard) shb(group, member string, epoch int32, topics ...string) (*kmsg.ShareGroupHeartbeatResponse, error) {
	ts.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	res, err := ts.s.shareGroupHeartbeat(RequestContext{ClientID: "c", ClientHost: "/127.0.0.1", APIVersion: 1}, req)
	if err != nil {
		return nil, err
	}
	out := commit(ts, res, nil)
	if out.init != nil {
		recs := ts.s.initializeShareGroupState(out.init.groupID, out.init.topics)
		commit(ts, voidResult{Records: recs}, nil)
	}
	return out.resp, nil
}

func (ts *testShard) mustSHB(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	ts.t.Helper()
	resp, err := ts.shb(group, member, epoch, topics...)
	if err != nil {
		ts.t.Fatalf("share heartbeat %s/%s@%d: %v", group, member, epoch, err)
	}
	return resp
}

func (ts *testShard) share(group string) *ShareGroup {
	ts.t.Helper()
	g, ok := ts.s.groups[group].(*ShareGroup)
	if !ok {
		ts.t.Fatalf("group %s is not a share group: %T", group, ts.s.groups[group])
	}
	return g
}

func shareAssigned(r *kmsg.ShareGroupHeartbeatResponse) assignment {
	if r.Assignment == nil {
		return nil
	}
	a := assignment{}
	for _, t := range r.Assignment.TopicPartitions {
		a[t.TopicID] = t.Partitions
	}
	return a
}

// A member joins, gets epoch 1 and nothing (the partitions' share state
// is initializing), and at its next heartbeat the initialized partitions.
func TestShareGroupJoinAssignsOnceInitialized(t *testing.T) {
	ts := newTestShard(t)
	foo := ts.id("foo")
	r := ts.mustSHB("sg", "m1", 0, "foo")
	if r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 0 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r)
	}
	g := ts.share("sg")
	if got := g.initializedPartitions()[foo]; !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("initialized %v", got)
	}
	r = ts.mustSHB("sg", "m1", 1)
	if r.MemberEpoch != 2 || !shareAssigned(r).equal(assignment{foo: {0, 1, 2}}) {
		t.Fatalf("second heartbeat: epoch %d %v", r.MemberEpoch, shareAssigned(r))
	}
	// Nothing changes: no assignment in the response, no records.
	n := len(ts.log)
	if r = ts.mustSHB("sg", "m1", 2); r.MemberEpoch != 2 || r.Assignment != nil || len(ts.log) != n {
		t.Fatalf("steady heartbeat: %+v, %d records", r, len(ts.log)-n)
	}
	if d := ts.s.shareGroupDescribe([]string{"sg"})[0]; d.ErrorCode != 0 || d.GroupState != "Stable" || d.GroupEpoch != 2 || d.AssignmentEpoch != 2 ||
		d.Assignor != "simple" || len(d.Members) != 1 || d.Members[0].Assignment.TopicPartitions[0].Topic != "foo" {
		t.Fatalf("%+v", d)
	}
}

// Three members over three partitions get one each; one leaving and one
// timing out gives its partitions to the others.
func TestShareGroupThreeMembersLeaveAndTimeout(t *testing.T) {
	ts := newTestShard(t)
	foo := ts.id("foo")
	for _, m := range []string{"m1", "m2", "m3"} {
		ts.mustSHB("sg", m, 0, "foo")
	}
	epochs := map[string]int32{}
	settle := func(members ...string) map[string]assignment {
		out := map[string]assignment{}
		for range 2 {
			for _, m := range members {
				r := ts.mustSHB("sg", m, ts.share("sg").members[m].memberEpoch)
				epochs[m] = r.MemberEpoch
				out[m] = ts.share("sg").members[m].assigned
			}
		}
		return out
	}
	got := settle("m1", "m2", "m3")
	seen := map[int32]bool{}
	for m, a := range got {
		if a.count() != 1 {
			t.Fatalf("%s has %v", m, a)
		}
		seen[a[foo][0]] = true
	}
	if len(seen) != 3 {
		t.Fatalf("partitions %v", got)
	}

	// m3 leaves.
	if r := ts.mustSHB("sg", "m3", -1); r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	got = settle("m1", "m2")
	if got["m1"].count()+got["m2"].count() != 3 {
		t.Fatalf("after leave %v", got)
	}

	// m2 stops heartbeating: fenced after the session timeout, m1 gets all.
	for range 9 {
		ts.advance(5 * time.Second)
		ts.mustSHB("sg", "m1", ts.share("sg").members["m1"].memberEpoch)
	}
	if ts.share("sg").hasMember("m2") {
		t.Fatal("m2 outlived its session")
	}
	got = settle("m1")
	if !got["m1"].equal(assignment{foo: {0, 1, 2}}) {
		t.Fatalf("after timeout %v", got)
	}
	if _, err := ts.shb("sg", "m2", epochs["m2"]); apiCode(err) != kerr.UnknownMemberID {
		t.Fatalf("fenced member: %v", err)
	}
}

func apiCode(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return nil
}

// Replaying the log gives the group the live shard built, and its
// members' sessions start again.
func TestShareGroupReplayEqualsLive(t *testing.T) {
	ts := newTestShard(t)
	ts.mustSHB("sg", "m1", 0, "foo", "bar")
	ts.mustSHB("sg", "m2", 0, "foo")
	ts.mustSHB("sg", "m1", 1)
	ts.mustSHB("sg", "m2", ts.share("sg").members["m2"].memberEpoch)
	live := ts.share("sg")
	ts.reload()
	loaded := ts.share("sg")
	norm := func(g *ShareGroup) ShareGroup {
		c := *g
		c.refreshDeadlineMs, c.refreshDeadlineEpoch = 0, 0
		md := *c.stateMetadata
		for _, m := range []map[[16]byte]initTopic{md.initialized, md.initializing} {
			for id, t := range m {
				t.timestamp = 0
				m[id] = t
			}
		}
		c.stateMetadata = &md
		return c
	}
	if a, b := norm(live), norm(loaded); !reflect.DeepEqual(a, b) {
		t.Fatalf("live %+v\nloaded %+v", a, b)
	}
	ts.advance(46 * time.Second)
	if ts.share("sg").numMembers() != 0 {
		t.Fatal("loaded members have no session")
	}
}

// A group id belongs to one type of group: Kafka's errors across types.
func TestShareGroupIDConflicts(t *testing.T) {
	ts := newTestShard(t)
	ts.mustHB(hbReq{group: "cg", member: "c1", topics: []string{"foo"}})
	if _, err := ts.shb("cg", "s1", 0, "foo"); apiCode(err) != kerr.GroupIDNotFound {
		t.Fatalf("share heartbeat on a consumer group: %v", err)
	}
	ts.mustSHB("sg", "s1", 0, "foo")
	if _, err := ts.hb(hbReq{group: "sg", member: "c1", topics: []string{"foo"}}); apiCode(err) != kerr.GroupIDNotFound {
		t.Fatalf("consumer heartbeat on a share group: %v", err)
	}
	if j := ts.join(9, "sg", "", nil); j.resp == nil || j.resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup on a share group: %+v", j.resp)
	}
	if d := ts.s.consumerGroupDescribe([]string{"sg"})[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of a share group: %+v", d)
	}
	if d := ts.s.describeGroups([]string{"sg"}, 6)[0]; d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("DescribeGroups of a share group: %+v", d)
	}
	if d := ts.s.shareGroupDescribe([]string{"cg", "none"}); d[0].ErrorCode != kerr.GroupIDNotFound.Code || d[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ShareGroupDescribe: %+v", d)
	}
	l := ts.s.listGroups(nil, []string{"share"})
	if len(l) != 1 || l[0].Group != "sg" || l[0].GroupType != "share" || l[0].ProtocolType != "share" || l[0].GroupState != "Stable" {
		t.Fatalf("ListGroups share: %+v", l)
	}
	if l := ts.s.listGroups([]string{"empty"}, []string{"share"}); len(l) != 0 {
		t.Fatalf("ListGroups empty share: %+v", l)
	}
}

// Validation and limits, with Kafka's errors.
func TestShareGroupHeartbeatErrors(t *testing.T) {
	ts := newTestShard(t, func(c *Config) { c.ShareMaxSize = 2 })
	for _, tc := range []struct {
		member string
		epoch  int32
		topics []string
		want   *kerr.Error
	}{
		{"", 0, []string{"foo"}, kerr.InvalidRequest},
		{"m", 0, nil, kerr.InvalidRequest},
		{"m", -2, nil, kerr.InvalidRequest},
		{"m", 1, nil, kerr.GroupIDNotFound},
	} {
		if _, err := ts.shb("sg", tc.member, tc.epoch, tc.topics...); apiCode(err) != tc.want {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	ts.mustSHB("sg", "m1", 0, "foo")
	ts.mustSHB("sg", "m2", 0, "foo")
	if _, err := ts.shb("sg", "m3", 0, "foo"); apiCode(err) != kerr.GroupMaxSizeReached {
		t.Fatalf("third member: %v", err)
	}
	if _, err := ts.shb("sg", "m1", 7); apiCode(err) != kerr.FencedMemberEpoch {
		t.Fatalf("epoch ahead: %v", err)
	}
}

// Deleting: a share group with members is NON_EMPTY_GROUP; an empty one's
// state is written deleting, then the group's tombstones remove it.
func TestShareGroupDelete(t *testing.T) {
	ts := newTestShard(t)
	foo := ts.id("foo")
	ts.mustSHB("sg", "m1", 0, "foo")
	res, _ := ts.s.sharePartitionDeleteRequests([]string{"sg", "other"})
	if o := res.Response["sg"]; !errors.Is(o.err, kerr.NonEmptyGroup) {
		t.Fatalf("%+v", res.Response)
	}
	if _, ok := res.Response["other"]; ok {
		t.Fatal("a group that is not a share group has an outcome")
	}
	ts.mustSHB("sg", "m1", -1)
	res, _ = ts.s.sharePartitionDeleteRequests([]string{"sg"})
	commit(ts, res, nil)
	if o := res.Response["sg"]; o.err != nil || o.del == nil || !slices.Equal(o.del.topics[foo], []int32{0, 1, 2}) {
		t.Fatalf("%+v", o)
	}
	if md := ts.share("sg").stateMetadata; len(md.initialized) != 0 || md.deleting[foo] != "foo" {
		t.Fatalf("%+v", md)
	}
	dres, _ := ts.s.deleteGroups([]string{"sg"})
	commit(ts, dres, nil)
	if dres.Response[0].ErrorCode != 0 || ts.s.groups["sg"] != nil {
		t.Fatalf("%+v %v", dres.Response, ts.s.groups["sg"])
	}
	ts.reload()
	if ts.s.groups["sg"] != nil {
		t.Fatal("deleted share group is back after a reload")
	}
	// An empty share group does not expire with the offsets.
	ts.mustSHB("sg2", "m1", 0, "foo")
	ts.mustSHB("sg2", "m1", -1)
	ts.advance(ts.cfg.OffsetsRetentionCheckInterval + time.Second)
	if ts.s.groups["sg2"] == nil {
		t.Fatal("an empty share group expired")
	}
}

// A topic that grows gives the group its new partitions: initialized,
// then assigned.
func TestShareGroupNewPartitions(t *testing.T) {
	ts := newTestShard(t)
	foo := ts.id("foo")
	ts.mustSHB("sg", "m1", 0, "foo")
	ts.mustSHB("sg", "m1", 1)
	ts.topics.add(TopicInfo{Name: "foo", ID: foo, Partitions: 5})
	ts.s.onTopicsChanged([]string{"foo"})
	e := ts.share("sg").members["m1"].memberEpoch
	ts.mustSHB("sg", "m1", e)
	r := ts.mustSHB("sg", "m1", ts.share("sg").members["m1"].memberEpoch)
	if got := ts.share("sg").members["m1"].assigned; !got.equal(assignment{foo: {0, 1, 2, 3, 4}}) {
		t.Fatalf("%v (%+v)", got, r)
	}
}

// The share records encode as Kafka's schemas say and decode back.
func TestShareRecordsRoundTrip(t *testing.T) {
	if got := shareGroupEpochRecord("g", 5, 1).Value; !slices.Equal(got, unhex(t, "0000 00000005 0000000000000001 00")) {
		t.Fatalf("ShareGroupMetadataValue % x", got)
	}
	if k := groupMemberKey(typeShareGroupCurrentMemberAssign, "g", "m"); !slices.Equal(k, unhex(t, "000e 0001 67 0001 6d")) {
		t.Fatalf("key % x", k)
	}
	mv := shareGroupMemberMetadataValue{RackID: ptr("r"), ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"a", "b"}}
	if got, err := decodeShareGroupMemberMetadataValue(mv.encode()); err != nil || !reflect.DeepEqual(got, mv) {
		t.Fatalf("%+v %v", got, err)
	}
	cv := shareGroupCurrentMemberAssignmentValue{MemberEpoch: 3, PreviousMemberEpoch: 2, AssignedPartitions: []topicPartitions{{TopicID: uuid1, Partitions: []int32{0, 2}}}}
	if got, err := decodeShareGroupCurrentMemberAssignmentValue(cv.encode()); err != nil || !reflect.DeepEqual(got, cv) {
		t.Fatalf("%+v %v", got, err)
	}
	sv := shareGroupStatePartitionMetadataValue{
		InitializingTopics: []topicPartitionsInfo{{TopicID: uuid1, TopicName: "t", Partitions: []int32{1}}},
		InitializedTopics:  []topicPartitionsInfo{{TopicID: uuid1, TopicName: "t", Partitions: []int32{0}}},
		DeletingTopics:     []topicInfo{{TopicID: uuid1, TopicName: "t"}},
	}
	if got, err := decodeShareGroupStatePartitionMetadataValue(sv.encode()); err != nil || !reflect.DeepEqual(got, sv) {
		t.Fatalf("%+v %v", got, err)
	}
	hv := shareGroupMetadataValue{Epoch: 9, MetadataHash: -4}
	if got, err := decodeShareGroupMetadataValue(hv.encode()); err != nil || got != hv {
		t.Fatalf("%+v %v", got, err)
	}
	// Kafka 4.0's ShareGroupPartitionMetadata is skipped.
	if err := newTestShard(t).s.Replay(0, -1, -1, groupKey(typeShareGroupPartitionMetadata, "g"), []byte{0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
}

// The simple assignor, table-driven (Kafka's SimpleAssignorTest cases in
// spirit: balance first, then stickiness, sharing when members outnumber
// partitions, per topic when subscriptions differ).
func TestSimpleAssignor(t *testing.T) {
	t1, t2 := [16]byte{1}, [16]byte{2}
	both := map[[16]byte]bool{t1: true, t2: true}
	only1, only2 := map[[16]byte]bool{t1: true}, map[[16]byte]bool{t2: true}
	for _, tc := range []struct {
		name       string
		partitions map[[16]byte]int32
		members    []shareAssignMember
		assignable func([16]byte, int32) bool
		want       map[string]assignment
	}{
		{"one member takes all", map[[16]byte]int32{t1: 3},
			[]shareAssignMember{{id: "a", subscribed: only1}}, nil,
			map[string]assignment{"a": {t1: {0, 1, 2}}}},
		{"three members, three partitions", map[[16]byte]int32{t1: 3},
			[]shareAssignMember{{id: "a", subscribed: only1}, {id: "b", subscribed: only1}, {id: "c", subscribed: only1}}, nil,
			map[string]assignment{"a": {t1: {0}}, "b": {t1: {1}}, "c": {t1: {2}}}},
		{"four members share two partitions", map[[16]byte]int32{t1: 2},
			[]shareAssignMember{{id: "a", subscribed: only1}, {id: "b", subscribed: only1}, {id: "c", subscribed: only1}, {id: "d", subscribed: only1}}, nil,
			map[string]assignment{"a": {t1: {0}}, "b": {t1: {0}}, "c": {t1: {1}}, "d": {t1: {1}}}},
		{"two members, five partitions over two topics", map[[16]byte]int32{t1: 3, t2: 2},
			[]shareAssignMember{{id: "a", subscribed: both}, {id: "b", subscribed: both}}, nil,
			map[string]assignment{"a": {t1: {0, 2}, t2: {1}}, "b": {t1: {1}, t2: {0}}}},
		{"sticky", map[[16]byte]int32{t1: 4},
			[]shareAssignMember{{id: "a", subscribed: only1, current: assignment{t1: {2, 3}}}, {id: "b", subscribed: only1, current: assignment{t1: {0, 1}}}}, nil,
			map[string]assignment{"a": {t1: {2, 3}}, "b": {t1: {0, 1}}}},
		{"a newcomer takes from the overfilled", map[[16]byte]int32{t1: 4},
			[]shareAssignMember{{id: "a", subscribed: only1, current: assignment{t1: {0, 1, 2, 3}}}, {id: "b", subscribed: only1}}, nil,
			map[string]assignment{"a": {t1: {2, 3}}, "b": {t1: {0, 1}}}},
		{"unassignable partitions wait", map[[16]byte]int32{t1: 3},
			[]shareAssignMember{{id: "a", subscribed: only1}}, func(_ [16]byte, p int32) bool { return p != 1 },
			map[string]assignment{"a": {t1: {0, 2}}}},
		{"heterogeneous: per topic among its subscribers", map[[16]byte]int32{t1: 2, t2: 2},
			[]shareAssignMember{{id: "a", subscribed: only1}, {id: "b", subscribed: only2}, {id: "c", subscribed: both}}, nil,
			map[string]assignment{"a": {t1: {0}}, "b": {t2: {0}}, "c": {t1: {1}, t2: {1}}}},
		{"unsubscribed topics go", map[[16]byte]int32{t1: 1},
			[]shareAssignMember{{id: "a", subscribed: only1, current: assignment{t1: {0}, t2: {0}}}}, nil,
			map[string]assignment{"a": {t1: {0}}}},
		{"no subscription", map[[16]byte]int32{},
			[]shareAssignMember{{id: "a", subscribed: map[[16]byte]bool{}}}, nil,
			map[string]assignment{"a": {}}},
	} {
		got := simpleAssign(shareAssignSpec{members: tc.members, partitions: tc.partitions, assignable: tc.assignable})
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v", tc.name, got)
			continue
		}
		for id, w := range tc.want {
			if !got[id].equal(w) {
				t.Errorf("%s: %s got %v, want %v", tc.name, id, got[id], w)
			}
		}
	}
}

// Balance holds for any number of members and partitions: every
// partition assigned, counts within one, no partition shared by more than
// ceil(M/P).
func TestSimpleAssignorBalance(t *testing.T) {
	t1 := [16]byte{1}
	for m := 1; m <= 7; m++ {
		for p := int32(1); p <= 7; p++ {
			var members []shareAssignMember
			for i := range m {
				members = append(members, shareAssignMember{id: string(rune('a' + i)), subscribed: map[[16]byte]bool{t1: true}})
			}
			got := simpleAssign(shareAssignSpec{members: members, partitions: map[[16]byte]int32{t1: p}})
			counts, sharing := []int{}, map[int32]int{}
			for _, a := range got {
				counts = append(counts, a.count())
				for _, q := range a[t1] {
					sharing[q]++
				}
			}
			want := (m + int(p) - 1) / int(p)
			if slices.Max(counts)-slices.Min(counts) > 1 || int32(len(sharing)) != p {
				t.Errorf("%d members %d partitions: %v", m, p, got)
			}
			for q, n := range sharing {
				if n > want {
					t.Errorf("%d members %d partitions: partition %d shared %d times", m, p, q, n)
				}
			}
		}
	}
}

// A deleted topic leaves the group's share state metadata, so that a
// topic re-created under the same name is initialized again and the
// group does not bump its epoch at every heartbeat.
func TestShareGroupTopicDeletedAndRecreated(t *testing.T) {
	ts := newTestShard(t)
	ts.mustSHB("sg", "m1", 0, "foo")
	ts.mustSHB("sg", "m1", 1)
	ts.topics.remove("foo")
	commit(ts, voidResult{Records: ts.s.onTopicsDeleted(map[string]bool{"foo": true})}, nil)
	if md := ts.share("sg").stateMetadata; len(md.initialized) != 0 {
		t.Fatalf("%+v", md)
	}
	newID := [16]byte{9, 9}
	ts.topics.add(TopicInfo{Name: "foo", ID: newID, Partitions: 2})
	ts.s.onTopicsChanged([]string{"foo"})
	for range 3 {
		ts.mustSHB("sg", "m1", ts.share("sg").members["m1"].memberEpoch)
	}
	g := ts.share("sg")
	if !g.members["m1"].assigned.equal(assignment{newID: {0, 1}}) {
		t.Fatalf("assigned %v", g.members["m1"].assigned)
	}
	e := g.groupEpoch
	ts.mustSHB("sg", "m1", g.members["m1"].memberEpoch)
	if ts.share("sg").groupEpoch != e {
		t.Fatal("the epoch moves at every heartbeat")
	}
}

// Members subscribed to different topics are balanced topic by topic; a
// member that changes its subscription drops the other topic at once.
func TestShareGroupHeterogeneousAndResubscribe(t *testing.T) {
	ts := newTestShard(t)
	foo, bar := ts.id("foo"), ts.id("bar")
	ts.mustSHB("sg", "a", 0, "foo")
	ts.mustSHB("sg", "b", 0, "foo", "bar")
	settle := func() {
		for range 3 {
			for _, m := range ts.share("sg").sortedMemberIDs() {
				ts.mustSHB("sg", m, ts.share("sg").members[m].memberEpoch)
			}
		}
	}
	settle()
	a, b := ts.share("sg").members["a"].assigned, ts.share("sg").members["b"].assigned
	if a[bar] != nil || len(a[foo])+len(b[foo]) != 3 || !slices.Equal(b[bar], []int32{0, 1}) {
		t.Fatalf("a %v b %v", a, b)
	}
	// b subscribes to bar only: its foo partitions go at once.
	r := ts.mustSHB("sg", "b", ts.share("sg").members["b"].memberEpoch, "bar")
	if got := shareAssigned(r); got[foo] != nil {
		t.Fatalf("b still has foo: %v", got)
	}
	settle()
	if a := ts.share("sg").members["a"].assigned; !slices.Equal(a[foo], []int32{0, 1, 2}) {
		t.Fatalf("a %v", a)
	}
}
