package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/moldau/moldau/broker/uuid"
)

// authzCase is one API under the authorizer: the request alice sends,
// the error she gets without ACLs, and the ACLs that let it through.
type authzCase struct {
	name  string
	req   func() kmsg.Request
	want  *kerr.Error
	grant []*kadm.ACLBuilder
	// v3 sends with AddPartitionsToTxn pinned to v3 (the clients' form).
	v3 bool
}

func allow() *kadm.ACLBuilder { return kadm.NewACLs().Allow("User:alice") }

// Every API the broker serves to clients, as Kafka's KafkaApis authorizes
// it: without an ACL alice gets Kafka's error code; with the ACL Kafka
// requires the same request gets no authorization error.
func TestAuthorizationPerAPI(t *testing.T) {
	b, adm := aclBroker(t)
	const topic, group, txn = "authz", "authz-g", "authz-tx"
	createTopic(t, adm, 1, topic)
	createTopic(t, adm, 1, "authz-del")
	ctx := ctxTimeout(t, 3*time.Minute)
	tid := [16]byte(topicID(t, newClient(t, b.Seed()), topic))

	topicOp := func(ops ...kadm.ACLOperation) *kadm.ACLBuilder { return allow().Topics(topic).Operations(ops...) }
	groupOp := func(ops ...kadm.ACLOperation) *kadm.ACLBuilder { return allow().Groups(group).Operations(ops...) }
	txnOp := func(ops ...kadm.ACLOperation) *kadm.ACLBuilder {
		return allow().TransactionalIDs(txn).Operations(ops...)
	}
	clusterOp := func(ops ...kadm.ACLOperation) *kadm.ACLBuilder { return allow().Clusters().Operations(ops...) }

	cases := []authzCase{
		{name: "Produce", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpWrite)}, req: func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = 1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic, rt.TopicID = topic, tid
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = rawBatch([]byte("v"))
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "Fetch", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxBytes, r.SessionEpoch = -1, 1<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = topic, tid
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "ListOffsets", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "Metadata", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "MetadataAutoCreate", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{allow().Topics("authz-auto").Operations(kadm.OpDescribe, kadm.OpCreate)}, req: func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.AllowAutoTopicCreation = true
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("authz-auto")
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "OffsetCommit", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpRead), topicOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = group, -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, tid
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "OffsetFetch", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = group
			r.Groups = append(r.Groups, g)
			return r
		}},
		{name: "FindCoordinatorGroup", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey, r.CoordinatorKeys = group, []string{group}
			return r
		}},
		{name: "FindCoordinatorTxn", want: kerr.TransactionalIDAuthorizationFailed, grant: []*kadm.ACLBuilder{txnOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = 1, txn, []string{txn}
			return r
		}},
		{name: "JoinGroup", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = group, 10000, 10000, "consumer"
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
			return r
		}},
		{name: "Heartbeat", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID = group, "m"
			return r
		}},
		{name: "LeaveGroup", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.Members = group, []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			return r
		}},
		{name: "SyncGroup", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID = group, "m"
			return r
		}},
		{name: "DescribeGroups", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{group}
			return r
		}},
		{name: "CreateTopics", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{allow().Topics("authz-new").Operations(kadm.OpCreate)}, req: func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.TimeoutMillis, r.ValidateOnly = 10000, true
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "authz-new", 1, 1
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "DeleteTopics", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{allow().Topics("authz-del").Operations(kadm.OpDelete)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TimeoutMillis = 10000
			r.TopicNames = []string{"authz-del"}
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr("authz-del")
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "DeleteRecords", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpDelete)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.TimeoutMillis = 5000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "InitProducerIdTxn", want: kerr.TransactionalIDAuthorizationFailed, grant: []*kadm.ACLBuilder{txnOp(kadm.OpWrite)}, req: func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(txn), 60000
			return r
		}},
		{name: "InitProducerIdIdempotent", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{allow().Topics("any-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite)}, req: func() kmsg.Request {
			return kmsg.NewPtrInitProducerIDRequest()
		}},
		{name: "OffsetForLeaderEpoch", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "AddPartitionsToTxnClient", v3: true, want: kerr.TransactionalIDAuthorizationFailed, grant: []*kadm.ACLBuilder{txnOp(kadm.OpWrite), topicOp(kadm.OpWrite)}, req: func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = txn, 1, 0
			r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
			return r
		}},
		{name: "AddPartitionsToTxnBroker", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = txn, 1, true
			tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{0}}}
			r.Transactions = append(r.Transactions, tx)
			return r
		}},
		{name: "AddOffsetsToTxn", want: kerr.TransactionalIDAuthorizationFailed, grant: []*kadm.ACLBuilder{txnOp(kadm.OpWrite), groupOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.Group, r.ProducerID = txn, group, 1
			return r
		}},
		{name: "EndTxn", want: kerr.TransactionalIDAuthorizationFailed, grant: []*kadm.ACLBuilder{txnOp(kadm.OpWrite)}, req: func() kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID = txn, 1
			return r
		}},
		{name: "WriteTxnMarkers", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = 424242, 0, false
			m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
			r.Markers = append(r.Markers, m)
			return r
		}},
		// The share coordinator's inter-broker APIs and its
		// FindCoordinator key type: CLUSTER_ACTION on the cluster.
		{name: "FindCoordinatorShare", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType = 2
			r.CoordinatorKeys = []string{group + ":" + uuid.UUID(tid).String() + ":0"}
			return r
		}},
		{name: "InitializeShareGroupState", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrInitializeShareGroupStateRequest()
			r.GroupID = group
			r.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StartOffset: -1}}}}
			return r
		}},
		{name: "ReadShareGroupState", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateRequest()
			r.GroupID = group
			r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: 0}}}}
			return r
		}},
		{name: "WriteShareGroupState", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrWriteShareGroupStateRequest()
			r.GroupID = group
			r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: -1, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1}}}}
			return r
		}},
		{name: "DeleteShareGroupState", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupStateRequest()
			r.GroupID = group
			r.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{name: "ReadShareGroupStateSummary", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpClusterAction)}, req: func() kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			r.GroupID = group
			r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{name: "TxnOffsetCommit", want: kerr.TransactionalIDAuthorizationFailed, grant: []*kadm.ACLBuilder{txnOp(kadm.OpWrite), groupOp(kadm.OpRead), topicOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.Generation = txn, group, 1, -1
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, tid
			rt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}
			r.Topics = append(r.Topics, rt)
			return r
		}},
		{name: "DescribeAcls", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}},
		{name: "DescribeConfigsTopic", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpDescribeConfigs)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic}}
			return r
		}},
		{name: "DescribeConfigsBroker", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribeConfigs)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
			return r
		}},
		{name: "AlterConfigs", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpAlterConfigs)}, req: func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.ValidateOnly = true
			r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic,
				Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("60000")}}}}
			return r
		}},
		{name: "IncrementalAlterConfigs", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpAlterConfigs)}, req: func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.ValidateOnly = true
			r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
				Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "consumer.session.timeout.ms", Value: kmsg.StringPtr("50000")}}}}
			return r
		}},
		{name: "DescribeLogDirs", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			return kmsg.NewPtrDescribeLogDirsRequest()
		}},
		{name: "CreatePartitions", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpAlter)}, req: func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.TimeoutMillis, r.ValidateOnly = 10000, true
			r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: topic, Count: 2}}
			return r
		}},
		{name: "DeleteGroups", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpDelete)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{group}
			return r
		}},
		{name: "ElectLeaders", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpAlter)}, req: func() kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.TimeoutMillis = 5000
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: topic, Partitions: []int32{0}}}
			return r
		}},
		{name: "AlterPartitionReassignments", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpAlter)}, req: func() kmsg.Request {
			return kmsg.NewPtrAlterPartitionAssignmentsRequest()
		}},
		{name: "ListPartitionReassignments", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			return kmsg.NewPtrListPartitionReassignmentsRequest()
		}},
		{name: "OffsetDelete", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpDelete), topicOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = group
			r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{name: "DescribeClientQuotas", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribeConfigs)}, req: func() kmsg.Request {
			return kmsg.NewPtrDescribeClientQuotasRequest()
		}},
		{name: "AlterClientQuotas", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpAlterConfigs)}, req: func() kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			r.ValidateOnly = true
			e := kmsg.NewAlterClientQuotasRequestEntry()
			e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("c")}}
			e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
			r.Entries = append(r.Entries, e)
			return r
		}},
		{name: "DescribeUserScramCredentials", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		}},
		{name: "DescribeQuorum", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			r.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{name: "DescribeProducers", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: []int32{0}}}
			return r
		}},
		{name: "UnregisterBroker", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpAlter)}, req: func() kmsg.Request {
			r := kmsg.NewPtrUnregisterBrokerRequest()
			r.BrokerID = 99
			return r
		}},
		{name: "ConsumerGroupHeartbeat", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpRead)}, req: func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "authz-848", "m848m848m848m848m848mx", 0, 10000
			r.SubscribedTopicNames = []string{topic}
			return r
		}},
		{name: "ConsumerGroupDescribe", want: kerr.GroupAuthorizationFailed, grant: []*kadm.ACLBuilder{groupOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{group}
			return r
		}},
		{name: "ListConfigResources", want: kerr.ClusterAuthorizationFailed, grant: []*kadm.ACLBuilder{clusterOp(kadm.OpDescribeConfigs)}, req: func() kmsg.Request {
			return kmsg.NewPtrListConfigResourcesRequest()
		}},
		{name: "DescribeTopicPartitions", want: kerr.TopicAuthorizationFailed, grant: []*kadm.ACLBuilder{topicOp(kadm.OpDescribe)}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: topic}}
			r.ResponsePartitionLimit = 100
			return r
		}},
	}
	// Fix the CONSUMER protocol's group to the case's group ACL.
	cases[len(cases)-4].grant = []*kadm.ACLBuilder{allow().Groups("authz-848").Operations(kadm.OpRead)}

	alice := aliceClient(t, b)
	aliceV3 := aliceClient(t, b, kgo.MaxVersions(func() *kversion.Versions { v := kversion.Stable(); v.SetMaxKeyVersion(24, 3); return v }()))
	everything := kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := alice
			if c.v3 {
				cl = aliceV3
			}
			// Straight to the one broker: no coordinator lookup and no
			// cached metadata between the two tries.
			resp, err := cl.Broker(1).Request(ctx, c.req())
			if err != nil {
				t.Fatal(err)
			}
			if got := firstErrorCode(resp); got != c.want.Code {
				t.Fatalf("without ACLs: %v, want %s", kerr.ErrorForCode(got), c.want.Message)
			}
			for _, g := range c.grant {
				addACLs(t, adm, g)
			}
			t.Cleanup(func() {
				if _, err := adm.DeleteACLs(ctxTimeout(t, 20*time.Second), everything); err != nil {
					t.Error(err)
				}
			})
			resp, err = cl.Broker(1).Request(ctx, c.req())
			if err != nil {
				t.Fatal(err)
			}
			if got := firstErrorCode(resp); authzCodes[got] {
				t.Fatalf("with ACLs: %v: %+v", kerr.ErrorForCode(got), resp)
			}
		})
	}
}

// DENY wins over ALLOW, a prefixed ACL matches, a wildcard principal
// applies to all, and a super user (admin over SASL) passes without ACLs:
// through real clients.
func TestAuthorizationRules(t *testing.T) {
	b, adm := aclBroker(t)
	createTopic(t, adm, 1, "team-a-orders")
	createTopic(t, adm, 1, "team-a-secret")
	addACLs(t, adm, allow().Topics("team-a-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))
	addACLs(t, adm, kadm.NewACLs().Deny("User:*").Topics("team-a-secret").Operations(kadm.OpWrite))
	alice := aliceClient(t, b)
	ctx := ctxTimeout(t, 30*time.Second)
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "team-a-orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("prefixed ALLOW: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "team-a-secret", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DENY over ALLOW: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	admin := newClient(t, b.Addr("SASL").String(), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()), kgo.RequestRetries(0))
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "team-a-secret", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("super user: %v", err)
	}
	// Metadata for all topics lists only what alice may describe.
	md, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := md.Names(); len(names) != 2 {
		t.Fatalf("alice sees %v, want the two team-a- topics", names)
	}
}
