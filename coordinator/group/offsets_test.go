package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

func (ts *testShard) commitOffsets(version int16, group, member string, generation int32, offsets map[int32]int64) (map[int32]int16, error) {
	ts.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = group, member, generation
	topic := offsetCommitTopic{name: "foo"}
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		md := "md"
		rp.Metadata = &md
		topic.partitions = append(topic.partitions, rp)
	}
	res, err := ts.s.commitOffset(RequestContext{APIVersion: version}, req, []offsetCommitTopic{topic})
	if err != nil {
		return nil, err
	}
	return commit(ts, res, nil)["foo"], nil
}

func (ts *testShard) fetch(group string, partitions ...int32) map[int32]int64 {
	ts.t.Helper()
	req := &kmsg.OffsetFetchRequestGroup{Group: group, MemberEpoch: -1}
	if partitions != nil {
		req.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "foo", Partitions: partitions}}
	}
	var resp *kmsg.OffsetFetchResponseGroup
	var err error
	if partitions == nil {
		resp, err = ts.s.fetchAllOffsets(req, false)
	} else {
		resp, err = ts.s.fetchOffsets(req, false)
	}
	if err != nil {
		ts.t.Fatalf("fetch: %v", err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

func TestOffsetCommitAndFetch(t *testing.T) {
	ts := newTestShard(t)
	// A simple commit (no group membership) creates a simple group.
	codes, err := ts.commitOffsets(8, "simple", "", -1, map[int32]int64{0: 10, 1: 20})
	if err != nil || codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("simple commit: %v %v", codes, err)
	}
	if g := ts.classic("simple"); !g.isSimpleGroup() {
		t.Fatal("not a simple group")
	}
	if got := ts.fetch("simple", 0, 1, 2); got[0] != 10 || got[1] != 20 || got[2] != -1 {
		t.Fatalf("fetch: %v", got)
	}
	if got := ts.fetch("simple"); len(got) != 2 {
		t.Fatalf("fetch all: %v", got)
	}
	// A group that does not exist has no offsets, and no error.
	if got := ts.fetch("nobody", 0); got[0] != -1 {
		t.Fatalf("fetch of unknown group: %v", got)
	}
	// Unknown group with a generation: GROUP_ID_NOT_FOUND from v9, else
	// ILLEGAL_GENERATION.
	if _, err := ts.commitOffsets(9, "nobody", "m", 3, map[int32]int64{0: 1}); errCode(err) != kerr.GroupIDNotFound.Code {
		t.Fatalf("v9 commit to unknown group: %v", err)
	}
	if _, err := ts.commitOffsets(8, "nobody", "m", 3, map[int32]int64{0: 1}); errCode(err) != kerr.IllegalGeneration.Code {
		t.Fatalf("v8 commit to unknown group: %v", err)
	}
	// Offsets survive a reload.
	ts.reload()
	if got := ts.fetch("simple", 0, 1); got[0] != 10 || got[1] != 20 {
		t.Fatalf("fetch after reload: %v", got)
	}
}

func TestOffsetCommitGenerationChecks(t *testing.T) {
	ts := newTestShard(t)
	id, _ := ts.joinNew("g")
	ts.advance(3 * time.Second)
	// CompletingRebalance: REBALANCE_IN_PROGRESS.
	if _, err := ts.commitOffsets(8, "g", id, 1, map[int32]int64{0: 1}); errCode(err) != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit during CompletingRebalance: %v", err)
	}
	ts.sync("g", id, nil, 1, map[string]string{id: ""})
	if _, err := ts.commitOffsets(8, "g", id, 1, map[int32]int64{0: 1}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if _, err := ts.commitOffsets(8, "g", id, 0, map[int32]int64{0: 1}); errCode(err) != kerr.IllegalGeneration.Code {
		t.Fatalf("commit with old generation: %v", err)
	}
	if _, err := ts.commitOffsets(8, "g", "other", 1, map[int32]int64{0: 1}); errCode(err) != kerr.UnknownMemberID.Code {
		t.Fatalf("commit from unknown member: %v", err)
	}
	if _, err := ts.commitOffsets(8, "g", "", -1, map[int32]int64{0: 1}); errCode(err) != kerr.UnknownMemberID.Code {
		t.Fatalf("simple commit to a non-empty group: %v", err)
	}
	// Metadata above offset.metadata.max.bytes.
	ts.cfg.OffsetMetadataMaxSize = 1
	codes, err := ts.commitOffsets(8, "g", id, 1, map[int32]int64{0: 1})
	if err != nil || codes[0] != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("large metadata: %v %v", codes, err)
	}
	// The commit kept the session alive: 9s later the member is there.
	ts.advance(9 * time.Second)
	if !ts.classic("g").hasMember(id) {
		t.Fatal("member expired")
	}
}

func TestOffsetExpiryAndGroupCleanup(t *testing.T) {
	ts := newTestShard(t, func(c *Config) {
		c.OffsetsRetention = time.Hour
		c.OffsetsRetentionCheckInterval = time.Minute
	})
	ts.commitOffsets(8, "simple", "", -1, map[int32]int64{0: 5})
	ts.advance(59 * time.Minute)
	if got := ts.fetch("simple", 0); got[0] != 5 {
		t.Fatalf("offset expired early: %v", got)
	}
	ts.advance(2 * time.Minute)
	if got := ts.fetch("simple", 0); got[0] != -1 {
		t.Fatalf("offset not expired after offsets.retention: %v", got)
	}
	if _, ok := ts.s.groups["simple"]; ok {
		t.Fatal("empty group without offsets not deleted")
	}
	ts.reload()
	if _, ok := ts.s.groups["simple"]; ok {
		t.Fatal("deleted group came back on reload")
	}
	// A consumer group's offsets do not expire while it is subscribed.
	id, _ := ts.joinNew("g")
	ts.advance(3 * time.Second)
	ts.sync("g", id, nil, 1, map[string]string{id: ""})
	ts.commitOffsets(8, "g", id, 1, map[int32]int64{0: 7})
	for range 1500 { // two hours of heartbeats
		ts.advance(5 * time.Second)
		if code := ts.heartbeat("g", id, 1); code != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
		}
	}
	if got := ts.fetch("g", 0); got[0] != 7 {
		t.Fatalf("offset of a subscribed topic expired: %v", got)
	}
}

func TestOffsetDeleteAndDeleteGroups(t *testing.T) {
	ts := newTestShard(t)
	ts.commitOffsets(8, "simple", "", -1, map[int32]int64{0: 5, 1: 6})
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "simple"
	req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "foo", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	res, err := ts.s.deleteOffsets(req)
	resp := commit(ts, res, err)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v %v", resp, err)
	}
	if got := ts.fetch("simple", 0, 1); got[0] != -1 || got[1] != 6 {
		t.Fatalf("after offset delete: %v", got)
	}
	// A live group cannot be deleted; an empty one can.
	id, _ := ts.joinNew("g")
	dres, _ := ts.s.deleteGroups([]string{"g", "simple", "nobody"})
	got := commit(ts, dres, nil)
	if got[0].ErrorCode != kerr.NonEmptyGroup.Code || got[1].ErrorCode != 0 || got[2].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: %+v", got)
	}
	_ = id
	if _, ok := ts.s.groups["simple"]; ok {
		t.Fatal("deleted group still there")
	}
	ts.reload()
	if _, ok := ts.s.groups["simple"]; ok || len(ts.fetch("simple")) != 0 {
		t.Fatal("deleted group or offsets back after reload")
	}
}

// Transactional offsets stay pending until their marker (the seam for
// TxnOffsetCommit).
func TestTransactionalOffsetReplay(t *testing.T) {
	ts := newTestShard(t)
	rec := offsetCommitRecord("g", "foo", 0, OffsetAndMetadata{Offset: 9, LeaderEpoch: -1, ExpireTimestamp: -1})
	if err := ts.s.Replay(1, 77, 0, rec.Key, rec.Value); err != nil {
		t.Fatal(err)
	}
	if got := ts.fetch("g", 0); got[0] != -1 {
		t.Fatalf("pending offset visible: %v", got)
	}
	stable, _ := ts.s.fetchOffsets(&kmsg.OffsetFetchRequestGroup{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "foo", Partitions: []int32{0}}}}, true)
	if stable.Topics[0].Partitions[0].ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable with a pending commit: %+v", stable.Topics[0].Partitions[0])
	}
	ts.s.ReplayEndTransactionMarker(77, 0, true)
	if got := ts.fetch("g", 0); got[0] != 9 {
		t.Fatalf("committed transactional offset: %v", got)
	}
	// An aborted one never shows.
	rec = offsetCommitRecord("g", "foo", 1, OffsetAndMetadata{Offset: 4, LeaderEpoch: -1, ExpireTimestamp: -1})
	ts.s.Replay(2, 78, 0, rec.Key, rec.Value)
	ts.s.ReplayEndTransactionMarker(78, 0, false)
	if got := ts.fetch("g", 1); got[1] != -1 {
		t.Fatalf("aborted transactional offset: %v", got)
	}
}

func TestOnTopicsDeleted(t *testing.T) {
	ts := newTestShard(t)
	ts.commitOffsets(8, "simple", "", -1, map[int32]int64{0: 5})
	recs := ts.s.onTopicsDeleted(map[string]bool{"foo": true})
	if len(recs) != 1 || recs[0].Value != nil {
		t.Fatalf("tombstones: %+v", recs)
	}
	_ = log.TopicPartition{}
}
