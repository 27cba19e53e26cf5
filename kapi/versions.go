package kapi

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

const apiVersionsKey = 18

// api is one row of the table of supported APIs: the versions served and
// the handler. A handler is either sync (returns the response; nil means no
// response) or async (calls done exactly once, possibly later, from another
// goroutine).
type api struct {
	key      int16
	min, max int16
	sync     func(h *Handler, rc *RequestContext, req kmsg.Request) kmsg.Response
	async    func(h *Handler, rc *RequestContext, req kmsg.Request)
	// advertiseV0: ApiVersions reports the API from v0 though versions
	// below min are refused (Produce, as Kafka 4.0 after KAFKA-18659).
	advertiseV0 bool
	// shareGroups: ApiVersions reports the API only while the cluster
	// finalizes share.version 1 (its handler answers UNSUPPORTED_VERSION
	// otherwise).
	shareGroups bool
}

// advertisedMin is the min version ApiVersions reports.
func (a *api) advertisedMin() int16 {
	if a.advertiseV0 {
		return 0
	}
	return a.min
}

// apis is the table of supported APIs, in key order. It builds the
// ApiVersions response, and Handle refuses anything outside it.
//
// Version floors: Kafka 4.0 removed the oldest versions of several APIs
// (KIP-896). Produce starts at v3 and Fetch at v4 because Moldau stores only
// magic v2 record batches and does not down-convert, as Kafka 4.0 does not;
// ListOffsets starts at v1 as in Kafka 4.0. Every other API is served from
// v0, which costs nothing since kmsg decodes every version, and keeps older
// clients (kafka-python, older librdkafka) working.
//
// Produce is nevertheless advertised from v0, as Kafka 4.0 does since
// KAFKA-18659: librdkafka before 2.8 (Debian's 2.0.2, under kcat and
// confluent-kafka) enables gzip, snappy and lz4 only if Produce's minimum
// version is 0, and otherwise silently sends uncompressed batches. Clients
// pick the highest version both sides support, so none sends v0-2; one
// that does has its connection closed, as Kafka's socket server does for a
// version it does not enable (magic 0/1 message sets are never accepted).
var apis []api

var apiIndex map[int16]*api

// The table is filled in init because ApiVersions' handler reads it (an
// initialization cycle otherwise).
func init() {
	apis = []api{
		{key: 0, min: 3, max: 13, async: (*Handler).handleProduce, advertiseV0: true},
		{key: 1, min: 4, max: 18, async: (*Handler).handleFetch},
		{key: 2, min: 1, max: 11, async: (*Handler).handleListOffsets},
		{key: 3, min: 0, max: 13, sync: (*Handler).handleMetadata},
		{key: 8, min: 0, max: 10, async: (*Handler).handleOffsetCommit},
		{key: 9, min: 0, max: 10, async: (*Handler).handleOffsetFetch},
		{key: 10, min: 0, max: 6, sync: (*Handler).handleFindCoordinator},
		{key: 11, min: 0, max: 9, async: (*Handler).handleJoinGroup},
		{key: 12, min: 0, max: 4, async: (*Handler).handleHeartbeat},
		{key: 13, min: 0, max: 5, async: (*Handler).handleLeaveGroup},
		{key: 14, min: 0, max: 5, async: (*Handler).handleSyncGroup},
		{key: 15, min: 0, max: 6, async: (*Handler).handleDescribeGroups},
		{key: 16, min: 0, max: 5, async: (*Handler).handleListGroups},
		{key: 17, min: 0, max: 1, sync: (*Handler).handleSaslHandshake},
		{key: 18, min: 0, max: 5, sync: (*Handler).handleApiVersions},
		{key: 19, min: 0, max: 7, async: forwarded((*Handler).handleCreateTopics)},
		{key: 20, min: 0, max: 6, async: forwarded((*Handler).handleDeleteTopics)},
		{key: 21, min: 0, max: 2, sync: (*Handler).handleDeleteRecords},
		{key: 22, min: 0, max: 5, async: (*Handler).handleInitProducerID},
		{key: 23, min: 0, max: 4, sync: (*Handler).handleOffsetForLeaderEpoch},
		{key: 24, min: 0, max: 5, async: (*Handler).handleAddPartitionsToTxn},
		{key: 25, min: 0, max: 4, async: (*Handler).handleAddOffsetsToTxn},
		{key: 26, min: 0, max: 5, async: (*Handler).handleEndTxn},
		{key: 27, min: 0, max: 2, async: (*Handler).handleWriteTxnMarkers},
		{key: 28, min: 0, max: 6, async: (*Handler).handleTxnOffsetCommit},
		{key: 29, min: 0, max: 3, sync: (*Handler).handleDescribeAcls},
		{key: 30, min: 0, max: 3, async: forwarded((*Handler).handleCreateAcls)},
		{key: 31, min: 0, max: 3, async: forwarded((*Handler).handleDeleteAcls)},
		{key: 32, min: 0, max: 4, sync: (*Handler).handleDescribeConfigs},
		{key: 33, min: 0, max: 2, async: forwarded((*Handler).handleAlterConfigs)},
		{key: 34, min: 0, max: 2, sync: clusterOp(az.Alter, (*Handler).handleAlterReplicaLogDirs)},
		{key: 35, min: 0, max: 5, sync: clusterOp(az.Describe, (*Handler).handleDescribeLogDirs)},
		{key: 36, min: 0, max: 2, sync: (*Handler).handleSaslAuthenticate},
		{key: 37, min: 0, max: 3, async: forwarded((*Handler).handleCreatePartitions)},
		{key: 38, min: 0, max: 3, async: forwarded((*Handler).handleCreateDelegationToken)},
		{key: 39, min: 0, max: 2, async: forwarded((*Handler).handleRenewDelegationToken)},
		{key: 40, min: 0, max: 2, async: forwarded((*Handler).handleExpireDelegationToken)},
		{key: 41, min: 0, max: 3, sync: (*Handler).handleDescribeDelegationToken},
		{key: 42, min: 0, max: 3, async: (*Handler).handleDeleteGroups},
		{key: 43, min: 0, max: 2, async: forwarded(clusterOp(az.Alter, (*Handler).handleElectLeaders))},
		{key: 44, min: 0, max: 1, async: forwarded((*Handler).handleIncrementalAlterConfigs)},
		{key: 45, min: 0, max: 1, async: forwarded(clusterOp(az.Alter, (*Handler).handleAlterPartitionReassignments))},
		{key: 46, min: 0, max: 0, async: forwarded(clusterOp(az.Describe, (*Handler).handleListPartitionReassignments))},
		{key: 47, min: 0, max: 0, async: (*Handler).handleOffsetDelete},
		{key: 48, min: 0, max: 1, sync: clusterOp(az.DescribeConfigs, (*Handler).handleDescribeClientQuotas)},
		{key: 49, min: 0, max: 1, async: forwarded(clusterOp(az.AlterConfigs, (*Handler).handleAlterClientQuotas))},
		{key: 50, min: 0, max: 0, sync: clusterOp(az.Describe, (*Handler).handleDescribeUserScramCredentials)},
		{key: 51, min: 0, max: 0, async: forwarded(clusterOp(az.Alter, (*Handler).handleAlterUserScramCredentials))},
		{key: 55, min: 0, max: 2, async: forwarded(clusterOp(az.Describe, (*Handler).handleDescribeQuorum))},
		{key: 57, min: 0, max: 2, async: forwarded(clusterOp(az.Alter, (*Handler).handleUpdateFeatures))},
		{key: 60, min: 0, max: 2, sync: (*Handler).handleDescribeCluster},
		{key: 61, min: 0, max: 0, sync: (*Handler).handleDescribeProducers},
		{key: 64, min: 0, max: 0, async: forwarded(clusterOp(az.Alter, (*Handler).handleUnregisterBroker))},
		{key: 65, min: 0, max: 0, async: (*Handler).handleDescribeTransactions},
		{key: 66, min: 0, max: 2, async: (*Handler).handleListTransactions},
		{key: 68, min: 0, max: 1, async: (*Handler).handleConsumerGroupHeartbeat},
		{key: 69, min: 0, max: 1, async: (*Handler).handleConsumerGroupDescribe},
		{key: 74, min: 0, max: 1, sync: clusterOp(az.DescribeConfigs, (*Handler).handleListConfigResources)},
		{key: 75, min: 0, max: 0, sync: (*Handler).handleDescribeTopicPartitions},
		{key: 80, min: 0, max: 1, async: forwarded(clusterOp(az.Alter, (*Handler).handleAddRaftVoter))},
		{key: 81, min: 0, max: 0, async: forwarded(clusterOp(az.Alter, (*Handler).handleRemoveRaftVoter))},
		// Share groups (KIP-932), only while share.version is 1: v1 and
		// up, as Kafka 4.1 and later (v0 was 4.0's early access).
		{key: 76, min: 1, max: 1, async: (*Handler).handleShareGroupHeartbeat, shareGroups: true},
		{key: 77, min: 1, max: 1, async: (*Handler).handleShareGroupDescribe, shareGroups: true},
		{key: 78, min: 1, max: 2, async: (*Handler).handleShareFetch, shareGroups: true},
		{key: 79, min: 1, max: 2, async: (*Handler).handleShareAcknowledge, shareGroups: true},
		{key: 83, min: 0, max: 0, async: shareStateOp((*Handler).handleInitializeShareGroupState)},
		{key: 84, min: 0, max: 0, async: shareStateOp((*Handler).handleReadShareGroupState)},
		{key: 85, min: 0, max: 1, async: shareStateOp((*Handler).handleWriteShareGroupState)},
		{key: 86, min: 0, max: 0, async: shareStateOp((*Handler).handleDeleteShareGroupState)},
		{key: 87, min: 0, max: 1, async: shareStateOp((*Handler).handleReadShareGroupStateSummary)},
		{key: 90, min: 0, max: 1, async: (*Handler).handleDescribeShareGroupOffsets, shareGroups: true},
		{key: 91, min: 0, max: 0, async: (*Handler).handleAlterShareGroupOffsets, shareGroups: true},
		{key: 92, min: 0, max: 0, async: (*Handler).handleDeleteShareGroupOffsets, shareGroups: true},
	}
	m := make(map[int16]*api, len(apis))
	for i := range apis {
		a := &apis[i]
		if kmsg.RequestForKey(a.key) == nil || a.max > kmsg.RequestForKey(a.key).MaxVersion() {
			panic("kapi: table names a version kmsg does not know")
		}
		m[a.key] = a
	}
	apiIndex = m
}

func lookupAPI(key int16) *api { return apiIndex[key] }

// SupportedVersions reports the versions served for an API key.
func SupportedVersions(key int16) (min, max int16, ok bool) {
	a := lookupAPI(key)
	if a == nil {
		return 0, 0, false
	}
	return a.min, a.max, true
}
