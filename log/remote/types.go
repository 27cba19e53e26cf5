package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/moldau/moldau/broker/uuid"
)

// TopicIdPartition names a partition by topic id and name (Kafka's
// TopicIdPartition).
type TopicIdPartition struct {
	TopicID   uuid.UUID
	Topic     string
	Partition int32
}

func (tp TopicIdPartition) String() string {
	return fmt.Sprintf("%s:%s-%d", tp.TopicID, tp.Topic, tp.Partition)
}

// RemoteLogSegmentId names one copy of a segment in remote storage: the
// partition and a random id, so that a segment copied twice (a retried
// copy after a crash or a leadership change) is two distinct objects
// (Kafka's RemoteLogSegmentId).
type RemoteLogSegmentId struct {
	TopicIdPartition TopicIdPartition
	ID               uuid.UUID
}

func (id RemoteLogSegmentId) String() string {
	return fmt.Sprintf("%s:%s", id.TopicIdPartition, id.ID)
}

// RemoteLogSegmentState is a remote segment's lifecycle state (Kafka's
// RemoteLogSegmentState, with its ids). Allowed transitions:
// CopySegmentStarted → CopySegmentFinished | DeleteSegmentStarted;
// CopySegmentFinished → DeleteSegmentStarted; DeleteSegmentStarted →
// DeleteSegmentFinished.
type RemoteLogSegmentState int8

const (
	CopySegmentStarted    RemoteLogSegmentState = 0
	CopySegmentFinished   RemoteLogSegmentState = 1
	DeleteSegmentStarted  RemoteLogSegmentState = 2
	DeleteSegmentFinished RemoteLogSegmentState = 3
)

func (s RemoteLogSegmentState) String() string {
	switch s {
	case CopySegmentStarted:
		return "COPY_SEGMENT_STARTED"
	case CopySegmentFinished:
		return "COPY_SEGMENT_FINISHED"
	case DeleteSegmentStarted:
		return "DELETE_SEGMENT_STARTED"
	case DeleteSegmentFinished:
		return "DELETE_SEGMENT_FINISHED"
	}
	return fmt.Sprintf("RemoteLogSegmentState(%d)", int8(s))
}

// ValidTransition reports whether a segment in state s may move to next
// (Kafka's RemoteLogSegmentState.isValidTransition).
func (s RemoteLogSegmentState) ValidTransition(next RemoteLogSegmentState) bool {
	switch s {
	case CopySegmentStarted:
		return next == CopySegmentFinished || next == DeleteSegmentStarted
	case CopySegmentFinished:
		return next == DeleteSegmentStarted
	case DeleteSegmentStarted:
		return next == DeleteSegmentFinished
	}
	return false
}

// RemotePartitionDeleteState is the state of a partition's removal from
// remote storage (Kafka's RemotePartitionDeleteState).
type RemotePartitionDeleteState int8

const (
	DeletePartitionMarked   RemotePartitionDeleteState = 0
	DeletePartitionStarted  RemotePartitionDeleteState = 1
	DeletePartitionFinished RemotePartitionDeleteState = 2
)

// RemoteLogSegmentMetadata describes one remote segment (Kafka's
// RemoteLogSegmentMetadata). SegmentLeaderEpochs maps each leader epoch
// with records in the segment to its first offset in it.
type RemoteLogSegmentMetadata struct {
	ID                  RemoteLogSegmentId
	StartOffset         int64
	EndOffset           int64 // inclusive
	BrokerID            int32 // the broker that wrote this state
	MaxTimestampMs      int64
	EventTimestampMs    int64
	SegmentLeaderEpochs map[int32]int64
	SegmentSizeInBytes  int32
	CustomMetadata      []byte // nil: none
	State               RemoteLogSegmentState
	TxnIdxEmpty         bool
}

// Epochs returns the segment's leader epochs in ascending order.
func (m *RemoteLogSegmentMetadata) Epochs() []int32 {
	return slices.Sorted(maps.Keys(m.SegmentLeaderEpochs))
}

// Clone returns a deep copy.
func (m *RemoteLogSegmentMetadata) Clone() *RemoteLogSegmentMetadata {
	c := *m
	c.SegmentLeaderEpochs = maps.Clone(m.SegmentLeaderEpochs)
	c.CustomMetadata = slices.Clone(m.CustomMetadata)
	return &c
}

// Update returns the metadata moved to the update's state (Kafka's
// createWithUpdates).
func (m *RemoteLogSegmentMetadata) Update(u RemoteLogSegmentMetadataUpdate) (*RemoteLogSegmentMetadata, error) {
	if u.ID != m.ID {
		return nil, fmt.Errorf("update for %s applied to %s", u.ID, m.ID)
	}
	c := m.Clone()
	c.State = u.State
	c.BrokerID = u.BrokerID
	c.EventTimestampMs = u.EventTimestampMs
	if u.CustomMetadata != nil {
		c.CustomMetadata = slices.Clone(u.CustomMetadata)
	}
	return c, nil
}

// RemoteLogSegmentMetadataUpdate moves a remote segment to a new state
// (Kafka's RemoteLogSegmentMetadataUpdate).
type RemoteLogSegmentMetadataUpdate struct {
	ID               RemoteLogSegmentId
	EventTimestampMs int64
	CustomMetadata   []byte
	State            RemoteLogSegmentState
	BrokerID         int32
}

// RemotePartitionDeleteMetadata records a partition's removal from
// remote storage (Kafka's RemotePartitionDeleteMetadata).
type RemotePartitionDeleteMetadata struct {
	TopicIdPartition TopicIdPartition
	State            RemotePartitionDeleteState
	EventTimestampMs int64
	BrokerID         int32
}

// LogSegmentData is what a copy uploads: a closed segment's files and the
// state that goes with it (Kafka's LogSegmentData). Paths are local files
// that stay in place for the duration of the copy; TransactionIndex is ""
// when the segment has no aborted transactions. LeaderEpochIndex is the
// leader-epoch checkpoint's content up to the segment's end.
type LogSegmentData struct {
	LogSegment       string
	OffsetIndex      string
	TimeIndex        string
	TransactionIndex string
	ProducerSnapshot string
	LeaderEpochIndex []byte
}

// IndexType names the files fetched with FetchIndex (Kafka's
// RemoteStorageManager.IndexType).
type IndexType int8

const (
	IndexOffset IndexType = iota
	IndexTimestamp
	IndexProducerSnapshot
	IndexTransaction
	IndexLeaderEpoch
)

func (t IndexType) String() string {
	switch t {
	case IndexOffset:
		return "OFFSET"
	case IndexTimestamp:
		return "TIMESTAMP"
	case IndexProducerSnapshot:
		return "PRODUCER_SNAPSHOT"
	case IndexTransaction:
		return "TRANSACTION"
	case IndexLeaderEpoch:
		return "LEADER_EPOCH"
	}
	return fmt.Sprintf("IndexType(%d)", int8(t))
}

// ErrResourceNotFound: the store has no such segment or index (Kafka's
// RemoteResourceNotFoundException). A transaction index that was never
// uploaded (TxnIdxEmpty) is not found.
var ErrResourceNotFound = errors.New("remote resource not found")

// RemoteStorageManager stores segments in remote storage (Kafka's
// RemoteStorageManager). Implementations are safe for concurrent use. A
// copy either stores every file of the segment or returns an error; the
// caller then deletes what a failed copy may have left (DeleteLogSegmentData
// is idempotent and succeeds for a segment that was never stored).
type RemoteStorageManager interface {
	// CopyLogSegmentData uploads the segment's files under the metadata's
	// segment id and returns custom metadata to keep with it (nil: none).
	CopyLogSegmentData(ctx context.Context, m *RemoteLogSegmentMetadata, data LogSegmentData) ([]byte, error)
	// FetchLogSegment returns the segment's bytes from startPos to endPos
	// inclusive (endPos < 0: to the end). The caller closes it, maybe
	// only after several fetches read from it (ctx then outlives them).
	FetchLogSegment(ctx context.Context, m *RemoteLogSegmentMetadata, startPos, endPos int64) (io.ReadCloser, error)
	// FetchIndex returns one of the segment's index files.
	FetchIndex(ctx context.Context, m *RemoteLogSegmentMetadata, t IndexType) (io.ReadCloser, error)
	// DeleteLogSegmentData removes every file of the segment.
	DeleteLogSegmentData(ctx context.Context, m *RemoteLogSegmentMetadata) error
	Close() error
}
