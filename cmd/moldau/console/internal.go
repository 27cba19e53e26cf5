package console

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker/uuid"
)

// Bounds of reading the coordinators' logs.
const (
	// maxInternalEvents is how many decoded records a snapshot keeps,
	// the newest.
	maxInternalEvents = 500
	// internalBacklog is how far back from its end each partition of an
	// internal topic is read when the console starts (or first sees the
	// topic).
	internalBacklog = 20
	// maxInternalPerTick bounds the records taken from the consumer's
	// buffer per tick; the rest wait for the next ticks.
	maxInternalPerTick = 2000
	// Fetch bounds of the consumer: at most 1 MiB a response and 256 KiB
	// a partition. kgo keeps one fetch in flight per broker and sends the
	// next only once the last one's records are taken, so what is held
	// is at most a response per broker.
	internalFetchBytes          = 1 << 20
	internalFetchPartitionBytes = 256 << 10
)

// InternalEvent is one record of __consumer_offsets or
// __transaction_state, decoded. Time is the record's timestamp (Unix ms).
// Group, TransactionalID and State are set for the kinds that carry them.
type InternalEvent struct {
	Time            int64  `json:"time"`
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	Offset          int64  `json:"offset"`
	Kind            string `json:"kind"`
	Deleted         bool   `json:"deleted,omitempty"` // a tombstone
	Group           string `json:"group,omitempty"`
	TransactionalID string `json:"transactional_id,omitempty"`
	State           string `json:"state,omitempty"`
	Text            string `json:"text"`
}

// internalReader follows the internal topics with a kgo consumer of its
// own, made from the poller's client's options. It is owned by the
// polling goroutine.
type internalReader struct {
	cons      *kgo.Client
	consuming map[string]bool
	events    []InternalEvent // oldest first, at most maxInternalEvents
}

// pollInternal takes what the consumer has fetched since the last tick
// (never waiting for more) and fills s.Internal with the newest events.
// The consumer starts, or adds a topic, once the topic is in s's
// metadata: a consumer of a topic that does not exist yet would give up
// on it. A fetch error is reported; the events read so far stay.
func (p *Poller) pollInternal(s *Snapshot) error {
	r := &p.internal
	defer func() { s.Internal = slices.Clone(r.events) }()
	var present []string
	for _, t := range s.Topics {
		if (t.Name == offsetsTopic || t.Name == txnTopic) && !r.consuming[t.Name] {
			present = append(present, t.Name)
		}
	}
	if len(present) > 0 {
		if err := r.consume(p.cl, p.interval, present); err != nil {
			return err
		}
	}
	if r.cons == nil {
		return nil
	}
	// A nil context: take what is buffered, do not wait.
	fs := r.cons.PollRecords(nil, maxInternalPerTick)
	var firstErr error
	fs.EachError(func(topic string, partition int32, err error) {
		if firstErr == nil {
			firstErr = fmt.Errorf("%s-%d: %w", topic, partition, err)
		}
	})
	ids := topicIDs(s)
	names := func(id uuid.UUID) (string, bool) { n, ok := ids[id]; return n, ok }
	var got []InternalEvent
	fs.EachRecord(func(rec *kgo.Record) {
		e := decodeInternal(rec.Topic, rec.Key, rec.Value, names)
		e.Time, e.Topic, e.Partition, e.Offset = rec.Timestamp.UnixMilli(), rec.Topic, rec.Partition, rec.Offset
		got = append(got, e)
	})
	r.events = appendEvents(r.events, got, maxInternalEvents)
	return firstErr
}

// topicIDs names the topics of s by id, to read the records that name
// them by id (the KIP-848 records, the metadata log).
func topicIDs(s *Snapshot) map[uuid.UUID]string {
	ids := make(map[uuid.UUID]string, len(s.Topics))
	for _, t := range s.Topics {
		if id, err := uuid.Parse(t.ID); err == nil {
			ids[id] = t.Name
		}
	}
	return ids
}

// consume starts the consumer on topics, or adds them to it. A fetch
// waits at most a poll interval (within 100 ms to 5 s) for records: a
// topic added while a fetch waits joins the next one, and a topic's
// records reach the page within about two intervals. An idle broker
// gets one empty incremental fetch per interval.
func (r *internalReader) consume(cl *kgo.Client, interval time.Duration, topics []string) error {
	if r.consuming == nil {
		r.consuming = map[string]bool{}
	}
	if r.cons != nil {
		r.cons.AddConsumeTopics(topics...)
	} else {
		cons, err := kgo.NewClient(append(cl.Opts(),
			kgo.ConsumeTopics(topics...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd().Relative(-internalBacklog)),
			kgo.FetchMaxWait(min(max(interval, 100*time.Millisecond), 5*time.Second)),
			kgo.FetchMaxBytes(internalFetchBytes),
			kgo.FetchMaxPartitionBytes(internalFetchPartitionBytes),
		)...)
		if err != nil {
			return err
		}
		r.cons = cons
	}
	for _, t := range topics {
		r.consuming[t] = true
	}
	return nil
}

// close stops the consumer and forgets the events (a new client may be
// on another cluster).
func (r *internalReader) close() {
	if r.cons != nil {
		r.cons.Close()
	}
	*r = internalReader{}
}

// appendEvents adds got to events, ordered by time (then topic,
// partition and offset, so one partition's records keep their order),
// and keeps the newest limit.
func appendEvents(events, got []InternalEvent, limit int) []InternalEvent {
	if len(got) == 0 {
		return events
	}
	out := append(slices.Clone(events), got...)
	slices.SortStableFunc(out, func(a, b InternalEvent) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), strings.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	if len(out) > limit {
		out = slices.Clone(out[len(out)-limit:])
	}
	return out
}
