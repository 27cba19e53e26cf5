package group

import (
	"maps"
	"slices"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The share-group state of a share group's partitions, as the group
// coordinator tracks it in ShareGroupStatePartitionMetadata (Kafka's
// subscribedTopicsChangeMap, addInitializingTopicsRecords,
// initializeShareGroupState, uninitializeShareGroupState and
// shareGroupBuildPartitionDeleteRequest). The state itself lives in the
// share coordinator (__share_group_state), reached through the persister.

// stateMetadataOrEmpty returns the group's metadata, or an empty one.
func (g *ShareGroup) stateMetadataOrEmpty() *shareStateMetadata {
	if g.stateMetadata != nil {
		return g.stateMetadata
	}
	return &shareStateMetadata{initializing: map[[16]byte]initTopic{}, initialized: map[[16]byte]initTopic{}, deleting: map[[16]byte]string{}}
}

// combineInitTopics is combineInitMaps: a's partitions plus b's, with b's
// name and timestamp where b has the topic.
func combineInitTopics(a, b map[[16]byte]initTopic) map[[16]byte]initTopic {
	out := map[[16]byte]initTopic{}
	for id, t := range a {
		out[id] = initTopic{name: t.name, partitions: slices.Clone(t.partitions), timestamp: t.timestamp}
	}
	for id, t := range b {
		cur, ok := out[id]
		if !ok {
			cur = initTopic{}
		}
		out[id] = initTopic{name: t.name, partitions: unionSorted(cur.partitions, t.partitions), timestamp: t.timestamp}
	}
	return out
}

// subscribedTopicsChangeMap is the partitions of the subscribed topics
// with no state yet: neither initialized nor being initialized (an
// initialization older than the retry interval is tried again).
func (s *Shard) subscribedTopicsChangeMap(g *ShareGroup, names map[string]int, now int64) map[[16]byte]initTopic {
	if len(names) == 0 {
		return nil
	}
	md := g.stateMetadataOrEmpty()
	fresh := map[[16]byte]initTopic{}
	for id, t := range md.initializing {
		if now-t.timestamp < s.cfg.ShareInitializeRetryInterval.Milliseconds() {
			fresh[id] = t
		}
	}
	already := combineInitTopics(md.initialized, fresh)
	out := map[[16]byte]initTopic{}
	for _, n := range sortedKeys(names) {
		t, ok := s.topics.TopicByName(n)
		if !ok {
			continue
		}
		have := already[t.ID].partitions
		if len(have) > 0 && int32(len(have)) >= t.Partitions {
			continue
		}
		var missing []int32
		for p := int32(0); p < t.Partitions; p++ {
			if _, ok := slices.BinarySearch(have, p); !ok {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			out[t.ID] = initTopic{name: t.Name, partitions: missing, timestamp: now}
		}
	}
	return out
}

// maybeInitializeShareState is maybeCreateInitializeShareGroupStateRequest:
// the subscribed partitions with no state are written as initializing and
// returned for the persister.
func (s *Shard) maybeInitializeShareState(g *ShareGroup, epoch int32, names map[string]int, records []runtime.Record, now int64) (*shareStateInit, []runtime.Record) {
	change := s.subscribedTopicsChangeMap(g, names, now)
	if len(change) == 0 {
		return nil, records
	}
	md := g.stateMetadataOrEmpty()
	next := &shareStateMetadata{
		initializing: combineInitTopics(md.initializing, change),
		initialized:  md.initialized,
		deleting:     maps.Clone(md.deleting),
	}
	for id := range next.initializing {
		if _, ok := next.deleting[id]; ok {
			s.log.Warn("initializing topic of share group found deleting too, no longer deleting it", "group", g.groupID, "topic", next.initializing[id].name)
			delete(next.deleting, id)
		}
	}
	records = append(records, shareGroupStatePartitionMetadataRecord(g.groupID, next.value()))
	init := &shareStateInit{groupID: g.groupID, groupEpoch: epoch, topics: map[[16]byte][]int32{}}
	for id, t := range change {
		init.topics[id] = t.partitions
	}
	return init, records
}

// initializeShareGroupState moves partitions whose state the persister
// initialized from initializing to initialized.
func (s *Shard) initializeShareGroupState(groupID string, topics map[[16]byte][]int32) []runtime.Record {
	g, ok := s.groups[groupID].(*ShareGroup)
	if !ok || len(topics) == 0 {
		return nil
	}
	now := s.now().UnixMilli()
	enriched := map[[16]byte]initTopic{}
	for id, ps := range topics {
		enriched[id] = initTopic{name: s.topicName(id), partitions: sortedUniqueInt32s(ps), timestamp: now}
	}
	md := g.stateMetadataOrEmpty()
	next := &shareStateMetadata{
		initializing: subtractInitTopics(md.initializing, topics),
		initialized:  combineInitTopics(md.initialized, enriched),
		deleting:     md.deleting,
	}
	return []runtime.Record{shareGroupStatePartitionMetadataRecord(groupID, next.value())}
}

// uninitializeShareGroupState forgets partitions whose initialization
// failed, so that a later heartbeat tries again.
func (s *Shard) uninitializeShareGroupState(groupID string, topics map[[16]byte][]int32) []runtime.Record {
	g, ok := s.groups[groupID].(*ShareGroup)
	if !ok || g.stateMetadata == nil || len(g.stateMetadata.initializing) == 0 || len(topics) == 0 {
		return nil
	}
	md := g.stateMetadata
	next := &shareStateMetadata{initializing: subtractInitTopics(md.initializing, topics), initialized: md.initialized, deleting: md.deleting}
	return []runtime.Record{shareGroupStatePartitionMetadataRecord(groupID, next.value())}
}

func subtractInitTopics(a map[[16]byte]initTopic, topics map[[16]byte][]int32) map[[16]byte]initTopic {
	out := map[[16]byte]initTopic{}
	for id, t := range a {
		ps := t.partitions
		if rm, ok := topics[id]; ok {
			ps = subtractSorted(ps, sortedUniqueInt32s(rm))
		}
		if len(ps) > 0 {
			out[id] = initTopic{name: t.name, partitions: ps, timestamp: t.timestamp}
		}
	}
	return out
}

func sortedUniqueInt32s(ps []int32) []int32 {
	out := slices.Clone(ps)
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *Shard) topicName(id [16]byte) string {
	if t, ok := s.topics.TopicByID(id); ok {
		return t.Name
	}
	return "<UNKNOWN>"
}

// shareStateDelete is DeleteShareGroupStateParameters: the partitions of a
// deleted share group whose state to delete.
type shareStateDelete struct {
	groupID string
	topics  map[[16]byte][]int32
}

// sharePartitionDeleteRequests is GroupCoordinatorShard's: for each empty
// share group among ids, every partition with state (initialized,
// initializing, or still deleting from an earlier attempt whose topic
// exists) is written as deleting and returned for the persister. Groups
// that are not share groups are left out; a share group with members is
// NON_EMPTY_GROUP.
func (s *Shard) sharePartitionDeleteRequests(ids []string) (runtime.Result[map[string]shareDeleteOutcome], error) {
	res := runtime.Result[map[string]shareDeleteOutcome]{Response: map[string]shareDeleteOutcome{}}
	for _, id := range ids {
		g, ok := s.groups[id].(*ShareGroup)
		if !ok {
			continue
		}
		if err := g.validateDeleteGroup(); err != nil {
			res.Response[id] = shareDeleteOutcome{err: err}
			continue
		}
		if g.stateMetadata == nil {
			res.Response[id] = shareDeleteOutcome{}
			continue
		}
		md := g.stateMetadata
		candidates := combineInitTopics(md.initialized, md.initializing)
		for tid := range md.deleting {
			if t, ok := s.topics.TopicByID(tid); ok {
				all := make([]int32, t.Partitions)
				for p := range all {
					all[p] = int32(p)
				}
				candidates = combineInitTopics(candidates, map[[16]byte]initTopic{tid: {name: t.Name, partitions: all, timestamp: -1}})
			}
		}
		next := &shareStateMetadata{initializing: map[[16]byte]initTopic{}, initialized: map[[16]byte]initTopic{}, deleting: map[[16]byte]string{}}
		del := &shareStateDelete{groupID: id, topics: map[[16]byte][]int32{}}
		for tid, t := range candidates {
			next.deleting[tid] = t.name
			del.topics[tid] = t.partitions
		}
		res.Records = append(res.Records, shareGroupStatePartitionMetadataRecord(id, next.value()))
		if len(del.topics) == 0 {
			del = nil
		}
		res.Response[id] = shareDeleteOutcome{del: del}
	}
	return res, nil
}

// shareDeleteOutcome is one share group's part of a DeleteGroups: the
// state to delete, or why the group may not be deleted.
type shareDeleteOutcome struct {
	del *shareStateDelete
	err error
}

// replayShareGroupRecord applies a share group's record (Kafka's
// GroupMetadataManager replay methods for types 10 to 15).
func (s *Shard) replayShareGroupRecord(k parsedKey, value []byte) error {
	g, err := s.getOrMaybeCreatePersistedShareGroup(k.group, value != nil)
	if err != nil || g == nil {
		return err
	}
	switch k.typ {
	case typeShareGroupMetadata:
		if value == nil {
			s.removeGroup(k.group)
			return nil
		}
		v, err := decodeShareGroupMetadataValue(value)
		if err != nil {
			return err
		}
		g.groupEpoch, g.metadataHash = v.Epoch, v.MetadataHash
	case typeShareGroupMemberMetadata:
		return s.replayShareMemberMetadata(g, k.member, value)
	case typeShareGroupTargetAssignmentMeta:
		if value == nil {
			g.assignmentEpoch = -1
			return nil
		}
		v, err := decodeConsumerGroupTargetAssignmentMetadataValue(value)
		if err != nil {
			return err
		}
		g.assignmentEpoch = v.AssignmentEpoch
	case typeShareGroupTargetAssignmentMember:
		if value == nil {
			delete(g.targetAssignment, k.member)
			return nil
		}
		v, err := decodeConsumerGroupTargetAssignmentMemberValue(value)
		if err != nil {
			return err
		}
		g.targetAssignment[k.member] = assignmentFromRecord(v.TopicPartitions)
	case typeShareGroupCurrentMemberAssign:
		return s.replayShareCurrentAssignment(g, k.member, value)
	case typeShareGroupStatePartitionMetadata:
		return s.replayShareStateMetadata(g, value)
	}
	return nil
}

// getOrMaybeCreatePersistedShareGroup: a record of a share group whose id
// another type of group holds is an error (the log is not Kafka's).
func (s *Shard) getOrMaybeCreatePersistedShareGroup(id string, create bool) (*ShareGroup, error) {
	switch g := s.groups[id].(type) {
	case *ShareGroup:
		return g, nil
	case nil:
		if !create {
			return nil, nil
		}
		sg := newShareGroup(id)
		s.groups[id] = sg
		return sg, nil
	}
	if !create {
		return nil, nil
	}
	return nil, errNotShareGroup(id)
}

func (s *Shard) replayShareMemberMetadata(g *ShareGroup, member string, value []byte) error {
	if value == nil {
		g.removeMember(member)
		return nil
	}
	v, err := decodeShareGroupMemberMetadataValue(value)
	if err != nil {
		return err
	}
	m, _ := g.getOrMaybeCreateMember(member, true)
	m = m.copy()
	m.rackID, m.clientID, m.clientHost = v.RackID, v.ClientID, v.ClientHost
	m.subscribedTopicNames = sortedUnique(v.SubscribedTopicNames)
	g.updateMember(m)
	return nil
}

func (s *Shard) replayShareCurrentAssignment(g *ShareGroup, member string, value []byte) error {
	m := g.members[member]
	if value == nil {
		if m != nil {
			m = m.copy()
			m.memberEpoch, m.previousMemberEpoch = leaveGroupMemberEpoch, leaveGroupMemberEpoch
			m.assigned = assignment{}
			g.updateMember(m)
		}
		return nil
	}
	v, err := decodeShareGroupCurrentMemberAssignmentValue(value)
	if err != nil {
		return err
	}
	if m == nil {
		m, _ = g.getOrMaybeCreateMember(member, true)
	}
	m = m.copy()
	m.memberEpoch, m.previousMemberEpoch = v.MemberEpoch, v.PreviousMemberEpoch
	m.state = memberState(v.State)
	m.assigned = assignmentFromRecord(v.AssignedPartitions)
	g.updateMember(m)
	return nil
}

func (s *Shard) replayShareStateMetadata(g *ShareGroup, value []byte) error {
	if value == nil {
		g.stateMetadata = nil
		return nil
	}
	v, err := decodeShareGroupStatePartitionMetadataValue(value)
	if err != nil {
		return err
	}
	now := s.now().UnixMilli()
	toMap := func(ts []topicPartitionsInfo) map[[16]byte]initTopic {
		out := map[[16]byte]initTopic{}
		for _, t := range ts {
			out[t.TopicID] = initTopic{name: t.TopicName, partitions: sortedUniqueInt32s(t.Partitions), timestamp: now}
		}
		return out
	}
	md := &shareStateMetadata{initializing: toMap(v.InitializingTopics), initialized: toMap(v.InitializedTopics), deleting: map[[16]byte]string{}}
	for _, t := range v.DeletingTopics {
		md.deleting[t.TopicID] = t.TopicName
	}
	g.stateMetadata = md
	return nil
}

// maybeCleanupShareGroupState is Kafka's: topics that no longer exist
// (decided from the current metadata, not from the names deleted) leave
// the share groups' state metadata. Their share state is the share
// coordinator's to delete.
func (s *Shard) maybeCleanupShareGroupState(records []runtime.Record) []runtime.Record {
	exists := func(id [16]byte) bool {
		_, ok := s.topics.TopicByID(id)
		return ok
	}
	for _, id := range s.sortedGroupIDs() {
		g, ok := s.groups[id].(*ShareGroup)
		if !ok || g.stateMetadata == nil {
			continue
		}
		md := g.stateMetadata
		next := &shareStateMetadata{
			initializing: maps.Clone(md.initializing),
			initialized:  maps.Clone(md.initialized),
			deleting:     maps.Clone(md.deleting),
		}
		maps.DeleteFunc(next.initializing, func(t [16]byte, _ initTopic) bool { return !exists(t) })
		maps.DeleteFunc(next.initialized, func(t [16]byte, _ initTopic) bool { return !exists(t) })
		maps.DeleteFunc(next.deleting, func(t [16]byte, _ string) bool { return !exists(t) })
		if len(next.initializing) != len(md.initializing) || len(next.initialized) != len(md.initialized) || len(next.deleting) != len(md.deleting) {
			records = append(records, shareGroupStatePartitionMetadataRecord(id, next.value()))
		}
	}
	return records
}
