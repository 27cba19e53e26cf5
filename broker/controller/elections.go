package controller

import (
	"slices"
	"strconv"
	"strings"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// Leader election and ISR changes (Kafka's PartitionChangeBuilder and
// ReplicationControlManager.generateLeaderAndIsrUpdates, with KIP-966's
// eligible leader replicas and without reassignment).
//
// Every change of a partition's leader or ISR is built here: a target ISR
// (and leader recovery state) is proposed, a leader is elected against it,
// and the difference becomes one PartitionChangeRecord, or none when
// nothing changes. As in Kafka's metadata.version 3.6 and later, a change
// of the ISR alone (shrink or expansion) bumps only the partition epoch;
// the leader epoch moves only with the leader (the delta's merge).
//
// Eligible leader replicas (eligible.leader.replicas.version 1): while the
// target ISR is smaller than the topic's min.insync.replicas, the members
// it loses join the ELR instead of being forgotten (a leader does not move
// its high watermark while its ISR is below min.insync.replicas, so they
// hold every committed record), and the ISR may become empty. An empty ISR
// elects from the ELR; with both empty, the last leader (LastKnownElr)
// may lead again, as Kafka's "balanced" recovery; a broker that restarted
// without a clean shutdown leaves the ELR, since it may have lost what it
// had. An ISR back at min.insync.replicas clears both lists.

// LeaderRecoveryState values (Kafka's LeaderRecoveryState, KIP-704).
const (
	leaderRecovered  int8 = 0
	leaderRecovering int8 = 1
)

const (
	uncleanLeaderElectionConfig = "unclean.leader.election.enable"
	minInSyncReplicasConfig     = "min.insync.replicas"
)

// partitionChange is one partition's proposed change (Kafka's
// PartitionChangeBuilder with Election ONLINE or UNCLEAN).
type partitionChange struct {
	topicID   uuid.UUID
	p         metadata.Partition
	targetISR []int32
	targetLRS int8
	// acceptable says whether a broker may lead (Kafka's
	// isAcceptableLeader): alive, and whatever the caller excludes.
	acceptable func(int32) bool
	unclean    bool // the topic allows unclean leader election

	// KIP-966: elr enables eligible leader replicas; minISR is the
	// topic's effective min.insync.replicas; uncleanShutdown a broker
	// that restarted uncleanly (NoLeader: none), which leaves the ELR.
	elr             bool
	minISR          int
	uncleanShutdown int32
	targetELR       []int32

	// Reassignment (reassignment.go): the replicas, and those being
	// added and removed, the change leaves.
	targetReplicas, targetAdding, targetRemoving []int32
}

func newPartitionChange(topicID uuid.UUID, p metadata.Partition, acceptable func(int32) bool) *partitionChange {
	return &partitionChange{topicID: topicID, p: p, targetISR: p.ISR, targetLRS: p.LeaderRecoveryState, acceptable: acceptable,
		uncleanShutdown: metadata.NoLeader, targetELR: p.ELR, minISR: 1,
		targetReplicas: p.Replicas, targetAdding: p.AddingReplicas, targetRemoving: p.RemovingReplicas}
}

// newChange is newPartitionChange with the topic's election settings
// resolved from the image: unclean election, eligible leader replicas and
// min.insync.replicas.
//
// A replica in a log dir its broker reports offline may not lead (Kafka's
// isAcceptableLeader checks isReplicaOnline; see directories.go).
func (c *QuorumController) newChange(im *metadata.Image, t *metadata.Topic, p metadata.Partition, acceptable func(int32) bool) *partitionChange {
	b := newPartitionChange(t.ID, p, func(r int32) bool { return acceptable(r) && replicaOnline(im, p, r) })
	b.unclean = c.uncleanElectionEnabled(im, t)
	b.elr = im.ELREnabled()
	if b.elr {
		b.minISR = c.effectiveMinISR(im, t, p)
	}
	return b
}

// electionResult is the leader a change elected and whether it came from
// outside the ISR.
type electionResult struct {
	leader  int32
	unclean bool
}

// validLeader: in the target ISR, or in the ELR when the target ISR is
// empty, and acceptable (Kafka's isValidNewLeader).
func (b *partitionChange) validLeader(r int32) bool {
	in := slices.Contains(b.targetISR, r) || len(b.targetISR) == 0 && slices.Contains(b.targetELR, r)
	return in && b.acceptable(r)
}

// elect is Kafka's electAnyLeader: the current leader if it is still valid,
// else the first valid replica in replica order, else the last known
// leader (ELR), else (with unclean election) the first acceptable replica,
// else no leader.
func (b *partitionChange) elect() electionResult {
	if b.p.Leader != metadata.NoLeader && b.validLeader(b.p.Leader) {
		return electionResult{leader: b.p.Leader}
	}
	for _, r := range b.targetReplicas {
		if b.validLeader(r) {
			return electionResult{leader: r}
		}
	}
	if b.canElectLastKnownLeader() {
		return electionResult{leader: b.p.LastKnownELR[0], unclean: true}
	}
	if b.unclean {
		for _, r := range b.targetReplicas {
			if b.acceptable(r) {
				return electionResult{leader: r, unclean: true}
			}
		}
	}
	return electionResult{leader: metadata.NoLeader}
}

// canElectLastKnownLeader is Kafka's: with ELR, an empty ISR and ELR, and
// one last known leader that may lead. (Kafka's check logs an unacceptable
// last leader but elects it all the same; Moldau does not elect a broker
// that cannot lead.)
func (b *partitionChange) canElectLastKnownLeader() bool {
	return b.elr && len(b.targetISR) == 0 && len(b.targetELR) == 0 &&
		len(b.p.LastKnownELR) == 1 && b.acceptable(b.p.LastKnownELR[0])
}

// populateTargetELR is Kafka's maybePopulateTargetElr: an ISR at
// min.insync.replicas has no ELR; a smaller one keeps in the ELR what the
// ISR loses, without the broker that shut down uncleanly.
func (b *partitionChange) populateTargetELR() {
	if !b.elr {
		return
	}
	if len(b.targetISR) >= b.minISR {
		b.targetELR = nil
		return
	}
	var elr []int32
	for _, r := range append(slices.Clone(b.targetELR), b.p.ISR...) {
		if !slices.Contains(b.targetISR, r) && r != b.uncleanShutdown && !slices.Contains(elr, r) {
			elr = append(elr, r)
		}
	}
	slices.Sort(elr)
	b.targetELR = elr
}

// build returns the record of the change (nil when nothing changes) and
// the election's result (Kafka's PartitionChangeBuilder.build).
func (b *partitionChange) build() (*metadata.PartitionChangeRecord, electionResult) {
	r := metadata.NewPartitionChangeRecord(b.topicID, b.p.Index)
	b.completeReassignment()
	b.populateTargetELR()
	res := b.elect()
	if res.leader != b.p.Leader {
		r.Leader = res.leader
		if slices.Contains(b.targetELR, res.leader) {
			// Elected from the ELR: it is the ISR now.
			b.targetISR = []int32{res.leader}
			b.targetELR = slices.DeleteFunc(slices.Clone(b.targetELR), func(x int32) bool { return x == res.leader })
		} else if res.unclean {
			// The new leader may lack committed records: the ISR
			// is just it, and it recovers (Kafka forces both).
			r.ISR = []int32{res.leader}
			if b.p.LeaderRecoveryState != leaderRecovering {
				r.LeaderRecoveryState = leaderRecovering
			}
		}
	} else {
		res.unclean = false
	}
	if r.Leader == metadata.NoLeaderChange && !containsAll(b.targetReplicas, b.p.Replicas) {
		// Kafka's triggerLeaderEpochBumpForReplicaReassignmentIfNeeded:
		// a replica leaves, so the leader epoch moves, fencing it.
		r.Leader = b.p.Leader
	}
	b.updateRecordELR(r)
	// Without ELR the ISR never becomes empty: its last member keeps
	// its place, as only it is known to have every committed record.
	if r.ISR == nil && (len(b.targetISR) > 0 || b.elr) && !slices.Equal(b.targetISR, b.p.ISR) {
		r.ISR = append([]int32{}, b.targetISR...)
	}
	b.updateLastKnownLeader(r)
	b.setAssignmentChanges(r)
	if r.LeaderRecoveryState == -1 && b.targetLRS != b.p.LeaderRecoveryState {
		r.LeaderRecoveryState = b.targetLRS
	}
	if r.ISR == nil && r.Leader == metadata.NoLeaderChange && r.LeaderRecoveryState == -1 &&
		r.EligibleLeaderReplicas == nil && r.LastKnownElr == nil &&
		r.Replicas == nil && r.AddingReplicas == nil && r.RemovingReplicas == nil {
		return nil, res
	}
	return r, res
}

// setAssignmentChanges is Kafka's: the replicas, adding and removing
// lists that changed go into the record (an empty list clears one).
func (b *partitionChange) setAssignmentChanges(r *metadata.PartitionChangeRecord) {
	if len(b.targetReplicas) > 0 && !slices.Equal(b.targetReplicas, b.p.Replicas) {
		r.Replicas = slices.Clone(b.targetReplicas)
	}
	if !slices.Equal(b.targetRemoving, b.p.RemovingReplicas) {
		r.RemovingReplicas = append([]int32{}, b.targetRemoving...)
	}
	if !slices.Equal(b.targetAdding, b.p.AddingReplicas) {
		r.AddingReplicas = append([]int32{}, b.targetAdding...)
	}
}

func containsAll(set, of []int32) bool {
	for _, x := range of {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// updateRecordELR is Kafka's maybeUpdateRecordElr (with the last known
// leader kept by updateLastKnownLeader): an unclean election, or ELR
// disabled, clears the ELR; a change of it goes into the record.
func (b *partitionChange) updateRecordELR(r *metadata.PartitionChangeRecord) {
	if r.ISR != nil || !b.elr { // r.ISR is set here only by an unclean election
		b.targetELR = nil
	}
	if !slices.Equal(b.targetELR, b.p.ELR) {
		r.EligibleLeaderReplicas = append([]int32{}, b.targetELR...)
	}
}

// updateLastKnownLeader is Kafka's maybeUpdateLastKnownLeader: the first
// time the ISR becomes empty the leader it had is remembered; once the
// partition has a leader again it is forgotten.
func (b *partitionChange) updateLastKnownLeader(r *metadata.PartitionChangeRecord) {
	if !b.elr {
		return
	}
	last := b.p.LastKnownELR
	switch {
	case r.ISR != nil && len(r.ISR) == 0 && b.p.Leader >= 0 && !(len(last) == 1 && last[0] == b.p.Leader):
		r.LastKnownElr = []int32{b.p.Leader}
	case (r.Leader >= 0 || b.p.Leader != metadata.NoLeader && r.Leader != metadata.NoLeader) && len(last) > 0:
		r.LastKnownElr = []int32{}
	}
}

// isActive is Kafka's ClusterControlManager.isActive: registered, unfenced
// and not in controlled shutdown.
func isActive(im *metadata.Image, broker int32) bool {
	b := im.Brokers[broker]
	return b != nil && !b.Fenced && !b.InControlledShutdown
}

// uncleanElectionEnabled resolves unclean.leader.election.enable for a
// topic as Kafka's controller does: the topic's override, else this
// controller's dynamic broker config, else the cluster-wide dynamic
// default, else the static config (or the default, false). From the image,
// so a change counts from the record that makes it.
func (c *QuorumController) uncleanElectionEnabled(im *metadata.Image, t *metadata.Topic) bool {
	if v, ok := c.dynamicTopicConfig(im, t, uncleanLeaderElectionConfig); ok {
		return strings.EqualFold(v, "true")
	}
	return c.cfg.Broker.GetBool(uncleanLeaderElectionConfig)
}

// dynamicTopicConfig is a topic config as the controller resolves it, but
// for the static one: the topic's override, else this controller's
// dynamic broker config, else the cluster-wide dynamic default.
func (c *QuorumController) dynamicTopicConfig(im *metadata.Image, t *metadata.Topic, name string) (string, bool) {
	if v, ok := t.Configs[name]; ok {
		return v, true
	}
	for _, res := range []string{strconv.Itoa(int(c.cfg.NodeID)), ""} {
		if v, ok := im.BrokerConfigs(res)[name]; ok {
			return v, true
		}
	}
	return "", false
}

// effectiveMinISR is Kafka's getTopicEffectiveMinIsr: the topic's
// min.insync.replicas, at most its replication factor.
func (c *QuorumController) effectiveMinISR(im *metadata.Image, t *metadata.Topic, p metadata.Partition) int {
	n := int(c.cfg.Broker.GetInt(minInSyncReplicasConfig))
	if v, ok := c.dynamicTopicConfig(im, t, minInSyncReplicasConfig); ok {
		if x, err := strconv.Atoi(v); err == nil {
			n = x
		}
	}
	return max(1, min(n, len(p.Replicas)))
}

// leadershipLossRecords is Kafka's generateLeaderAndIsrUpdates with
// brokerToRemove: the broker leaves the ISR of every partition where
// another member remains (or, with eligible leader replicas, where the
// ISR may become empty), and the partitions it led get another leader: an
// in-sync replica that is unfenced and not shutting down, or an eligible
// one where the ISR is empty, or, where the topic allows unclean election
// and no such replica is left, a live replica outside the ISR (which
// becomes the ISR, RECOVERING), or no leader. Used when a broker is
// fenced, shuts down, or re-registers as a new incarnation.
//
// With uncleanShutdown (a new incarnation whose registration names no
// clean shutdown of the one before, Kafka's handleBrokerUncleanShutdown)
// the broker also leaves the ELR of every partition: it may have lost
// records it had.
//
// With keepSoleReplicas, a partition whose only replica is the broker keeps
// its leader and leader epoch: there is no one to move it to, and taking it
// away only to give it back once the broker is unfenced would bump the
// epoch twice per restart (and grow the metadata log by two records per
// partition) for nothing. The broker is fenced meanwhile, so Metadata
// answers LEADER_NOT_AVAILABLE for it all the same. Used when a broker
// re-registers (Kafka gives those up too, in handleBrokerUncleanShutdown);
// a broker that shuts down in a controlled way or whose session expired
// gives up every leadership, as in Kafka, so that clients see the
// partitions leaderless at once and they count as offline.
func (c *QuorumController) leadershipLossRecords(im *metadata.Image, broker int32, opts leadershipLossOption) []metadata.Record {
	acceptable := func(r int32) bool { return r != broker && isActive(im, r) }
	var recs []metadata.Record
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			inELR := opts&uncleanShutdown != 0 && slices.Contains(p.ELR, broker)
			if !slices.Contains(p.ISR, broker) && p.Leader != broker && !inELR {
				continue
			}
			if opts&keepSoleReplicas != 0 && len(p.Replicas) == 1 {
				continue
			}
			b := c.newChange(im, t, p, acceptable)
			b.targetISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == broker })
			if opts&uncleanShutdown != 0 {
				b.uncleanShutdown = broker
			}
			if r := c.buildChange(t, b); r != nil {
				recs = append(recs, r)
			}
		}
	}
	return recs
}

type leadershipLossOption int

const (
	keepSoleReplicas leadershipLossOption = 1 << iota
	uncleanShutdown
)

// electOnUnfence is Kafka's handleBrokerUnfenced election: every partition
// without a leader is elected again with the broker counted as alive
// (the image still has it fenced). One whose ISR (or, the ISR empty, ELR)
// has the broker gets it as leader; one whose topic allows unclean
// election and whose ISR has no live member gets the first live replica,
// the broker included.
func (c *QuorumController) electOnUnfence(im *metadata.Image, broker int32) []metadata.Record {
	acceptable := func(r int32) bool { return r == broker || isActive(im, r) }
	var recs []metadata.Record
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if p.Leader != metadata.NoLeader {
				continue
			}
			if r := c.buildChange(t, c.newChange(im, t, p, acceptable)); r != nil {
				recs = append(recs, r)
			}
		}
	}
	return recs
}

// buildChange builds a change and logs an unclean election, which may lose
// committed records (Kafka logs it at INFO; it is worth a WARN). The
// election is counted once the record is appended (noteUncleanElections).
func (c *QuorumController) buildChange(t *metadata.Topic, b *partitionChange) *metadata.PartitionChangeRecord {
	r, res := b.build()
	switch {
	case r == nil || !res.unclean:
	case len(b.p.LastKnownELR) == 1 && res.leader == b.p.LastKnownELR[0] && len(b.p.ISR) == 0:
		c.log.Warn("electing the last leader of a partition whose ISR and eligible leader replicas are empty (KIP-966): it may lack records it had not flushed before an unclean shutdown",
			"topic", t.Name, "partition", b.p.Index, "leader", res.leader)
	default:
		c.log.Warn("unclean leader election: the new leader was not in the ISR and may lack committed records",
			"topic", t.Name, "partition", b.p.Index, "leader", res.leader, "previous_isr", b.p.ISR)
	}
	return r
}

// uncleanElections counts the records that elect a leader from outside
// the partition's ISR and ELR in im, the image they apply to (Kafka's
// PartitionRegistration.electionWasClean, counted by its
// ControllerMetricsChanges).
func uncleanElections(im *metadata.Image, records []metadata.Record) int {
	n := 0
	for _, rec := range records {
		r, ok := rec.(*metadata.PartitionChangeRecord)
		if !ok || r.Leader < 0 {
			continue
		}
		t, ok := im.TopicByID(r.TopicID)
		if !ok || int(r.PartitionID) >= len(t.Partitions) {
			continue
		}
		if p := t.Partitions[r.PartitionID]; !slices.Contains(p.ISR, r.Leader) && !slices.Contains(p.ELR, r.Leader) {
			n++
		}
	}
	return n
}
