package metadata

import (
	"maps"
	"slices"
	"sort"

	"github.com/moldau/moldau/broker/uuid"
)

// Image is the cluster metadata at one offset of the metadata log (Kafka's
// MetadataImage). It is immutable: a Delta built on it makes a new Image,
// sharing every part that did not change, so readers keep and pass images
// around without locks or copies. Nothing in an Image may be modified.
type Image struct {
	// Offset and Epoch of the last record replayed into the image (-1
	// for the empty image).
	Offset int64
	Epoch  int32

	Features map[string]int16 // finalized feature levels
	Brokers  map[int32]*Broker
	// Controllers are the registered controllers (ControllerRegistration).
	Controllers map[int32]*Controller
	topics      topicsImage
	// Configs of brokers ("" is the cluster default), topics and groups,
	// by resource; topic configs are also in each Topic.
	Configs        map[ConfigResource]map[string]string
	NextProducerID int64 // first id of the next block to hand out
	// ClientQuotas are the client quota values (producer_byte_rate,
	// controller_mutation_rate, ...) of each entity that has any.
	ClientQuotas map[QuotaEntity]map[string]float64
	// Scram are the SCRAM credentials, by user and mechanism.
	Scram map[ScramKey]ScramCredential
	// ACLs are the access control entries (nil: none).
	ACLs *ACLs
	// DelegationTokens are the delegation tokens by token id.
	DelegationTokens map[string]DelegationToken
}

// ConfigResource names a config resource: Kafka's ConfigResource.
type ConfigResource struct {
	Type int8 // TopicResource, BrokerResource or GroupResource
	Name string
}

// Topic is one topic. Partitions[i] is partition i.
type Topic struct {
	Name       string
	ID         uuid.UUID
	Internal   bool // __consumer_offsets, __transaction_state
	Partitions []Partition
	// Configs are the topic's own overrides (DescribeConfigs source
	// TOPIC_CONFIG); defaults come from the broker config.
	Configs map[string]string
}

// Partition is one partition's assignment and leadership.
type Partition struct {
	Index               int32
	Leader              int32 // NoLeader (-1) when offline
	LeaderEpoch         int32
	PartitionEpoch      int32
	Replicas            []int32
	ISR                 []int32
	LeaderRecoveryState int8
	// ELR are the eligible leader replicas (KIP-966): replicas that left
	// the ISR while it was below min.insync.replicas and so still hold
	// every committed record; LastKnownELR is the last leader of a
	// partition whose ISR became empty. nil when empty.
	ELR          []int32
	LastKnownELR []int32
	// AddingReplicas and RemovingReplicas are an ongoing reassignment's
	// (Kafka's PartitionRegistration): Replicas is then the target
	// replicas followed by the removing ones. nil when none.
	AddingReplicas   []int32
	RemovingReplicas []int32
	// Directories is the log dir of each replica, in the order of
	// Replicas (KIP-858: PartitionRecord.Directories), the zero id
	// (UNASSIGNED) where the broker has not said yet; nil when none is
	// known.
	Directories []uuid.UUID
}

// Directory returns the log dir the partition's replica on broker is in:
// the zero id when it is not known or broker has no replica.
func (p Partition) Directory(broker int32) uuid.UUID {
	if i := slices.Index(p.Replicas, broker); i >= 0 && i < len(p.Directories) {
		return p.Directories[i]
	}
	return uuid.UUID{}
}

// WithDirectory returns the partition's directories with broker's replica
// in dir (a new slice, as long as Replicas).
func (p Partition) WithDirectory(broker int32, dir uuid.UUID) []uuid.UUID {
	dirs := make([]uuid.UUID, len(p.Replicas))
	copy(dirs, p.Directories)
	if i := slices.Index(p.Replicas, broker); i >= 0 {
		dirs[i] = dir
	}
	return dirs
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// Broker is a registered broker.
type Broker struct {
	ID                   int32
	Epoch                int64
	IncarnationID        uuid.UUID
	Endpoints            []BrokerEndpoint
	Features             []BrokerFeature
	Rack                 *string
	Fenced               bool
	InControlledShutdown bool
	// LogDirs are the directory ids of the broker's online log dirs
	// (KIP-858), sorted; nil when it named none (then every replica of
	// it counts as online).
	LogDirs []uuid.UUID
}

// HasOnlineDir is Kafka's DirectoryId.isOnline for one of the broker's
// replicas: an unassigned directory (the zero id) counts as online, as
// does any when the broker named no log dirs.
func (b *Broker) HasOnlineDir(dir uuid.UUID) bool {
	if dir == (uuid.UUID{}) || len(b.LogDirs) == 0 {
		return true
	}
	return slices.Contains(b.LogDirs, dir)
}

// Endpoint returns the broker's endpoint on a listener.
func (b *Broker) Endpoint(listener string) (BrokerEndpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	return BrokerEndpoint{}, false
}

type topicsImage struct {
	byName map[string]*Topic
	byID   map[uuid.UUID]*Topic
}

// Empty is the image before any record.
var Empty = &Image{
	Offset:      -1,
	Epoch:       -1,
	Features:    map[string]int16{},
	Brokers:     map[int32]*Broker{},
	Controllers: map[int32]*Controller{},
	topics:      topicsImage{byName: map[string]*Topic{}, byID: map[uuid.UUID]*Topic{}},
	Configs:     map[ConfigResource]map[string]string{},
}

// Topic returns a topic by name.
func (im *Image) Topic(name string) (*Topic, bool) {
	t, ok := im.topics.byName[name]
	return t, ok
}

// TopicByID returns a topic by ID.
func (im *Image) TopicByID(id uuid.UUID) (*Topic, bool) {
	t, ok := im.topics.byID[id]
	return t, ok
}

// NumTopics is the number of topics.
func (im *Image) NumTopics() int { return len(im.topics.byName) }

// Topics returns every topic, sorted by name.
func (im *Image) Topics() []*Topic {
	out := make([]*Topic, 0, len(im.topics.byName))
	for _, t := range im.topics.byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NumPartitions counts the partitions of every topic.
func (im *Image) NumPartitions() int {
	n := 0
	for _, t := range im.topics.byName {
		n += len(t.Partitions)
	}
	return n
}

// SortedBrokers returns the registered brokers by id.
func (im *Image) SortedBrokers() []*Broker {
	out := make([]*Broker, 0, len(im.Brokers))
	for _, b := range im.Brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// BrokerConfigs returns the dynamic configs of a broker resource ("" is
// the cluster default); nil if none. The map must not be modified.
func (im *Image) BrokerConfigs(resource string) map[string]string {
	return im.Configs[ConfigResource{BrokerResource, resource}]
}

// GroupConfigs returns the configs of a group (a GROUP resource: Kafka's
// GroupConfig overrides); nil if none. The map must not be modified.
func (im *Image) GroupConfigs(groupID string) map[string]string {
	return im.Configs[ConfigResource{GroupResource, groupID}]
}

// Records returns the records that rebuild the image from Empty, in an
// order that replays cleanly: the snapshot of the image (Kafka's
// MetadataImage.write).
func (im *Image) Records() []Record {
	var recs []Record
	for _, name := range slices.Sorted(maps.Keys(im.Features)) {
		recs = append(recs, &FeatureLevelRecord{Name: name, FeatureLevel: im.Features[name]})
	}
	for _, b := range im.SortedBrokers() {
		recs = append(recs, &RegisterBrokerRecord{
			BrokerID: b.ID, IncarnationID: b.IncarnationID, BrokerEpoch: b.Epoch,
			EndPoints: b.Endpoints, Features: b.Features, Rack: b.Rack,
			Fenced: b.Fenced, InControlledShutdown: b.InControlledShutdown, LogDirs: b.LogDirs,
		})
	}
	for _, c := range im.SortedControllers() {
		recs = append(recs, &RegisterControllerRecord{ControllerID: c.ID, IncarnationID: c.IncarnationID, EndPoints: c.Endpoints, Features: c.Features})
	}
	for _, t := range im.Topics() {
		recs = append(recs, &TopicRecord{Name: t.Name, TopicID: t.ID})
		for _, p := range t.Partitions {
			recs = append(recs, &PartitionRecord{
				PartitionID: p.Index, TopicID: t.ID, Replicas: p.Replicas, ISR: p.ISR,
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				LeaderRecoveryState:    p.LeaderRecoveryState,
				EligibleLeaderReplicas: p.ELR, LastKnownElr: p.LastKnownELR,
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
				Directories: p.Directories,
			})
		}
	}
	resources := slices.SortedFunc(maps.Keys(im.Configs), func(a, b ConfigResource) int {
		if a.Type != b.Type {
			return int(a.Type) - int(b.Type)
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for _, r := range resources {
		c := im.Configs[r]
		for _, k := range slices.Sorted(maps.Keys(c)) {
			v := c[k]
			recs = append(recs, &ConfigRecord{ResourceType: r.Type, ResourceName: r.Name, Name: k, Value: &v})
		}
	}
	for _, e := range im.SortedQuotaEntities() {
		q := im.ClientQuotas[e]
		for _, k := range slices.Sorted(maps.Keys(q)) {
			recs = append(recs, &ClientQuotaRecord{Entity: e.Data(), Key: k, Value: q[k]})
		}
	}
	recs = append(recs, im.scramRecords()...)
	recs = append(recs, im.aclRecords()...)
	recs = append(recs, im.delegationTokenRecords()...)
	if im.NextProducerID > 0 {
		recs = append(recs, &ProducerIdsRecord{BrokerID: -1, BrokerEpoch: -1, NextProducerID: im.NextProducerID})
	}
	return recs
}
