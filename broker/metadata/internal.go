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

// SupportedFeatures are the features this software supports, as brokers
// report them in BrokerRegistration and ApiVersions. metadata.version 25 is
// Kafka's 4.0-IV3; 7 (3.3-IV3) is the oldest Kafka 4 reads.
// transaction.version defaults to 2, as a Kafka 4.0 cluster formatted at
// 4.0-IV3 finalizes it (TV_2 needs 4.0-IV2). The group coordinator adds
// group.version when the protocol it gates is served.
var SupportedFeatures = []FeatureRange{
	{Name: MetadataVersionFeature, Min: 7, Max: 25, Default: 25},
	{Name: TransactionVersionFeature, Min: 0, Max: 2, Default: 2},
}
