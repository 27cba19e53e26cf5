package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/coordinator/share"
	"github.com/moldau/moldau/replica"
)

// The share coordinator's wiring: its state in __share_group_state
// through the ReplicaManager, leadership of its partitions from
// coordinatorPublisher; and the persister (Kafka's DefaultStatePersister
// with its PersisterStateManager) that the share-partition leaders and the
// group coordinator keep share-partition state through, wherever its
// coordinator is.

// newShareCoordinator creates the share coordinator and the persister's
// channel.
func (b *Broker) newShareCoordinator() *share.Service {
	cfg := b.cfg
	local := func() network.RequestHandler {
		if h := b.handler; h != nil {
			return h
		}
		return nil
	}
	b.shareChannel = network.NewInterBrokerChannel(cfg.NodeID, cfg.InterBrokerListenerName,
		fmt.Sprintf("broker-%d-share-persister", cfg.NodeID), sharePersisterConnsPerBroker, b.log, b.loader.Image, local)
	b.shareChannel.SetDialer(b.interBrokerDial)
	svc := share.NewService(share.Options{
		Config: shareConfig(cfg),
		Log:    b.replicas,
		NumPartitions: func() int32 {
			if t, ok := b.loader.Image().Topic(metadata.ShareGroupStateTopic); ok {
				return int32(len(t.Partitions))
			}
			return cfg.GetInt("share.coordinator.state.topic.num.partitions")
		},
		Topics: func(id [16]byte) (int32, bool) {
			t, ok := b.loader.Image().TopicByID(id)
			if !ok {
				return 0, false
			}
			return int32(len(t.Partitions)), true
		},
		DeleteRecords: func(p int32, before int64) error {
			_, err := b.replicas.DeleteRecords(replica.TopicPartition{Topic: metadata.ShareGroupStateTopic, Partition: p}, before)
			return err
		},
		Logger:     b.log,
		Registerer: b.registry,
	})
	b.sharePersister = &statePersister{b: b, svc: svc, channel: b.shareChannel, closed: make(chan struct{}),
		backoff: 100 * time.Millisecond, backoffMax: time.Second}
	return svc
}

// shareConfig is the share coordinator's configuration from the broker's.
func shareConfig(c *config.KafkaConfig) share.Config {
	return share.Config{
		SnapshotUpdateRecordsPerSnapshot: int(c.GetInt("share.coordinator.snapshot.update.records.per.snapshot")),
		WriteTimeout:                     time.Duration(c.GetInt("share.coordinator.write.timeout.ms")) * time.Millisecond,
		LoadBufferBytes:                  c.GetInt("share.coordinator.load.buffer.size"),
		PruneInterval:                    time.Duration(c.GetInt("share.coordinator.state.topic.prune.interval.ms")) * time.Millisecond,
		ColdPartitionSnapshotInterval:    time.Duration(c.GetInt("share.coordinator.cold.partition.snapshot.interval.ms")) * time.Millisecond,
	}
}

// shareCoordinatorPublishers tell the share coordinator which partitions
// of __share_group_state this broker leads, and which topics were deleted
// (their share-partition states go, as Kafka's BrokerMetadataPublisher
// has the share coordinator do).
func (b *Broker) shareCoordinatorPublishers() []metadata.Publisher {
	return []metadata.Publisher{
		&coordinatorPublisher{
			name: "ShareCoordinator", topic: metadata.ShareGroupStateTopic, nodeID: b.cfg.NodeID,
			onElection: b.share.OnElection, onResignation: b.share.OnResignation,
		},
		shareTopicsPublisher{b.share},
	}
}

// shareTopicsPublisher tells the share coordinator of deleted topics.
type shareTopicsPublisher struct{ share *share.Service }

func (p shareTopicsPublisher) Name() string { return "ShareCoordinatorTopics" }

func (p shareTopicsPublisher) OnMetadataUpdate(d *metadata.Delta, _ *metadata.Image) {
	var ids [][16]byte
	for _, t := range d.DeletedTopics() {
		ids = append(ids, t.ID)
	}
	p.share.OnTopicsDeleted(ids)
}

// SharePersister is the broker's share.Persister: what the share-partition
// leaders and the group coordinator keep share-partition state through.
func (b *Broker) SharePersister() share.Persister { return b.sharePersister }

// statePersister is Kafka's DefaultStatePersister, one partition at a
// time: it finds the key's coordinator (the leader of its partition of
// __share_group_state in the metadata image, creating the topic as
// FindCoordinator does when there is none), calls the share coordinator
// in-process when that is this broker and otherwise sends the request over
// its inter-broker channel, and retries NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS (and, for
// InitializeShareGroupState, UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
// PersisterStateManager does) and unreachable brokers with a back-off of
// backoff doubling to backoffMax, until ctx ends or the broker closes.
type statePersister struct {
	b                   *Broker
	svc                 *share.Service
	channel             *network.InterBrokerChannel
	backoff, backoffMax time.Duration
	closeOnce           sync.Once
	closed              chan struct{}
}

var _ share.Persister = (*statePersister)(nil)

// close ends the waits of the calls in flight.
func (p *statePersister) close() { p.closeOnce.Do(func() { close(p.closed) }) }

// sharePersisterConnsPerBroker bounds the persister's connections to one
// broker: every share-partition led here writes its state on each
// acknowledgement, and a broker answers one request of a connection at a
// time, so one connection would queue them all behind each other.
const sharePersisterConnsPerBroker = 8

// Versions of the share coordinator's APIs the persister sends: the
// newest Moldau serves.
const (
	writeShareGroupStateVersion       = 1
	readShareGroupStateSummaryVersion = 1
)

func (p *statePersister) InitializeState(ctx context.Context, k share.Key, stateEpoch int32, startOffset int64) error {
	_, err := p.call(ctx, k, true, func(done func(share.PartitionState, error)) {
		p.svc.InitializeState(k, stateEpoch, startOffset, func(err error) { done(share.PartitionState{}, err) })
	}, func(ctx context.Context, broker int32) (share.PartitionState, error) {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = k.GroupID
		t := kmsg.NewInitializeShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		pt.Partition, pt.StateEpoch, pt.StartOffset = k.Partition, stateEpoch, startOffset
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.send(ctx, broker, req)
		if err != nil {
			return share.PartitionState{}, err
		}
		for _, rt := range resp.(*kmsg.InitializeShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				return share.PartitionState{}, partitionError(rp.ErrorCode, rp.ErrorMessage)
			}
		}
		return share.PartitionState{}, errNoPartitionResult(k)
	})
	return err
}

func (p *statePersister) ReadState(ctx context.Context, k share.Key, leaderEpoch int32) (share.PartitionState, error) {
	return p.call(ctx, k, false, func(done func(share.PartitionState, error)) {
		p.svc.ReadState(k, leaderEpoch, func(st share.PartitionState, err error) {
			st.DeliveryCompleteCount = share.UninitializedDeliveryCompleteCount // as over the wire
			done(st, err)
		})
	}, func(ctx context.Context, broker int32) (share.PartitionState, error) {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = k.GroupID
		t := kmsg.NewReadShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewReadShareGroupStateRequestTopicPartition()
		pt.Partition, pt.LeaderEpoch = k.Partition, leaderEpoch
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.send(ctx, broker, req)
		if err != nil {
			return share.PartitionState{}, err
		}
		for _, rt := range resp.(*kmsg.ReadShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := partitionError(rp.ErrorCode, rp.ErrorMessage); err != nil {
					return share.PartitionState{}, err
				}
				// ReadShareGroupState answers no leader epoch and no
				// delivery-complete count: the epoch is the one the
				// read named, the count unknown.
				st := share.PartitionState{StateEpoch: rp.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: rp.StartOffset,
					DeliveryCompleteCount: share.UninitializedDeliveryCompleteCount}
				for _, sb := range rp.StateBatches {
					st.Batches = append(st.Batches, share.StateBatch{FirstOffset: sb.FirstOffset, LastOffset: sb.LastOffset,
						DeliveryState: sb.DeliveryState, DeliveryCount: sb.DeliveryCount})
				}
				return st, nil
			}
		}
		return share.PartitionState{}, errNoPartitionResult(k)
	})
}

func (p *statePersister) WriteState(ctx context.Context, k share.Key, st share.PartitionState) error {
	_, err := p.call(ctx, k, false, func(done func(share.PartitionState, error)) {
		p.svc.WriteState(k, st, func(err error) { done(share.PartitionState{}, err) })
	}, func(ctx context.Context, broker int32) (share.PartitionState, error) {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = writeShareGroupStateVersion
		req.GroupID = k.GroupID
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		pt.Partition, pt.StateEpoch, pt.LeaderEpoch, pt.StartOffset = k.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
		pt.DeliveryCompleteCount = st.DeliveryCompleteCount
		for _, sb := range st.Batches {
			b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount
			pt.StateBatches = append(pt.StateBatches, b)
		}
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.send(ctx, broker, req)
		if err != nil {
			return share.PartitionState{}, err
		}
		for _, rt := range resp.(*kmsg.WriteShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				return share.PartitionState{}, partitionError(rp.ErrorCode, rp.ErrorMessage)
			}
		}
		return share.PartitionState{}, errNoPartitionResult(k)
	})
	return err
}

func (p *statePersister) DeleteState(ctx context.Context, k share.Key) error {
	_, err := p.call(ctx, k, false, func(done func(share.PartitionState, error)) {
		p.svc.DeleteState(k, func(err error) { done(share.PartitionState{}, err) })
	}, func(ctx context.Context, broker int32) (share.PartitionState, error) {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = k.GroupID
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		pt.Partition = k.Partition
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.send(ctx, broker, req)
		if err != nil {
			return share.PartitionState{}, err
		}
		for _, rt := range resp.(*kmsg.DeleteShareGroupStateResponse).Topics {
			for _, rp := range rt.Partitions {
				return share.PartitionState{}, partitionError(rp.ErrorCode, rp.ErrorMessage)
			}
		}
		return share.PartitionState{}, errNoPartitionResult(k)
	})
	return err
}

func (p *statePersister) ReadStateSummary(ctx context.Context, k share.Key, leaderEpoch int32) (share.PartitionState, error) {
	return p.call(ctx, k, false, func(done func(share.PartitionState, error)) {
		p.svc.ReadStateSummary(k, done)
	}, func(ctx context.Context, broker int32) (share.PartitionState, error) {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.Version = readShareGroupStateSummaryVersion
		req.GroupID = k.GroupID
		t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		t.TopicID = k.TopicID
		pt := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		pt.Partition, pt.LeaderEpoch = k.Partition, leaderEpoch
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		resp, err := p.send(ctx, broker, req)
		if err != nil {
			return share.PartitionState{}, err
		}
		for _, rt := range resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := partitionError(rp.ErrorCode, rp.ErrorMessage); err != nil {
					return share.PartitionState{}, err
				}
				return share.PartitionState{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset,
					DeliveryCompleteCount: rp.DeliveryCompleteCount}, nil
			}
		}
		return share.PartitionState{}, errNoPartitionResult(k)
	})
}

// call runs one operation on k's coordinator, local or remote, retrying
// the coordinator's retriable errors (see statePersister).
func (p *statePersister) call(ctx context.Context, k share.Key, initialize bool,
	local func(done func(share.PartitionState, error)),
	remote func(ctx context.Context, broker int32) (share.PartitionState, error)) (share.PartitionState, error) {
	wait := p.backoff
	for {
		st, err := p.attempt(ctx, k, local, remote)
		if err == nil || !retriableStateError(err, initialize) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return st, lastStateError(err, ctx.Err())
		case <-p.closed:
			return st, lastStateError(err, errors.New("the broker is shutting down"))
		case <-time.After(wait):
		}
		wait = min(2*wait, p.backoffMax)
	}
}

func (p *statePersister) attempt(ctx context.Context, k share.Key,
	local func(done func(share.PartitionState, error)),
	remote func(ctx context.Context, broker int32) (share.PartitionState, error)) (share.PartitionState, error) {
	leader, err := p.coordinator(ctx, k)
	if err != nil {
		return share.PartitionState{}, err
	}
	if leader != p.b.cfg.NodeID {
		return remote(ctx, leader)
	}
	type result struct {
		st  share.PartitionState
		err error
	}
	ch := make(chan result, 1)
	local(func(st share.PartitionState, err error) { ch <- result{st, err} })
	select {
	case r := <-ch:
		return r.st, r.err
	case <-ctx.Done():
		return share.PartitionState{}, apierr.Errorf(kerr.RequestTimedOut, "The share coordinator did not answer for %s: %v", k, ctx.Err())
	}
}

// coordinator is the broker that leads k's partition of
// __share_group_state, creating the topic if there is none (Kafka's
// persister asks FindCoordinator, which creates it).
func (p *statePersister) coordinator(ctx context.Context, k share.Key) (int32, error) {
	t, ok := p.b.loader.Image().Topic(metadata.ShareGroupStateTopic)
	if !ok {
		h := p.b.handler
		if h == nil {
			return -1, apierr.New(kerr.CoordinatorNotAvailable, "The broker is not serving yet.")
		}
		var err error
		if t, err = h.EnsureShareGroupStateTopic(ctx); err != nil {
			return -1, apierr.Errorf(kerr.CoordinatorNotAvailable, "Creating %s failed: %v", metadata.ShareGroupStateTopic, err)
		}
	}
	part := share.PartitionFor(k.CoordinatorKey(), int32(len(t.Partitions)))
	if leader := t.Partitions[part].Leader; leader >= 0 {
		return leader, nil
	}
	return -1, apierr.Errorf(kerr.CoordinatorNotAvailable, "Partition %d of %s has no leader.", part, metadata.ShareGroupStateTopic)
}

func (p *statePersister) send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	resp, err := p.channel.Send(ctx, broker, req)
	if err != nil {
		// Unreachable, or the connection broke: find the coordinator
		// again and retry.
		return nil, apierr.Errorf(kerr.CoordinatorNotAvailable, "Sending %s to broker %d failed: %v", kmsg.NameForKey(req.Key()), broker, err)
	}
	return resp, nil
}

func partitionError(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	if msg != nil && *msg != "" {
		return apierr.Errorf(kerr.ErrorForCode(code).(*kerr.Error), "%s", *msg)
	}
	return kerr.ErrorForCode(code)
}

func errNoPartitionResult(k share.Key) error {
	return apierr.Errorf(kerr.UnknownServerError, "The share coordinator answered nothing for %s.", k)
}

// retriableStateError: the errors Kafka's PersisterStateManager retries.
func retriableStateError(err error, initialize bool) bool {
	switch {
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable),
		errors.Is(err, kerr.CoordinatorLoadInProgress):
		return true
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return initialize
	}
	return false
}

// lastStateError is what a call that gave up returns: its last error,
// which wraps a kerr sentinel, with why it stopped.
func lastStateError(err, why error) error {
	return fmt.Errorf("%w (gave up retrying: %v)", err, why)
}
