package metadata

// Kafka's internal topics (Topic.GROUP_METADATA_TOPIC_NAME,
// TRANSACTION_STATE_TOPIC_NAME, ShareGroup's state topic), created by the
// coordinators, and the metadata log's name.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
	ShareGroupStateTopic  = "__share_group_state"
	ClusterMetadataTopic  = "__cluster_metadata"
)

// IsInternalTopic is Kafka's Topic.isInternal: clients may not write to
// these topics, and they are never auto-created on a client's request.
func IsInternalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic || name == ShareGroupStateTopic
}

// FeatureRange is a feature's supported levels and the level a new cluster
// finalizes.
type FeatureRange struct {
	Name     string
	Min, Max int16
	Default  int16
}

// MetadataVersionFeature is Kafka's metadata.version feature.
const MetadataVersionFeature = "metadata.version"

// TransactionVersionFeature is Kafka's transaction.version feature: 1
// writes flexible __transaction_state values, 2 is KIP-890 part 2 (the
// epoch bumped at every transaction, partitions added by Produce v12 and
// TxnOffsetCommit v5 instead of AddPartitionsToTxn and AddOffsetsToTxn).
const TransactionVersionFeature = "transaction.version"

// EligibleLeaderReplicasFeature is Kafka's eligible.leader.replicas.version
// (KIP-966): at 1 the controller keeps eligible leader replicas and may
// empty a partition's ISR (it needs metadata.version 4.0-IV1, 23).
const EligibleLeaderReplicasFeature = "eligible.leader.replicas.version"

// ShareVersionFeature is Kafka's share.version (KIP-932): at 1 the share
// group APIs are served, at 0 they answer UNSUPPORTED_VERSION and
// ApiVersions leaves them out. A new cluster finalizes 1, as Kafka 4.2's
// does; a cluster formatted before Moldau had share groups stays at 0
// until UpdateFeatures raises it (kafka-features.sh upgrade --feature
// share.version=1). It has no dependencies.
const ShareVersionFeature = "share.version"

// SupportedFeatures are the features this software supports, as brokers
// report them in BrokerRegistration and ApiVersions. metadata.version 25 is
// Kafka's 4.0-IV3; 7 (3.3-IV3) is the oldest Kafka 4 reads.
// transaction.version defaults to 2, as a Kafka 4.0 cluster formatted at
// 4.0-IV3 finalizes it (TV_2 needs 4.0-IV2). The group coordinator adds
// group.version when the protocol it gates is served.
// eligible.leader.replicas.version defaults to 1, as Kafka 4.1 and later
// finalize it for a new cluster; share.version to 1, as Kafka 4.2 does.
var SupportedFeatures = []FeatureRange{
	{Name: MetadataVersionFeature, Min: 7, Max: 25, Default: 25},
	{Name: TransactionVersionFeature, Min: 0, Max: 2, Default: 2},
	{Name: EligibleLeaderReplicasFeature, Min: 0, Max: 1, Default: 1},
	{Name: ShareVersionFeature, Min: 0, Max: 1, Default: 1},
}

// ShareGroupsEnabled is Kafka's isShareGroupProtocolEnabled: the cluster
// finalized share.version 1 or later.
func (im *Image) ShareGroupsEnabled() bool { return im.Features[ShareVersionFeature] >= 1 }

// ELREnabled is Kafka's ReplicationControlManager.isElrEnabled: the
// cluster finalized eligible.leader.replicas.version 1 or later on a
// metadata.version that has it.
func (im *Image) ELREnabled() bool {
	return im.Features[EligibleLeaderReplicasFeature] >= 1 && im.Features[MetadataVersionFeature] >= 23
}
