package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share-group offset APIs (KIP-932): AlterShareGroupOffsets,
// DescribeShareGroupOffsets and DeleteShareGroupOffsets over TCP, routed
// by kgo to the group coordinator.

func alterShareOffsets(t *testing.T, cl *kgo.Client, group string, offsets map[string]map[int32]int64) *kmsg.AlterShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for topic, ps := range offsets {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		for p, o := range ps {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	// A coordinator still loading (just started or moved) answers a
	// retriable error for the whole request: retried, as clients do.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := req.RequestWith(ctxTimeout(t, 20*time.Second), cl)
		if err != nil {
			t.Fatalf("AlterShareGroupOffsets: %v", err)
		}
		if e := kerr.ErrorForCode(resp.ErrorCode); e == nil || !kerr.IsRetriable(e) || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// describeShareOffsets returns topic -> partition -> the partition's
// answer; topics nil describes all the group's topics.
func describeShareOffsets(t *testing.T, cl *kgo.Client, group string, topics map[string][]int32) map[string]map[int32]kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	for topic, ps := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, ps
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctxTimeout(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("DescribeShareGroupOffsets: %v", err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("DescribeShareGroupOffsets: %+v", resp.Groups)
	}
	out := map[string]map[int32]kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{}
	for _, rt := range resp.Groups[0].Topics {
		out[rt.Topic] = map[int32]kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{}
		for _, rp := range rt.Partitions {
			out[rt.Topic][rp.Partition] = rp
		}
	}
	return out
}

func deleteShareOffsets(t *testing.T, cl *kgo.Client, group string, topics ...string) *kmsg.DeleteShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, n := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctxTimeout(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("DeleteShareGroupOffsets: %v", err)
	}
	return resp
}

// Alter a group that never had a member, describe it (one topic, then
// all), delete one topic's offsets, and delete the group; an unknown
// partition is UNKNOWN_TOPIC_OR_PARTITION; a group with a member may not
// be altered nor have its offsets deleted.
func TestShareOffsetsAlterDescribeDelete(t *testing.T) {
	b := startBroker(t, "", shareGroupBroker...)
	enableShareGroups(t, b.Seed())
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 1, "so-one")
	createTopic(t, adm, 2, "so-two")
	produceSeq(t, b.Seed(), "so-one", 0, 20)
	cl := newClient(t, b.Seed())

	r := alterShareOffsets(t, cl, "so-admin", map[string]map[int32]int64{"so-one": {0: 8, 3: 1}, "so-two": {0: 1, 1: 2}})
	if r.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			want := int16(0)
			if rt.Topic == "so-one" && rp.Partition == 3 {
				want = kerr.UnknownTopicOrPartition.Code
			}
			if rp.ErrorCode != want {
				t.Fatalf("alter %s-%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}

	one := describeShareOffsets(t, cl, "so-admin", map[string][]int32{"so-one": {0}})
	if p := one["so-one"][0]; p.StartOffset != 8 || p.ErrorCode != 0 {
		t.Fatalf("describe so-one: %+v", one)
	}
	t.Logf("share-partition lag %d", one["so-one"][0].Lag)
	if lag := one["so-one"][0].Lag; lag != 12 && lag != -1 {
		t.Fatalf("lag %d, want 12 (or -1: not known)", lag)
	}
	// Altered again at the same group epoch (no member ever joined).
	if r := alterShareOffsets(t, cl, "so-admin", map[string]map[int32]int64{"so-two": {1: 2}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter again: %+v", r)
	}
	if r := alterShareOffsets(t, cl, "so-admin", map[string]map[int32]int64{"so-two": {1: 4}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter again: %+v", r)
	}
	all := describeShareOffsets(t, cl, "so-admin", nil)
	if len(all) != 2 || all["so-one"][0].StartOffset != 8 || all["so-two"][0].StartOffset != 1 || all["so-two"][1].StartOffset != 4 || len(all["so-one"]) != 1 {
		t.Fatalf("describe all: %+v", all)
	}

	d := deleteShareOffsets(t, cl, "so-admin", "so-one", "so-none")
	codes := map[string]int16{}
	for _, rt := range d.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if d.ErrorCode != 0 || codes["so-one"] != 0 || codes["so-none"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %+v", d)
	}
	if all := describeShareOffsets(t, cl, "so-admin", nil); len(all) != 1 || all["so-two"] == nil {
		t.Fatalf("describe all after the delete: %+v", all)
	}
	if p := describeShareOffsets(t, cl, "so-admin", map[string][]int32{"so-one": {0}})["so-one"][0]; p.StartOffset != -1 {
		t.Fatalf("describe so-one after the delete: %+v", p)
	}

	m := &shareMember{group: "so-busy", id: newMemberID()}
	if err := m.heartbeat(t, cl, "so-one"); err != nil {
		t.Fatal(err)
	}
	if r := alterShareOffsets(t, cl, "so-busy", map[string]map[int32]int64{"so-one": {0: 1}}); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter a group with a member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := deleteShareOffsets(t, cl, "so-busy", "so-one"); d.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete from a group with a member: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	m.leave(t, cl)

	for _, g := range []string{"so-admin", "so-busy"} {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{g}
		resp, err := req.RequestWith(ctxTimeout(t, 20*time.Second), cl)
		if err != nil || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("DeleteGroups %s: %v %+v", g, err, resp)
		}
	}
}

// A share consumer of a group whose start offset was altered before it
// joined starts delivering at that offset (share.auto.offset.reset,
// latest by default, does not apply: the state is initialized).
func TestShareOffsetsAlteredStartOffsetDelivered(t *testing.T) {
	b := startBroker(t, "", shareGroupBroker...)
	enableShareGroups(t, b.Seed())
	createTopic(t, newAdmin(t, b.Seed()), 1, "so-queue")
	produceSeq(t, b.Seed(), "so-queue", 0, 20)
	cl := newClient(t, b.Seed())
	if r := alterShareOffsets(t, cl, "so-readers", map[string]map[int32]int64{"so-queue": {0: 8}}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}

	tally := &shareTally{seen: map[uint64][]int32{}}
	ctx, cancel := context.WithCancel(ctxTimeout(t, time.Minute))
	var wg sync.WaitGroup
	shareConsumer(ctx, t, b.Seed(), "so-readers", "so-queue", tally, kgo.AckAccept, &wg)
	eventually(t, 30*time.Second, func() error {
		if d := tally.distinct(); d < 12 {
			return fmt.Errorf("%d of 12 records delivered", d)
		}
		return nil
	})
	cancel()
	wg.Wait()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for v := range tally.seen {
		if v < 8 {
			t.Fatalf("record %d, below the altered start offset 8, delivered", v)
		}
	}
	if len(tally.seen) != 12 {
		t.Fatalf("%d distinct records delivered, want 12", len(tally.seen))
	}
	eventually(t, 20*time.Second, func() error {
		p := describeShareOffsets(t, newClient(t, b.Seed()), "so-readers", nil)["so-queue"][0]
		if p.StartOffset != 20 {
			return fmt.Errorf("start offset %d after all were accepted, want 20", p.StartOffset)
		}
		return nil
	})
}

// shareOffsetsRequest sends req straight to broker 1 (the only one, so
// the coordinator): kgo's coordinator lookup of a group the principal may
// not describe would fail before the request.
func shareOffsetsRequest[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	resp, err := cl.Broker(1).Request(ctxTimeout(t, 20*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(R)
}

// Kafka's KafkaApis authorization: DESCRIBE on the group and on each
// topic to describe, READ on the group and the topics to alter, DELETE on
// the group and READ on the topics to delete.
func TestShareOffsetsAuthorization(t *testing.T) {
	b, adm := aclBroker(t)
	enableShareGroups(t, b.Seed())
	createTopic(t, adm, 1, "authz-so")
	alice := aliceClient(t, b)
	const group = "authz-so-group"
	// The coordinator's topic, which FindCoordinator creates.
	eventually(t, 20*time.Second, func() error {
		r := adm.FindGroupCoordinators(ctxTimeout(t, 10*time.Second), group)
		return r[group].Err
	})
	alter := func() *kmsg.AlterShareGroupOffsetsResponse {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = "authz-so"
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.StartOffset = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return shareOffsetsRequest[*kmsg.AlterShareGroupOffsetsResponse](t, alice, req)
	}
	describe := func(all bool) kmsg.DescribeShareGroupOffsetsResponseGroup {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		if !all {
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic, rt.Partitions = "authz-so", []int32{0}
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
		return shareOffsetsRequest[*kmsg.DescribeShareGroupOffsetsResponse](t, alice, req).Groups[0]
	}
	del := func() *kmsg.DeleteShareGroupOffsetsResponse {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = "authz-so"
		req.Topics = append(req.Topics, rt)
		return shareOffsetsRequest[*kmsg.DeleteShareGroupOffsetsResponse](t, alice, req)
	}

	if r := alter(); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter without READ on the group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if g := describe(true); g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe without DESCRIBE on the group: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	addACLs(t, adm, allow().Groups(group).Operations(kadm.OpRead))
	eventually(t, 20*time.Second, func() error { // until the coordinator is loaded
		if r := alter(); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			return fmt.Errorf("alter without READ on the topic: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
		}
		return nil
	})
	if g := describe(false); g.ErrorCode != 0 || g.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("describe without DESCRIBE on the topic: %+v", g)
	}
	if r := del(); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without DELETE on the group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	addACLs(t, adm, allow().Topics("authz-so").Operations(kadm.OpRead))
	if r := alter(); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if g := describe(true); g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].StartOffset != 0 {
		t.Fatalf("describe all: %+v", g)
	}
	addACLs(t, adm, allow().Groups(group).Operations(kadm.OpDelete))
	if r := del(); r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", r)
	}
}

// Altered start offsets, and the group the alter created, survive a clean
// restart and a kill -9 of a real broker process; a delete after the
// restarts still finds the topic initialized.
func TestShareOffsetsSurviveRestarts(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	enableShareGroups(t, p.Addr)
	createTopic(t, newAdmin(t, p.Addr), 2, "so-durable")
	cl := newClient(t, p.Addr)
	if r := alterShareOffsets(t, cl, "so-durable-group", map[string]map[int32]int64{"so-durable": {0: 3, 1: 5}}); r.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, restart := range []string{"clean restart", "kill -9"} {
		if restart == "kill -9" {
			p.kill(t)
		} else {
			p.stop(t)
		}
		p = startProcess(t, dir, port)
		cl := newClient(t, p.Addr)
		eventually(t, 30*time.Second, func() error {
			req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			rg.GroupID = "so-durable-group"
			req.Groups = append(req.Groups, rg)
			resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
			if err != nil {
				return err
			}
			g := resp.Groups[0]
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return err
			}
			got := map[int32]int64{}
			for _, rt := range g.Topics {
				for _, rp := range rt.Partitions {
					got[rp.Partition] = rp.StartOffset
				}
			}
			if len(got) != 2 || got[0] != 3 || got[1] != 5 {
				return fmt.Errorf("after a %s: start offsets %v, want 0:3 1:5", restart, got)
			}
			return nil
		})
	}
	if d := deleteShareOffsets(t, newClient(t, p.Addr), "so-durable-group", "so-durable"); d.ErrorCode != 0 || len(d.Topics) != 1 || d.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete after the restarts: %+v", d)
	}
}

// An alter after the group has consumed takes effect: once its last
// member has left, the partition's leader drops the group's share
// partition (Kafka's onGroupEmpty), and the next member reads from the
// altered start offset, records accepted before included.
func TestShareOffsetsAlterAfterConsuming(t *testing.T) {
	b := startBroker(t, "", shareGroupBroker...)
	enableShareGroups(t, b.Seed())
	createTopic(t, newAdmin(t, b.Seed()), 1, "so-again")
	shareGroupConfigs(t, b.Seed(), "so-again-readers", "share.auto.offset.reset", "earliest")
	produceSeq(t, b.Seed(), "so-again", 0, 20)
	read := func(want int) map[uint64][]int32 {
		t.Helper()
		tally := &shareTally{seen: map[uint64][]int32{}}
		ctx, cancel := context.WithCancel(ctxTimeout(t, time.Minute))
		var wg sync.WaitGroup
		cl := shareConsumer(ctx, t, b.Seed(), "so-again-readers", "so-again", tally, kgo.AckAccept, &wg)
		eventually(t, 30*time.Second, func() error {
			if d := tally.distinct(); d < want {
				return fmt.Errorf("%d of %d records delivered", d, want)
			}
			return nil
		})
		cancel()
		wg.Wait()
		cl.Close() // acknowledges and leaves the group
		return tally.seen
	}
	read(20)
	cl := newClient(t, b.Seed())
	eventually(t, 20*time.Second, func() error {
		r := alterShareOffsets(t, cl, "so-again-readers", map[string]map[int32]int64{"so-again": {0: 5}})
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err // NON_EMPTY_GROUP until the member's leave is in
		}
		return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
	})
	seen := read(15)
	for v := range seen {
		if v < 5 {
			t.Errorf("record %d, below the altered start offset 5, delivered", v)
		}
	}
}
