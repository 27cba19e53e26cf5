package share

import (
	"fmt"
	"time"
)

// RecordState is the delivery state of an in-flight record, with Kafka's
// ids (org.apache.kafka.server.share.fetch.RecordState): the ids are what
// the share coordinator persists.
type RecordState int8

const (
	Available    RecordState = 0 // may be acquired
	Acquired     RecordState = 1 // delivered to a member, under its acquisition lock
	Acknowledged RecordState = 2 // accepted: done
	Archived     RecordState = 4 // rejected, past the delivery limit, or a gap: done
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// terminal reports whether a record in state s is done with: the share
// partition start offset may move past it.
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// AcknowledgeType is what a member says of records it acquired, with the
// ids of ShareFetch and ShareAcknowledge (Kafka's AcknowledgeType, and 0
// for a gap: an offset with no record, which the client reports so the
// start offset can pass it).
type AcknowledgeType int8

const (
	AckGap     AcknowledgeType = 0
	AckAccept  AcknowledgeType = 1
	AckRelease AcknowledgeType = 2
	AckReject  AcknowledgeType = 3
	// AckRenew keeps the records acquired and starts their lock again
	// (KIP-1222, ShareFetch and ShareAcknowledge v2 with IsRenewAck).
	AckRenew AcknowledgeType = 4
)

// run is a range of consecutive in-flight offsets in one state: Kafka's
// InFlightBatch and InFlightState folded into one run-length encoding.
// Acquiring or acknowledging part of a run splits it; neighbours that end
// up alike are merged again, so a partition read and acknowledged batch by
// batch holds a handful of runs whatever the record count.
type run struct {
	first, last   int64
	state         RecordState
	deliveryCount int16
	// member and deadline are set while the run is Acquired: who holds
	// the acquisition lock and until when.
	member   string
	deadline time.Time
}

func (r run) count() int64 { return r.last - r.first + 1 }

// alike reports whether b may be merged into a, which it directly follows.
func (a run) alike(b run) bool {
	return a.last+1 == b.first && a.state == b.state && a.deliveryCount == b.deliveryCount &&
		a.member == b.member && a.deadline.Equal(b.deadline)
}

// AcquiredRecords is one range handed to a member by a share fetch, as
// ShareFetch's AcquiredRecords.
type AcquiredRecords struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// AcknowledgementBatch is one range a member acknowledges: one type for
// the whole range, or one per offset (ShareFetch's and ShareAcknowledge's
// AcknowledgementBatches).
type AcknowledgementBatch struct {
	FirstOffset, LastOffset int64
	Types                   []AcknowledgeType
}

// typeAt is the acknowledgement of offset o of the batch.
func (b AcknowledgementBatch) typeAt(o int64) AcknowledgeType {
	if len(b.Types) == 1 {
		return b.Types[0]
	}
	return b.Types[o-b.FirstOffset]
}

// StateBatch is a persisted range: Kafka's PersisterStateBatch, what
// WriteShareGroupState and ReadShareGroupState carry.
type StateBatch struct {
	FirstOffset, LastOffset int64
	DeliveryState           RecordState
	DeliveryCount           int16
}
