package group

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// The shard's side of the share-group offset APIs (Kafka 4.2's
// GroupCoordinatorShard and GroupMetadataManager:
// initializedShareGroupPartitions, alterShareGroupOffsets with
// completeAlterShareGroupOffsets, initiateDeleteShareGroupOffsets with
// sharePartitionsEligibleForOffsetDeletion, and
// completeDeleteShareGroupOffsets). The start offsets themselves live in
// the share coordinator; the Service reads and writes them through the
// persister.

// shareOffsetsTopic is a topic of a share group's offsets: its id, name
// and partitions.
type shareOffsetsTopic struct {
	id         [16]byte
	name       string
	partitions []int32
}

// describeShareOffsetsPlan is what DescribeShareGroupOffsets reads from
// the persister: the known topics' partitions, and the answers for the
// unknown topics (start offset -1, as Kafka: absence of data, not an
// error).
type describeShareOffsetsPlan struct {
	read    []shareOffsetsTopic
	unknown []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
}

// describeShareGroupOffsets plans a describe: topics nil is every
// initialized partition of the group (initializedShareGroupPartitions:
// none for a group that does not exist), else the named topics'
// partitions.
func (s *Shard) describeShareGroupOffsets(groupID string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) describeShareOffsetsPlan {
	var plan describeShareOffsetsPlan
	if topics == nil {
		g, _ := s.groups[groupID].(*ShareGroup)
		if g == nil {
			return plan
		}
		init := g.initializedPartitions()
		for _, id := range sortedIDs(init) {
			if t, ok := s.topics.TopicByID(id); ok {
				plan.read = append(plan.read, shareOffsetsTopic{id: id, name: t.Name, partitions: sortedUniqueInt32s(init[id])})
			}
		}
		return plan
	}
	for _, rt := range topics {
		if t, ok := s.topics.TopicByName(rt.Topic); ok {
			plan.read = append(plan.read, shareOffsetsTopic{id: t.ID, name: t.Name, partitions: slices.Clone(rt.Partitions)})
			continue
		}
		u := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		u.Topic = rt.Topic
		for _, p := range rt.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset = p, -1
			u.Partitions = append(u.Partitions, rp)
		}
		plan.unknown = append(plan.unknown, u)
	}
	return plan
}

// alterShareOffsetsOutcome is the shard's answer to an alter: the
// response so far (per partition: none, or UNKNOWN_TOPIC_OR_PARTITION) and
// the start offsets to initialize, at the group's epoch.
type alterShareOffsetsOutcome struct {
	resp       *kmsg.AlterShareGroupOffsetsResponse
	groupEpoch int32
	offsets    map[[16]byte]map[int32]int64
}

// alterShareGroupOffsets is alterShareGroupOffsets with
// completeAlterShareGroupOffsets: the group must be empty
// (NON_EMPTY_GROUP); a group id no group has is a new share group (the
// record below creates it when replayed); another type's group is
// GROUP_ID_NOT_FOUND. The partitions that exist are written as
// initializing, as a heartbeat's would be, and returned with their start
// offsets for the persister.
func (s *Shard) alterShareGroupOffsets(groupID string, req *kmsg.AlterShareGroupOffsetsRequest) (runtime.Result[alterShareOffsetsOutcome], error) {
	var res runtime.Result[alterShareOffsetsOutcome]
	g, err := s.getOrMaybeCreateShareGroup(groupID, true)
	if err != nil {
		return res, err
	}
	if !g.isEmpty() {
		return res, apierr.Errorf(kerr.NonEmptyGroup, "Share group %s is not empty.", groupID)
	}
	now := s.now().UnixMilli()
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	out := alterShareOffsetsOutcome{resp: resp, groupEpoch: g.groupEpoch, offsets: map[[16]byte]map[int32]int64{}}
	initializing := map[[16]byte]initTopic{}
	for _, rt := range req.Topics {
		t, known := s.topics.TopicByName(rt.Topic)
		tr := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		tr.Topic = rt.Topic
		if known {
			tr.TopicID = t.ID
		}
		var valid []int32
		for _, p := range rt.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			if !known || p.Partition < 0 || p.Partition >= t.Partitions {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
			} else {
				valid = append(valid, p.Partition)
				if out.offsets[t.ID] == nil {
					out.offsets[t.ID] = map[int32]int64{}
				}
				out.offsets[t.ID][p.Partition] = p.StartOffset
			}
			tr.Partitions = append(tr.Partitions, rp)
		}
		if len(valid) > 0 {
			prev := initializing[t.ID].partitions
			initializing[t.ID] = initTopic{name: t.Name, partitions: unionSorted(prev, sortedUniqueInt32s(valid)), timestamp: now}
		}
		resp.Topics = append(resp.Topics, tr)
	}
	res.Records = s.addInitializingTopicsRecords(g, initializing)
	res.Response = out
	return res, nil
}

// addInitializingTopicsRecords is Kafka's: the group's state metadata with
// topics added to its initializing ones (and no longer deleting).
func (s *Shard) addInitializingTopicsRecords(g *ShareGroup, topics map[[16]byte]initTopic) []runtime.Record {
	if len(topics) == 0 {
		return nil
	}
	md := g.stateMetadataOrEmpty()
	next := &shareStateMetadata{
		initializing: combineInitTopics(md.initializing, topics),
		initialized:  md.initialized,
		deleting:     maps.Clone(md.deleting),
	}
	for id := range next.initializing {
		delete(next.deleting, id)
	}
	return []runtime.Record{shareGroupStatePartitionMetadataRecord(g.groupID, next.value())}
}

// deleteShareOffsetsOutcome is initiateDeleteShareGroupOffsets' result:
// the topics whose state to delete, and the answers for those with none.
type deleteShareOffsetsOutcome struct {
	del    []shareOffsetsTopic
	errors []kmsg.DeleteShareGroupOffsetsResponseTopic
}

// initiateDeleteShareGroupOffsets is Kafka's: the group must exist
// (GROUP_ID_NOT_FOUND) and be empty (NON_EMPTY_GROUP). An initialized
// topic moves to deleting and its initialized partitions are returned for
// the persister; a topic already deleting is returned with all its
// partitions; any other topic is UNKNOWN_TOPIC_OR_PARTITION.
func (s *Shard) initiateDeleteShareGroupOffsets(groupID string, req *kmsg.DeleteShareGroupOffsetsRequest) (runtime.Result[deleteShareOffsetsOutcome], error) {
	var res runtime.Result[deleteShareOffsetsOutcome]
	g, err := s.shareGroup(groupID)
	if err != nil {
		return res, err
	}
	if err := g.validateDeleteGroup(); err != nil {
		return res, apierr.Errorf(kerr.NonEmptyGroup, "Share group %s is not empty.", groupID)
	}
	if g.stateMetadata == nil {
		return res, nil
	}
	md := g.stateMetadata
	initialized := maps.Clone(md.initialized)
	deleting := maps.Clone(md.deleting)
	for _, rt := range req.Topics {
		t, ok := s.topics.TopicByName(rt.Topic)
		unknown := func(msg string) {
			e := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			e.Topic, e.ErrorCode, e.ErrorMessage = rt.Topic, kerr.UnknownTopicOrPartition.Code, kmsg.StringPtr(msg)
			res.Response.errors = append(res.Response.errors, e)
		}
		switch {
		case !ok:
			unknown(kerr.UnknownTopicOrPartition.Description)
		case initialized[t.ID].partitions != nil:
			res.Response.del = append(res.Response.del, shareOffsetsTopic{id: t.ID, name: t.Name, partitions: slices.Clone(initialized[t.ID].partitions)})
			delete(initialized, t.ID)
			deleting[t.ID] = t.Name
		case deleting[t.ID] != "":
			all := make([]int32, t.Partitions)
			for p := range all {
				all[p] = int32(p)
			}
			res.Response.del = append(res.Response.del, shareOffsetsTopic{id: t.ID, name: t.Name, partitions: all})
		default:
			unknown("There is no offset information to delete.")
		}
	}
	next := &shareStateMetadata{initializing: md.initializing, initialized: initialized, deleting: deleting}
	res.Records = []runtime.Record{shareGroupStatePartitionMetadataRecord(groupID, next.value())}
	return res, nil
}

// completeDeleteShareGroupOffsets is Kafka's: the topics whose state the
// persister deleted leave the deleting topics.
func (s *Shard) completeDeleteShareGroupOffsets(groupID string, deleted [][16]byte) []runtime.Record {
	g, ok := s.groups[groupID].(*ShareGroup)
	if !ok || g.stateMetadata == nil || len(deleted) == 0 {
		return nil
	}
	md := g.stateMetadata
	next := &shareStateMetadata{initializing: md.initializing, initialized: md.initialized, deleting: maps.Clone(md.deleting)}
	for _, id := range deleted {
		delete(next.deleting, id)
	}
	return []runtime.Record{shareGroupStatePartitionMetadataRecord(groupID, next.value())}
}

// completeAlterShareGroupOffsets records the persister's outcome of an
// alter: the partitions it initialized move from initializing to
// initialized, those it failed leave initializing (Kafka's
// initializeShareGroupState and uninitializeShareGroupState in one
// record).
func (s *Shard) completeAlterShareGroupOffsets(groupID string, ok, failed map[[16]byte][]int32) []runtime.Record {
	g, found := s.groups[groupID].(*ShareGroup)
	if !found || (len(ok) == 0 && len(failed) == 0) {
		return nil
	}
	now := s.now().UnixMilli()
	done := map[[16]byte]initTopic{}
	for id, ps := range ok {
		done[id] = initTopic{name: s.topicName(id), partitions: sortedUniqueInt32s(ps), timestamp: now}
	}
	md := g.stateMetadataOrEmpty()
	next := &shareStateMetadata{
		initializing: subtractInitTopics(subtractInitTopics(md.initializing, ok), failed),
		initialized:  combineInitTopics(md.initialized, done),
		deleting:     md.deleting,
	}
	return []runtime.Record{shareGroupStatePartitionMetadataRecord(groupID, next.value())}
}
