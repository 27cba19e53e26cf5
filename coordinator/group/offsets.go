package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// The OffsetMetadataManager: committed offsets, their commits, fetches,
// deletes and expiry.
//
// Transactional offset commits (TxnOffsetCommit, issue 10) are kept apart
// until their transaction's marker: replayed records with a producer id go
// to the pending store, ReplayEndTransactionMarker moves them to the main
// store on commit (unless a later non-transactional commit superseded
// them, compared by record offset, as Kafka does) or drops them on abort.
// The request side is commitTransactionalOffset (txn_offsets.go).

// offsets is group -> topic -> partition -> offset.
type offsets map[string]map[string]map[int32]OffsetAndMetadata

func (o offsets) get(group, topic string, partition int32) (OffsetAndMetadata, bool) {
	v, ok := o[group][topic][partition]
	return v, ok
}

func (o offsets) put(group, topic string, partition int32, v OffsetAndMetadata) bool {
	t := o[group]
	if t == nil {
		t = map[string]map[int32]OffsetAndMetadata{}
		o[group] = t
	}
	p := t[topic]
	if p == nil {
		p = map[int32]OffsetAndMetadata{}
		t[topic] = p
	}
	_, existed := p[partition]
	p[partition] = v
	return !existed
}

func (o offsets) remove(group, topic string, partition int32) bool {
	p := o[group][topic]
	if _, ok := p[partition]; !ok {
		return false
	}
	delete(p, partition)
	if len(p) == 0 {
		delete(o[group], topic)
	}
	if len(o[group]) == 0 {
		delete(o, group)
	}
	return true
}

type offsetStore struct {
	committed offsets
	// pending transactional offsets by producer id, and the producers
	// with an open transaction by group.
	pending         map[int64]offsets
	openTxnsByGroup map[string]map[int64]bool
	count           int // committed offsets, for the gauge
}

func newOffsetStore() offsetStore {
	return offsetStore{committed: offsets{}, pending: map[int64]offsets{}, openTxnsByGroup: map[string]map[int64]bool{}}
}

func (s *Shard) hasPendingTransactionalOffsets(group, topic string, partition int32) bool {
	for pid := range s.offsets.openTxnsByGroup[group] {
		if _, ok := s.offsets.pending[pid].get(group, topic, partition); ok {
			return true
		}
	}
	return false
}

// replayOffsetCommit applies an OffsetCommit record.
func (s *Shard) replayOffsetCommit(recordOffset, producerID int64, k parsedKey, value []byte) error {
	if value == nil {
		if s.offsets.committed.remove(k.group, k.topic, k.partition) {
			s.offsets.count--
		}
		for pid := range s.offsets.openTxnsByGroup[k.group] {
			s.offsets.pending[pid].remove(k.group, k.topic, k.partition)
		}
		return nil
	}
	o, err := parseOffsetCommitValue(recordOffset, value)
	if err != nil {
		return err
	}
	// Offsets committed outside any group make a "simple" classic group.
	if _, ok := s.groups[k.group]; !ok {
		s.getOrMaybeCreateClassicGroup(k.group, true)
	}
	if producerID < 0 {
		if s.offsets.committed.put(k.group, k.topic, k.partition, o) {
			s.offsets.count++
		}
		return nil
	}
	p := s.offsets.pending[producerID]
	if p == nil {
		p = offsets{}
		s.offsets.pending[producerID] = p
	}
	p.put(k.group, k.topic, k.partition, o)
	if s.offsets.openTxnsByGroup[k.group] == nil {
		s.offsets.openTxnsByGroup[k.group] = map[int64]bool{}
	}
	s.offsets.openTxnsByGroup[k.group][producerID] = true
	return nil
}

func (s *Shard) replayEndTransactionMarker(producerID int64, commit bool) {
	p := s.offsets.pending[producerID]
	if p == nil {
		return
	}
	delete(s.offsets.pending, producerID)
	for g := range p {
		if open := s.offsets.openTxnsByGroup[g]; open != nil {
			delete(open, producerID)
			if len(open) == 0 {
				delete(s.offsets.openTxnsByGroup, g)
			}
		}
	}
	if !commit {
		return
	}
	for g, topics := range p {
		for t, parts := range topics {
			for part, o := range parts {
				// The most recent commit wins, by record offset, so that
				// compaction of __consumer_offsets cannot resurrect an
				// older transactional commit.
				if cur, ok := s.offsets.committed.get(g, t, part); !ok || o.RecordOffset > cur.RecordOffset {
					if s.offsets.committed.put(g, t, part, o) {
						s.offsets.count++
					}
				}
			}
		}
	}
}

// OffsetCommitPartition is one partition of a commit that passed the
// service's topic checks.
type offsetCommitTopic = commitTopic[kmsg.OffsetCommitRequestTopicPartition]

// commitTopic is a topic of an offset commit (OffsetCommit or
// TxnOffsetCommit) that exists, with those of its partitions that exist.
type commitTopic[P any] struct {
	name       string
	partitions []P
}

// resolveCommitTopic checks a topic of an offset commit against the
// metadata, as KafkaApis does before asking the coordinator: by id when
// byID (UNKNOWN_TOPIC_ID if unknown), else by name
// (UNKNOWN_TOPIC_OR_PARTITION); a partition out of range is
// UNKNOWN_TOPIC_OR_PARTITION. codes[j] is partition j's error, -1 for the
// partitions that go to the coordinator (in the returned topic).
func resolveCommitTopic[P any](md Metadata, byID bool, id [16]byte, name string, parts []P, index func(P) int32) (commitTopic[P], []int16) {
	var info TopicInfo
	var ok bool
	unknown := kerr.UnknownTopicOrPartition.Code
	if byID {
		info, ok = md.TopicByID(id)
		name, unknown = info.Name, kerr.UnknownTopicID.Code
	} else {
		info, ok = md.TopicByName(name)
	}
	t := commitTopic[P]{name: name}
	codes := make([]int16, len(parts))
	for j, p := range parts {
		switch i := index(p); {
		case !ok:
			codes[j] = unknown
		case i < 0 || i >= info.Partitions:
			codes[j] = kerr.UnknownTopicOrPartition.Code
		default:
			codes[j] = -1 // to the coordinator
			t.partitions = append(t.partitions, p)
		}
	}
	return t, codes
}

// commitOffset is OffsetMetadataManager.commitOffset: validate the member
// and generation (or epoch), then one record per partition. The response
// holds the given topics only (the service adds the ones it refused).
func (s *Shard) commitOffset(rc RequestContext, req *kmsg.OffsetCommitRequest, topics []offsetCommitTopic) (runtime.Result[map[string]map[int32]int16], error) {
	var res runtime.Result[map[string]map[int32]int16]
	g, err := s.validateOffsetCommit(rc, req)
	if err != nil {
		return res, err
	}
	// Classic protocol: a commit keeps the member's session alive.
	if cg, ok := g.(*ClassicGroup); ok && (cg.is(stateStable) || cg.is(statePreparingRebalance)) {
		if m := cg.members[req.MemberID]; m != nil {
			s.rescheduleClassicHeartbeat(cg, m, durationMs(m.sessionTimeoutMs))
		}
	}
	now := s.now().UnixMilli()
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = now + req.RetentionTimeMillis
	}
	codes := map[string]map[int32]int16{}
	for _, t := range topics {
		pc := codes[t.name]
		if pc == nil {
			pc = map[int32]int16{}
			codes[t.name] = pc
		}
		for _, p := range t.partitions {
			if p.Metadata != nil && len(*p.Metadata) > s.cfg.OffsetMetadataMaxSize {
				pc[p.Partition] = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			pc[p.Partition] = 0
			o := OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: strOr(p.Metadata, ""), CommitTimestamp: now, ExpireTimestamp: expire}
			if req.Version == 1 && p.Timestamp != -1 {
				o.CommitTimestamp = p.Timestamp
			}
			if req.Version < 6 {
				o.LeaderEpoch = -1
			}
			res.Records = append(res.Records, offsetCommitRecord(req.Group, t.name, p.Partition, o))
		}
	}
	s.metrics.offsetCommits(len(res.Records))
	res.Response = codes
	return res, nil
}

func (s *Shard) validateOffsetCommit(rc RequestContext, req *kmsg.OffsetCommitRequest) (group, error) {
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation < 0 {
			// The admin client or a consumer without group
			// management: a "simple" group stores the offsets.
			cg, _ := s.getOrMaybeCreateClassicGroup(req.Group, true)
			g = cg
		} else if rc.APIVersion >= 9 {
			return nil, groupIDNotFound(req.Group)
		} else {
			return nil, apierr.Errorf(kerr.IllegalGeneration, "Group %s not found.", req.Group)
		}
	}
	return g, g.validateOffsetCommit(req.MemberID, req.InstanceID, req.Generation, false, rc.APIVersion)
}

// fetchOffsets is OffsetMetadataManager.fetchOffsets for one group of an
// OffsetFetch: the requested partitions, -1 for those without an offset.
// A group that does not exist has no offsets (no error).
func (s *Shard) fetchOffsets(req *kmsg.OffsetFetchRequestGroup, requireStable bool) (*kmsg.OffsetFetchResponseGroup, error) {
	resp := &kmsg.OffsetFetchResponseGroup{Group: req.Group}
	failAll := false
	if err := s.validateOffsetFetch(req); err != nil {
		if !isGroupIDNotFound(err) {
			return nil, err
		}
		failAll = true
	}
	for _, t := range req.Topics {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic, TopicID: t.TopicID}
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			empty := ""
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, &empty
			if !failAll {
				if requireStable && s.hasPendingTransactionalOffsets(req.Group, t.Topic, p) {
					rp.ErrorCode = kerr.UnstableOffsetCommit.Code
				} else if o, ok := s.offsets.committed.get(req.Group, t.Topic, p); ok {
					rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.LeaderEpoch, &o.Metadata
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fetchAllOffsets is fetchAllOffsets: every offset of the group.
func (s *Shard) fetchAllOffsets(req *kmsg.OffsetFetchRequestGroup, requireStable bool) (*kmsg.OffsetFetchResponseGroup, error) {
	resp := &kmsg.OffsetFetchResponseGroup{Group: req.Group, Topics: []kmsg.OffsetFetchResponseGroupTopic{}}
	if err := s.validateOffsetFetch(req); err != nil {
		if isGroupIDNotFound(err) {
			return resp, nil
		}
		return nil, err
	}
	topics := s.offsets.committed[req.Group]
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t}
		if info, ok := s.topics.TopicByName(t); ok {
			rt.TopicID = info.ID
		}
		parts := make([]int32, 0, len(topics[t]))
		for p := range topics[t] {
			parts = append(parts, p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		for _, p := range parts {
			o := topics[t][p]
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition = p
			if requireStable && s.hasPendingTransactionalOffsets(req.Group, t, p) {
				empty := ""
				rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = -1, -1, &empty, kerr.UnstableOffsetCommit.Code
			} else {
				md := o.Metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.LeaderEpoch, &md
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (s *Shard) validateOffsetFetch(req *kmsg.OffsetFetchRequestGroup) error {
	g := s.groups[req.Group]
	if g == nil {
		return groupIDNotFound(req.Group)
	}
	return g.validateOffsetFetch(req.MemberID, req.MemberEpoch)
}

func isGroupIDNotFound(err error) bool { return apierr.CodeOf(err) == kerr.GroupIDNotFound }

// deleteOffsets is OffsetMetadataManager.deleteOffsets (OffsetDelete):
// tombstones for the partitions of topics the group does not subscribe
// to.
func (s *Shard) deleteOffsets(req *kmsg.OffsetDeleteRequest) (runtime.Result[*kmsg.OffsetDeleteResponse], error) {
	var res runtime.Result[*kmsg.OffsetDeleteResponse]
	g := s.groups[req.Group]
	if g == nil {
		return res, groupIDNotFound(req.Group)
	}
	if err := g.validateOffsetDelete(); err != nil {
		return res, err
	}
	resp := &kmsg.OffsetDeleteResponse{}
	for _, t := range req.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		subscribed := g.isSubscribedToTopic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition}
			if subscribed {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else {
				_, committed := s.offsets.committed.get(req.Group, t.Topic, p.Partition)
				if committed || s.hasPendingTransactionalOffsets(req.Group, t.Topic, p.Partition) {
					res.Records = append(res.Records, offsetCommitTombstone(req.Group, t.Topic, p.Partition))
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.metrics.offsetDeletions(len(res.Records))
	res.Response = resp
	return res, nil
}

// deleteAllOffsets adds tombstones for every offset of a group, committed
// or pending.
func (s *Shard) deleteAllOffsets(group string, records []runtime.Record) ([]runtime.Record, int) {
	n := 0
	for _, t := range sortedKeys(s.offsets.committed[group]) {
		for _, p := range sortedPartitions(s.offsets.committed[group][t]) {
			records = append(records, offsetCommitTombstone(group, t, p))
			n++
		}
	}
	for pid := range s.offsets.openTxnsByGroup[group] {
		for t, parts := range s.offsets.pending[pid][group] {
			for p := range parts {
				if _, ok := s.offsets.committed.get(group, t, p); !ok {
					records = append(records, offsetCommitTombstone(group, t, p))
					n++
				}
			}
		}
	}
	return records, n
}

// cleanupExpiredOffsets adds tombstones for a group's expired offsets and
// reports whether none is left (Kafka's cleanupExpiredOffsets).
func (s *Shard) cleanupExpiredOffsets(groupID string, records []runtime.Record) ([]runtime.Record, bool) {
	topics := s.offsets.committed[groupID]
	if topics == nil {
		return records, true
	}
	g := s.groups[groupID]
	if g == nil {
		return records, false
	}
	base, ok := g.offsetExpirationBase()
	if !ok {
		return records, false
	}
	now := s.now().UnixMilli()
	retention := s.cfg.OffsetsRetention.Milliseconds()
	allExpired := true
	expired := 0
	for _, t := range sortedKeys(topics) {
		if g.isSubscribedToTopic(t) {
			allExpired = false
			continue
		}
		for _, p := range sortedPartitions(topics[t]) {
			o := topics[t][p]
			var isExpired bool
			if o.ExpireTimestamp >= 0 {
				isExpired = now >= o.ExpireTimestamp // OffsetCommit v2-v4's explicit expiry
			} else {
				isExpired = now-base(o) >= retention
			}
			if isExpired && !s.hasPendingTransactionalOffsets(groupID, t, p) {
				records = append(records, offsetCommitTombstone(groupID, t, p))
				expired++
			} else {
				allExpired = false
			}
		}
	}
	s.metrics.offsetsExpired(expired)
	_, openTxn := s.offsets.openTxnsByGroup[groupID]
	return records, allExpired && !openTxn
}

// onPartitionsDeleted adds tombstones for the offsets of deleted topics'
// partitions (Kafka's onPartitionsDeleted).
func (s *Shard) onTopicsDeleted(topics map[string]bool) []runtime.Record {
	var records []runtime.Record
	add := func(o offsets) {
		for g, ts := range o {
			for t, parts := range ts {
				if !topics[t] {
					continue
				}
				for _, p := range sortedPartitions(parts) {
					records = append(records, offsetCommitTombstone(g, t, p))
				}
			}
		}
	}
	add(s.offsets.committed)
	for _, p := range s.offsets.pending {
		add(p)
	}
	return s.maybeCleanupShareGroupState(records)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedPartitions(m map[int32]OffsetAndMetadata) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
