package share

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Shard is the share-partition state of one partition of
// __share_group_state (Kafka's ShareCoordinatorShard): every share-partition
// key that hashes to the partition. Its memory changes only in Replay, so a
// write's records are applied the same way whether the shard is serving
// or loading. Used only from its runtime goroutine.
type Shard struct {
	cfg       Config
	timer     runtime.Timer
	partition int32
	topics    func(topicID [16]byte) (partitions int32, ok bool)
	now       func() time.Time
	log       *slog.Logger

	// states is Kafka's shareStateMap: the merged state of every key.
	states map[Key]*shareValue
	// leaderEpochs and stateEpochs are the highest epochs seen for a key
	// (leaderEpochMap, stateEpochMap): a request with an older one is
	// fenced.
	leaderEpochs map[Key]int32
	stateEpochs  map[Key]int32
	// updates counts the ShareUpdate records since a key's last snapshot
	// (snapshotUpdateCount).
	updates map[Key]int
	// snapshotOffsets is the offset of every live key's latest snapshot
	// (Kafka's ShareCoordinatorOffsetsManager): the records before the
	// least of them are needed by no key.
	snapshotOffsets map[Key]int64
}

func newShard(cfg Config, topics func([16]byte) (int32, bool), ctx runtime.ShardContext) *Shard {
	return &Shard{
		cfg: cfg, timer: ctx.Timer, partition: ctx.TopicPartition.Partition, topics: topics, now: ctx.Now, log: ctx.Logger,
		states: map[Key]*shareValue{}, leaderEpochs: map[Key]int32{}, stateEpochs: map[Key]int32{}, updates: map[Key]int{},
		snapshotOffsets: map[Key]int64{},
	}
}

// Replay applies one record of __share_group_state (Kafka's
// ShareCoordinatorShard.replay): a snapshot replaces the key's state, an
// update is merged into it, a tombstone forgets the key. Records of other
// types are ignored, as Kafka ignores them.
func (s *Shard) Replay(offset int64, _ int64, _ int16, key, value []byte) error {
	typ, k, ok, err := parseKey(key)
	if err != nil {
		return err
	}
	if !ok {
		s.log.Warn("unknown record type in __share_group_state; ignoring it", "type", typ)
		return nil
	}
	switch {
	case typ == typeShareSnapshot && value == nil:
		delete(s.states, k)
		delete(s.leaderEpochs, k)
		delete(s.stateEpochs, k)
		delete(s.updates, k)
		delete(s.snapshotOffsets, k)
	case typ == typeShareSnapshot:
		v, err := parseSnapshotValue(value)
		if err != nil {
			return err
		}
		s.replaySnapshot(k, v)
		s.snapshotOffsets[k] = offset
	case value == nil:
		// A tombstone of an update key: Kafka never writes one.
	default:
		v, err := parseUpdateValue(value)
		if err != nil {
			return err
		}
		s.replayUpdate(k, v)
	}
	return nil
}

func (s *Shard) replaySnapshot(k Key, v shareValue) {
	s.raiseLeaderEpoch(k, v.LeaderEpoch)
	if old, ok := s.stateEpochs[k]; !ok || old < v.StateEpoch {
		s.stateEpochs[k] = v.StateEpoch
	}
	s.states[k] = &v
	if n, ok := s.updates[k]; ok && n >= s.cfg.SnapshotUpdateRecordsPerSnapshot {
		s.updates[k] = 0
	}
}

func (s *Shard) replayUpdate(k Key, v shareValue) {
	s.raiseLeaderEpoch(k, v.LeaderEpoch)
	if cur := s.states[k]; cur == nil {
		v.StateEpoch = DefaultStateEpoch // an update carries none
		s.states[k] = &v
	} else {
		s.states[k] = mergeUpdate(cur, v)
	}
	if n, ok := s.updates[k]; ok {
		s.updates[k] = n + 1
	} else {
		s.updates[k] = 0
	}
}

func (s *Shard) raiseLeaderEpoch(k Key, epoch int32) {
	if old, ok := s.leaderEpochs[k]; !ok || old < epoch {
		s.leaderEpochs[k] = epoch
	}
}

// mergeUpdate is Kafka's ShareCoordinatorShard.merge: the update's batches
// combined into the state's, its start offset and leader epoch where set.
// The update's delivery-complete count is the share-partition's latest.
func mergeUpdate(cur *shareValue, u shareValue) *shareValue {
	start := cur.StartOffset
	if u.StartOffset != -1 {
		start = u.StartOffset
	}
	leader := cur.LeaderEpoch
	if u.LeaderEpoch != -1 {
		leader = u.LeaderEpoch
	}
	return &shareValue{
		SnapshotEpoch: cur.SnapshotEpoch, StateEpoch: cur.StateEpoch, LeaderEpoch: leader, StartOffset: start,
		DeliveryCompleteCount: u.DeliveryCompleteCount,
		CreateTimestamp:       cur.CreateTimestamp, WriteTimestamp: cur.WriteTimestamp,
		Batches: combineStateBatches(cur.Batches, u.Batches, start),
	}
}

// lastRedundantOffset is the offset below which the partition holds
// nothing any key needs: the least offset of the keys' latest snapshots
// (Kafka's ShareCoordinatorOffsetsManager.lastRedundantOffset). A deleted
// key needs nothing: every record of it, its tombstone included, only
// undoes what came before. ok is false while there is nothing to prune.
func (s *Shard) lastRedundantOffset() (offset int64, ok bool) {
	offset = -1
	for _, o := range s.snapshotOffsets {
		if offset < 0 || o < offset {
			offset = o
		}
	}
	return offset, offset > 0
}

// ReplayEndTransactionMarker: __share_group_state has no transactions.
func (s *Shard) ReplayEndTransactionMarker(int64, int16, bool) error { return nil }

// OnLoaded starts the snapshots of cold share-partitions (cold.go).
func (s *Shard) OnLoaded() {
	s.log.Debug("loaded share-partition states", "keys", len(s.states))
	s.scheduleColdSnapshots()
}

// OnUnloaded: nothing is held for anyone.
func (s *Shard) OnUnloaded() {}

// Errors of the shard's checks, with Kafka's messages. They are answers
// for one share-partition, not failures of the operation.
func errNegativePartition() error {
	return apierr.New(kerr.InvalidRequest, "The partition id cannot be a negative number.")
}

func errWriteUninitialized() error {
	return apierr.New(kerr.InvalidRequest, "Write operation on uninitialized share partition not allowed.")
}

func errReadUninitialized() error {
	return apierr.New(kerr.InvalidRequest, "Read operation on uninitialized share partition not allowed.")
}

func errFencedLeaderEpoch(k Key, have, got int32) error {
	return apierr.Errorf(kerr.FencedLeaderEpoch, "The leader epoch %d of %s is older than the share coordinator's %d.", got, k, have)
}

func errFencedStateEpoch(k Key, have, got int32) error {
	return apierr.Errorf(kerr.FencedStateEpoch, "The state epoch %d of %s is older than the share coordinator's %d.", got, k, have)
}

func errUnknownTopicPartition(k Key) error {
	return apierr.Errorf(kerr.UnknownTopicOrPartition, "Topic %s partition %d is not in the metadata.", k.TopicID, k.Partition)
}

// checkTopic is the shard's metadata check: the key's topic and partition
// exist (Kafka's shard answers UNKNOWN_TOPIC_OR_PARTITION otherwise).
func (s *Shard) checkTopic(k Key) error {
	if s.topics == nil {
		return nil
	}
	if n, ok := s.topics(k.TopicID); !ok || k.Partition >= n {
		return errUnknownTopicPartition(k)
	}
	return nil
}

// stateRecord is Kafka's generateShareStateRecord: a ShareSnapshot once
// the key has had share.coordinator.snapshot.update.records.per.snapshot
// updates since its last snapshot, else a ShareUpdate. A snapshot holds
// the whole merged state at the next snapshot epoch; an update only the
// request's batches, merged among themselves. Writes keep the recorded
// leader epoch; a read that names a newer one records it
// (updateLeaderEpoch).
func (s *Shard) stateRecord(k Key, st PartitionState, updateLeaderEpoch bool) runtime.Record {
	cur := s.states[k]
	leader := cur.LeaderEpoch
	if updateLeaderEpoch && st.LeaderEpoch != NoLeaderEpoch {
		leader = st.LeaderEpoch
	}
	if s.updates[k] >= s.cfg.SnapshotUpdateRecordsPerSnapshot {
		start := st.StartOffset
		if start == -1 {
			start = cur.StartOffset
		}
		now := s.now().UnixMilli()
		return snapshotRecord(k, shareValue{
			SnapshotEpoch: cur.SnapshotEpoch + 1, StateEpoch: cur.StateEpoch, LeaderEpoch: leader, StartOffset: start,
			DeliveryCompleteCount: st.DeliveryCompleteCount, CreateTimestamp: now, WriteTimestamp: now,
			Batches: combineStateBatches(cur.Batches, st.Batches, start),
		})
	}
	return updateRecord(k, shareValue{
		SnapshotEpoch: cur.SnapshotEpoch, LeaderEpoch: leader, StartOffset: st.StartOffset,
		DeliveryCompleteCount: st.DeliveryCompleteCount,
		Batches:               combineStateBatches(nil, st.Batches, st.StartOffset),
	})
}

// Result is one share-partition's answer: Err is the shard's refusal
// (INVALID_REQUEST, FENCED_*_EPOCH, UNKNOWN_TOPIC_OR_PARTITION), State
// what a read answers.
type Result struct {
	State PartitionState
	Err   error
}

func refused(err error) (runtime.Result[Result], error) {
	return runtime.Result[Result]{Response: Result{Err: err}}, nil
}

// writeState is the shard's part of WriteShareGroupState (Kafka's
// writeState with maybeGetWriteStateError).
func (s *Shard) writeState(k Key, st PartitionState) (runtime.Result[Result], error) {
	if k.Partition < 0 {
		return refused(errNegativePartition())
	}
	if s.states[k] == nil {
		return refused(errWriteUninitialized())
	}
	if have, ok := s.leaderEpochs[k]; ok && st.LeaderEpoch != NoLeaderEpoch && have > st.LeaderEpoch {
		return refused(errFencedLeaderEpoch(k, have, st.LeaderEpoch))
	}
	if have, ok := s.stateEpochs[k]; ok && st.StateEpoch != NoStateEpoch && have > st.StateEpoch {
		return refused(errFencedStateEpoch(k, have, st.StateEpoch))
	}
	if err := s.checkTopic(k); err != nil {
		return refused(err)
	}
	return runtime.Result[Result]{Records: []runtime.Record{s.stateRecord(k, st, false)}}, nil
}

// readState is the shard's part of ReadShareGroupState (Kafka's
// readStateAndMaybeUpdateLeaderEpoch, a write operation): the merged
// state, and a record of the leader epoch when the request names a newer
// one than recorded.
func (s *Shard) readState(k Key, leaderEpoch int32) (runtime.Result[Result], error) {
	if k.Partition < 0 {
		return refused(errNegativePartition())
	}
	cur := s.states[k]
	if cur == nil {
		return refused(errReadUninitialized())
	}
	// Kafka fences even a read naming no leader epoch (-1) once one is
	// recorded above it.
	if have, ok := s.leaderEpochs[k]; ok && have > leaderEpoch {
		return refused(errFencedLeaderEpoch(k, have, leaderEpoch))
	}
	if err := s.checkTopic(k); err != nil {
		return refused(err)
	}
	res := runtime.Result[Result]{Response: Result{State: PartitionState{
		StateEpoch: cur.StateEpoch, LeaderEpoch: cur.LeaderEpoch, StartOffset: cur.StartOffset,
		DeliveryCompleteCount: cur.DeliveryCompleteCount, Batches: append([]StateBatch(nil), cur.Batches...),
	}}}
	if have, ok := s.leaderEpochs[k]; leaderEpoch == NoLeaderEpoch || (ok && have == leaderEpoch) {
		return res, nil
	}
	s.log.Info("recording a newer leader epoch of a share-partition", "key", k, "leader_epoch", leaderEpoch)
	res.Response.State.LeaderEpoch = leaderEpoch
	res.Records = []runtime.Record{s.stateRecord(k, PartitionState{
		StateEpoch: cur.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: cur.StartOffset,
		DeliveryCompleteCount: cur.DeliveryCompleteCount,
	}, true)}
	return res, nil
}

// readStateSummary is ReadShareGroupStateSummary (Kafka's
// readStateSummary): the start offset and epochs without batches; a key
// never initialized answers -1 and epochs 0, no error.
func (s *Shard) readStateSummary(k Key) (Result, error) {
	if k.Partition < 0 {
		return Result{Err: errNegativePartition()}, nil
	}
	if err := s.checkTopic(k); err != nil {
		return Result{Err: err}, nil
	}
	cur := s.states[k]
	if cur == nil {
		return Result{State: PartitionState{StateEpoch: DefaultStateEpoch, LeaderEpoch: DefaultLeaderEpoch,
			StartOffset: UninitializedStartOffset, DeliveryCompleteCount: UninitializedDeliveryCompleteCount}}, nil
	}
	return Result{State: PartitionState{StateEpoch: cur.StateEpoch, LeaderEpoch: cur.LeaderEpoch,
		StartOffset: cur.StartOffset, DeliveryCompleteCount: cur.DeliveryCompleteCount}}, nil
}

// deleteState is DeleteShareGroupState (Kafka's deleteState): a tombstone
// for a key that has state, nothing for one that has none.
func (s *Shard) deleteState(k Key) (runtime.Result[Result], error) {
	if k.Partition < 0 {
		return refused(errNegativePartition())
	}
	if err := s.checkTopic(k); err != nil {
		return refused(err)
	}
	if s.states[k] == nil {
		s.log.Debug("deleting a share-partition that has no state", "key", k)
		return runtime.Result[Result]{}, nil
	}
	return runtime.Result[Result]{Records: []runtime.Record{tombstone(k)}}, nil
}

// initializeState is InitializeShareGroupState (Kafka's initializeState):
// a fresh snapshot at the next snapshot epoch with the request's state
// epoch and start offset, leader epoch 0 and no batches; the
// delivery-complete count starts at 0 once a start offset is set (lag
// can be counted from there), -1 while it is not.
func (s *Shard) initializeState(k Key, stateEpoch int32, startOffset int64) (runtime.Result[Result], error) {
	if k.Partition < 0 {
		return refused(errNegativePartition())
	}
	if have, ok := s.stateEpochs[k]; ok && stateEpoch != NoStateEpoch && have > stateEpoch {
		return refused(errFencedStateEpoch(k, have, stateEpoch))
	}
	if err := s.checkTopic(k); err != nil {
		return refused(err)
	}
	snapshotEpoch := int32(0)
	if cur := s.states[k]; cur != nil {
		snapshotEpoch = cur.SnapshotEpoch + 1
	}
	dcc := int32(0)
	if startOffset == UninitializedStartOffset {
		dcc = UninitializedDeliveryCompleteCount
	}
	now := s.now().UnixMilli()
	return runtime.Result[Result]{Records: []runtime.Record{snapshotRecord(k, shareValue{
		SnapshotEpoch: snapshotEpoch, StateEpoch: stateEpoch, LeaderEpoch: 0, StartOffset: startOffset,
		DeliveryCompleteCount: dcc, CreateTimestamp: now, WriteTimestamp: now,
	})}}, nil
}
