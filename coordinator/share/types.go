package share

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/moldau/moldau/broker/uuid"
)

// Key names one share-partition: a share group's view of one topic
// partition (Kafka's SharePartitionKey).
type Key struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// CoordinatorKey is the key's string form, "groupId:topicId:partition"
// with the topic id as Kafka prints a Uuid (URL-safe base64, no padding):
// Kafka's SharePartitionKey.asCoordinatorKey, the key FindCoordinator
// (key type 2) names and PartitionFor hashes.
func (k Key) CoordinatorKey() string {
	return fmt.Sprintf("%s:%s:%d", k.GroupID, uuid.UUID(k.TopicID), k.Partition)
}

func (k Key) String() string { return k.CoordinatorKey() }

// ParseCoordinatorKey reads a key in its string form as Kafka's
// SharePartitionKey.getInstance does: three fields split at ':', the
// group id trimmed and not empty, a topic id in Kafka's base64 and a
// partition number.
func ParseCoordinatorKey(s string) (Key, error) {
	f := strings.Split(s, ":")
	if len(f) != 3 {
		return Key{}, fmt.Errorf("invalid key format: expected groupId:topicId:partition, found %q", s)
	}
	group := strings.TrimSpace(f[0])
	if group == "" {
		return Key{}, fmt.Errorf("share partition key %q has an empty group id", s)
	}
	id, err := uuid.Parse(f[1])
	if err != nil {
		return Key{}, fmt.Errorf("invalid topic id in share partition key %q: %w", s, err)
	}
	p, err := strconv.ParseInt(f[2], 10, 32)
	if err != nil {
		return Key{}, fmt.Errorf("invalid partition in share partition key %q", s)
	}
	return Key{GroupID: group, TopicID: id, Partition: int32(p)}, nil
}

// Delivery states of a StateBatch: Kafka's RecordState ids. ACQUIRED is
// transient and never persisted by Kafka's share-partition leader;
// ARCHIVING (3) is not used by KIP-932.
const (
	DeliveryAvailable    int8 = 0
	DeliveryAcquired     int8 = 1
	DeliveryAcknowledged int8 = 2
	DeliveryArchived     int8 = 4
)

// StateBatch is Kafka's PersisterStateBatch: the delivery state and count
// of the offsets FirstOffset to LastOffset, inclusive.
type StateBatch struct {
	FirstOffset, LastOffset int64
	DeliveryState           int8
	DeliveryCount           int16
}

// Values of PartitionState's fields that mean "none" or "not set", as
// Kafka's PartitionFactory and ShareGroupOffset name them.
const (
	UninitializedStartOffset           int64 = -1
	UninitializedDeliveryCompleteCount int32 = -1
	DefaultStateEpoch                  int32 = 0
	DefaultLeaderEpoch                 int32 = 0
	NoLeaderEpoch                      int32 = -1 // in a request: do not check or record
	NoStateEpoch                       int32 = -1 // in a request: do not check
)

// PartitionState is a share-partition's durable state: what
// ReadShareGroupState answers and WriteShareGroupState carries.
type PartitionState struct {
	StateEpoch  int32
	LeaderEpoch int32
	// StartOffset is the share-partition start offset (SPSO); -1: not
	// initialized (or, in a write, not changed).
	StartOffset int64
	// DeliveryCompleteCount is the number of offsets at or above
	// StartOffset whose delivery is complete (acknowledged or archived),
	// -1 if not known (KIP-1226, Kafka 4.2: WriteShareGroupState v1 and
	// ReadShareGroupStateSummary v1 carry it, and share-partition lag is
	// computed from it).
	DeliveryCompleteCount int32
	Batches               []StateBatch
}

// Persister is Kafka's org.apache.kafka.server.share.persister.Persister,
// one partition at a time: the share-partition leader and the group
// coordinator keep share-partition state through it, wherever the share
// coordinator of the key is. Errors wrap kerr sentinels
// (kerr.FencedStateEpoch, kerr.FencedLeaderEpoch, kerr.InvalidRequest,
// kerr.CoordinatorNotAvailable once ctx ends, ...); NOT_COORDINATOR and
// the coordinator's other retriable errors are retried inside until ctx
// ends.
type Persister interface {
	// InitializeState writes the key's state afresh: stateEpoch and
	// startOffset (-1: not initialized yet), no batches
	// (InitializeShareGroupState).
	InitializeState(ctx context.Context, k Key, stateEpoch int32, startOffset int64) error
	// ReadState returns the key's state, recording leaderEpoch as the
	// share-partition's; an older leader epoch than recorded (-1 too,
	// once the key is initialized, as Kafka's coordinator answers) is
	// FENCED_LEADER_EPOCH. A key never initialized is INVALID_REQUEST, as
	// Kafka 4.1+ answers ReadShareGroupState (the group coordinator
	// initializes a share-partition before it is assigned). The answer's
	// LeaderEpoch is leaderEpoch and its DeliveryCompleteCount -1:
	// ReadShareGroupState carries neither (ReadStateSummary has the
	// count).
	ReadState(ctx context.Context, k Key, leaderEpoch int32) (PartitionState, error)
	// WriteState merges st.Batches (the changed batches) into the key's
	// state and moves its start offset to st.StartOffset (-1: stays);
	// a stale st.StateEpoch or st.LeaderEpoch is fenced.
	WriteState(ctx context.Context, k Key, st PartitionState) error
	// DeleteState removes the key's state (a no-op for a key that has
	// none).
	DeleteState(ctx context.Context, k Key) error
	// ReadStateSummary returns the key's state without batches; a key
	// never initialized answers StartOffset -1, state and leader epoch 0
	// and no error, as Kafka does.
	ReadStateSummary(ctx context.Context, k Key, leaderEpoch int32) (PartitionState, error)
}
