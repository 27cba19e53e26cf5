package share

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/coordinator/group"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Options wire a Service.
type Options struct {
	Config Config
	// Log appends to and reads __share_group_state (replica.Manager).
	Log runtime.PartitionLog
	// NumPartitions is the number of partitions of __share_group_state:
	// the topic's if it exists, else
	// share.coordinator.state.topic.num.partitions.
	NumPartitions func() int32
	// Topics returns the number of partitions of a topic by id, and
	// whether it exists (the shard's metadata check); nil: no check.
	Topics func(topicID [16]byte) (partitions int32, ok bool)
	// DeleteRecords deletes a partition's records before an offset (the
	// prune job, prune.go); nil: no pruning.
	DeleteRecords func(partition int32, before int64) error
	Now           func() time.Time
	Logger        *slog.Logger
	Registerer    prometheus.Registerer // nil: no metrics
}

// Service is Kafka's ShareCoordinatorService: it routes each
// share-partition key to the shard of its __share_group_state partition
// and runs the operation there. Safe for concurrent use; done callbacks
// run on shard goroutines and must not block.
type Service struct {
	cfg      Config
	opts     Options
	log      *slog.Logger
	rt       *runtime.Runtime[*Shard]
	metrics  *runtimeMetrics
	routines routine.Group // the prune job
}

// NewService starts the coordinator with no shards: OnElection loads them.
func NewService(opts Options) *Service {
	cfg := opts.Config
	cfg.withDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{cfg: cfg, opts: opts, log: opts.Logger.With("component", "share-coordinator")}
	s.metrics = newRuntimeMetrics(opts.Registerer)
	rcfg := runtime.Config[*Shard]{
		Topic: metadata.ShareGroupStateTopic,
		Log:   opts.Log,
		NewShard: func(ctx runtime.ShardContext) *Shard {
			return newShard(cfg, opts.Topics, ctx)
		},
		CommitTimeout:   cfg.WriteTimeout,
		LoadBufferBytes: cfg.LoadBufferBytes,
		Now:             opts.Now,
		Logger:          s.log,
	}
	if s.metrics != nil {
		rcfg.Metrics = s.metrics
	}
	s.rt = runtime.New(rcfg)
	s.startPruning()
	return s
}

// Close unloads every shard; operations in flight fail with
// NOT_COORDINATOR. Idempotent.
func (s *Service) Close() {
	s.routines.StopAndWait()
	s.rt.Close()
	s.metrics.unregister()
}

// OnElection makes this broker the share coordinator of a partition of
// __share_group_state at a leader epoch (Kafka's onElection).
func (s *Service) OnElection(partition, epoch int32) {
	s.log.Debug("elected as the share coordinator of a partition", "partition", partition, "epoch", epoch)
	s.rt.OnElection(partition, epoch)
}

// OnResignation unloads a partition (Kafka's onResignation).
func (s *Service) OnResignation(partition, epoch int32) {
	s.log.Debug("resigned as the share coordinator of a partition", "partition", partition, "epoch", epoch)
	s.rt.OnResignation(partition, epoch)
}

// PartitionFor is the partition of __share_group_state that holds a key:
// abs(javaHashCode("groupId:topicId:partition")) % partitions, as Kafka's
// ShareCoordinatorService.partitionFor computes it.
func (s *Service) PartitionFor(k Key) int32 {
	return PartitionFor(k.CoordinatorKey(), s.opts.NumPartitions())
}

// PartitionFor is the partition of __share_group_state of a coordinator
// key (the string FindCoordinator key type 2 names): Kafka's
// Utils.abs(key.hashCode()) % partitions.
func PartitionFor(coordinatorKey string, partitions int32) int32 {
	return group.PartitionFor(coordinatorKey, partitions)
}

// InitializeState is InitializeShareGroupState for one key.
func (s *Service) InitializeState(k Key, stateEpoch int32, startOffset int64, done func(error)) {
	runtime.Write(s.rt, "initialize-share-group-state", s.PartitionFor(k), func(sh *Shard) (runtime.Result[Result], error) {
		return sh.initializeState(k, stateEpoch, startOffset)
	}, func(r Result, err error) { done(firstErr(r.Err, operationError(err))) })
}

// ReadState is ReadShareGroupState for one key: the merged state, with
// leaderEpoch recorded if it is newer (a write, as in Kafka, for the
// consistency of what it records).
func (s *Service) ReadState(k Key, leaderEpoch int32, done func(PartitionState, error)) {
	runtime.Write(s.rt, "read-update-leader-epoch-state", s.PartitionFor(k), func(sh *Shard) (runtime.Result[Result], error) {
		return sh.readState(k, leaderEpoch)
	}, func(r Result, err error) {
		if err = firstErr(r.Err, operationError(err)); err != nil {
			done(PartitionState{}, err)
			return
		}
		done(r.State, nil)
	})
}

// WriteState is WriteShareGroupState for one key: st.Batches are merged
// into the state; a ShareUpdate is written, or a ShareSnapshot every
// SnapshotUpdateRecordsPerSnapshot updates.
func (s *Service) WriteState(k Key, st PartitionState, done func(error)) {
	runtime.Write(s.rt, "write-share-group-state", s.PartitionFor(k), func(sh *Shard) (runtime.Result[Result], error) {
		return sh.writeState(k, st)
	}, func(r Result, err error) { done(firstErr(r.Err, operationError(err))) })
}

// DeleteState is DeleteShareGroupState for one key.
func (s *Service) DeleteState(k Key, done func(error)) {
	runtime.Write(s.rt, "delete-share-group-state", s.PartitionFor(k), func(sh *Shard) (runtime.Result[Result], error) {
		return sh.deleteState(k)
	}, func(r Result, err error) { done(firstErr(r.Err, operationError(err))) })
}

// ReadStateSummary is ReadShareGroupStateSummary for one key. It runs as
// a read: it records nothing, and answers once what it saw is committed.
func (s *Service) ReadStateSummary(k Key, done func(PartitionState, error)) {
	runtime.Read(s.rt, "read-share-group-state-summary", s.PartitionFor(k), func(sh *Shard) (Result, error) {
		return sh.readStateSummary(k)
	}, func(r Result, err error) {
		if err = firstErr(r.Err, operationError(err)); err != nil {
			done(PartitionState{}, err)
			return
		}
		done(r.State, nil)
	})
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// operationError maps a failed write to what the caller gets (Kafka's
// CoordinatorOperationExceptionHelper.handleOperationException): the
// log's errors become coordinator errors the persister retries on.
func operationError(err error) error {
	if err == nil {
		return nil
	}
	switch apierr.CodeOf(err) {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return apierr.Errorf(kerr.CoordinatorNotAvailable, "Writing to __share_group_state failed: %v", err)
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return apierr.Errorf(kerr.NotCoordinator, "Writing to __share_group_state failed: %v", err)
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return apierr.Errorf(kerr.UnknownServerError, "Writing to __share_group_state failed: %v", err)
	}
	return err
}

// OnTopicsDeleted forgets the share-partition states of deleted topics:
// every shard hosted here writes a tombstone for each key of those topics
// (Kafka's onTopicsDeleted and maybeCleanupShareState). A shard that is
// loading does it once loaded.
func (s *Service) OnTopicsDeleted(topicIDs [][16]byte) {
	if len(topicIDs) == 0 {
		return
	}
	deleted := make(map[[16]byte]bool, len(topicIDs))
	for _, id := range topicIDs {
		deleted[id] = true
	}
	runtime.WriteAllWhenLoaded(s.rt, "on-topics-deleted", func(sh *Shard) (runtime.Result[int], error) {
		var res runtime.Result[int]
		for _, k := range sh.sortedKeys() {
			if deleted[k.TopicID] {
				res.Records = append(res.Records, tombstone(k))
			}
		}
		res.Response = len(res.Records)
		return res, nil
	}, func(rs []runtime.PartitionResult[int]) {
		for _, r := range rs {
			switch {
			case r.Err != nil:
				s.log.Warn("deleting the share-partition states of deleted topics failed", "partition", r.Partition, "err", r.Err)
			case r.Response > 0:
				s.log.Info("deleted the share-partition states of deleted topics", "partition", r.Partition, "keys", r.Response)
			}
		}
	})
}
