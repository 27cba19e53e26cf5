package broker

import (
	"context"
	"time"

	"github.com/moldau/moldau/coordinator/group"
	"github.com/moldau/moldau/coordinator/share"
	sharepart "github.com/moldau/moldau/replica/share"
)

// The share groups' wiring beyond the share coordinator
// (share_coordinator.go): the group coordinator initializes and deletes
// share-partition state through the share persister, and the
// SharePartitionManager serves ShareFetch and ShareAcknowledge on the
// partitions this broker leads, reading through the ReplicaManager,
// keeping state through the persister and taking each group's configs
// from the group coordinator.

// newSharePartitionManager creates the share-partition manager; the share
// coordinator and the group coordinator exist already.
func (b *Broker) newSharePartitionManager() *sharepart.Manager {
	cfg := b.cfg
	return sharepart.NewManager(sharepart.Options{
		Config: sharepart.ManagerConfig{
			MaxInFlightRecords: int(cfg.GetInt("group.share.partition.max.record.locks")),
			MaxShareSessions:   int(cfg.GetInt("group.share.max.share.sessions")),
			SessionIdleTimeout: time.Duration(cfg.GetInt("group.share.max.session.timeout.ms")) * time.Millisecond,
			WriteTimeout:       time.Duration(cfg.GetInt("share.coordinator.write.timeout.ms")) * time.Millisecond,
		},
		Log:       sharepart.ReplicaLog{Replicas: b.replicas},
		Persister: sharePartitionState{b.sharePersister},
		GroupConfig: func(groupID string) sharepart.GroupConfig {
			gc := b.groups.ShareGroupConfig(groupID)
			return sharepart.GroupConfig{
				AutoOffsetReset:    gc.AutoOffsetReset.Type,
				ResetByDuration:    gc.AutoOffsetReset.ByDuration,
				RecordLockDuration: gc.RecordLockDuration,
				DeliveryCountLimit: int16(gc.DeliveryCountLimit),
				ReadCommitted:      gc.IsolationLevel == "read_committed",
			}
		},
		Logger:     b.log.With("component", "share-partition-manager"),
		Registerer: b.registry,
	})
}

// sharePartitionState is the share persister as share partitions use it.
type sharePartitionState struct{ p share.Persister }

func stateKey(k sharepart.Key) share.Key {
	return share.Key{GroupID: k.GroupID, TopicID: k.TopicID, Partition: k.Partition}
}

func (s sharePartitionState) ReadState(ctx context.Context, k sharepart.Key, leaderEpoch int32) (sharepart.PersistedState, error) {
	st, err := s.p.ReadState(ctx, stateKey(k), leaderEpoch)
	if err != nil {
		return sharepart.PersistedState{}, err
	}
	out := sharepart.PersistedState{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: st.StartOffset,
		Batches: make([]sharepart.StateBatch, len(st.Batches))}
	for i, b := range st.Batches {
		out.Batches[i] = sharepart.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
			DeliveryState: sharepart.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount}
	}
	return out, nil
}

func (s sharePartitionState) WriteState(ctx context.Context, k sharepart.Key, st sharepart.PersistedState) error {
	in := share.PartitionState{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: st.StartOffset,
		DeliveryCompleteCount: st.DeliveryCompleteCount, Batches: make([]share.StateBatch, len(st.Batches))}
	for i, b := range st.Batches {
		in.Batches[i] = share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
			DeliveryState: int8(b.DeliveryState), DeliveryCount: b.DeliveryCount}
	}
	return s.p.WriteState(ctx, stateKey(k), in)
}

// groupShareState is the share persister as the group coordinator uses
// it: initializing a share group's partitions before they are assigned,
// deleting their state with the group.
type groupShareState struct{ p share.Persister }

func (g groupShareState) InitializeState(ctx context.Context, groupID string, topicID [16]byte, partition int32, stateEpoch int32, startOffset int64) error {
	return g.p.InitializeState(ctx, share.Key{GroupID: groupID, TopicID: topicID, Partition: partition}, stateEpoch, startOffset)
}

func (g groupShareState) DeleteState(ctx context.Context, groupID string, topicID [16]byte, partition int32) error {
	return g.p.DeleteState(ctx, share.Key{GroupID: groupID, TopicID: topicID, Partition: partition})
}

func (g groupShareState) ReadStateSummary(ctx context.Context, groupID string, topicID [16]byte, partition int32) (group.ShareStateSummary, error) {
	st, err := g.p.ReadStateSummary(ctx, share.Key{GroupID: groupID, TopicID: topicID, Partition: partition}, -1)
	if err != nil {
		return group.ShareStateSummary{}, err
	}
	return group.ShareStateSummary{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: st.StartOffset,
		DeliveryCompleteCount: st.DeliveryCompleteCount}, nil
}
