package integration

import (
	"crypto/rand"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932), the group side: ShareGroupHeartbeat and
// ShareGroupDescribe over real TCP, with kmsg requests through a kgo
// client, against real brokers.

// Broker bounds low enough that a member's session can expire within the
// test, and heartbeats come quickly.
var shareGroupBroker = []string{
	"group.share.min.session.timeout.ms=1000",
	"group.share.session.timeout.ms=3000",
	"group.share.min.heartbeat.interval.ms=100",
	"group.share.heartbeat.interval.ms=200",
}

// enableShareGroups finalizes share.version 1 (a new cluster's already;
// the tests say that they need it) and waits until every broker serves
// the share group APIs.
func enableShareGroups(t testing.TB, seeds ...string) {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	adm := newAdmin(t, strings.Join(seeds, ","))
	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res.Error() != nil {
		t.Fatalf("finalizing share.version 1: %v %v", err, res.Error())
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		eventually(t, 20*time.Second, func() error {
			// A client of its own each time: kgo keeps the versions
			// a connection was told.
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
			if err != nil {
				return err
			}
			defer cl.Close()
			if _, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil {
				return err
			}
			// kgo sends the request only if the broker advertised it
			// when the connection opened.
			req := kmsg.NewPtrShareGroupDescribeRequest()
			req.GroupIDs = []string{"enable-share-groups"}
			if _, err := cl.Broker(int(b.NodeID)).Request(ctx, req); err != nil {
				return fmt.Errorf("broker %d does not serve share groups yet: %w", b.NodeID, err)
			}
			return nil
		})
	}
}

func newMemberID() string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	return fmt.Sprintf("%x", id)
}

// shareMember is one share group member's view: its epoch and its
// assignment (partitions of the one topic the tests use).
type shareMember struct {
	group, id string
	epoch     int32
	assigned  []int32
	interval  int32
}

// heartbeat sends one ShareGroupHeartbeat (joining at epoch 0 with
// topics) and records what the coordinator answered.
func (m *shareMember) heartbeat(t *testing.T, cl *kgo.Client, topics ...string) error {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.SubscribedTopicNames = topics
	}
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	m.epoch, m.interval = resp.MemberEpoch, resp.HeartbeatIntervalMillis
	if resp.Assignment != nil {
		m.assigned = nil
		for _, tp := range resp.Assignment.TopicPartitions {
			m.assigned = append(m.assigned, tp.Partitions...)
		}
		slices.Sort(m.assigned)
	}
	return nil
}

func (m *shareMember) leave(t *testing.T, cl *kgo.Client) {
	t.Helper()
	m.epoch = -1
	if err := m.heartbeat(t, cl); err != nil {
		t.Fatalf("leave %s: %v", m.id, err)
	}
}

// settle heartbeats the members until their assignments satisfy ok.
func settle(t *testing.T, cl *kgo.Client, ms []*shareMember, ok func() error) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		for _, m := range ms {
			if err := m.heartbeat(t, cl, "shared"); err != nil {
				return fmt.Errorf("member %s: %w", m.id, err)
			}
		}
		return ok()
	})
}

// coverEach: every partition of 0..n-1 is assigned to exactly one member
// and every member has want partitions (nil: any).
func coverEach(ms []*shareMember, n int, want []int) func() error {
	return func() error {
		var all []int32
		for i, m := range ms {
			if want != nil && len(m.assigned) != want[i] {
				return fmt.Errorf("member %d has %v", i, m.assigned)
			}
			all = append(all, m.assigned...)
		}
		slices.Sort(all)
		if len(all) != n || len(slices.Compact(slices.Clone(all))) != n {
			return fmt.Errorf("partitions assigned %v", all)
		}
		return nil
	}
}

func shareDescribe(t *testing.T, cl *kgo.Client, groups ...string) []kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = groups
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Groups
}

func listGroupsOfType(t *testing.T, cl *kgo.Client, types ...string) []string {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.TypesFilter = types
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range resp.Groups {
		out = append(out, g.Group+" "+g.GroupType+" "+g.GroupState)
	}
	sort.Strings(out)
	return out
}

// Three members of one share group over a three-partition topic get one
// partition each; describe and list show them; one leaving and one
// timing out hands their partitions to the others; group configs are
// kept and applied; an empty share group is deleted.
func TestShareGroupMembersAssignmentsAndAdmin(t *testing.T) {
	b := startBroker(t, "", shareGroupBroker...)
	enableShareGroups(t, b.Seed())
	cl := newClient(t, b.Seed())
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 3, "shared")

	ms := []*shareMember{{group: "sg", id: newMemberID()}, {group: "sg", id: newMemberID()}, {group: "sg", id: newMemberID()}}
	settle(t, cl, ms, coverEach(ms, 3, []int{1, 1, 1}))

	d := shareDescribe(t, cl, "sg", "nope")
	if d[0].ErrorCode != 0 || d[0].GroupState != "Stable" || d[0].Assignor != "simple" || len(d[0].Members) != 3 || d[0].GroupEpoch != d[0].AssignmentEpoch {
		t.Fatalf("describe: %+v", d[0])
	}
	for _, dm := range d[0].Members {
		if len(dm.SubscribedTopicNames) != 1 || len(dm.Assignment.TopicPartitions) != 1 || dm.Assignment.TopicPartitions[0].Topic != "shared" {
			t.Fatalf("described member: %+v", dm)
		}
	}
	if d[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe of a missing group: %+v", d[1])
	}
	m := scrape(t, b.MetricsAddr().String())
	if m[`kafka_server_group_coordinator_metrics_group_count{protocol="share"}`] != 1 ||
		m[`kafka_server_group_coordinator_metrics_share_group_count{state="Stable"}`] != 1 ||
		m["kafka_server_group_coordinator_metrics_share_group_rebalance_total"] < 2 {
		t.Fatalf("share group metrics: %v", m)
	}
	// A consumer group beside it: ListGroups filters by type.
	consumer, _ := joinConsumerGroup(t, cl, "cg", "shared")
	_ = consumer
	if got := listGroupsOfType(t, cl, "share"); !slices.Equal(got, []string{"sg share Stable"}) {
		t.Fatalf("ListGroups share: %v", got)
	}
	if got := listGroupsOfType(t, cl, "consumer"); len(got) != 1 || got[0] != "cg consumer Stable" && got[0] != "cg consumer Reconciling" && got[0] != "cg consumer Assigning" {
		t.Fatalf("ListGroups consumer: %v", got)
	}
	// The consumer group's id is not a share group's.
	other := &shareMember{group: "cg", id: newMemberID()}
	if err := other.heartbeat(t, cl, "shared"); err != kerr.GroupIDNotFound {
		t.Fatalf("share heartbeat on a consumer group: %v", err)
	}

	// A member leaves: the other two share the three partitions.
	ms[2].leave(t, cl)
	ms = ms[:2]
	settle(t, cl, ms, coverEach(ms, 3, nil))

	// Group configs: set, read back, and the heartbeat interval applies.
	if code, msg := setGroupConfigs(t, cl, "sg", "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000", "share.heartbeat.interval.ms", "300"); code != 0 {
		t.Fatalf("set share group configs: %v %s", kerr.ErrorForCode(code), msg)
	}
	eventually(t, 10*time.Second, func() error {
		got := describeGroupConfigs(t, cl, "sg")
		if got["share.auto.offset.reset"] != "earliest GROUP_CONFIG" || got["share.record.lock.duration.ms"] != "15000 GROUP_CONFIG" ||
			got["share.isolation.level"] != "read_uncommitted DEFAULT_CONFIG" {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
	if code, _ := setGroupConfigs(t, cl, "sg", "share.auto.offset.reset", "sometimes"); code != kerr.InvalidConfig.Code {
		t.Fatalf("a bad share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}
	eventually(t, 10*time.Second, func() error {
		if err := ms[0].heartbeat(t, cl); err != nil {
			return err
		}
		if ms[0].interval != 300 {
			return fmt.Errorf("heartbeat interval %d", ms[0].interval)
		}
		return nil
	})

	// The second member stops: after its session timeout the first has all.
	eventually(t, 20*time.Second, func() error {
		if err := ms[0].heartbeat(t, cl); err != nil {
			return err
		}
		if len(ms[0].assigned) != 3 {
			return fmt.Errorf("assigned %v", ms[0].assigned)
		}
		return nil
	})
	if err := ms[1].heartbeat(t, cl); err != kerr.UnknownMemberID {
		t.Fatalf("the timed-out member heartbeats: %v", err)
	}

	// DeleteGroups: refused while a member is in, then deleted.
	res, err := adm.DeleteGroups(ctxTimeout(t, 10*time.Second), "sg")
	if err != nil {
		t.Fatal(err)
	}
	if r := res["sg"]; r.Err != kerr.NonEmptyGroup {
		t.Fatalf("delete a share group with a member: %v", r.Err)
	}
	ms[0].leave(t, cl)
	res, err = adm.DeleteGroups(ctxTimeout(t, 10*time.Second), "sg")
	if err != nil || res["sg"].Err != nil {
		t.Fatalf("delete an empty share group: %v %v", err, res["sg"].Err)
	}
	if d := shareDescribe(t, cl, "sg"); d[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("described after delete: %+v", d[0])
	}
	if got := listGroupsOfType(t, cl, "share"); len(got) != 0 {
		t.Fatalf("listed after delete: %v", got)
	}
}

// ApiVersions advertises the share group APIs only once share.version
// is 1: ShareGroupHeartbeat and ShareGroupDescribe v1, ShareFetch and
// ShareAcknowledge v1-2, DescribeShareGroupOffsets v0-1,
// AlterShareGroupOffsets and DeleteShareGroupOffsets v0.
func TestShareGroupAPIVersions(t *testing.T) {
	b := startBroker(t, "")
	cl := newClient(t, b.Seed())
	versions := func() (map[int16][2]int16, int16) {
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxTimeout(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		var share int16
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "share.version" {
				share = f.MaxVersionLevel
			}
		}
		return got, share
	}
	// A new cluster finalizes share.version 1, as Kafka 4.2's.
	check := func(when string) {
		t.Helper()
		got, share := versions()
		if share != 1 || got[76] != [2]int16{1, 1} || got[77] != [2]int16{1, 1} || got[78] != [2]int16{1, 2} || got[79] != [2]int16{1, 2} {
			t.Fatalf("%s: share.version %d: 76 %v 77 %v 78 %v 79 %v", when, share, got[76], got[77], got[78], got[79])
		}
		if got[90] != [2]int16{0, 1} || got[91] != [2]int16{0, 0} || got[92] != [2]int16{0, 0} {
			t.Fatalf("%s: share group offsets: 90 %v 91 %v 92 %v", when, got[90], got[91], got[92])
		}
	}
	check("a new cluster")
	// Downgraded to 0, no share API is advertised (kapi's tests send one
	// anyway: UNSUPPORTED_VERSION); upgraded again, they all are.
	adm := newAdmin(t, b.Seed())
	if res, err := adm.UpdateFeatures(ctxTimeout(t, 10*time.Second), false, kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 0, UpgradeType: 2}); err != nil || res.Error() != nil {
		t.Fatalf("share.version 0: %v %v", err, res.Error())
	}
	eventually(t, 20*time.Second, func() error {
		cl = newClient(t, b.Seed())
		got, share := versions()
		for _, key := range []int16{76, 77, 78, 79, 90, 91, 92} {
			if _, ok := got[key]; ok || share != 0 {
				return fmt.Errorf("share.version %d, key %d advertised %v", share, key, got[key])
			}
		}
		return nil
	})
	enableShareGroups(t, b.Seed())
	cl = newClient(t, b.Seed())
	check("upgraded again")
}

// A share group, its members' epochs and assignments survive a clean
// restart and a kill -9 of a real broker process.
func TestShareGroupSurvivesRestarts(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	enableShareGroups(t, p.Addr)
	cl := newClient(t, p.Addr)
	createTopic(t, newAdmin(t, p.Addr), 3, "shared")
	ms := []*shareMember{{group: "durable", id: newMemberID()}, {group: "durable", id: newMemberID()}}
	settle(t, cl, ms, coverEach(ms, 3, nil))
	before := shareDescribe(t, cl, "durable")[0]

	for _, restart := range []string{"clean restart", "kill -9"} {
		if restart == "kill -9" {
			p.kill(t)
		} else {
			p.stop(t)
		}
		p = startProcess(t, dir, port)
		cl := newClient(t, p.Addr)
		var after kmsg.ShareGroupDescribeResponseGroup
		eventually(t, 30*time.Second, func() error {
			after = shareDescribe(t, cl, "durable")[0]
			if after.ErrorCode != 0 {
				return kerr.ErrorForCode(after.ErrorCode)
			}
			return nil
		})
		if after.GroupEpoch != before.GroupEpoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 2 {
			t.Fatalf("after a %s: %+v, before %+v", restart, after, before)
		}
		for i := range after.Members {
			a, b := after.Members[i], before.Members[i]
			if a.MemberID != b.MemberID || a.MemberEpoch != b.MemberEpoch || fmt.Sprint(a.Assignment.TopicPartitions) != fmt.Sprint(b.Assignment.TopicPartitions) {
				t.Fatalf("after a %s: member %+v, before %+v", restart, a, b)
			}
		}
		// The members carry on with their epochs.
		for _, m := range ms {
			eventually(t, 20*time.Second, func() error { return m.heartbeat(t, cl) })
		}
		if err := coverEach(ms, 3, nil)(); err != nil {
			t.Fatalf("after a %s: %v", restart, err)
		}
	}
}

// moldau group list, describe and delete show share groups.
func TestShareGroupCLI(t *testing.T) {
	c := newCLICluster(t)
	enableShareGroups(t, strings.Split(c.brokers, ",")...)
	topic, group := uniqueTopic("cli-shared"), uniqueTopic("cli-share-group")
	c.ok(t, nil, "topic", "create", topic, "-p", "2")
	cl := newClient(t, c.brokers)
	m := &shareMember{group: group, id: newMemberID()}
	eventually(t, 20*time.Second, func() error {
		if err := m.heartbeat(t, cl, topic); err != nil {
			return err
		}
		if len(m.assigned) != 2 {
			return fmt.Errorf("assigned %v", m.assigned)
		}
		return nil
	})
	if out := c.ok(t, nil, "group", "list"); !strings.Contains(out, group) || !strings.Contains(out, "share") {
		t.Fatalf("group list:\n%s", out)
	}
	g := c.describeGroup(t, group)
	if g.Type != "share" || g.State != "Stable" || len(g.Members) != 1 || len(g.Members[0].Assigned) != 1 || len(g.Members[0].Assigned[0].Partitions) != 2 {
		t.Fatalf("group describe: %+v", g)
	}
	m.leave(t, cl)
	// seek moves an empty share group's start offsets.
	produceSeq(t, c.brokers, topic, 0, 30)
	var seek struct {
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			NewOffset int64  `json:"new_offset"`
			Error     *string
		} `json:"partitions"`
	}
	c.okJSON(t, &seek, nil, "group", "seek", group, "--to", "-3", "--topics", topic)
	ends, err := newAdmin(t, c.brokers).ListEndOffsets(ctxTimeout(t, 10*time.Second), topic)
	if err != nil || len(seek.Partitions) != 2 {
		t.Fatalf("seek: %+v %v", seek, err)
	}
	ds, err := newAdmin(t, c.brokers).DescribeShareGroupOffsets(ctxTimeout(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range seek.Partitions {
		end, _ := ends.Lookup(topic, p.Partition)
		o, _ := ds[group].Offsets.Lookup(topic, p.Partition)
		if p.Error != nil || p.NewOffset != max(end.Offset-3, 0) || o.StartOffset != p.NewOffset {
			t.Fatalf("seek partition %d: new %d (error %v), end %d, start offset now %d", p.Partition, p.NewOffset, p.Error, end.Offset, o.StartOffset)
		}
	}
	c.ok(t, nil, "group", "delete", group)
	c.fails(t, 1, fmt.Sprintf("group %q does not exist", group), nil, "group", "describe", group)
}

// ShareGroupHeartbeat needs READ on the group and DESCRIBE on the
// subscribed topics, ShareGroupDescribe DESCRIBE on the group (and on the
// topics assigned), as Kafka's KafkaApis; refused groups come first.
func TestShareGroupAuthorization(t *testing.T) {
	b, adm := aclBroker(t)
	enableShareGroups(t, b.Seed())
	createTopic(t, adm, 1, "authz-shared")
	alice := aliceClient(t, b)
	m := &shareMember{group: "authz-share", id: newMemberID()}
	if err := m.heartbeat(t, alice, "authz-shared"); err != kerr.GroupAuthorizationFailed {
		t.Fatalf("without ACLs: %v", err)
	}
	addACLs(t, adm, allow().Groups("authz-share").Operations(kadm.OpRead))
	if err := m.heartbeat(t, alice, "authz-shared"); err != kerr.TopicAuthorizationFailed {
		t.Fatalf("without DESCRIBE on the topic: %v", err)
	}
	addACLs(t, adm, allow().Topics("authz-shared").Operations(kadm.OpDescribe))
	eventually(t, 20*time.Second, func() error {
		if err := m.heartbeat(t, alice, "authz-shared"); err != nil {
			return err
		}
		if len(m.assigned) != 1 {
			return fmt.Errorf("assigned %v", m.assigned)
		}
		return nil
	})
	// READ implies DESCRIBE (Kafka's ACL rules); another group is refused.
	// Straight to the broker: kgo's coordinator lookup of a group alice
	// may not describe fails before the describe.
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{"authz-share", "authz-other"}
	resp, err := alice.Broker(1).Request(ctxTimeout(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	d := resp.(*kmsg.ShareGroupDescribeResponse).Groups
	if len(d) != 2 || d[0].GroupID != "authz-other" || d[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe without DESCRIBE on the group: %+v", d)
	}
	if d[1].ErrorCode != 0 || len(d[1].Members) != 1 {
		t.Fatalf("describe: %+v", d[1])
	}
}

// On three nodes, share groups whose coordinators are on different nodes
// assign their members; when a node shuts down, the groups it coordinated
// are loaded by the new leaders of their __consumer_offsets partitions
// and their members carry on with their epochs.
func TestShareGroupThreeNodesFailover(t *testing.T) {
	c := startReplicatedCluster(t, shareGroupBroker...)
	enableShareGroups(t, c.seeds()...)
	cl := newClient(t, strings.Join(c.seeds(), ","))
	if r, err := newAdmin(t, strings.Join(c.seeds(), ",")).CreateTopic(ctxTimeout(t, 20*time.Second), 3, 3, nil, "shared"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var ms []*shareMember
	for i := range 6 {
		ms = append(ms, &shareMember{group: fmt.Sprintf("sg-%d", i), id: newMemberID()})
	}
	for _, m := range ms {
		settle(t, cl, []*shareMember{m}, coverEach([]*shareMember{m}, 3, nil))
	}
	before := map[string]int32{}
	var groups []string
	for _, m := range ms {
		before[m.group] = m.epoch
		groups = append(groups, m.group)
	}
	onNode1 := 0
	for _, r := range newAdmin(t, strings.Join(c.seeds(), ",")).FindGroupCoordinators(ctxTimeout(t, 10*time.Second), groups...) {
		if r.Err == nil && r.NodeID == 1 {
			onNode1++
		}
	}
	if onNode1 == 0 || onNode1 == len(groups) {
		t.Fatalf("%d of %d groups coordinated by node 1: the test wants some there and some elsewhere", onNode1, len(groups))
	}
	c.stop(0)
	cl2 := newClient(t, strings.Join(c.seeds(), ","))
	for _, m := range ms {
		eventually(t, 60*time.Second, func() error { return m.heartbeat(t, cl2) })
		d := shareDescribe(t, cl2, m.group)[0]
		if d.ErrorCode != 0 || len(d.Members) != 1 || d.Members[0].MemberEpoch != before[m.group] || len(m.assigned) != 3 {
			t.Fatalf("%s after the shutdown of node 1: %+v (member %+v)", m.group, d, m)
		}
	}
}
