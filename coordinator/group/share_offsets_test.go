package group

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
)

func serviceAlterShareOffsets(t *testing.T, s *Service, group string, topic string, offsets map[int32]int64) *kmsg.AlterShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = p, offsets[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ch := make(chan *kmsg.AlterShareGroupOffsetsResponse, 1)
	s.AlterShareGroupOffsets(RequestContext{}, req, func(r *kmsg.AlterShareGroupOffsetsResponse) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("AlterShareGroupOffsets did not answer")
	}
	panic("unreachable")
}

// serviceDescribeShareOffsets describes the group's offsets: topics nil
// is all; returns topic -> partition -> start offset, and the group error.
func serviceDescribeShareOffsets(t *testing.T, s *Service, group string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) (map[string]map[int32]int64, int16) {
	t.Helper()
	req := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	req.GroupID, req.Topics = group, topics
	ch := make(chan kmsg.DescribeShareGroupOffsetsResponseGroup, 1)
	s.DescribeShareGroupOffsets(RequestContext{}, req, func(r kmsg.DescribeShareGroupOffsetsResponseGroup) { ch <- r })
	var g kmsg.DescribeShareGroupOffsetsResponseGroup
	select {
	case g = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("DescribeShareGroupOffsets did not answer")
	}
	out := map[string]map[int32]int64{}
	for _, rt := range g.Topics {
		out[rt.Topic] = map[int32]int64{}
		for _, rp := range rt.Partitions {
			out[rt.Topic][rp.Partition] = rp.StartOffset
		}
	}
	return out, g.ErrorCode
}

func serviceDeleteShareOffsets(t *testing.T, s *Service, group string, topics ...string) *kmsg.DeleteShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, n := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	ch := make(chan *kmsg.DeleteShareGroupOffsetsResponse, 1)
	s.DeleteShareGroupOffsets(RequestContext{}, req, func(r *kmsg.DeleteShareGroupOffsetsResponse) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("DeleteShareGroupOffsets did not answer")
	}
	panic("unreachable")
}

func shareStateMetadataOf(t *testing.T, s *Service, group string) *shareStateMetadata {
	t.Helper()
	var md *shareStateMetadata
	readShard(t, s, func(sh *Shard) {
		if g, ok := sh.groups[group].(*ShareGroup); ok {
			md = g.stateMetadata
		}
	})
	return md
}

// Altering a group that does not exist creates it: the start offsets are
// initialized through the persister at the group's epoch, the partitions
// recorded as initialized, and Describe reads them back, for the named
// topics and for all; an unknown partition or topic is
// UNKNOWN_TOPIC_OR_PARTITION. DeleteGroups then deletes the group.
func TestShareGroupOffsetsAlterDescribe(t *testing.T) {
	p := &fakePersister{}
	s := newShareTestService(t, p)
	r := serviceAlterShareOffsets(t, s, "sg", "foo", map[int32]int64{0: 8, 2: 3, 7: 1})
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 3 {
		t.Fatalf("alter: %+v", r)
	}
	for _, rp := range r.Topics[0].Partitions {
		want := int16(0)
		if rp.Partition == 7 {
			want = kerr.UnknownTopicOrPartition.Code
		}
		if rp.ErrorCode != want {
			t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
		}
	}
	if inits, _ := p.calls(); !slices.Equal(inits, []string{"sg foo-0 epoch 0 start 8", "sg foo-2 epoch 0 start 3"}) {
		t.Fatalf("InitializeState calls %v", inits)
	}
	md := shareStateMetadataOf(t, s, "sg")
	if md == nil || len(md.initializing) != 0 || len(md.initialized) != 1 {
		t.Fatalf("state metadata %+v", md)
	}
	for _, tp := range md.initialized {
		if !slices.Equal(tp.partitions, []int32{0, 2}) {
			t.Fatalf("initialized %v", tp.partitions)
		}
	}
	if r := serviceAlterShareOffsets(t, s, "sg", "nope", map[int32]int64{0: 1}); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", r)
	}

	all, code := serviceDescribeShareOffsets(t, s, "sg", nil)
	if code != 0 || len(all) != 1 || all["foo"][0] != 8 || all["foo"][2] != 3 || len(all["foo"]) != 2 {
		t.Fatalf("describe all: %v %v", all, kerr.ErrorForCode(code))
	}
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = "foo", []int32{0, 1}
	rt2 := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt2.Topic, rt2.Partitions = "nope", []int32{0}
	some, code := serviceDescribeShareOffsets(t, s, "sg", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{rt, rt2})
	if code != 0 || some["foo"][0] != 8 || some["foo"][1] != -1 || some["nope"][0] != -1 {
		t.Fatalf("describe foo: %v", some)
	}
	if none, code := serviceDescribeShareOffsets(t, s, "other", nil); code != 0 || len(none) != 0 {
		t.Fatalf("describe a group that does not exist: %v %v", none, kerr.ErrorForCode(code))
	}

	ch := make(chan []kmsg.DeleteGroupsResponseGroup, 1)
	s.DeleteGroups(RequestContext{}, []string{"sg"}, func(r []kmsg.DeleteGroupsResponseGroup) { ch <- r })
	if g := <-ch; g[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %v", kerr.ErrorForCode(g[0].ErrorCode))
	}
}

// A group with members may not have its offsets altered or deleted; once
// empty, the alter initializes at the current group epoch (newer than
// the state's), and the
// partitions stay initialized (no new initialization on the next join).
func TestShareGroupOffsetsNonEmpty(t *testing.T) {
	p := &fakePersister{}
	s := newShareTestService(t, p)
	heartbeatUntilAssigned(t, s, "sg", "m1", 3)
	if r := serviceAlterShareOffsets(t, s, "sg", "foo", map[int32]int64{0: 5}); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter a non-empty group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := serviceDeleteShareOffsets(t, s, "sg", "foo"); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete from a non-empty group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	serviceSHB(t, s, "sg", "m1", -1)
	if r := serviceAlterShareOffsets(t, s, "sg", "foo", map[int32]int64{0: 5}); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter the empty group: %+v", r)
	}
	var epoch int32
	readShard(t, s, func(sh *Shard) { epoch = sh.groups["sg"].(*ShareGroup).groupEpoch })
	inits, _ := p.calls()
	if last := inits[len(inits)-1]; epoch <= 1 || last != "sg foo-0 epoch "+itoa(epoch)+" start 5" {
		t.Fatalf("InitializeState calls %v (group epoch %d)", inits, epoch)
	}
	all, _ := serviceDescribeShareOffsets(t, s, "sg", nil)
	if all["foo"][0] != 5 || all["foo"][1] != -1 || len(all["foo"]) != 3 {
		t.Fatalf("describe all: %v", all)
	}
	if r := serviceSHB(t, s, "sg", "m2", 0, "foo"); r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 || len(r.Assignment.TopicPartitions[0].Partitions) != 3 {
		t.Fatalf("join after the alter: %+v", r.Assignment)
	}
	if again, _ := p.calls(); len(again) != len(inits) {
		t.Fatalf("a join after the alter initialized again: %v", again)
	}
}

// Delete removes the topic's state through the persister and the topic
// from the group's state metadata; a topic with no state, or unknown, is
// UNKNOWN_TOPIC_OR_PARTITION; a group that does not exist
// GROUP_ID_NOT_FOUND; a failed deletion leaves the topic deleting, and a
// later delete finishes it.
func TestShareGroupOffsetsDelete(t *testing.T) {
	p := &fakePersister{}
	s := newShareTestService(t, p)
	s.opts.Metadata.(*fakeTopics).add(TopicInfo{Name: "bar", Partitions: 1})
	serviceAlterShareOffsets(t, s, "sg", "foo", map[int32]int64{0: 8, 1: 9})
	if r := serviceDeleteShareOffsets(t, s, "nosuch", "foo"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete from a missing group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	p.mu.Lock()
	p.failDelete = kerr.CoordinatorNotAvailable
	p.mu.Unlock()
	r := serviceDeleteShareOffsets(t, s, "sg", "foo", "bar", "nope")
	codes := map[string]int16{}
	for _, rt := range r.Topics {
		codes[rt.Topic] = rt.ErrorCode
	}
	if r.ErrorCode != 0 || codes["foo"] != kerr.CoordinatorNotAvailable.Code || codes["bar"] != kerr.UnknownTopicOrPartition.Code || codes["nope"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete with a failing persister: %+v", r)
	}
	if md := shareStateMetadataOf(t, s, "sg"); len(md.deleting) != 1 || len(md.initialized) != 0 {
		t.Fatalf("after a failed delete: %+v", md)
	}
	p.mu.Lock()
	p.failDelete = nil
	p.mu.Unlock()
	r = serviceDeleteShareOffsets(t, s, "sg", "foo")
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || r.Topics[0].Topic != "foo" {
		t.Fatalf("delete: %+v", r)
	}
	if _, dels := p.calls(); !slices.Equal(dels, []string{"sg foo-0", "sg foo-1", "sg foo-2"}) {
		t.Fatalf("DeleteState calls %v", dels)
	}
	if md := shareStateMetadataOf(t, s, "sg"); len(md.deleting) != 0 || len(md.initialized) != 0 {
		t.Fatalf("after the delete: %+v", md)
	}
	if all, _ := serviceDescribeShareOffsets(t, s, "sg", nil); len(all) != 0 {
		t.Fatalf("describe after the delete: %v", all)
	}
}

// readShard runs f on the group coordinator's shard 0.
func readShard(t *testing.T, s *Service, f func(*Shard)) {
	t.Helper()
	ch := make(chan error, 1)
	runtime.Read(s.rt, "test", 0, func(sh *Shard) (struct{}, error) {
		f(sh)
		return struct{}{}, nil
	}, func(_ struct{}, err error) { ch <- err })
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
}
