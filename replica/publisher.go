package replica

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/broker/uuid"
)

// Name implements metadata.Publisher.
func (m *Manager) Name() string { return "ReplicaManager" }

// OnMetadataUpdate applies a metadata delta to the partitions of this
// broker (Kafka's ReplicaManager.applyDelta): deleted topics stop and their
// logs go; partitions that name this broker as leader are made leaders at
// their new leader epoch, creating the log if needed; partitions with a
// replica here led elsewhere (or by no one) stop serving; partitions whose
// replicas no longer include this broker stop and their logs go; config
// changes reach the logs. Waiting fetches and produces on a partition that
// changed complete now, so clients learn of it at once.
//
// Nothing here holds a lock that Produce or Fetch take for longer than a
// map update: partitions are published one at a time (a sync.Map), logs
// are created without fsync and deleted in one batch per delta (one
// checkpoint per log dir), and the work is summarised in one INFO line
// per delta, not one per partition. A delta that creates or deletes many
// logs (bulkDelta) is applied at a low CPU priority (routine.Background):
// those are mostly system calls, and on a busy machine they would
// otherwise take the CPU that produce and fetch requests wait for.
func (m *Manager) OnMetadataUpdate(d *metadata.Delta, im *metadata.Image) {
	if bulkDelta(d) {
		routine.Background(func() { m.applyDelta(d, im) })
		return
	}
	m.applyDelta(d, im)
}

// bulkPartitions is how many partitions a delta must create, change or
// delete to be applied in the background.
const bulkPartitions = 100

func bulkDelta(d *metadata.Delta) bool {
	n := 0
	for _, t := range d.DeletedTopics() {
		n += len(t.Partitions)
	}
	for _, parts := range d.ChangedPartitions() {
		n += len(parts)
	}
	return n >= bulkPartitions
}

func (m *Manager) applyDelta(d *metadata.Delta, im *metadata.Image) {
	m.stateMu.Lock()
	defer m.stateMu.Unlock()
	m.applied = im
	start := time.Now()
	var touched, gone []TopicPartition
	for _, t := range d.DeletedTopics() {
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Name, Partition: p.Index}
			if _, ok := m.offline.LoadAndDelete(tp); ok {
				continue // its log was never created
			}
			if part := m.Partition(tp); part != nil && part.IsLeader() && part.Log.Tiered() {
				m.deleteRemotePartition(part)
			}
			if m.stopReplica(tp, false) {
				touched = append(touched, tp)
				gone = append(gone, tp)
			}
		}
		m.metrics.deleteTopic(t.Name)
	}
	if len(gone) > 0 {
		if err := m.cfg.Logs.DeleteLogs(gone); err != nil {
			m.log.Error("deleting logs", "err", err)
		}
	}
	var led, lost, created int
	var failed creationFailures
	var leading []TopicPartition
	for t, parts := range d.ChangedPartitions() {
		for _, i := range parts {
			tp := TopicPartition{Topic: t.Name, Partition: i}
			change, isNew := m.applyPartition(t, t.Partitions[i], tp, &failed)
			switch change {
			case becameLeader:
				led++
				leading = append(leading, tp)
			case lostLeadership:
				lost++
			}
			if isNew {
				created++
			}
			touched = append(touched, tp)
		}
	}
	if led > 0 || lost > 0 || created > 0 || len(gone) > 0 {
		m.log.Info("applied metadata", "became_leader", led, "no_longer_leader", lost,
			"partitions_added", created, "partitions_deleted", len(gone),
			"metadata_offset", im.Offset, "took", time.Since(start).Round(time.Millisecond))
	}
	failed.log(m)
	m.applyConfigs(d, im)
	// After the configs: a log loaded at start-up learns there that it
	// is tiered.
	for _, tp := range leading {
		if p := m.Partition(tp); p != nil && p.Log.Tiered() {
			m.kickRemoteLog()
			break
		}
	}
	// Never under a partition lock: the updates above released theirs.
	for _, tp := range touched {
		m.fetchP.CheckAndComplete(tp)
		m.produceP.CheckAndComplete(tp)
	}
}

type leadershipChange int

const (
	noLeadershipChange leadershipChange = iota
	becameLeader
	lostLeadership
)

// applyPartition applies one partition's state; isNew: this broker hosts
// it from now on. stateMu held. A log that cannot be created leaves the
// partition offline (offline.go), counted in failed.
func (m *Manager) applyPartition(t *metadata.Topic, p metadata.Partition, tp TopicPartition, failed *creationFailures) (change leadershipChange, isNew bool) {
	if !slices.Contains(p.Replicas, m.cfg.NodeID) {
		if m.stopReplica(tp, true) {
			m.log.Info("stopped replica: no longer assigned here", "partition", tp.String(), "replicas", p.Replicas)
		}
		return noLeadershipChange, false
	}
	part := m.Partition(tp)
	if op := m.offlinePartition(tp); part == nil && op != nil {
		if op.topicID == t.ID {
			m.updateOffline(op, t, p)
			return noLeadershipChange, false
		}
		m.offline.Delete(tp) // a topic of the same name, created anew
	}
	if part == nil {
		isNew = true
		l, err := m.cfg.Logs.GetOrCreateLog(tp, t.ID, m.cfg.ConfigFor(t))
		if errors.Is(err, kerr.InconsistentTopicID) {
			// The log on disk names another topic id than the image,
			// which is the present (the loader publishes nothing
			// older; see metadata.Loader.HoldUntilCaughtUp): it is of
			// an older topic of that name, deleted and created again
			// while this broker was away, a stray. DeleteLog renames
			// it aside at once and removes it later.
			var stray uuid.UUID
			if old := m.cfg.Logs.GetLog(tp); old != nil {
				stray = old.TopicID()
			}
			m.log.Info("deleting stray log of an older topic of the same name", "partition", tp.String(),
				"stray_topic_id", stray.String(), "topic_id", t.ID.String())
			if err = m.cfg.Logs.DeleteLog(tp); err == nil {
				l, err = m.cfg.Logs.GetOrCreateLog(tp, t.ID, m.cfg.ConfigFor(t))
			}
		}
		if err != nil {
			m.markCreationFailed(t, p, tp, err)
			failed.add(tp, err)
			return noLeadershipChange, false
		}
		part = &Partition{TopicPartition: tp, TopicID: t.ID, Log: l, stats: m.metrics.forTopic(t.Name)}
		part.leaderEpoch.Store(p.LeaderEpoch)
		m.applyThrottledReplicas(part, t.Configs)
		m.partitions.Store(tp, part)
	}
	leader := p.Leader == m.cfg.NodeID
	wasLeader, oldEpoch := part.IsLeader(), part.LeaderEpoch()
	m.applyReplication(part, p, leader, !wasLeader || oldEpoch != p.LeaderEpoch)
	switch {
	case leader && (!wasLeader || oldEpoch != p.LeaderEpoch):
		m.log.Debug("became leader", "partition", tp.String(), "leader_epoch", p.LeaderEpoch)
		return becameLeader, isNew
	case !leader && wasLeader:
		m.log.Debug("no longer leader", "partition", tp.String(), "leader", p.Leader, "leader_epoch", p.LeaderEpoch)
		return lostLeadership, isNew
	}
	return noLeadershipChange, isNew
}

// applyReplication makes part the leader (newEpoch: at a new leader
// epoch) or a follower of the partition's state in the metadata (Kafka's
// Partition.makeLeader and makeFollower): a leader stops fetching first,
// then takes the ISR and starts the followers' states over at a new
// epoch; a follower stops leading, then fetches from its leader (none
// while the partition has no leader). stateMu held.
func (m *Manager) applyReplication(part *Partition, p metadata.Partition, leader, newEpoch bool) {
	now := time.Now()
	if leader {
		m.fetchers.stop(part.TopicPartition)
		part.followerLag.Store(-1)
		part.mu.Lock()
		part.leaderEpoch.Store(p.LeaderEpoch)
		part.makeLeaderLocked(m.cfg.NodeID, p.Replicas, p.ISR, p.PartitionEpoch, newEpoch, now)
		part.isLeader.Store(true)
		m.maybeIncrementHighWatermarkLocked(part, now)
		part.mu.Unlock()
		return
	}
	part.mu.Lock()
	part.isLeader.Store(false)
	part.leaderEpoch.Store(p.LeaderEpoch)
	part.makeFollowerLocked(p.Replicas, p.ISR, p.PartitionEpoch)
	part.mu.Unlock()
	if p.Leader >= 0 && part.Log.Offline() == nil {
		m.fetchers.follow(part, p.Leader, p.LeaderEpoch)
	} else {
		// No leader, or this replica's log dir failed (Kafka's
		// HostedPartition.Offline fetches nothing): the controller has
		// moved the leadership away (KIP-858) and it stays out of the
		// ISR until the broker restarts.
		m.fetchers.stop(part.TopicPartition)
		part.followerLag.Store(-1)
	}
}

// stopReplica removes a partition from this broker; with deleteLog its log
// is deleted too. It reports whether the partition was hosted.
func (m *Manager) stopReplica(tp TopicPartition, deleteLog bool) bool {
	if _, ok := m.offline.LoadAndDelete(tp); ok {
		return true // no log was created
	}
	v, ok := m.partitions.LoadAndDelete(tp)
	if !ok {
		return false
	}
	m.fetchers.stop(tp)
	v.(*Partition).isLeader.Store(false)
	if deleteLog {
		if err := m.cfg.Logs.DeleteLog(tp); err != nil {
			m.log.Error("deleting log", "partition", tp.String(), "err", err)
		}
	}
	return true
}

// applyConfigs hands changed topic configs, and every topic's config when
// a broker default changed, to the logs.
func (m *Manager) applyConfigs(d *metadata.Delta, im *metadata.Image) {
	brokerChanged := false
	topics := map[string]bool{}
	for _, r := range d.ChangedConfigs() {
		switch r.Type {
		case metadata.TopicResource:
			topics[r.Name] = true
		case metadata.BrokerResource:
			brokerChanged = true
		}
	}
	if brokerChanged {
		for _, t := range im.Topics() {
			topics[t.Name] = true
		}
	}
	for name := range topics {
		t, ok := im.Topic(name)
		if !ok {
			continue
		}
		cfg := m.cfg.ConfigFor(t)
		for _, p := range m.partitionsOf(name) {
			wasTiered := p.Log.Tiered()
			p.Log.SetConfig(cfg)
			if wasTiered && !p.Log.Tiered() && p.IsLeader() {
				// remote.storage.enable turned off, which the
				// controller allows only with
				// remote.log.delete.on.disable (KIP-950): the
				// leader deletes the remote data.
				m.deleteRemotePartition(p)
			}
			m.applyThrottledReplicas(p, t.Configs)
		}
	}
}

// DeleteStrayLogs deletes the logs of partitions the metadata does not
// assign to this broker (topics deleted while it was down, or moved away),
// as Kafka's KRaft broker does once it has caught up with the metadata log.
// It decides from the last image applied, so a log created by a newer
// update than the caller saw is never taken for a stray; a log whose topic
// id is the image's is never deleted.
func (m *Manager) DeleteStrayLogs() {
	m.stateMu.Lock()
	defer m.stateMu.Unlock()
	im := m.applied
	if im == nil {
		return // nothing applied yet: nothing to decide from
	}
	m.caughtUp.Store(true)
	for _, l := range m.cfg.Logs.Logs() {
		tp := l.TopicPartition()
		t, ok := im.Topic(tp.Topic)
		stray := !ok || t.ID != l.TopicID() && l.TopicID() != ([16]byte{}) ||
			int(tp.Partition) >= len(t.Partitions) || !slices.Contains(t.Partitions[tp.Partition].Replicas, m.cfg.NodeID)
		if !stray {
			continue
		}
		m.log.Info("deleting stray log: the metadata does not assign it here", "partition", tp.String())
		m.stopReplica(tp, false)
		if err := m.cfg.Logs.DeleteLog(tp); err != nil {
			m.log.Warn("deleting stray log failed", "partition", tp.String(), "err", err)
		}
	}
}
