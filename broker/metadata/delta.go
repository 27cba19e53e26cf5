package metadata

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/moldau/moldau/broker/uuid"
)

// Delta accumulates records on top of a base image (Kafka's
// MetadataDelta): Replay each record in log order, then Apply makes the new
// image. Replay is the only way metadata changes. The delta also tells
// publishers what changed (created and deleted topics, changed partitions,
// brokers, configs), so each can act on the difference rather than
// comparing images.
//
// A Delta is not safe for concurrent use.
type Delta struct {
	base *Image

	offset int64
	epoch  int32

	features map[string]int16
	brokers  map[int32]*Broker // changed registrations; nil value: unregistered
	// controllers are the controller registrations of the delta.
	controllers map[int32]*Controller

	// topics holds the new version of every created or changed topic;
	// each is a private copy until Apply publishes it.
	topics        map[uuid.UUID]*Topic
	created       map[uuid.UUID]bool
	deleted       map[uuid.UUID]*Topic // as they were in base (or created and deleted here)
	changedParts  map[uuid.UUID]map[int32]bool
	configs       map[ConfigResource]map[string]string // whole new maps; nil: removed
	quotas        map[QuotaEntity]map[string]float64   // whole new maps; nil: removed
	scram         map[ScramKey]*ScramCredential        // nil: removed
	acls          map[uuid.UUID]*ACL                   // nil: removed
	tokens        map[string]*DelegationToken          // nil: removed
	nextProducer  int64
	producerDirty bool
}

// NewDelta starts a delta on base.
func NewDelta(base *Image) *Delta {
	return &Delta{
		base:         base,
		offset:       base.Offset,
		epoch:        base.Epoch,
		features:     map[string]int16{},
		brokers:      map[int32]*Broker{},
		controllers:  map[int32]*Controller{},
		topics:       map[uuid.UUID]*Topic{},
		created:      map[uuid.UUID]bool{},
		deleted:      map[uuid.UUID]*Topic{},
		changedParts: map[uuid.UUID]map[int32]bool{},
		configs:      map[ConfigResource]map[string]string{},
		quotas:       map[QuotaEntity]map[string]float64{},
		scram:        map[ScramKey]*ScramCredential{},
		acls:         map[uuid.UUID]*ACL{},
		tokens:       map[string]*DelegationToken{},
	}
}

// Base is the image the delta started from.
func (d *Delta) Base() *Image { return d.base }

// SetProvenance records the offset and epoch of the last record replayed.
func (d *Delta) SetProvenance(offset int64, epoch int32) {
	d.offset, d.epoch = offset, epoch
}

// Empty reports whether the delta changes nothing but the offset.
func (d *Delta) Empty() bool {
	return len(d.features) == 0 && len(d.brokers) == 0 && len(d.controllers) == 0 && len(d.topics) == 0 && len(d.deleted) == 0 &&
		len(d.configs) == 0 && len(d.quotas) == 0 && !d.producerDirty
}

// topic returns the current version of a topic (delta over base), or nil.
func (d *Delta) topic(id uuid.UUID) *Topic {
	if t, ok := d.topics[id]; ok {
		return t
	}
	if _, gone := d.deleted[id]; gone {
		return nil
	}
	t, _ := d.base.TopicByID(id)
	return t
}

// TopicByName returns the current version of a topic by name, or nil.
func (d *Delta) TopicByName(name string) *Topic {
	for _, t := range d.topics {
		if t.Name == name {
			return t
		}
	}
	t, ok := d.base.Topic(name)
	if !ok {
		return nil
	}
	if _, gone := d.deleted[t.ID]; gone {
		return nil
	}
	return t
}

// mutableTopic returns a private copy of a topic for changes.
func (d *Delta) mutableTopic(id uuid.UUID) (*Topic, error) {
	if t, ok := d.topics[id]; ok {
		return t, nil
	}
	t := d.topic(id)
	if t == nil {
		return nil, fmt.Errorf("unknown topic id %s", id)
	}
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	d.topics[id] = &c
	return &c, nil
}

func (d *Delta) broker(id int32) *Broker {
	if b, ok := d.brokers[id]; ok {
		return b
	}
	return d.base.Brokers[id]
}

func (d *Delta) mutableBroker(id int32, epoch int64) (*Broker, error) {
	b := d.broker(id)
	if b == nil {
		return nil, fmt.Errorf("unknown broker %d", id)
	}
	if epoch >= 0 && b.Epoch != epoch {
		return nil, fmt.Errorf("broker %d has epoch %d, not %d", id, b.Epoch, epoch)
	}
	if nb, ok := d.brokers[id]; ok && nb != nil {
		return nb, nil
	}
	c := *b
	d.brokers[id] = &c
	return &c, nil
}

func (d *Delta) config(r ConfigResource) map[string]string {
	if c, ok := d.configs[r]; ok {
		return c
	}
	return d.base.Configs[r]
}

// Replay applies one record. An error means the record does not fit the
// metadata (a partition of an unknown topic, say): the log is corrupt or
// was written by a buggy controller, and the caller must stop.
func (d *Delta) Replay(rec Record) error {
	switch r := rec.(type) {
	case *FeatureLevelRecord:
		d.features[r.Name] = r.FeatureLevel
		return nil
	case *RegisterBrokerRecord, *UnregisterBrokerRecord, *FenceBrokerRecord, *UnfenceBrokerRecord, *BrokerRegistrationChangeRecord:
		return d.replayBroker(rec)
	case *RegisterControllerRecord:
		d.controllers[r.ControllerID] = &Controller{ID: r.ControllerID, IncarnationID: r.IncarnationID,
			Endpoints: slices.Clone(r.EndPoints), Features: slices.Clone(r.Features)}
	case *TopicRecord, *PartitionRecord, *PartitionChangeRecord, *RemoveTopicRecord:
		return d.replayTopic(rec)
	case *ConfigRecord:
		res := ConfigResource{r.ResourceType, r.ResourceName}
		c := maps.Clone(d.config(res))
		if c == nil {
			c = map[string]string{}
		}
		if r.Value == nil {
			delete(c, r.Name)
		} else {
			c[r.Name] = *r.Value
		}
		if len(c) == 0 {
			c = nil
		}
		d.configs[res] = c
	case *ProducerIdsRecord:
		cur := d.base.NextProducerID
		if d.producerDirty {
			cur = d.nextProducer
		}
		if r.NextProducerID < cur {
			return fmt.Errorf("producer ids moving back from %d to %d", cur, r.NextProducerID)
		}
		d.nextProducer, d.producerDirty = r.NextProducerID, true
	case *ClientQuotaRecord:
		if !d.replayClientQuota(r) {
			return fmt.Errorf("client quota of an invalid entity %v", r.Entity)
		}
	case *UserScramCredentialRecord, *RemoveUserScramCredentialRecord:
		d.replayScram(rec)
	case *DelegationTokenRecord, *RemoveDelegationTokenRecord:
		d.replayDelegationToken(rec)
	case *AccessControlEntryRecord, *RemoveAccessControlEntryRecord:
		if !d.replayACL(rec) {
			return fmt.Errorf("%T of ACL id %v does not fit the ACLs", rec, aclID(rec))
		}
	case *NoOpRecord:
	default:
		return fmt.Errorf("unknown record %T", rec)
	}
	return nil
}

// replayBroker applies the broker registration records.
func (d *Delta) replayBroker(rec Record) error {
	switch r := rec.(type) {
	case *RegisterBrokerRecord:
		d.brokers[r.BrokerID] = &Broker{
			ID: r.BrokerID, Epoch: r.BrokerEpoch, IncarnationID: r.IncarnationID,
			Endpoints: slices.Clone(r.EndPoints), Features: slices.Clone(r.Features), Rack: r.Rack,
			Fenced: r.Fenced, InControlledShutdown: r.InControlledShutdown, LogDirs: sortedDirs(r.LogDirs),
		}
	case *UnregisterBrokerRecord:
		if b := d.broker(r.BrokerID); b == nil || b.Epoch != r.BrokerEpoch {
			return fmt.Errorf("unregistering broker %d epoch %d: not registered at that epoch", r.BrokerID, r.BrokerEpoch)
		}
		d.brokers[r.BrokerID] = nil
	case *FenceBrokerRecord:
		b, err := d.mutableBroker(r.ID, r.Epoch)
		if err != nil {
			return fmt.Errorf("fencing: %w", err)
		}
		b.Fenced = true
	case *UnfenceBrokerRecord:
		b, err := d.mutableBroker(r.ID, r.Epoch)
		if err != nil {
			return fmt.Errorf("unfencing: %w", err)
		}
		b.Fenced = false
	case *BrokerRegistrationChangeRecord:
		b, err := d.mutableBroker(r.BrokerID, r.BrokerEpoch)
		if err != nil {
			return fmt.Errorf("changing registration: %w", err)
		}
		switch r.Fenced {
		case 1:
			b.Fenced = true
		case -1:
			b.Fenced = false
		}
		if r.InControlledShutdown == 1 {
			b.InControlledShutdown = true
		}
		if r.LogDirs != nil {
			b.LogDirs = sortedDirs(r.LogDirs)
			if b.LogDirs == nil {
				b.LogDirs = []uuid.UUID{} // every dir offline, not "none named"
			}
		}
	}
	return nil
}

// sortedDirs is a sorted copy of dirs, nil when empty.
func sortedDirs(dirs []uuid.UUID) []uuid.UUID {
	if len(dirs) == 0 {
		return nil
	}
	out := slices.Clone(dirs)
	slices.SortFunc(out, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// replayTopic applies the topic and partition records.
func (d *Delta) replayTopic(rec Record) error {
	switch r := rec.(type) {
	case *TopicRecord:
		if d.TopicByName(r.Name) != nil {
			return fmt.Errorf("topic %q created twice", r.Name)
		}
		if d.topic(r.TopicID) != nil {
			return fmt.Errorf("topic id %s of %q already used", r.TopicID, r.Name)
		}
		t := &Topic{Name: r.Name, ID: r.TopicID, Internal: IsInternalTopic(r.Name), Configs: map[string]string{}}
		d.topics[r.TopicID] = t
		d.created[r.TopicID] = true
		delete(d.deleted, r.TopicID)
	case *PartitionRecord:
		t, err := d.mutableTopic(r.TopicID)
		if err != nil {
			return fmt.Errorf("partition %d: %w", r.PartitionID, err)
		}
		p := Partition{
			Index: r.PartitionID, Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch,
			Replicas: slices.Clone(r.Replicas), ISR: slices.Clone(r.ISR), LeaderRecoveryState: r.LeaderRecoveryState,
			ELR: nonEmpty(r.EligibleLeaderReplicas), LastKnownELR: nonEmpty(r.LastKnownElr),
			AddingReplicas: nonEmpty(r.AddingReplicas), RemovingReplicas: nonEmpty(r.RemovingReplicas),
			Directories: directories(r.Directories, len(r.Replicas)),
		}
		switch n := int32(len(t.Partitions)); {
		case r.PartitionID < n:
			t.Partitions[r.PartitionID] = p
		case r.PartitionID == n:
			t.Partitions = append(t.Partitions, p)
		default:
			return fmt.Errorf("partition %d of %s after only %d partitions", r.PartitionID, t.Name, n)
		}
		d.markPartition(r.TopicID, r.PartitionID)
	case *PartitionChangeRecord:
		t, err := d.mutableTopic(r.TopicID)
		if err != nil {
			return fmt.Errorf("partition change %d: %w", r.PartitionID, err)
		}
		if r.PartitionID < 0 || int(r.PartitionID) >= len(t.Partitions) {
			return fmt.Errorf("change of unknown partition %s-%d", t.Name, r.PartitionID)
		}
		applyPartitionChange(&t.Partitions[r.PartitionID], r)
		d.markPartition(r.TopicID, r.PartitionID)
	case *RemoveTopicRecord:
		t := d.topic(r.TopicID)
		if t == nil {
			return fmt.Errorf("removing unknown topic id %s", r.TopicID)
		}
		if old, ok := d.base.TopicByID(r.TopicID); ok {
			d.deleted[r.TopicID] = old
		} else {
			d.deleted[r.TopicID] = t
		}
		delete(d.topics, r.TopicID)
		delete(d.created, r.TopicID)
		delete(d.changedParts, r.TopicID)
		// Kafka drops a deleted topic's configs with it.
		res := ConfigResource{TopicResource, t.Name}
		if d.config(res) != nil {
			d.configs[res] = nil
		}
	}
	return nil
}

func applyPartitionChange(p *Partition, r *PartitionChangeRecord) { *p = p.Merge(r) }

// Merge returns the partition as a change record leaves it (Kafka's
// PartitionRegistration.merge): a leader change bumps the leader epoch,
// any change the partition epoch. An ISR change alone leaves the leader
// epoch as it is (Kafka's metadata.version 3.6 and later; the controller
// sets Leader only when the leader changes).
func (p Partition) Merge(r *PartitionChangeRecord) Partition {
	if r.ISR != nil {
		p.ISR = slices.Clone(r.ISR)
	}
	switch {
	case r.Directories != nil:
		n := len(p.Replicas)
		if r.Replicas != nil {
			n = len(r.Replicas)
		}
		p.Directories = directories(r.Directories, n)
	case r.Replicas != nil && p.Directories != nil:
		// Replicas that stay keep their dir; new ones are unassigned.
		dirs := make([]uuid.UUID, len(r.Replicas))
		for i, b := range r.Replicas {
			dirs[i] = p.Directory(b)
		}
		p.Directories = directories(dirs, len(dirs))
	}
	if r.Replicas != nil {
		p.Replicas = slices.Clone(r.Replicas)
	}
	if r.LeaderRecoveryState != -1 {
		p.LeaderRecoveryState = r.LeaderRecoveryState
	}
	if r.AddingReplicas != nil {
		p.AddingReplicas = nonEmpty(r.AddingReplicas)
	}
	if r.RemovingReplicas != nil {
		p.RemovingReplicas = nonEmpty(r.RemovingReplicas)
	}
	if r.EligibleLeaderReplicas != nil {
		p.ELR = nonEmpty(r.EligibleLeaderReplicas)
	}
	if r.LastKnownElr != nil {
		p.LastKnownELR = nonEmpty(r.LastKnownElr)
	}
	if r.Leader != NoLeaderChange {
		p.Leader = r.Leader
		p.LeaderEpoch++
	}
	p.PartitionEpoch++
	return p
}

// directories is a copy of dirs for n replicas, nil when it names no
// directory or does not match the replicas.
func directories(dirs []uuid.UUID, n int) []uuid.UUID {
	if len(dirs) != n || !anyAssigned(dirs) {
		return nil
	}
	return slices.Clone(dirs)
}

// nonEmpty is a copy of v, nil when it is empty (an image keeps no empty
// lists, so an empty ELR and none compare equal).
func nonEmpty(v []int32) []int32 {
	if len(v) == 0 {
		return nil
	}
	return slices.Clone(v)
}

func (d *Delta) markPartition(id uuid.UUID, p int32) {
	m := d.changedParts[id]
	if m == nil {
		m = map[int32]bool{}
		d.changedParts[id] = m
	}
	m[p] = true
}

// Apply returns the new image. The delta must not be used afterwards.
func (d *Delta) Apply() *Image {
	im := &Image{
		Offset:           d.offset,
		Epoch:            d.epoch,
		Features:         d.base.Features,
		Brokers:          d.base.Brokers,
		Controllers:      d.base.Controllers,
		topics:           d.base.topics,
		Configs:          d.base.Configs,
		NextProducerID:   d.base.NextProducerID,
		ClientQuotas:     d.applyQuotas(),
		Scram:            d.applyScram(),
		ACLs:             d.applyACLs(),
		DelegationTokens: d.applyDelegationTokens(),
	}
	if len(d.features) > 0 {
		im.Features = maps.Clone(d.base.Features)
		for k, v := range d.features {
			if v == 0 {
				delete(im.Features, k)
			} else {
				im.Features[k] = v
			}
		}
	}
	if len(d.brokers) > 0 {
		im.Brokers = maps.Clone(d.base.Brokers)
		for id, b := range d.brokers {
			if b == nil {
				delete(im.Brokers, id)
			} else {
				im.Brokers[id] = b
			}
		}
	}
	if len(d.controllers) > 0 {
		im.Controllers = maps.Clone(d.base.Controllers)
		if im.Controllers == nil {
			im.Controllers = map[int32]*Controller{}
		}
		maps.Copy(im.Controllers, d.controllers)
	}
	if len(d.configs) > 0 {
		im.Configs = maps.Clone(d.base.Configs)
		for r, c := range d.configs {
			if c == nil {
				delete(im.Configs, r)
			} else {
				im.Configs[r] = c
			}
		}
	}
	if d.producerDirty {
		im.NextProducerID = d.nextProducer
	}
	im.topics = d.applyTopics(im.Configs)
	return im
}

// applyTopics builds the new topics image: changed and created topics
// replace or join the base's, deleted ones leave, and a topic whose
// configs changed gets a new version carrying them.
func (d *Delta) applyTopics(configs map[ConfigResource]map[string]string) topicsImage {
	configChanged := map[string]bool{}
	for r := range d.configs {
		if r.Type == TopicResource {
			configChanged[r.Name] = true
		}
	}
	if len(d.topics) == 0 && len(d.deleted) == 0 && len(configChanged) == 0 {
		return d.base.topics
	}
	ti := topicsImage{byName: maps.Clone(d.base.topics.byName), byID: maps.Clone(d.base.topics.byID)}
	for id, old := range d.deleted {
		if cur, ok := ti.byID[id]; ok {
			delete(ti.byName, cur.Name)
			delete(ti.byID, id)
		} else if cur, ok := ti.byName[old.Name]; ok && cur.ID == id {
			delete(ti.byName, old.Name)
		}
	}
	for id, t := range d.topics {
		t.Configs = topicConfigs(configs, t.Name)
		ti.byName[t.Name] = t
		ti.byID[id] = t
		delete(configChanged, t.Name)
	}
	for name := range configChanged {
		t, ok := ti.byName[name]
		if !ok {
			continue
		}
		c := *t
		c.Configs = topicConfigs(configs, name)
		ti.byName[name] = &c
		ti.byID[c.ID] = &c
	}
	return ti
}

func topicConfigs(configs map[ConfigResource]map[string]string, topic string) map[string]string {
	c := configs[ConfigResource{TopicResource, topic}]
	if c == nil {
		return map[string]string{}
	}
	return c
}

// CreatedTopics returns the topics created by the delta (as they are after
// it), sorted by name.
func (d *Delta) CreatedTopics() []*Topic {
	var out []*Topic
	for id := range d.created {
		out = append(out, d.topics[id])
	}
	slices.SortFunc(out, func(a, b *Topic) int { return cmpString(a.Name, b.Name) })
	return out
}

// DeletedTopics returns the topics the delta deleted, as they were before.
func (d *Delta) DeletedTopics() []*Topic {
	var out []*Topic
	for _, t := range d.deleted {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Topic) int { return cmpString(a.Name, b.Name) })
	return out
}

// ChangedPartitions returns, for each topic that is new or had partitions
// created or changed, the topic after the delta and the indexes changed.
func (d *Delta) ChangedPartitions() map[*Topic][]int32 {
	out := map[*Topic][]int32{}
	for id, ps := range d.changedParts {
		t := d.topics[id]
		if t == nil {
			continue
		}
		out[t] = slices.Sorted(maps.Keys(ps))
	}
	return out
}

// ChangedConfigs returns the config resources the delta changed.
func (d *Delta) ChangedConfigs() []ConfigResource {
	return slices.Collect(maps.Keys(d.configs))
}

// ChangedBrokers returns the ids of brokers registered, changed or
// unregistered by the delta.
func (d *Delta) ChangedBrokers() []int32 {
	return slices.Sorted(maps.Keys(d.brokers))
}

// FeaturesChanged reports whether a feature level changed.
func (d *Delta) FeaturesChanged() bool { return len(d.features) > 0 }

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
