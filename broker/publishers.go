package broker

import (
	"log/slog"
	"strconv"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
)

// dynamicConfigPublisher installs the dynamic broker configs of the
// metadata (the cluster default, "", and this node's id) in the broker's
// KafkaConfig (Kafka's DynamicConfigPublisher). It runs before the replica
// manager, which then hands the new defaults to the logs.
type dynamicConfigPublisher struct {
	cfg *config.KafkaConfig
	log *slog.Logger
}

func (p *dynamicConfigPublisher) Name() string { return "DynamicConfigPublisher" }

func (p *dynamicConfigPublisher) OnMetadataUpdate(d *metadata.Delta, im *metadata.Image) {
	self := strconv.Itoa(int(p.cfg.NodeID))
	for _, r := range d.ChangedConfigs() {
		if r.Type != metadata.BrokerResource || (r.Name != "" && r.Name != self) {
			continue
		}
		for _, w := range p.cfg.SetDynamic(r.Name, im.BrokerConfigs(r.Name)) {
			p.log.Warn(w)
		}
		p.log.Info("dynamic broker configs changed", "resource", r.Name, "configs", im.BrokerConfigs(r.Name))
	}
}

// coordinatorPublisher tells a coordinator which partitions of its
// internal topic this broker leads (Kafka's BrokerMetadataPublisher calling
// GroupCoordinator.onElection/onResignation): onElection when this broker
// becomes the leader of a partition (at its leader epoch), onResignation
// when it stops leading one (at the new epoch, or -1 when the topic was
// deleted).
type coordinatorPublisher struct {
	name          string
	topic         string
	nodeID        int32
	onElection    func(partition, epoch int32)
	onResignation func(partition, epoch int32)
}

func (p *coordinatorPublisher) Name() string { return p.name }

func (p *coordinatorPublisher) OnMetadataUpdate(d *metadata.Delta, im *metadata.Image) {
	for _, t := range d.DeletedTopics() {
		if t.Name != p.topic {
			continue
		}
		for _, part := range t.Partitions {
			if part.Leader == p.nodeID {
				p.onResignation(part.Index, -1)
			}
		}
	}
	for t, parts := range d.ChangedPartitions() {
		if t.Name != p.topic {
			continue
		}
		old, _ := d.Base().TopicByID(t.ID)
		for _, i := range parts {
			now := t.Partitions[i]
			wasLeader := old != nil && int(i) < len(old.Partitions) && old.Partitions[i].Leader == p.nodeID
			// Elections are told whenever the image has this broker
			// as the leader (the coordinator ignores an epoch it has
			// loaded or is loading, and retries a failed load), so
			// none is lost to what an earlier update said.
			switch {
			case now.Leader == p.nodeID:
				p.onElection(i, now.LeaderEpoch)
			case wasLeader:
				p.onResignation(i, now.LeaderEpoch)
			}
		}
	}
}
