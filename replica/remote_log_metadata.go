package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// RemoteLogMetadataTopic is the internal topic of remote segment metadata
// (Kafka's TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_NAME).
const RemoteLogMetadataTopic = "__remote_log_metadata"

// TopicBasedRemoteLogMetadataManagerConfig configures the topic-based
// RemoteLogMetadataManager.
type TopicBasedRemoteLogMetadataManagerConfig struct {
	BrokerID int32
	Replicas *Manager
	// Image is the current metadata image: it says whether the topic
	// exists and how many partitions it has.
	Image func() *metadata.Image
	// CreateTopic creates __remote_log_metadata (through the active
	// controller) with its partition count, replication factor and
	// configs; it succeeds if the topic exists already and returns once
	// this broker's metadata has it.
	CreateTopic func(ctx context.Context) error
	// NumPartitions is the partition count the topic is created with
	// (remote.log.metadata.topic.num.partitions, 50); the image's count
	// wins once it exists.
	NumPartitions int
	// Produce appends an event batch to a metadata partition led by
	// another broker (a Produce with acks=all over the inter-broker
	// listener) and returns its base offset; nil: events go only to
	// partitions led here.
	Produce func(ctx context.Context, leader int32, tp TopicPartition, batch []byte) (int64, error)
	// Fetch reads a metadata partition this broker hosts no replica of
	// from its leader (a consumer's Fetch over the inter-broker
	// listener, as Kafka's consumer reads it): record batches from
	// offset on, and the partition's log start offset and high
	// watermark. nil: such a partition cannot be read here.
	Fetch func(ctx context.Context, leader int32, tp TopicPartition, offset int64) (records []byte, logStart, hw int64, err error)
	// WriteTimeout bounds the wait for an event to be committed
	// (acks=all) and applied here; 0: 30 s.
	WriteTimeout time.Duration
	Logger       *slog.Logger
}

// TopicBasedRemoteLogMetadataManager is Kafka's
// TopicBasedRemoteLogMetadataManager: the remote segments' metadata as
// events in __remote_log_metadata, placed by remote.MetadataPartition, and
// a RemoteLogMetadataStore built by applying them in log order.
//
// A write appends one event with acks=all through the ReplicaManager,
// then applies the metadata partition's log up to its high watermark, so
// it returns once the event is durable and applied here (Kafka's producer
// waits for its consumer to catch up the same way). Reads first apply
// what the metadata partition holds beyond what was applied, so they
// never answer from a store older than the log; after a restart the
// first read of a metadata partition replays it from its log start
// (retention -1 keeps every event), which rebuilds the store.
//
// The events are read from the local replica of the metadata partition,
// leader or follower, up to its high watermark: a broker that hosts a
// replica sees every event once it is committed. A replica neither led
// here nor fetched from its leader yet (at start-up) is not read: its
// high watermark may be stale. A broker hosting user partitions but no
// replica of their metadata partition fetches its events from the
// partition's leader (Config.Fetch, as Kafka's consumer does), up to the
// leader's high watermark; without Fetch, ListRemoteLogSegments fails
// with REPLICA_NOT_AVAILABLE and the caller retries.
//
// Thread-safety: safe for concurrent use; applyMu serialises the
// application of events (the store's single writer) and is never held
// while waiting for an append.
type TopicBasedRemoteLogMetadataManager struct {
	cfg TopicBasedRemoteLogMetadataManagerConfig
	log *slog.Logger

	applyMu sync.Mutex
	// store is replaced when the topic is created anew. applyMu.
	store *remote.RemoteLogMetadataStore
	// applied maps a metadata partition to the next offset to apply;
	// topicID is the topic the positions belong to (a re-created topic
	// starts over). applyMu.
	applied map[int32]int64
	topicID [16]byte
}

// NewTopicBasedRemoteLogMetadataManager returns the manager; the topic is
// created on the first write.
func NewTopicBasedRemoteLogMetadataManager(cfg TopicBasedRemoteLogMetadataManagerConfig) *TopicBasedRemoteLogMetadataManager {
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 50
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &TopicBasedRemoteLogMetadataManager{
		cfg: cfg, log: cfg.Logger, store: remote.NewRemoteLogMetadataStore(),
		applied: make(map[int32]int64),
	}
}

// topic returns the metadata topic from the image, if it exists.
func (r *TopicBasedRemoteLogMetadataManager) topic() (*metadata.Topic, bool) {
	t, ok := r.cfg.Image().Topic(RemoteLogMetadataTopic)
	if !ok || len(t.Partitions) == 0 {
		return nil, false
	}
	return t, true
}

// AddRemoteLogSegmentMetadata records a copy that starts (Kafka's
// addRemoteLogSegmentMetadata): the state must be COPY_SEGMENT_STARTED.
func (r *TopicBasedRemoteLogMetadataManager) AddRemoteLogSegmentMetadata(ctx context.Context, m *remote.RemoteLogSegmentMetadata) error {
	if m.State != remote.CopySegmentStarted {
		return fmt.Errorf("%w: a new remote segment must be %s, not %s", kerr.InvalidRequest, remote.CopySegmentStarted, m.State)
	}
	return r.write(ctx, m.ID.TopicIdPartition, m)
}

// UpdateRemoteLogSegmentMetadata moves a remote segment to a new state
// (Kafka's updateRemoteLogSegmentMetadata): never back to
// COPY_SEGMENT_STARTED.
func (r *TopicBasedRemoteLogMetadataManager) UpdateRemoteLogSegmentMetadata(ctx context.Context, u remote.RemoteLogSegmentMetadataUpdate) error {
	if u.State == remote.CopySegmentStarted {
		return fmt.Errorf("%w: an update may not move a segment to %s", kerr.InvalidRequest, u.State)
	}
	return r.write(ctx, u.ID.TopicIdPartition, &u)
}

// PutRemotePartitionDeleteMetadata records a partition's removal from
// remote storage (Kafka's putRemotePartitionDeleteMetadata).
func (r *TopicBasedRemoteLogMetadataManager) PutRemotePartitionDeleteMetadata(ctx context.Context, d remote.RemotePartitionDeleteMetadata) error {
	return r.write(ctx, d.TopicIdPartition, &d)
}

// ListRemoteLogSegments returns tp's remote segments in every state, by
// start offset, from a store caught up with tp's metadata partition.
func (r *TopicBasedRemoteLogMetadataManager) ListRemoteLogSegments(tp remote.TopicIdPartition) ([]*remote.RemoteLogSegmentMetadata, error) {
	c, err := r.cache(tp)
	if c == nil {
		return nil, err
	}
	return c.ListRemoteLogSegments(), nil
}

// RemoteLogSegmentMetadata returns tp's finished remote segment holding
// offset within leaderEpoch's range in it (Kafka's
// remoteLogSegmentMetadata(topicIdPartition, epochForOffset, offset)),
// from a store caught up with tp's metadata partition; false if none.
func (r *TopicBasedRemoteLogMetadataManager) RemoteLogSegmentMetadata(tp remote.TopicIdPartition, leaderEpoch int32, offset int64) (*remote.RemoteLogSegmentMetadata, bool, error) {
	c, err := r.cache(tp)
	if c == nil {
		return nil, false, err
	}
	m, ok := c.RemoteLogSegmentMetadata(leaderEpoch, offset)
	return m, ok, nil
}

// cache returns tp's segments from a store caught up with its metadata
// partition; nil if it has none.
func (r *TopicBasedRemoteLogMetadataManager) cache(tp remote.TopicIdPartition) (*remote.RemoteLogMetadataCache, error) {
	t, ok := r.topic()
	if !ok {
		return nil, nil // nothing was ever written
	}
	if err := r.catchUp(t, remote.MetadataPartition(tp, len(t.Partitions))); err != nil {
		return nil, err
	}
	r.applyMu.Lock()
	store := r.store
	r.applyMu.Unlock()
	c, _ := store.Cache(tp)
	return c, nil
}

// PartitionsLedHere returns the user partitions with remote metadata
// whose metadata partition is led here, from a store caught up with them.
func (r *TopicBasedRemoteLogMetadataManager) PartitionsLedHere() []remote.TopicIdPartition {
	t, ok := r.topic()
	if !ok {
		return nil
	}
	led := map[int32]bool{}
	for i := range t.Partitions {
		mp := int32(i)
		if p := r.cfg.Replicas.Partition(TopicPartition{Topic: RemoteLogMetadataTopic, Partition: mp}); p != nil && p.IsLeader() && r.catchUp(t, mp) == nil {
			led[mp] = true
		}
	}
	if len(led) == 0 {
		return nil
	}
	r.applyMu.Lock()
	store := r.store
	r.applyMu.Unlock()
	var out []remote.TopicIdPartition
	for _, tp := range store.Partitions() {
		if led[remote.MetadataPartition(tp, len(t.Partitions))] {
			out = append(out, tp)
		}
	}
	return out
}

// write appends one event to tp's metadata partition and returns once it
// is committed and applied here.
func (r *TopicBasedRemoteLogMetadataManager) write(ctx context.Context, tp remote.TopicIdPartition, event any) error {
	value, err := remote.EncodeRemoteLogMetadata(event)
	if err != nil {
		return err
	}
	t, ok := r.topic()
	if !ok {
		if err := r.cfg.CreateTopic(ctx); err != nil {
			return fmt.Errorf("creating %s: %w", RemoteLogMetadataTopic, err)
		}
		if t, ok = r.topic(); !ok {
			return fmt.Errorf("%w: %s was created but this broker has not seen it yet", kerr.LeaderNotAvailable, RemoteLogMetadataTopic)
		}
	}
	mp := remote.MetadataPartition(tp, len(t.Partitions))
	b := log.NewBatchBuilder(0)
	b.Add(time.Now().UnixMilli(), nil, value)
	batch, err := b.Build(nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	offset, err := r.append(ctx, t, mp, batch)
	if err != nil {
		// The append may still commit: a reader applies it then, and
		// the caller's retry registers a new segment id (a copy is
		// never registered twice under one id).
		return fmt.Errorf("appending to %s-%d: %w", RemoteLogMetadataTopic, mp, err)
	}
	// Applied here once the local replica has it up to its high
	// watermark: at once on the leader, after a fetch on a follower.
	for {
		err := r.catchUp(t, mp)
		r.applyMu.Lock()
		applied := r.applied[mp]
		r.applyMu.Unlock()
		if err == nil && applied > offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: event at offset %d of %s-%d committed but not applied here (%v)", kerr.RequestTimedOut, offset, RemoteLogMetadataTopic, mp, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// append appends batch to metadata partition mp with acks=all: through
// the ReplicaManager when it is led here, else by a Produce to its leader.
func (r *TopicBasedRemoteLogMetadataManager) append(ctx context.Context, t *metadata.Topic, mp int32, batch []byte) (int64, error) {
	mtp := TopicPartition{Topic: RemoteLogMetadataTopic, Partition: mp}
	if p := r.cfg.Replicas.Partition(mtp); p == nil || !p.IsLeader() {
		leader := t.Partitions[mp].Leader
		if leader < 0 || leader == r.cfg.BrokerID || r.cfg.Produce == nil {
			return -1, fmt.Errorf("%w: %s is led by %d", kerr.NotLeaderForPartition, mtp, leader)
		}
		return r.cfg.Produce(ctx, leader, mtp, batch)
	}
	type result struct {
		offset int64
		err    error
	}
	ch := make(chan result, 1)
	r.cfg.Replicas.AppendAsCoordinator(mtp, batch, r.cfg.WriteTimeout, func(offset int64, err error) { ch <- result{offset, err} })
	select {
	case res := <-ch:
		return res.offset, res.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// CatchUpAll applies what every hosted metadata partition holds beyond
// what was applied (the background consumer: it keeps followers' stores
// current and rebuilds the store after a restart before the first read).
func (r *TopicBasedRemoteLogMetadataManager) CatchUpAll() {
	t, ok := r.topic()
	if !ok {
		return
	}
	for i := range t.Partitions {
		if r.cfg.Replicas.Partition(TopicPartition{Topic: RemoteLogMetadataTopic, Partition: int32(i)}) == nil {
			continue
		}
		if err := r.catchUp(t, int32(i)); err != nil {
			r.log.Warn("applying remote log metadata failed", "partition", i, "err", err)
		}
	}
}

// catchUp applies metadata partition mp's committed events beyond those
// applied. The local replica, leader or follower, is read up to its high
// watermark.
func (r *TopicBasedRemoteLogMetadataManager) catchUp(t *metadata.Topic, mp int32) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	if r.topicID != t.ID {
		// A topic created anew: its events start over (a store built
		// from the old one's would name segments that do not exist).
		if r.topicID != ([16]byte{}) {
			r.store = remote.NewRemoteLogMetadataStore()
		}
		r.topicID, r.applied = t.ID, make(map[int32]int64)
	}
	mtp := TopicPartition{Topic: RemoteLogMetadataTopic, Partition: mp}
	p := r.cfg.Replicas.Partition(mtp)
	if p == nil && r.cfg.Fetch != nil {
		return r.catchUpFromLeader(t, mp)
	}
	if p == nil {
		return fmt.Errorf("%w: %s is not hosted on broker %d", kerr.ReplicaNotAvailable, mtp, r.cfg.BrokerID)
	}
	if !p.IsLeader() && p.followerLag.Load() < 0 {
		// Neither led here nor fetched from its leader yet: its high
		// watermark may be one from before a restart, below events
		// already committed, and a store built from it would miss
		// them (a leader would then copy a segment a second time).
		return fmt.Errorf("%w: %s is not caught up on broker %d yet", kerr.ReplicaNotAvailable, mtp, r.cfg.BrokerID)
	}
	l := p.Log
	var scratch []byte
	for {
		next := max(r.applied[mp], l.LogStartOffset())
		hw := l.HighWatermark()
		if next >= hw {
			r.applied[mp] = next
			return nil
		}
		data, err := l.Read(next, 1<<20, hw, true)
		if err != nil {
			return fmt.Errorf("reading %s at offset %d: %w", mtp, next, err)
		}
		buf, err := data.Records.ReadInto(nil)
		if err != nil {
			return fmt.Errorf("reading %s at offset %d: %w", mtp, next, err)
		}
		if len(buf) == 0 {
			return fmt.Errorf("reading %s at offset %d below the high watermark %d returned nothing", mtp, next, hw)
		}
		if scratch, next, err = r.applyBatches(mtp, buf, next, scratch); err != nil {
			return err
		}
		r.applied[mp] = next
	}
}

// catchUpFromLeader applies metadata partition mp's committed events
// beyond those applied, fetched from its leader: a broker with no replica
// of it (more brokers than the topic's replication factor) reads it as
// Kafka's consumer does. applyMu held.
func (r *TopicBasedRemoteLogMetadataManager) catchUpFromLeader(t *metadata.Topic, mp int32) error {
	mtp := TopicPartition{Topic: RemoteLogMetadataTopic, Partition: mp}
	leader := t.Partitions[mp].Leader
	if leader < 0 {
		return fmt.Errorf("%w: %s has no leader", kerr.LeaderNotAvailable, mtp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.WriteTimeout)
	defer cancel()
	var scratch []byte
	for {
		next := r.applied[mp]
		recs, logStart, hw, err := r.cfg.Fetch(ctx, leader, mtp, next)
		if errors.Is(err, kerr.OffsetOutOfRange) && logStart > next {
			r.applied[mp] = logStart
			continue
		}
		if err != nil {
			return fmt.Errorf("fetching %s at offset %d from broker %d: %w", mtp, next, leader, err)
		}
		if next < logStart {
			r.applied[mp] = logStart
			continue
		}
		recs = wholeBatches(recs)
		if len(recs) == 0 {
			if next >= hw {
				return nil
			}
			return fmt.Errorf("fetching %s at offset %d below the high watermark %d from broker %d returned no whole batch", mtp, next, hw, leader)
		}
		if scratch, next, err = r.applyBatches(mtp, recs, next, scratch); err != nil {
			return err
		}
		r.applied[mp] = next
		if next >= hw {
			return nil
		}
	}
}

// applyBatches applies the records of buf (whole batches) at or above
// next and returns the offset after the last. An event that does not
// decode or apply is logged and skipped, as Kafka's consumer does: one
// bad event must not stop the partition's others.
func (r *TopicBasedRemoteLogMetadataManager) applyBatches(mtp TopicPartition, buf []byte, next int64, scratch []byte) ([]byte, int64, error) {
	for len(buf) > 0 {
		h, err := log.ParseBatchHeader(buf)
		if err != nil {
			return scratch, next, fmt.Errorf("%s at offset %d: %w", mtp, next, err)
		}
		size := h.TotalSize()
		if size > len(buf) {
			return scratch, next, fmt.Errorf("%s: batch at offset %d is truncated", mtp, h.BaseOffset)
		}
		batch := buf[:size]
		buf = buf[size:]
		if h.NextOffset() <= next || h.IsControl() {
			next = max(next, h.NextOffset())
			continue
		}
		body := batch[log.BatchHeaderSize:]
		if codec := h.Codec(); codec != log.CodecNone {
			if scratch, err = log.Decompress(scratch[:0], codec, body, 64<<20); err != nil {
				return scratch, next, fmt.Errorf("%s: batch at offset %d: %w", mtp, h.BaseOffset, err)
			}
			body = scratch
		}
		it := log.NewRecordIter(body)
		var rec log.Record
		for {
			ok, err := it.Next(&rec)
			if err != nil {
				return scratch, next, fmt.Errorf("%s: batch at offset %d: %w", mtp, h.BaseOffset, err)
			}
			if !ok {
				break
			}
			offset := h.BaseOffset + int64(rec.OffsetDelta)
			if offset < next {
				continue
			}
			r.apply(mtp, offset, rec.Value)
		}
		next = h.NextOffset()
	}
	return scratch, next, nil
}

func (r *TopicBasedRemoteLogMetadataManager) apply(mtp TopicPartition, offset int64, value []byte) {
	event, err := remote.DecodeRemoteLogMetadata(value)
	if err == nil {
		err = r.store.Apply(event)
	}
	if err != nil && !errors.Is(err, remote.ErrCorruptRemoteLogMetadata) {
		r.log.Warn("skipping a remote log metadata event that does not apply", "partition", mtp.String(), "offset", offset, "err", err)
	} else if err != nil {
		r.log.Error("skipping a corrupt remote log metadata event", "partition", mtp.String(), "offset", offset, "err", err)
	}
}
