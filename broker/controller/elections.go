package controller

import (
	"slices"
	"strconv"
	"strings"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// Leader election and ISR changes (Kafka's PartitionChangeBuilder and
// ReplicationControlManager.generateLeaderAndIsrUpdates, without KIP-966's
// eligible leader replicas and without reassignment).
//
// Every change of a partition's leader or ISR is built here: a target ISR
// (and leader recovery state) is proposed, a leader is elected against it,
// and the difference becomes one PartitionChangeRecord, or none when
// nothing changes. As in Kafka's metadata.version 3.6 and later, a change
// of the ISR alone (shrink or expansion) bumps only the partition epoch;
// the leader epoch moves only with the leader (the delta's merge).

// LeaderRecoveryState values (Kafka's LeaderRecoveryState, KIP-704).
const (
	leaderRecovered  int8 = 0
	leaderRecovering int8 = 1
)

const uncleanLeaderElectionConfig = "unclean.leader.election.enable"

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
}

func newPartitionChange(topicID uuid.UUID, p metadata.Partition, acceptable func(int32) bool) *partitionChange {
	return &partitionChange{topicID: topicID, p: p, targetISR: p.ISR, targetLRS: p.LeaderRecoveryState, acceptable: acceptable}
}

// electionResult is the leader a change elected and whether it came from
// outside the ISR.
type electionResult struct {
	leader  int32
	unclean bool
}

// validLeader: in the target ISR and acceptable.
func (b *partitionChange) validLeader(r int32) bool {
	return slices.Contains(b.targetISR, r) && b.acceptable(r)
}

// elect is Kafka's electAnyLeader: the current leader if it is still valid,
// else the first valid replica in replica order, else (with unclean
// election) the first acceptable replica, else no leader.
func (b *partitionChange) elect() electionResult {
	if b.p.Leader != metadata.NoLeader && b.validLeader(b.p.Leader) {
		return electionResult{leader: b.p.Leader}
	}
	for _, r := range b.p.Replicas {
		if b.validLeader(r) {
			return electionResult{leader: r}
		}
	}
	if b.unclean {
		for _, r := range b.p.Replicas {
			if b.acceptable(r) {
				return electionResult{leader: r, unclean: true}
			}
		}
	}
	return electionResult{leader: metadata.NoLeader}
}

// build returns the record of the change (nil when nothing changes) and
// the election's result.
func (b *partitionChange) build() (*metadata.PartitionChangeRecord, electionResult) {
	r := metadata.NewPartitionChangeRecord(b.topicID, b.p.Index)
	res := b.elect()
	if res.leader != b.p.Leader {
		r.Leader = res.leader
		if res.unclean {
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
	// Without ELR the ISR never becomes empty: its last member keeps
	// its place, as only it is known to have every committed record.
	if r.ISR == nil && len(b.targetISR) > 0 && !slices.Equal(b.targetISR, b.p.ISR) {
		r.ISR = slices.Clone(b.targetISR)
	}
	if r.LeaderRecoveryState == -1 && b.targetLRS != b.p.LeaderRecoveryState {
		r.LeaderRecoveryState = b.targetLRS
	}
	if r.ISR == nil && r.Leader == metadata.NoLeaderChange && r.LeaderRecoveryState == -1 {
		return nil, res
	}
	return r, res
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
	if v, ok := t.Configs[uncleanLeaderElectionConfig]; ok {
		return strings.EqualFold(v, "true")
	}
	for _, res := range []string{strconv.Itoa(int(c.cfg.NodeID)), ""} {
		if v, ok := im.BrokerConfigs(res)[uncleanLeaderElectionConfig]; ok {
			return strings.EqualFold(v, "true")
		}
	}
	return c.cfg.Broker.GetBool(uncleanLeaderElectionConfig)
}

// leadershipLossRecords is Kafka's generateLeaderAndIsrUpdates with
// brokerToRemove: the broker leaves the ISR of every partition where
// another member remains, and the partitions it led get another leader:
// an in-sync replica that is unfenced and not shutting down, or, where the
// topic allows unclean election and no such replica is left, a live
// replica outside the ISR (which becomes the ISR, RECOVERING), or no
// leader (the ISR kept). Used when a broker is fenced, shuts down, or
// re-registers as a new incarnation.
//
// With keepSoleReplicas, a partition whose only replica is the broker keeps
// its leader and leader epoch: there is no one to move it to, and taking it
// away only to give it back once the broker is unfenced would bump the
// epoch twice per restart (and grow the metadata log by two records per
// partition) for nothing. The broker is fenced meanwhile, so Metadata
// answers LEADER_NOT_AVAILABLE for it all the same. Used when a broker
// re-registers after an unclean restart (Kafka gives those up too, in
// handleBrokerUncleanShutdown); a broker that shuts down in a controlled
// way or whose session expired gives up every leadership, as in Kafka, so
// that clients see the partitions leaderless at once and they count as
// offline.
func (c *QuorumController) leadershipLossRecords(im *metadata.Image, broker int32, opts leadershipLossOption) []metadata.Record {
	acceptable := func(r int32) bool { return r != broker && isActive(im, r) }
	var recs []metadata.Record
	for _, t := range im.Topics() {
		var unclean *bool
		for _, p := range t.Partitions {
			if !slices.Contains(p.ISR, broker) && p.Leader != broker {
				continue
			}
			if opts&keepSoleReplicas != 0 && len(p.Replicas) == 1 {
				continue
			}
			b := newPartitionChange(t.ID, p, acceptable)
			b.targetISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == broker })
			if unclean == nil {
				u := c.uncleanElectionEnabled(im, t)
				unclean = &u
			}
			b.unclean = *unclean
			if r := c.buildChange(t, b); r != nil {
				recs = append(recs, r)
			}
		}
	}
	return recs
}

type leadershipLossOption int

const keepSoleReplicas leadershipLossOption = 1

// electOnUnfence is Kafka's handleBrokerUnfenced election: every partition
// without a leader is elected again with the broker counted as alive
// (the image still has it fenced). One whose ISR has the broker gets it
// as leader; one whose topic allows unclean election and whose ISR has no
// live member gets the first live replica, the broker included.
func (c *QuorumController) electOnUnfence(im *metadata.Image, broker int32) []metadata.Record {
	acceptable := func(r int32) bool { return r == broker || isActive(im, r) }
	var recs []metadata.Record
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if p.Leader != metadata.NoLeader {
				continue
			}
			b := newPartitionChange(t.ID, p, acceptable)
			b.unclean = c.uncleanElectionEnabled(im, t)
			if r := c.buildChange(t, b); r != nil {
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
	if r != nil && res.unclean {
		c.log.Warn("unclean leader election: the new leader was not in the ISR and may lack committed records",
			"topic", t.Name, "partition", b.p.Index, "leader", res.leader, "previous_isr", b.p.ISR)
	}
	return r
}

// uncleanElections counts the records that elect a leader from outside
// the partition's ISR in im, the image they apply to (Kafka's
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
		if !slices.Contains(t.Partitions[r.PartitionID].ISR, r.Leader) {
			n++
		}
	}
	return n
}
