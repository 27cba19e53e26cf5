package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/group"
	"github.com/moldau/moldau/replica"
)

// The coordinators' wiring: each learns from the metadata publishers which
// partitions of its internal topic this broker leads (coordinatorPublisher)
// and, for the group coordinator, which topics came and went
// (groupTopicsPublisher) and the group configs (groupConfigPublisher); it
// reads topics from the metadata image and writes through the
// ReplicaManager.

// newGroupCoordinator creates the group coordinator on the loader's image.
func (b *Broker) newGroupCoordinator() (*group.Service, error) {
	cfg := b.cfg
	gcfg := groupConfig(cfg)
	if err := gcfg.Validate(); err != nil {
		return nil, fmt.Errorf("group coordinator: %w", err)
	}
	return group.NewService(group.Options{
		Config:   gcfg,
		Log:      b.replicas,
		Metadata: groupTopics{b.loader},
		NumPartitions: func() int32 {
			if t, ok := b.loader.Image().Topic(metadata.ConsumerOffsetsTopic); ok {
				return int32(len(t.Partitions))
			}
			return cfg.OffsetsTopicNumPartitions
		},
		Logger:            b.log,
		Registerer:        b.registry,
		VerifyTransaction: b.verifyTransaction,
		// Kafka's isShareGroupProtocolEnabled: share.version 1 or more.
		ShareGroupsEnabled: func() bool { return b.loader.Image().ShareGroupsEnabled() },
		ShareState:         groupShareState{b.sharePersister},
		LogEnd: func(topic string, partition int32) (int64, bool) {
			p := b.replicas.Partition(replica.TopicPartition{Topic: topic, Partition: partition})
			if p == nil {
				return 0, false
			}
			return p.Log.HighWatermark(), true
		},
	}), nil
}

// groupCoordinatorPublishers are the publishers that feed the group
// coordinator: the group configs (first, so that groups loaded in the same
// update already have theirs), leadership of __consumer_offsets
// partitions, and topic changes for consumer groups' subscriptions.
func (b *Broker) groupCoordinatorPublishers() []metadata.Publisher {
	return []metadata.Publisher{
		&groupConfigPublisher{groups: b.groups},
		&coordinatorPublisher{
			name: "GroupCoordinator", topic: metadata.ConsumerOffsetsTopic, nodeID: b.cfg.NodeID,
			onElection: b.groups.OnElection, onResignation: b.groups.OnResignation,
		},
		&groupTopicsPublisher{groups: b.groups},
	}
}

// groupTopicsPublisher tells the group coordinator of created, grown and
// deleted topics (Kafka's GroupCoordinator.onNewMetadataImage), other than
// its own.
type groupTopicsPublisher struct{ groups *group.Service }

func (p *groupTopicsPublisher) Name() string { return "GroupCoordinatorTopics" }

func (p *groupTopicsPublisher) OnMetadataUpdate(d *metadata.Delta, _ *metadata.Image) {
	var created, changed, deleted []string
	isNew := map[string]bool{}
	for _, t := range d.CreatedTopics() {
		if t.Name != metadata.ConsumerOffsetsTopic {
			created = append(created, t.Name)
			isNew[t.Name] = true
		}
	}
	for t, parts := range d.ChangedPartitions() {
		if t.Name == metadata.ConsumerOffsetsTopic || isNew[t.Name] {
			continue
		}
		// A partition beyond the old count is a new one.
		if old, ok := d.Base().TopicByID(t.ID); ok && int(parts[len(parts)-1]) >= len(old.Partitions) {
			changed = append(changed, t.Name)
		}
	}
	for _, t := range d.DeletedTopics() {
		if t.Name != metadata.ConsumerOffsetsTopic {
			deleted = append(deleted, t.Name)
		}
	}
	if len(created)+len(changed)+len(deleted) > 0 {
		p.groups.OnTopicsChanged(created, changed, deleted)
	}
}

// groupConfig is the group coordinator's configuration from the broker's.
func groupConfig(c *config.KafkaConfig) group.Config {
	ms := func(key string) time.Duration { return time.Duration(c.GetInt(key)) * time.Millisecond }
	return group.Config{
		ClassicInitialRebalanceDelay:  c.GroupInitialRebalanceDelay,
		ClassicMinSessionTimeout:      c.GroupMinSessionTimeout,
		ClassicMaxSessionTimeout:      c.GroupMaxSessionTimeout,
		ClassicMaxSize:                int(c.GetInt("group.max.size")),
		ConsumerSessionTimeout:        ms("group.consumer.session.timeout.ms"),
		ConsumerMinSessionTimeout:     ms("group.consumer.min.session.timeout.ms"),
		ConsumerMaxSessionTimeout:     ms("group.consumer.max.session.timeout.ms"),
		ConsumerHeartbeatInterval:     ms("group.consumer.heartbeat.interval.ms"),
		ConsumerMinHeartbeatInterval:  ms("group.consumer.min.heartbeat.interval.ms"),
		ConsumerMaxHeartbeatInterval:  ms("group.consumer.max.heartbeat.interval.ms"),
		ConsumerMaxSize:               int(c.GetInt("group.consumer.max.size")),
		ConsumerAssignors:             c.GetList("group.consumer.assignors"),
		ConsumerMigrationPolicy:       strings.ToLower(c.GetString("group.consumer.migration.policy")),
		RebalanceProtocols:            c.GetList("group.coordinator.rebalance.protocols"),
		ShareSessionTimeout:           ms("group.share.session.timeout.ms"),
		ShareMinSessionTimeout:        ms("group.share.min.session.timeout.ms"),
		ShareMaxSessionTimeout:        ms("group.share.max.session.timeout.ms"),
		ShareHeartbeatInterval:        ms("group.share.heartbeat.interval.ms"),
		ShareMinHeartbeatInterval:     ms("group.share.min.heartbeat.interval.ms"),
		ShareMaxHeartbeatInterval:     ms("group.share.max.heartbeat.interval.ms"),
		ShareMaxSize:                  int(c.GetInt("group.share.max.size")),
		ShareRecordLockDuration:       ms("group.share.record.lock.duration.ms"),
		ShareDeliveryCountLimit:       int(c.GetInt("group.share.delivery.count.limit")),
		OffsetsRetention:              c.OffsetsRetention,
		OffsetsRetentionCheckInterval: time.Duration(c.GetLong("offsets.retention.check.interval.ms")) * time.Millisecond,
		OffsetMetadataMaxSize:         int(c.GetInt("offset.metadata.max.bytes")),
		OffsetCommitTimeout:           ms("offsets.commit.timeout.ms"),
	}
}

// groupTopics is the group coordinator's view of the topics: the image the
// broker has applied.
type groupTopics struct{ l *metadata.Loader }

func topicInfo(t *metadata.Topic) group.TopicInfo {
	return group.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))}
}

func (g groupTopics) TopicByName(name string) (group.TopicInfo, bool) {
	t, ok := g.l.Image().Topic(name)
	if !ok {
		return group.TopicInfo{}, false
	}
	return topicInfo(t), true
}

func (g groupTopics) TopicByID(id [16]byte) (group.TopicInfo, bool) {
	t, ok := g.l.Image().TopicByID(id)
	if !ok {
		return group.TopicInfo{}, false
	}
	return topicInfo(t), true
}

func (g groupTopics) Topics() []group.TopicInfo {
	ts := g.l.Image().Topics()
	out := make([]group.TopicInfo, len(ts))
	for i, t := range ts {
		out[i] = topicInfo(t)
	}
	return out
}
