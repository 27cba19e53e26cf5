package txn

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/group"
	"github.com/moldau/moldau/coordinator/runtime"
	"github.com/moldau/moldau/log"
)

// Options wire a Service.
type Options struct {
	Config Config
	// Log appends to and reads __transaction_state (replica.Manager).
	Log runtime.PartitionLog
	// NumPartitions is the number of partitions of __transaction_state:
	// the topic's if it exists, else transaction.state.log.num.partitions.
	NumPartitions func() int32
	// ProducerIDs hands out producer ids.
	ProducerIDs *ProducerIDManager
	// Markers sends WriteTxnMarkers requests to partition leaders.
	Markers MarkerSender
	// Leader returns the leader of a partition (-1 if it has none) and
	// whether the partition exists.
	Leader func(tp log.TopicPartition) (leader int32, exists bool)
	// GroupPartition is the partition of __consumer_offsets that holds a
	// group (AddOffsetsToTxn adds it to the transaction).
	GroupPartition func(group string) int32
	// TransactionVersion is the cluster's finalized transaction.version.
	TransactionVersion func() int16
	Now                func() time.Time
	Logger             *slog.Logger
	Registerer         prometheus.Registerer // nil: no metrics
}

// Service is Kafka's TransactionCoordinator: it routes each transactional
// id to the shard of its __transaction_state partition, runs the
// operation there, and sends transaction markers through its marker
// channel. Safe for concurrent use; callbacks run on shard goroutines and
// must not block.
type Service struct {
	cfg     Config
	opts    Options
	log     *slog.Logger
	rt      *runtime.Runtime[*Shard]
	markers *markerChannel
	metrics *Metrics
	gens    atomic.Uint64
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
	if opts.TransactionVersion == nil {
		opts.TransactionVersion = func() int16 { return 0 }
	}
	s := &Service{cfg: cfg, opts: opts, log: opts.Logger.With("component", "transaction-coordinator")}
	s.metrics = newMetrics(opts.Registerer)
	s.markers = newMarkerChannel(s)
	s.rt = runtime.New(runtime.Config[*Shard]{
		Topic: metadata.TransactionStateTopic,
		Log:   opts.Log,
		NewShard: func(ctx runtime.ShardContext) *Shard {
			return newShard(s, ctx, s.gens.Add(1))
		},
		CommitTimeout:   cfg.CommitTimeout,
		LoadBufferBytes: cfg.LoadBufferBytes,
		Now:             opts.Now,
		Logger:          s.log,
		Metrics:         s.metrics.runtimeMetrics(),
	})
	s.metrics.collect = s.collectSnapshot
	s.metrics.unknownDestination = s.markers.unknownDestinationSize
	return s
}

// Close stops the coordinator: shards are unloaded, the marker channel
// stops, in-flight sends are abandoned (loading completes them).
func (s *Service) Close() {
	s.rt.Close()
	s.markers.close()
	s.metrics.unregister()
}

// OnElection makes this broker the coordinator of a partition of
// __transaction_state at a leader epoch, the coordinator epoch of its
// markers (Kafka's onElection).
func (s *Service) OnElection(partition, epoch int32) {
	s.log.Debug("elected as the transaction coordinator of a partition", "partition", partition, "epoch", epoch)
	s.rt.OnElection(partition, epoch)
}

// OnResignation unloads a partition (Kafka's onResignation).
func (s *Service) OnResignation(partition, epoch int32) {
	s.log.Debug("resigned as the transaction coordinator of a partition", "partition", partition, "epoch", epoch)
	s.rt.OnResignation(partition, epoch)
}

// PartitionFor is the partition of __transaction_state that holds a
// transactional id: abs(javaHashCode(id)) % partitions, as Kafka
// computes it.
func (s *Service) PartitionFor(transactionalID string) int32 {
	return group.PartitionFor(transactionalID, s.opts.NumPartitions())
}

func (s *Service) transactionVersion() int16 { return s.opts.TransactionVersion() }

// markersDone reports markers written (or no longer needed) to the shard
// that sent them, which completes the transaction once none is left.
func (s *Service) markersDone(txnPartition int32, gen uint64, id string, pid int64, epoch int16, written []log.TopicPartition) {
	runtime.Write(s.rt, "txn-markers-written", txnPartition, func(sh *Shard) (runtime.Result[runtime.Void], error) {
		return sh.markersWritten(gen, id, pid, epoch, written)
	}, func(_ runtime.Void, err error) {
		if err != nil {
			// NOT_COORDINATOR or a reload: whoever loads the
			// partition completes the transaction.
			s.log.Info("completing a transaction failed; the partition's next load completes it", "transactional_id", id, "err", err)
		}
	})
}

// ProducerIDAndEpoch is what a producer names in InitProducerId v3+ to
// continue after an error (KIP-360).
type ProducerIDAndEpoch struct {
	ProducerID int64
	Epoch      int16
}

// InitProducerIDResult is InitProducerId's answer.
type InitProducerIDResult struct {
	ProducerID    int64
	ProducerEpoch int16
	Err           error
}

// InitProducerID is Kafka's handleInitProducerId. Without a transactional
// id a fresh producer id with epoch 0 is handed out (waiting for a block
// from the controller if needed, within ctx); with one, the id's producer
// is initialized or its epoch bumped, fencing any older producer: an open
// transaction is aborted first and CONCURRENT_TRANSACTIONS asks the
// client to retry. producerID and producerEpoch are the request's (v3+,
// KIP-360): both -1, or both set to continue after an error. version is
// the request's: below 4 PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH,
// as KafkaApis does for older clients.
func (s *Service) InitProducerID(ctx context.Context, transactionalID *string, timeoutMs int32, producerID int64, producerEpoch int16, version int16, done func(InitProducerIDResult)) {
	fail := func(err error) {
		if version < 4 && apierr.CodeOf(err) == kerr.ProducerFenced {
			err = apierr.Errorf(kerr.InvalidProducerEpoch, "%v", err)
		}
		done(InitProducerIDResult{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch, Err: err})
	}
	var expected *ProducerIDAndEpoch
	switch {
	case producerID == noProducerID && producerEpoch == noProducerEpoch:
	case producerID == noProducerID || producerEpoch == noProducerEpoch:
		fail(errInvalidRequest("The producer id and epoch must both be set or both be -1."))
		return
	default:
		expected = &ProducerIDAndEpoch{ProducerID: producerID, Epoch: producerEpoch}
	}
	if transactionalID == nil {
		id, err := s.opts.ProducerIDs.Generate(ctx)
		if err != nil {
			fail(err)
			return
		}
		done(InitProducerIDResult{ProducerID: id, ProducerEpoch: 0})
		return
	}
	id := *transactionalID
	switch {
	case id == "":
		fail(errInvalidRequest("The transactional id is empty."))
		return
	case !s.cfg.validTimeout(timeoutMs):
		fail(apierr.Errorf(kerr.InvalidTransactionTimeout, "The transaction timeout %d ms is not in (0, transaction.max.timeout.ms %d].", timeoutMs, s.cfg.MaxTimeout.Milliseconds()))
		return
	}
	// A new transactional id, or exhausted epochs, take an id on the
	// shard without waiting: have one at hand.
	_ = s.opts.ProducerIDs.WaitAvailable(ctx)
	runtime.Write(s.rt, "init-producer-id", s.PartitionFor(id), func(sh *Shard) (runtime.Result[InitProducerIDResult], error) {
		return sh.initProducerID(id, timeoutMs, expected)
	}, func(r InitProducerIDResult, err error) {
		if err == nil {
			err = r.Err
		}
		if err != nil {
			fail(operationError(err))
			return
		}
		s.log.Info("initialized transactional id", "transactional_id", id, "producer_id", r.ProducerID, "producer_epoch", r.ProducerEpoch)
		done(r)
	})
}

// initProducerID is the shard's part of InitProducerId (Kafka's
// prepareInitProducerIdTransit).
func (s *Shard) initProducerID(id string, timeoutMs int32, expected *ProducerIDAndEpoch) (runtime.Result[InitProducerIDResult], error) {
	var res runtime.Result[InitProducerIDResult]
	now := s.nowMs()
	m := s.txns[id]
	if m == nil {
		pid, ok := s.svc.opts.ProducerIDs.TryGenerate()
		if !ok {
			return res, errNoProducerID
		}
		m = newTxnMetadata(id, pid, timeoutMs, now)
		s.txns[id] = m
	}
	// Markers being written: retry later (Kafka: a pending transition).
	if m.state == PrepareAbort || m.state == PrepareCommit {
		return res, errConcurrent(m)
	}
	// A producer naming its id and epoch is fenced unless the metadata
	// was just created, the id is the current one, or it is the previous
	// one with its epochs exhausted (a retry of a rotation it missed).
	if expected != nil && m.producerEpoch != noProducerEpoch && expected.ProducerID != m.producerID &&
		(expected.ProducerID != m.prevProducerID || !epochExhausted(expected.Epoch)) {
		return res, errProducerFenced(m, expected.Epoch)
	}
	if m.state == Ongoing {
		// Abort the open transaction at a bumped epoch, fencing its
		// producer, and have the client retry (the retry bumps the
		// epoch again; the fenced epoch is never returned).
		rec, err := s.fenceAndAbort(m)
		if err != nil {
			return res, err
		}
		s.log.Info("fencing the producer of an open transaction", "transactional_id", id, "producer_id", m.producerID)
		s.svc.metrics.fenced()
		res.Records, res.NoReplay = []runtime.Record{rec}, true
		res.OnWritten = s.markersAfterWrite([]*txnMetadata{m})
		res.Response = InitProducerIDResult{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch, Err: errConcurrent(m)}
		return res, nil
	}
	var t transit
	var err error
	if epochExhausted(m.producerEpoch) && (expected == nil || expected.Epoch == m.producerEpoch) {
		pid, ok := s.svc.opts.ProducerIDs.TryGenerate()
		if !ok {
			return res, errNoProducerID
		}
		t, err = m.prepareProducerIDRotation(pid, timeoutMs, now, expected != nil)
	} else {
		var exp *int16
		if expected != nil {
			exp = &expected.Epoch
		}
		t, err = m.prepareIncrementProducerEpoch(timeoutMs, exp, now)
	}
	if err != nil {
		return res, err
	}
	res.Records, res.NoReplay = []runtime.Record{s.write(m, t)}, true
	res.Response = InitProducerIDResult{ProducerID: m.producerID, ProducerEpoch: m.producerEpoch}
	return res, nil
}

// AddPartitions adds partitions to a producer's transaction (Kafka's
// handleAddPartitionsToTransaction, for AddPartitionsToTxn and
// AddOffsetsToTxn). While the producer's previous transaction is still
// writing its markers the request waits for it to complete, at most
// Config.ConcurrentWait, before CONCURRENT_TRANSACTIONS is answered (Kafka
// answers at once and its clients retry 20 ms later; Kafka 4 retries the
// adds of Produce v12 on the server, KAFKA-18654). Partitions that do not exist fail the whole request:
// UNKNOWN_TOPIC_OR_PARTITION for them, OPERATION_NOT_ATTEMPTED for the
// others (errs non-nil); otherwise err applies to every partition.
// version is the request's: below 2 PRODUCER_FENCED is answered
// INVALID_PRODUCER_EPOCH.
func (s *Service) AddPartitions(transactionalID string, producerID int64, producerEpoch int16, tps []log.TopicPartition, version int16, done func(errs map[log.TopicPartition]error, err error)) {
	if errs := s.checkPartitionsExist(tps); errs != nil {
		done(errs, nil)
		return
	}
	fail := func(err error) {
		if version < 2 && apierr.CodeOf(err) == kerr.ProducerFenced {
			err = apierr.Errorf(kerr.InvalidProducerEpoch, "%v", err)
		}
		done(nil, err)
	}
	if transactionalID == "" {
		fail(errInvalidRequest("The transactional id is empty."))
		return
	}
	deadline := s.opts.Now().Add(s.cfg.ConcurrentWait)
	var attempt func()
	attempt = func() {
		runtime.Write(s.rt, "add-partitions-to-txn", s.PartitionFor(transactionalID), func(sh *Shard) (runtime.Result[runtime.Void], error) {
			res, err := sh.addPartitions(transactionalID, producerID, producerEpoch, tps)
			if apierr.CodeOf(err) == kerr.ConcurrentTransactions && sh.awaitCompletion(transactionalID, deadline, attempt) {
				return res, errParked
			}
			return res, err
		}, func(_ runtime.Void, err error) {
			if err != errParked {
				fail(operationError(err))
			}
		})
	}
	attempt()
}

// AddOffsets adds the group's partition of __consumer_offsets to the
// transaction (Kafka's handleAddOffsetsToTxnRequest).
func (s *Service) AddOffsets(transactionalID string, producerID int64, producerEpoch int16, groupID string, version int16, done func(error)) {
	tp := log.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: s.opts.GroupPartition(groupID)}
	s.AddPartitions(transactionalID, producerID, producerEpoch, []log.TopicPartition{tp}, version, func(errs map[log.TopicPartition]error, err error) {
		if errs != nil {
			err = errs[tp]
		}
		done(err)
	})
}

// checkPartitionsExist is KafkaApis' check before AddPartitionsToTxn: nil
// if every partition exists.
func (s *Service) checkPartitionsExist(tps []log.TopicPartition) map[log.TopicPartition]error {
	var missing []log.TopicPartition
	for _, tp := range tps {
		if _, ok := s.opts.Leader(tp); !ok {
			missing = append(missing, tp)
		}
	}
	if missing == nil {
		return nil
	}
	errs := make(map[log.TopicPartition]error, len(tps))
	for _, tp := range tps {
		errs[tp] = apierr.Errorf(kerr.OperationNotAttempted, "The partitions were not added: some do not exist.")
	}
	for _, tp := range missing {
		errs[tp] = apierr.Errorf(kerr.UnknownTopicOrPartition, "Partition %s does not exist.", tp)
	}
	return errs
}

// addPartitions is the shard's part of AddPartitionsToTxn.
func (s *Shard) addPartitions(id string, pid int64, epoch int16, tps []log.TopicPartition) (runtime.Result[runtime.Void], error) {
	var res runtime.Result[runtime.Void]
	m := s.txns[id]
	switch {
	case m == nil:
		return res, errUnknownTransactionalID(id)
	case m.state == PrepareCommit || m.state == PrepareAbort:
		// First (KAFKA-18660): after an epoch overflow the producer
		// names the next producer id, current only once the markers
		// are written; it waits for that, it is not refused.
		return res, errConcurrent(m)
	case m.producerID != pid:
		return res, errProducerIDMapping(id, pid)
	case m.producerEpoch != epoch:
		return res, errProducerFenced(m, epoch)
	case m.state == Ongoing && m.hasAll(tps):
		return res, nil // already there: answered once everything before is durable
	}
	t, err := m.prepareAddPartitions(tps, s.nowMs())
	if err != nil {
		return res, err
	}
	res.Records, res.NoReplay = []runtime.Record{s.write(m, t)}, true
	return res, nil
}

// VerifyPartitions answers whether the partitions are part of the
// producer's ongoing transaction (Kafka's
// handleVerifyPartitionsInTransaction, AddPartitionsToTxn v4+ with
// verify_only, sent by partition leaders): nil for each that is,
// TRANSACTION_ABORTABLE for each that is not, or one error for all.
func (s *Service) VerifyPartitions(transactionalID string, producerID int64, producerEpoch int16, tps []log.TopicPartition, done func(errs map[log.TopicPartition]error, err error)) {
	if transactionalID == "" {
		done(nil, errInvalidRequest("The transactional id is empty."))
		return
	}
	runtime.Read(s.rt, "verify-partitions-in-txn", s.PartitionFor(transactionalID), func(sh *Shard) (map[log.TopicPartition]error, error) {
		return sh.verifyPartitions(transactionalID, producerID, producerEpoch, tps)
	}, func(errs map[log.TopicPartition]error, err error) {
		done(errs, operationError(err))
	})
}

func (s *Shard) verifyPartitions(id string, pid int64, epoch int16, tps []log.TopicPartition) (map[log.TopicPartition]error, error) {
	m := s.txns[id]
	switch {
	case m == nil:
		return nil, errUnknownTransactionalID(id)
	case m.producerID != pid:
		return nil, errProducerIDMapping(id, pid)
	case m.producerEpoch != epoch:
		return nil, errProducerFenced(m, epoch)
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return nil, errConcurrent(m)
	}
	errs := make(map[log.TopicPartition]error, len(tps))
	for _, tp := range tps {
		if _, ok := m.partitions[tp]; ok {
			errs[tp] = nil
		} else {
			errs[tp] = apierr.Errorf(kerr.TransactionAbortable, "Partition %s is not part of the transaction of %s.", tp, id)
		}
	}
	return errs, nil
}
