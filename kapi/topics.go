package kapi

// Topic helpers shared by CreateTopics, Metadata auto-creation, Produce
// auto-creation and the config APIs: Kafka's Topic.validate, internal
// topic names, topic creation with Kafka's controller checks
// (ReplicationControlManager.createTopic) and the authorized-operations
// bit fields reported when no authorizer is configured.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/metadata"
)

const (
	// clusterMetadataTopic is KRaft's metadata log; it cannot be created.
	clusterMetadataTopic = "__cluster_metadata"

	maxTopicNameLength = 249

	// maxPartitionsPerRequest bounds the partitions one request may create
	// (Kafka bounds the records of one controller operation to 10000).
	maxPartitionsPerRequest = 10000

	// Authorized operations without an authorizer: every operation the
	// resource supports (Kafka's AclEntry.supportedOperations as a bit
	// field). Topic: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
	// DESCRIBE_CONFIGS, ALTER_CONFIGS. Cluster: CREATE, ALTER, DESCRIBE,
	// CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
	topicAuthorizedOperations   int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	clusterAuthorizedOperations int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	// authorizedOperationsOmitted is the schema default, -2147483648.
	authorizedOperationsOmitted int32 = -1 << 31
)

// validateTopicName is Kafka's Topic.validate: non-empty, not "." or "..",
// at most 249 characters of ASCII letters, digits, '.', '_' and '-'.
// Errors wrap kerr.InvalidTopicException.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return apierr.Errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return apierr.Errorf(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\"")
	case len(name) > maxTopicNameLength:
		return apierr.Errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return apierr.Errorf(kerr.InvalidTopicException, "Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// collidingTopic returns an existing topic whose name differs from name
// only by '.' versus '_' (Kafka's Topic.hasCollisionChars): both would
// have the same metric names.
func (h *Handler) collidingTopic(name string) (string, bool) {
	if !strings.ContainsAny(name, "._") {
		return "", false
	}
	unify := func(s string) string { return strings.ReplaceAll(s, ".", "_") }
	u := unify(name)
	for _, t := range h.cfg.Metadata.Topics() {
		if t.Name != name && unify(t.Name) == u {
			return t.Name, true
		}
	}
	return "", false
}

// liveBrokers returns the ids of the brokers of the cluster: this node.
func (h *Handler) liveBrokers() []int32 { return []int32{h.cfg.NodeID} }

// createTopic creates a topic after Kafka's checks, in Kafka's order:
// name (INVALID_TOPIC_EXCEPTION, also for a '.'/'_' collision), existence
// (TOPIC_ALREADY_EXISTS), configs (INVALID_CONFIG), then the assignment
// (INVALID_REPLICA_ASSIGNMENT; with an assignment, partitions and rf must
// be -1, else INVALID_REQUEST), or the replication factor
// (INVALID_REPLICATION_FACTOR: 0, < -1, or more than the live brokers) and
// the partition count (INVALID_PARTITIONS). partitions and rf of -1 mean
// num.partitions and default.replication.factor. With validateOnly nothing
// is created and the returned topic has a zero ID.
//
// CreateTopics, Metadata auto-creation and Produce auto-creation share it.
// The metadata store's listeners (the replica manager) create the logs
// before it returns.
func (h *Handler) createTopic(name string, partitions int32, rf int16, assignment [][]int32, configs map[string]string, validateOnly bool) (metadata.Topic, error) {
	if name == clusterMetadataTopic {
		return metadata.Topic{}, apierr.Errorf(kerr.InvalidRequest, "Creation of internal topic %s is prohibited.", clusterMetadataTopic)
	}
	if err := validateTopicName(name); err != nil {
		return metadata.Topic{}, err
	}
	if other, ok := h.collidingTopic(name); ok {
		return metadata.Topic{}, apierr.Errorf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, other)
	}
	if _, ok := h.cfg.Metadata.Topic(name); ok {
		return metadata.Topic{}, apierr.Errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	if err := h.cfg.Broker.ValidateTopicConfigs(configs); err != nil {
		return metadata.Topic{}, err
	}
	brokers := h.liveBrokers()
	if assignment != nil {
		if rf != -1 {
			return metadata.Topic{}, apierr.Errorf(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if partitions != -1 {
			return metadata.Topic{}, apierr.Errorf(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		if len(assignment) > maxPartitionsPerRequest {
			return metadata.Topic{}, apierr.Errorf(kerr.InvalidPartitions, "Cannot create more than %d partitions in one request.", maxPartitionsPerRequest)
		}
		if err := validateAssignment(assignment, brokers, -1); err != nil {
			return metadata.Topic{}, err
		}
		partitions = int32(len(assignment))
		rf = int16(len(assignment[0]))
	} else {
		switch {
		case rf < -1 || rf == 0:
			return metadata.Topic{}, apierr.Errorf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		case partitions < -1 || partitions == 0:
			return metadata.Topic{}, apierr.Errorf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		if partitions == -1 {
			partitions = h.cfg.Broker.NumPartitions
		}
		if rf == -1 {
			rf = h.cfg.Broker.DefaultReplicationFactor
		}
		if int(rf) > len(brokers) {
			return metadata.Topic{}, apierr.Errorf(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, len(brokers))
		}
		if partitions > maxPartitionsPerRequest {
			return metadata.Topic{}, apierr.Errorf(kerr.InvalidPartitions, "Cannot create more than %d partitions in one request.", maxPartitionsPerRequest)
		}
	}
	if validateOnly {
		t := metadata.Topic{Name: name, Internal: metadata.IsInternalTopic(name), Configs: configs}
		for i := range partitions {
			replicas := slices.Clone(brokers[:rf])
			if assignment != nil {
				replicas = slices.Clone(assignment[i])
			}
			t.Partitions = append(t.Partitions, metadata.Partition{Index: i, Leader: replicas[0], Replicas: replicas, ISR: slices.Clone(replicas)})
		}
		return t, nil
	}
	return h.cfg.Metadata.CreateTopic(name, partitions, assignment, configs, metadata.IsInternalTopic(name))
}

// validateAssignment is Kafka's validateManualPartitionAssignment: every
// partition has replicas, on registered brokers, each at most once, and as
// many as the others (rf; -1: take the first partition's).
func validateAssignment(assignment [][]int32, brokers []int32, rf int) error {
	for i, replicas := range assignment {
		if len(replicas) == 0 {
			return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
		}
		sorted := slices.Sorted(slices.Values(replicas))
		for j, b := range sorted {
			if !slices.Contains(brokers, b) {
				return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", b)
			}
			if j > 0 && sorted[j-1] == b {
				return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", b)
			}
		}
		if rf == -1 && i == 0 {
			rf = len(replicas)
		}
		if len(replicas) != rf {
			return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
		}
	}
	return nil
}
