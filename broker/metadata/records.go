package metadata

import (
	"fmt"

	"github.com/moldau/moldau/broker/uuid"
)

// The metadata records, with the names, API keys, versions and fields of
// Kafka's schemas (metadata/src/main/resources/common/metadata/*.json).
// Each is written as Kafka's MetadataRecordSerde frames it, as the value of
// one record (null key) in a batch of __cluster_metadata:
//
//	frame version   unsigned varint, 1
//	api key         unsigned varint (the record type)
//	version         unsigned varint
//	message         the record's fields, flexible encoding, tagged fields
//
// Moldau writes the versions named by each type's writeVersion and reads
// every version up to maxVersion; unknown tagged fields are skipped.

// RecordType is a metadata record's API key.
type RecordType int16

// Kafka's metadata record API keys (MetadataRecordType).
const (
	RegisterBrokerRecordType           RecordType = 0
	UnregisterBrokerRecordType         RecordType = 1
	TopicRecordType                    RecordType = 2
	PartitionRecordType                RecordType = 3
	ConfigRecordType                   RecordType = 4
	PartitionChangeRecordType          RecordType = 5
	FenceBrokerRecordType              RecordType = 7
	UnfenceBrokerRecordType            RecordType = 8
	RemoveTopicRecordType              RecordType = 9
	FeatureLevelRecordType             RecordType = 12
	ProducerIdsRecordType              RecordType = 15
	BrokerRegistrationChangeRecordType RecordType = 17
	NoOpRecordType                     RecordType = 20
)

// Record is one metadata record.
type Record interface {
	Type() RecordType
	// writeVersion is the version Moldau writes; maxVersion the newest
	// it reads.
	writeVersion() int16
	maxVersion() int16
	encode(w *writer, version int16)
	decode(r *reader, version int16)
}

const frameVersion = 1

// Encode returns a record framed as Kafka's MetadataRecordSerde writes it.
func Encode(rec Record) []byte {
	w := &writer{b: make([]byte, 0, 64)}
	v := rec.writeVersion()
	w.uvarint(frameVersion)
	w.uvarint(uint32(rec.Type()))
	w.uvarint(uint32(v))
	rec.encode(w, v)
	return w.b
}

// Decode parses one framed record. Errors name what is wrong; a record
// never makes Decode allocate more than a small multiple of len(b).
func Decode(b []byte) (Record, error) {
	r := newReader(b)
	fv := r.uvarint()
	key := r.uvarint()
	v := r.uvarint()
	if !r.ok() {
		return nil, fmt.Errorf("metadata record: truncated frame")
	}
	if fv != frameVersion {
		return nil, fmt.Errorf("metadata record: unknown frame version %d (only %d is supported)", fv, frameVersion)
	}
	rec := newRecord(RecordType(key))
	if rec == nil {
		return nil, fmt.Errorf("metadata record: unknown type %d", key)
	}
	if v > uint32(rec.maxVersion()) {
		return nil, fmt.Errorf("metadata record: %T version %d is newer than %d", rec, v, rec.maxVersion())
	}
	rec.decode(r, int16(v))
	if err := r.error(); err != nil {
		return nil, fmt.Errorf("metadata record %T v%d: %w", rec, v, err)
	}
	if r.remaining() > 0 {
		return nil, fmt.Errorf("metadata record %T v%d: %d byte(s) of garbage after it", rec, v, r.remaining())
	}
	return rec, nil
}

func newRecord(t RecordType) Record {
	switch t {
	case RegisterBrokerRecordType:
		return &RegisterBrokerRecord{}
	case RegisterControllerRecordType:
		return &RegisterControllerRecord{}
	case UnregisterBrokerRecordType:
		return &UnregisterBrokerRecord{}
	case TopicRecordType:
		return &TopicRecord{}
	case PartitionRecordType:
		return &PartitionRecord{}
	case ConfigRecordType:
		return &ConfigRecord{}
	case PartitionChangeRecordType:
		return &PartitionChangeRecord{}
	case FenceBrokerRecordType:
		return &FenceBrokerRecord{}
	case UnfenceBrokerRecordType:
		return &UnfenceBrokerRecord{}
	case RemoveTopicRecordType:
		return &RemoveTopicRecord{}
	case FeatureLevelRecordType:
		return &FeatureLevelRecord{}
	case ProducerIdsRecordType:
		return &ProducerIdsRecord{}
	case BrokerRegistrationChangeRecordType:
		return &BrokerRegistrationChangeRecord{}
	case NoOpRecordType:
		return &NoOpRecord{}
	case ClientQuotaRecordType:
		return &ClientQuotaRecord{}
	case UserScramCredentialRecordType:
		return &UserScramCredentialRecord{}
	case RemoveUserScramCredentialRecordType:
		return &RemoveUserScramCredentialRecord{}
	case AccessControlEntryRecordType:
		return &AccessControlEntryRecord{}
	case RemoveAccessControlEntryRecordType:
		return &RemoveAccessControlEntryRecord{}
	case DelegationTokenRecordType:
		return &DelegationTokenRecord{}
	case RemoveDelegationTokenRecordType:
		return &RemoveDelegationTokenRecord{}
	}
	return nil
}

// TopicRecord (key 2, v0) creates a topic.
type TopicRecord struct {
	Name    string
	TopicID uuid.UUID
}

func (*TopicRecord) Type() RecordType    { return TopicRecordType }
func (*TopicRecord) writeVersion() int16 { return 0 }
func (*TopicRecord) maxVersion() int16   { return 0 }
func (x *TopicRecord) encode(w *writer, _ int16) {
	w.str(x.Name)
	w.uuid(x.TopicID)
	w.noTags()
}
func (x *TopicRecord) decode(r *reader, _ int16) {
	x.Name = r.str()
	x.TopicID = r.uuid()
	r.tags(nil)
}

// PartitionRecord (key 3, v0-2) creates a partition, or replaces one.
// Moldau writes v0 while no replica's directory is known (Kafka's
// DirectoryId.UNASSIGNED, the zero id, for each), v1 with the directories
// (KIP-858), or v2 when the partition has eligible leader replicas or a
// last known leader (KIP-966).
type PartitionRecord struct {
	PartitionID         int32
	TopicID             uuid.UUID
	Replicas            []int32
	ISR                 []int32
	RemovingReplicas    []int32
	AddingReplicas      []int32
	Leader              int32
	LeaderRecoveryState int8 // tag 0
	LeaderEpoch         int32
	PartitionEpoch      int32
	Directories         []uuid.UUID // v1+
	// EligibleLeaderReplicas (tag 1) and LastKnownElr (tag 2), v2+:
	// KIP-966's replicas that may lead although out of the ISR, and the
	// last leader of a partition whose ISR became empty.
	EligibleLeaderReplicas []int32
	LastKnownElr           []int32
}

func (*PartitionRecord) Type() RecordType { return PartitionRecordType }
func (x *PartitionRecord) writeVersion() int16 {
	if len(x.EligibleLeaderReplicas) > 0 || len(x.LastKnownElr) > 0 {
		return 2
	}
	if anyAssigned(x.Directories) {
		return 1
	}
	return 0
}

// anyAssigned reports whether a directory list names any directory.
func anyAssigned(dirs []uuid.UUID) bool {
	for _, d := range dirs {
		if d != (uuid.UUID{}) {
			return true
		}
	}
	return false
}
func (*PartitionRecord) maxVersion() int16 { return 2 }
func (x *PartitionRecord) encode(w *writer, v int16) {
	w.i32(x.PartitionID)
	w.uuid(x.TopicID)
	w.i32s(x.Replicas)
	w.i32s(x.ISR)
	w.i32s(x.RemovingReplicas)
	w.i32s(x.AddingReplicas)
	w.i32(x.Leader)
	w.i32(x.LeaderEpoch)
	w.i32(x.PartitionEpoch)
	if v >= 1 {
		dirs := x.Directories
		if len(dirs) != len(x.Replicas) {
			dirs = make([]uuid.UUID, len(x.Replicas)) // unassigned
		}
		w.uuids(dirs)
	}
	var fs []tagged
	if x.LeaderRecoveryState != 0 {
		fs = append(fs, field(0, func(w *writer) { w.i8(x.LeaderRecoveryState) }))
	}
	if v >= 2 && len(x.EligibleLeaderReplicas) > 0 {
		fs = append(fs, field(1, func(w *writer) { w.ni32s(x.EligibleLeaderReplicas) }))
	}
	if v >= 2 && len(x.LastKnownElr) > 0 {
		fs = append(fs, field(2, func(w *writer) { w.ni32s(x.LastKnownElr) }))
	}
	w.tags(fs...)
}
func (x *PartitionRecord) decode(r *reader, v int16) {
	x.PartitionID = r.i32()
	x.TopicID = r.uuid()
	x.Replicas = r.i32s()
	x.ISR = r.i32s()
	x.RemovingReplicas = r.i32s()
	x.AddingReplicas = r.i32s()
	x.Leader = r.i32()
	x.LeaderEpoch = r.i32()
	x.PartitionEpoch = r.i32()
	if v >= 1 {
		x.Directories = r.uuids()
	}
	r.tags(func(tag uint32, fr *reader) {
		switch {
		case tag == 0:
			x.LeaderRecoveryState = fr.i8()
		case tag == 1 && v >= 2:
			x.EligibleLeaderReplicas = fr.i32s()
		case tag == 2 && v >= 2:
			x.LastKnownElr = fr.i32s()
		}
	})
}

// ConfigRecord (key 4, v0) sets a config of a resource; a nil Value
// deletes it. ResourceType is Kafka's ConfigResource.Type: 2 topic,
// 4 broker (ResourceName "" is the cluster default), 32 group (KIP-848's
// group configs, by group id).
type ConfigRecord struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string
}

// Kafka's ConfigResource.Type codes.
const (
	TopicResource  int8 = 2
	BrokerResource int8 = 4
	GroupResource  int8 = 32
)

func (*ConfigRecord) Type() RecordType    { return ConfigRecordType }
func (*ConfigRecord) writeVersion() int16 { return 0 }
func (*ConfigRecord) maxVersion() int16   { return 0 }
func (x *ConfigRecord) encode(w *writer, _ int16) {
	w.i8(x.ResourceType)
	w.str(x.ResourceName)
	w.str(x.Name)
	w.nstr(x.Value)
	w.noTags()
}
func (x *ConfigRecord) decode(r *reader, _ int16) {
	x.ResourceType = r.i8()
	x.ResourceName = r.str()
	x.Name = r.str()
	x.Value = r.nstr()
	r.tags(nil)
}

// PartitionChangeRecord (key 5, v0-2) changes a partition. Every field but
// the ids is tagged and absent when unchanged: nil slices, Leader
// NoLeaderChange (-2), LeaderRecoveryState -1.
type PartitionChangeRecord struct {
	PartitionID         int32
	TopicID             uuid.UUID
	ISR                 []int32 // tag 0
	Leader              int32   // tag 1; -1 no leader, -2 unchanged
	Replicas            []int32 // tag 2
	RemovingReplicas    []int32 // tag 3
	AddingReplicas      []int32 // tag 4
	LeaderRecoveryState int8    // tag 5; -1 unchanged
	// EligibleLeaderReplicas (tag 6) and LastKnownElr (tag 7), v2+
	// (KIP-966): nil unchanged, empty cleared. Written as v2 only when
	// one is set.
	EligibleLeaderReplicas []int32
	LastKnownElr           []int32
	// Directories (tag 8, v1+, KIP-858): the log dir of each replica,
	// in the order of the replicas; nil unchanged.
	Directories []uuid.UUID
}

// Leader values of PartitionChangeRecord and Partition.
const (
	NoLeader       int32 = -1
	NoLeaderChange int32 = -2
)

// NewPartitionChangeRecord returns a record that changes nothing yet.
func NewPartitionChangeRecord(topicID uuid.UUID, partition int32) *PartitionChangeRecord {
	return &PartitionChangeRecord{PartitionID: partition, TopicID: topicID, Leader: NoLeaderChange, LeaderRecoveryState: -1}
}

func (*PartitionChangeRecord) Type() RecordType { return PartitionChangeRecordType }
func (x *PartitionChangeRecord) writeVersion() int16 {
	if x.EligibleLeaderReplicas != nil || x.LastKnownElr != nil {
		return 2
	}
	if x.Directories != nil {
		return 1
	}
	return 0
}
func (*PartitionChangeRecord) maxVersion() int16 { return 2 }
func (x *PartitionChangeRecord) encode(w *writer, v int16) {
	w.i32(x.PartitionID)
	w.uuid(x.TopicID)
	var fs []tagged
	if x.ISR != nil {
		fs = append(fs, field(0, func(w *writer) { w.ni32s(x.ISR) }))
	}
	if x.Leader != NoLeaderChange {
		fs = append(fs, field(1, func(w *writer) { w.i32(x.Leader) }))
	}
	if x.Replicas != nil {
		fs = append(fs, field(2, func(w *writer) { w.ni32s(x.Replicas) }))
	}
	if x.RemovingReplicas != nil {
		fs = append(fs, field(3, func(w *writer) { w.ni32s(x.RemovingReplicas) }))
	}
	if x.AddingReplicas != nil {
		fs = append(fs, field(4, func(w *writer) { w.ni32s(x.AddingReplicas) }))
	}
	if x.LeaderRecoveryState != -1 {
		fs = append(fs, field(5, func(w *writer) { w.i8(x.LeaderRecoveryState) }))
	}
	if v >= 2 && x.EligibleLeaderReplicas != nil {
		fs = append(fs, field(6, func(w *writer) { w.ni32s(x.EligibleLeaderReplicas) }))
	}
	if v >= 2 && x.LastKnownElr != nil {
		fs = append(fs, field(7, func(w *writer) { w.ni32s(x.LastKnownElr) }))
	}
	if v >= 1 && x.Directories != nil {
		fs = append(fs, field(8, func(w *writer) { w.uuids(x.Directories) }))
	}
	w.tags(fs...)
}
func (x *PartitionChangeRecord) decode(r *reader, v int16) {
	x.PartitionID = r.i32()
	x.TopicID = r.uuid()
	x.Leader, x.LeaderRecoveryState = NoLeaderChange, -1
	r.tags(func(tag uint32, fr *reader) {
		switch tag {
		case 0:
			x.ISR = fr.i32s()
		case 1:
			x.Leader = fr.i32()
		case 2:
			x.Replicas = fr.i32s()
		case 3:
			x.RemovingReplicas = fr.i32s()
		case 4:
			x.AddingReplicas = fr.i32s()
		case 5:
			x.LeaderRecoveryState = fr.i8()
		case 6:
			if v >= 2 {
				x.EligibleLeaderReplicas = fr.i32s()
			}
		case 7:
			if v >= 2 {
				x.LastKnownElr = fr.i32s()
			}
		case 8:
			if v >= 1 {
				x.Directories = fr.uuids()
			}
		}
	})
}

// RemoveTopicRecord (key 9, v0) deletes a topic and its partitions.
type RemoveTopicRecord struct {
	TopicID uuid.UUID
}

func (*RemoveTopicRecord) Type() RecordType    { return RemoveTopicRecordType }
func (*RemoveTopicRecord) writeVersion() int16 { return 0 }
func (*RemoveTopicRecord) maxVersion() int16   { return 0 }
func (x *RemoveTopicRecord) encode(w *writer, _ int16) {
	w.uuid(x.TopicID)
	w.noTags()
}
func (x *RemoveTopicRecord) decode(r *reader, _ int16) {
	x.TopicID = r.uuid()
	r.tags(nil)
}

// ProducerIdsRecord (key 15, v0) hands a block of producer ids to a
// broker: NextProducerID is the first id of the next block.
type ProducerIdsRecord struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

func (*ProducerIdsRecord) Type() RecordType    { return ProducerIdsRecordType }
func (*ProducerIdsRecord) writeVersion() int16 { return 0 }
func (*ProducerIdsRecord) maxVersion() int16   { return 0 }
func (x *ProducerIdsRecord) encode(w *writer, _ int16) {
	w.i32(x.BrokerID)
	w.i64(x.BrokerEpoch)
	w.i64(x.NextProducerID)
	w.noTags()
}
func (x *ProducerIdsRecord) decode(r *reader, _ int16) {
	x.BrokerID = r.i32()
	x.BrokerEpoch = r.i64()
	x.NextProducerID = r.i64()
	r.tags(nil)
}

// BrokerEndpoint is one listener of a registered broker.
type BrokerEndpoint struct {
	Name             string
	Host             string
	Port             uint16
	SecurityProtocol int16 // 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL
}

// BrokerFeature is a feature range a broker supports.
type BrokerFeature struct {
	Name                string
	MinSupportedVersion int16
	MaxSupportedVersion int16
}

// RegisterBrokerRecord (key 0, v0-3) registers a broker; the broker epoch
// is the offset of this record. Moldau writes v1, or v3 when the broker
// names its log dirs (KIP-858).
type RegisterBrokerRecord struct {
	BrokerID             int32
	IsMigratingZkBroker  bool // v2+
	IncarnationID        uuid.UUID
	BrokerEpoch          int64
	EndPoints            []BrokerEndpoint
	Features             []BrokerFeature
	Rack                 *string
	Fenced               bool
	InControlledShutdown bool        // v1+
	LogDirs              []uuid.UUID // v3+, tag 0
}

func (*RegisterBrokerRecord) Type() RecordType { return RegisterBrokerRecordType }
func (x *RegisterBrokerRecord) writeVersion() int16 {
	if len(x.LogDirs) > 0 {
		return 3
	}
	return 1
}
func (*RegisterBrokerRecord) maxVersion() int16 { return 3 }
func (x *RegisterBrokerRecord) encode(w *writer, v int16) {
	w.i32(x.BrokerID)
	if v >= 2 {
		w.boolean(x.IsMigratingZkBroker)
	}
	w.uuid(x.IncarnationID)
	w.i64(x.BrokerEpoch)
	w.arrayLen(len(x.EndPoints))
	for _, e := range x.EndPoints {
		w.str(e.Name)
		w.str(e.Host)
		w.u16(e.Port)
		w.i16(e.SecurityProtocol)
		w.noTags()
	}
	w.arrayLen(len(x.Features))
	for _, f := range x.Features {
		w.str(f.Name)
		w.i16(f.MinSupportedVersion)
		w.i16(f.MaxSupportedVersion)
		w.noTags()
	}
	w.nstr(x.Rack)
	w.boolean(x.Fenced)
	if v >= 1 {
		w.boolean(x.InControlledShutdown)
	}
	if v >= 3 && len(x.LogDirs) > 0 {
		w.tags(field(0, func(w *writer) { w.uuids(x.LogDirs) }))
	} else {
		w.noTags()
	}
}
func (x *RegisterBrokerRecord) decode(r *reader, v int16) {
	x.BrokerID = r.i32()
	if v >= 2 {
		x.IsMigratingZkBroker = r.boolean()
	}
	x.IncarnationID = r.uuid()
	x.BrokerEpoch = r.i64()
	n := r.arrayLen(6)
	for i := 0; i < n && r.ok(); i++ {
		e := BrokerEndpoint{Name: r.str(), Host: r.str(), Port: r.u16(), SecurityProtocol: r.i16()}
		r.tags(nil)
		x.EndPoints = append(x.EndPoints, e)
	}
	n = r.arrayLen(6)
	for i := 0; i < n && r.ok(); i++ {
		f := BrokerFeature{Name: r.str(), MinSupportedVersion: r.i16(), MaxSupportedVersion: r.i16()}
		r.tags(nil)
		x.Features = append(x.Features, f)
	}
	x.Rack = r.nstr()
	x.Fenced = r.boolean()
	if v >= 1 {
		x.InControlledShutdown = r.boolean()
	}
	r.tags(func(tag uint32, fr *reader) {
		if tag == 0 && v >= 3 {
			x.LogDirs = fr.uuids()
		}
	})
}

// UnregisterBrokerRecord (key 1, v0) removes a broker registration.
type UnregisterBrokerRecord struct {
	BrokerID    int32
	BrokerEpoch int64
}

func (*UnregisterBrokerRecord) Type() RecordType    { return UnregisterBrokerRecordType }
func (*UnregisterBrokerRecord) writeVersion() int16 { return 0 }
func (*UnregisterBrokerRecord) maxVersion() int16   { return 0 }
func (x *UnregisterBrokerRecord) encode(w *writer, _ int16) {
	w.i32(x.BrokerID)
	w.i64(x.BrokerEpoch)
	w.noTags()
}
func (x *UnregisterBrokerRecord) decode(r *reader, _ int16) {
	x.BrokerID = r.i32()
	x.BrokerEpoch = r.i64()
	r.tags(nil)
}

// FenceBrokerRecord (key 7, v0) fences a broker.
type FenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

func (*FenceBrokerRecord) Type() RecordType    { return FenceBrokerRecordType }
func (*FenceBrokerRecord) writeVersion() int16 { return 0 }
func (*FenceBrokerRecord) maxVersion() int16   { return 0 }
func (x *FenceBrokerRecord) encode(w *writer, _ int16) {
	w.i32(x.ID)
	w.i64(x.Epoch)
	w.noTags()
}
func (x *FenceBrokerRecord) decode(r *reader, _ int16) {
	x.ID = r.i32()
	x.Epoch = r.i64()
	r.tags(nil)
}

// UnfenceBrokerRecord (key 8, v0) unfences a broker.
type UnfenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

func (*UnfenceBrokerRecord) Type() RecordType    { return UnfenceBrokerRecordType }
func (*UnfenceBrokerRecord) writeVersion() int16 { return 0 }
func (*UnfenceBrokerRecord) maxVersion() int16   { return 0 }
func (x *UnfenceBrokerRecord) encode(w *writer, _ int16) {
	w.i32(x.ID)
	w.i64(x.Epoch)
	w.noTags()
}
func (x *UnfenceBrokerRecord) decode(r *reader, _ int16) {
	x.ID = r.i32()
	x.Epoch = r.i64()
	r.tags(nil)
}

// BrokerRegistrationChangeRecord (key 17, v0-2) changes a registration.
// Fenced: -1 unfenced, 0 unchanged, 1 fenced. InControlledShutdown: 0
// unchanged, 1 in controlled shutdown. LogDirs: the broker's online log
// dirs, nil unchanged. Moldau writes v1, or v2 with LogDirs.
type BrokerRegistrationChangeRecord struct {
	BrokerID             int32
	BrokerEpoch          int64
	Fenced               int8        // tag 0
	InControlledShutdown int8        // tag 1, v1+
	LogDirs              []uuid.UUID // tag 2, v2+
}

func (*BrokerRegistrationChangeRecord) Type() RecordType {
	return BrokerRegistrationChangeRecordType
}
func (x *BrokerRegistrationChangeRecord) writeVersion() int16 {
	if x.LogDirs != nil {
		return 2
	}
	return 1
}
func (*BrokerRegistrationChangeRecord) maxVersion() int16 { return 2 }
func (x *BrokerRegistrationChangeRecord) encode(w *writer, v int16) {
	w.i32(x.BrokerID)
	w.i64(x.BrokerEpoch)
	var fs []tagged
	if x.Fenced != 0 {
		fs = append(fs, field(0, func(w *writer) { w.i8(x.Fenced) }))
	}
	if v >= 1 && x.InControlledShutdown != 0 {
		fs = append(fs, field(1, func(w *writer) { w.i8(x.InControlledShutdown) }))
	}
	if v >= 2 && x.LogDirs != nil {
		fs = append(fs, field(2, func(w *writer) { w.uuids(x.LogDirs) }))
	}
	w.tags(fs...)
}
func (x *BrokerRegistrationChangeRecord) decode(r *reader, _ int16) {
	x.BrokerID = r.i32()
	x.BrokerEpoch = r.i64()
	r.tags(func(tag uint32, fr *reader) {
		switch tag {
		case 0:
			x.Fenced = fr.i8()
		case 1:
			x.InControlledShutdown = fr.i8()
		case 2:
			x.LogDirs = fr.uuids()
		}
	})
}

// FeatureLevelRecord (key 12, v0) finalizes a feature level; level 0
// removes the feature.
type FeatureLevelRecord struct {
	Name         string
	FeatureLevel int16
}

func (*FeatureLevelRecord) Type() RecordType    { return FeatureLevelRecordType }
func (*FeatureLevelRecord) writeVersion() int16 { return 0 }
func (*FeatureLevelRecord) maxVersion() int16   { return 0 }
func (x *FeatureLevelRecord) encode(w *writer, _ int16) {
	w.str(x.Name)
	w.i16(x.FeatureLevel)
	w.noTags()
}
func (x *FeatureLevelRecord) decode(r *reader, _ int16) {
	x.Name = r.str()
	x.FeatureLevel = r.i16()
	r.tags(nil)
}

// NoOpRecord (key 20, v0) carries nothing; the controller appends one now
// and then so that brokers see the log advance (Kafka's
// metadata.max.idle.interval.ms).
type NoOpRecord struct{}

func (*NoOpRecord) Type() RecordType          { return NoOpRecordType }
func (*NoOpRecord) writeVersion() int16       { return 0 }
func (*NoOpRecord) maxVersion() int16         { return 0 }
func (*NoOpRecord) encode(w *writer, _ int16) { w.noTags() }
func (*NoOpRecord) decode(r *reader, _ int16) { r.tags(nil) }

// ClientQuotaRecordType is ClientQuotaRecord's API key.
const ClientQuotaRecordType RecordType = 14

// QuotaEntityData is one (type, name) of a client quota entity; a nil name
// is the type's default entity.
type QuotaEntityData struct {
	EntityType string
	EntityName *string
}

// ClientQuotaRecord (key 14, v0) sets or removes one quota value of a
// client quota entity (user, client-id, ip, or user and client-id).
type ClientQuotaRecord struct {
	Entity []QuotaEntityData
	Key    string
	Value  float64
	Remove bool
}

func (*ClientQuotaRecord) Type() RecordType    { return ClientQuotaRecordType }
func (*ClientQuotaRecord) writeVersion() int16 { return 0 }
func (*ClientQuotaRecord) maxVersion() int16   { return 0 }
func (x *ClientQuotaRecord) encode(w *writer, _ int16) {
	w.arrayLen(len(x.Entity))
	for _, e := range x.Entity {
		w.str(e.EntityType)
		w.nstr(e.EntityName)
		w.noTags()
	}
	w.str(x.Key)
	w.f64(x.Value)
	w.boolean(x.Remove)
	w.noTags()
}
func (x *ClientQuotaRecord) decode(r *reader, _ int16) {
	n := r.arrayLen(3)
	for i := 0; i < n && r.ok(); i++ {
		e := QuotaEntityData{EntityType: r.str(), EntityName: r.nstr()}
		r.tags(nil)
		x.Entity = append(x.Entity, e)
	}
	x.Key = r.str()
	x.Value = r.f64()
	x.Remove = r.boolean()
	r.tags(nil)
}
