package group

import (
	"fmt"
)

// Replay of the consumer protocol's records (Kafka's GroupMetadataManager
// replay methods), and what a consumer group needs when its shard loads.

// getOrMaybeCreatePersistedConsumerGroup is Kafka's: a simple classic
// group (offsets only, no record of its own) is replaced.
func (s *Shard) getOrMaybeCreatePersistedConsumerGroup(id string, create bool) (*ConsumerGroup, error) {
	switch g := s.groups[id].(type) {
	case *ConsumerGroup:
		return g, nil
	case nil:
		if !create {
			return nil, nil
		}
	case *ClassicGroup:
		if !create {
			return nil, nil
		}
		if !g.isSimpleGroup() {
			return nil, fmt.Errorf("group %s is a classic group, not a consumer group", id)
		}
	case *ShareGroup:
		if !create {
			return nil, nil
		}
		return nil, fmt.Errorf("group %s is a share group, not a consumer group", id)
	}
	cg := newConsumerGroup(id)
	s.groups[id] = cg
	return cg, nil
}

func (s *Shard) replayConsumerGroupRecord(k parsedKey, value []byte) error {
	g, err := s.getOrMaybeCreatePersistedConsumerGroup(k.group, value != nil)
	if err != nil || g == nil {
		return err // a tombstone for a group that is gone: nothing to do
	}
	before := topicSet(g)
	defer func() { s.indexConsumerGroup(g, before) }()
	switch k.typ {
	case typeConsumerGroupMetadata:
		if value == nil {
			s.removeGroup(k.group)
			return nil
		}
		v, err := decodeConsumerGroupMetadataValue(value)
		if err != nil {
			return err
		}
		g.setGroupEpoch(v.Epoch)
	case typeConsumerGroupPartitionMetadata:
		md := map[string]topicMetadata{}
		if value != nil {
			v, err := decodeConsumerGroupPartitionMetadataValue(value)
			if err != nil {
				return err
			}
			for _, t := range v.Topics {
				md[t.TopicName] = topicMetadata{id: t.TopicID, name: t.TopicName, numPartitions: t.NumPartitions}
			}
		}
		g.subscriptionMetadata = md
	case typeConsumerGroupMemberMetadata:
		if value == nil {
			g.removeMember(k.member)
			return nil
		}
		v, err := decodeConsumerGroupMemberMetadataValue(value)
		if err != nil {
			return err
		}
		m, _ := g.getOrMaybeCreateMember(k.member, true)
		m = m.copy()
		m.updateWithSubscription(v)
		g.updateMember(m)
	case typeConsumerGroupTargetAssignmentMeta:
		if value == nil {
			g.setAssignmentEpoch(-1)
			return nil
		}
		v, err := decodeConsumerGroupTargetAssignmentMetadataValue(value)
		if err != nil {
			return err
		}
		g.setAssignmentEpoch(v.AssignmentEpoch)
	case typeConsumerGroupTargetAssignmentMember:
		if value == nil {
			g.removeTargetAssignment(k.member)
			return nil
		}
		v, err := decodeConsumerGroupTargetAssignmentMemberValue(value)
		if err != nil {
			return err
		}
		g.updateTargetAssignment(k.member, assignmentFromRecord(v.TopicPartitions))
	case typeConsumerGroupCurrentMemberAssign:
		m := g.members[k.member]
		if value == nil {
			if m != nil {
				m = m.copy()
				m.memberEpoch, m.previousMemberEpoch = leaveGroupMemberEpoch, leaveGroupMemberEpoch
				m.assigned, m.pendingRevocation = assignment{}, assignment{}
				g.updateMember(m)
			}
			return nil
		}
		v, err := decodeConsumerGroupCurrentMemberAssignmentValue(value)
		if err != nil {
			return err
		}
		if m == nil {
			m = newConsumerGroupMember(k.member)
		} else {
			m = m.copy()
		}
		m.updateWithAssignment(v)
		g.updateMember(m)
	case typeConsumerGroupRegularExpression:
		if value == nil {
			g.updateResolvedRegex(k.member, nil)
			return nil
		}
		v, err := decodeConsumerGroupRegularExpressionValue(value)
		if err != nil {
			return err
		}
		g.updateResolvedRegex(k.member, &resolvedRegex{topics: sortedUnique(v.Topics), version: v.Version, timestamp: v.Timestamp})
	}
	return nil
}

func topicSet(g *ConsumerGroup) map[string]bool {
	out := make(map[string]bool, len(g.subscribedTopicNames))
	for t := range g.subscribedTopicNames {
		out[t] = true
	}
	return out
}

// indexConsumerGroup keeps groupsByTopic (Kafka's groupsByTopics) up to
// date after a replay changed a group's topics.
func (s *Shard) indexConsumerGroup(g *ConsumerGroup, before map[string]bool) {
	if s.groups[g.groupID] != g {
		s.unindexTopics(g.groupID, before)
		return
	}
	for t := range before {
		if g.subscribedTopicNames[t] == 0 {
			s.unindexTopics(g.groupID, map[string]bool{t: true})
		}
	}
	for t := range g.subscribedTopicNames {
		if !before[t] {
			set := s.groupsByTopic[t]
			if set == nil {
				set = map[string]bool{}
				s.groupsByTopic[t] = set
			}
			set[g.groupID] = true
		}
	}
}

func (s *Shard) unindexTopics(groupID string, topics map[string]bool) {
	for t := range topics {
		if set := s.groupsByTopic[t]; set != nil {
			delete(set, groupID)
			if len(set) == 0 {
				delete(s.groupsByTopic, t)
			}
		}
	}
}

func (s *Shard) unindexConsumerGroup(g *ConsumerGroup) { s.unindexTopics(g.groupID, topicSet(g)) }

// onConsumerGroupLoaded restarts the members' timers after a load.
func (s *Shard) onConsumerGroupLoaded(g *ConsumerGroup) {
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		if m.useClassicProtocol() {
			s.scheduleConsumerSessionTimeout(g.groupID, id, durationMs(m.classicSessionTimeoutMs()))
		} else {
			s.scheduleConsumerSessionTimeout(g.groupID, id, s.consumerSessionTimeout(g.groupID))
		}
		if m.state == memberUnrevokedPartitions {
			s.scheduleConsumerRebalanceTimeout(g.groupID, id, m.memberEpoch, m.rebalanceTimeoutMs)
		}
	}
}

// onTopicsChanged asks the consumer and share groups subscribed to these topics to
// recompute their subscription metadata at their next heartbeat (Kafka's
// onNewMetadataImage).
func (s *Shard) onTopicsChanged(topics []string) {
	for _, id := range s.sortedGroupIDs() {
		if g, ok := s.groups[id].(*ShareGroup); ok {
			for _, t := range topics {
				if g.isSubscribedToTopic(t) {
					g.requestMetadataRefresh()
					break
				}
			}
		}
	}
	for _, t := range topics {
		for id := range s.groupsByTopic[t] {
			if g, ok := s.groups[id].(*ConsumerGroup); ok {
				g.requestMetadataRefresh()
			}
		}
	}
}
