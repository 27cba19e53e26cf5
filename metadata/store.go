package metadata

import (
	"log/slog"

	"github.com/moldau/moldau/broker/uuid"
)

// TopicID is a topic's UUID, as Kafka gives every topic (KIP-516).
type TopicID = uuid.UUID

// Topic is one topic as the cluster knows it. Values returned by Store are
// immutable snapshots: callers may keep them, and must not modify their
// Partitions, Replicas, ISR or Configs, which the store shares between
// readers (it never changes them in place; a change publishes new ones), so
// that a lookup on the produce and fetch paths copies nothing.
type Topic struct {
	Name       string
	ID         TopicID
	Internal   bool // __consumer_offsets, __transaction_state
	Partitions []Partition
	// Configs holds only the topic's own overrides (DescribeConfigs
	// source TOPIC_CONFIG); defaults come from the broker config.
	Configs map[string]string
}

// Partition is one partition's assignment and leadership.
type Partition struct {
	Index          int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
}

// Change is sent to listeners after the store changed durably.
type Change struct {
	Kind  ChangeKind
	Topic Topic // the topic after the change; for TopicDeleted, before it
	// Config names changed, for TopicConfigChanged and BrokerConfigChanged.
	ConfigNames []string
	// BrokerResource is the broker config resource changed, for
	// BrokerConfigChanged: "" for the cluster default, or a node id.
	BrokerResource string
	// NewPartitions is the number of partitions added, for
	// PartitionsCreated (the new ones are the last of Topic.Partitions).
	NewPartitions int32
}

// ChangeKind says what a Change is.
type ChangeKind int

const (
	TopicCreated ChangeKind = iota + 1
	TopicDeleted
	PartitionsCreated
	TopicConfigChanged
	BrokerConfigChanged
)

// Kafka's internal topics (Topic.GROUP_METADATA_TOPIC_NAME and
// TRANSACTION_STATE_TOPIC_NAME), created by the coordinators.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
)

// IsInternalTopic is Kafka's Topic.isInternal: clients may not write to
// these topics, and they are never auto-created on a client's request.
func IsInternalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic
}

// Options configure Open.
type Options struct {
	Dir    string // metadata.log.dir, or the first of log.dirs
	NodeID int32
	Logger *slog.Logger
}
