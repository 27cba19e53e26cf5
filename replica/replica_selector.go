package replica

import (
	"fmt"
	"slices"
	"time"
)

// Fetch from the closest replica (KIP-392). A consumer that names its rack
// (Fetch v11+ rack_id, the client's client.rack) may be sent by the leader
// to a replica in that rack: the leader answers the partition with no
// records and preferred_read_replica set, and the consumer fetches from
// there until that replica fails it or its metadata changes. Followers
// serve consumer fetches of v11 and later up to their own high watermark
// (the leader's, as of their last fetch), and wake their delayed fetches
// when it moves.

// RackAwareReplicaSelectorClass is the one replica.selector.class Kafka
// ships and Moldau implements.
const RackAwareReplicaSelectorClass = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// ClientMetadata is what a consumer's Fetch says of it (Kafka's
// ClientMetadata; present from Fetch v11).
type ClientMetadata struct {
	RackID string
}

// ReplicaView is one replica a consumer could read from (Kafka's
// ReplicaView).
type ReplicaView struct {
	BrokerID     int32
	Rack         string
	LogEndOffset int64
	// SinceCaughtUp is how long ago the replica was last caught up with
	// the leader (0 for the leader).
	SinceCaughtUp time.Duration
}

// ReplicaSelector picks the replica a consumer should read a partition from
// (Kafka's ReplicaSelector); replicas include the leader.
type ReplicaSelector interface {
	Select(client ClientMetadata, leader ReplicaView, replicas []ReplicaView) ReplicaView
}

// NewReplicaSelector returns the selector replica.selector.class names; nil
// for "" (consumers read from leaders, Kafka's default).
func NewReplicaSelector(class string) (ReplicaSelector, error) {
	switch class {
	case "":
		return nil, nil
	case RackAwareReplicaSelectorClass:
		return RackAwareReplicaSelector{}, nil
	}
	return nil, fmt.Errorf("replica.selector.class %q: Moldau implements only %s", class, RackAwareReplicaSelectorClass)
}

// RackAwareReplicaSelector is Kafka's: a consumer without a rack reads from
// the leader; one with a rack reads from the leader if it is in that rack,
// else from the most caught-up replica in the rack (the largest log end,
// then the most recently caught up), else from the leader.
type RackAwareReplicaSelector struct{}

// Select implements ReplicaSelector.
func (RackAwareReplicaSelector) Select(client ClientMetadata, leader ReplicaView, replicas []ReplicaView) ReplicaView {
	if client.RackID == "" {
		return leader
	}
	if leader.Rack == client.RackID {
		return leader
	}
	best, found := ReplicaView{}, false
	for _, r := range replicas {
		if r.Rack != client.RackID {
			continue
		}
		if !found || r.LogEndOffset > best.LogEndOffset ||
			r.LogEndOffset == best.LogEndOffset && r.SinceCaughtUp < best.SinceCaughtUp {
			best, found = r, true
		}
	}
	if !found {
		return leader
	}
	return best
}

// preferredReadReplica is Kafka's ReplicaManager.findPreferredReadReplica:
// for a consumer's fetch at offset from this broker, the leader, the
// replica the selector picks among the leader and the in-sync followers
// that are unfenced and hold offset; -1 when that is the leader (or no
// selector is configured).
func (m *Manager) preferredReadReplica(p *Partition, client ClientMetadata, offset int64) int32 {
	if m.selector == nil || m.cfg.Image == nil {
		return -1
	}
	im := m.cfg.Image()
	rack := func(id int32) (string, bool) {
		b := im.Brokers[id]
		if b == nil || b.Fenced {
			return "", false
		}
		if b.Rack == nil {
			return "", true
		}
		return *b.Rack, true
	}
	now := time.Now()
	p.mu.RLock()
	leaderRack, _ := rack(m.cfg.NodeID)
	leader := ReplicaView{BrokerID: m.cfg.NodeID, Rack: leaderRack, LogEndOffset: p.Log.LogEndOffset()}
	views := []ReplicaView{leader}
	for id, r := range p.remotes {
		rk, alive := rack(id)
		if !alive || !slices.Contains(p.isr, id) || r.leo < offset || r.logStart > offset {
			continue
		}
		views = append(views, ReplicaView{BrokerID: id, Rack: rk, LogEndOffset: r.leo, SinceCaughtUp: now.Sub(r.lastCaughtUp)})
	}
	p.mu.RUnlock()
	if sel := m.selector.Select(client, leader, views); sel.BrokerID != m.cfg.NodeID {
		return sel.BrokerID
	}
	return -1
}
