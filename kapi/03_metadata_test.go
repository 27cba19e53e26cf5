package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func metadataReq(v int16, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = v
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestMetadata(t *testing.T) {
	h := newAdminHandler(t)
	if _, err := h.createTopic("orders", 2, 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.createTopic("__consumer_offsets", 1, 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	for v := int16(0); v <= 13; v++ {
		// All topics: null list (v1+), empty list at v0.
		req := metadataReq(v)
		if v == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{}
		}
		resp := roundTrip[*kmsg.MetadataResponse](t, h.handleMetadata(testRC(), req))
		if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "localhost" || resp.Brokers[0].Port != 9092 || len(resp.Topics) != 2 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		o := resp.Topics[1]
		if *o.Topic != "orders" || len(o.Partitions) != 2 || o.Partitions[1].Leader != 1 || o.Partitions[1].ISR[0] != 1 {
			t.Fatalf("v%d: %+v", v, o)
		}
		if v >= 1 && (!resp.Topics[0].IsInternal || resp.ControllerID != 1) {
			t.Fatalf("v%d: internal %v controller %d", v, resp.Topics[0].IsInternal, resp.ControllerID)
		}
		if v >= 2 && *resp.ClusterID != "test-cluster" {
			t.Fatalf("v%d cluster id", v)
		}
		if v >= 10 && o.TopicID == [16]byte{} {
			t.Fatalf("v%d topic id", v)
		}
		// v1+: empty list = no topics.
		if v >= 1 {
			req := metadataReq(v)
			req.Topics = []kmsg.MetadataRequestTopic{}
			if resp := h.handleMetadata(testRC(), req).(*kmsg.MetadataResponse); len(resp.Topics) != 0 {
				t.Fatalf("v%d: empty list gave %d topics", v, len(resp.Topics))
			}
		}
	}

	// Auto-creation: v4+ honours allow_auto_topic_creation.
	req := metadataReq(9, "new1", "bad name")
	resp := h.handleMetadata(testRC(), req).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || resp.Topics[1].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("%+v", resp.Topics)
	}
	req.AllowAutoTopicCreation = true
	resp = h.handleMetadata(testRC(), req).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("%+v", resp.Topics[0])
	}
	if _, ok := h.image().Topic("new1"); !ok {
		t.Fatal("not auto-created")
	}
	resp = h.handleMetadata(testRC(), metadataReq(3, "new2", "__transaction_state")).(*kmsg.MetadataResponse) // v3 always allows
	if resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", resp.Topics)
	}
	resp = h.handleMetadata(testRC(), metadataReq(3, "new2")).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("%+v", resp.Topics)
	}

	// By topic id (v12+).
	orders, _ := h.image().Topic("orders")
	req = metadataReq(12)
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: orders.ID}, {TopicID: [16]byte{1}}}
	resp = roundTrip[*kmsg.MetadataResponse](t, h.handleMetadata(testRC(), req))
	if *resp.Topics[0].Topic != "orders" || resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("%+v", resp.Topics)
	}

	// Authorized operations (v8+).
	req = metadataReq(10, "orders")
	req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = true, true
	resp = roundTrip[*kmsg.MetadataResponse](t, h.handleMetadata(testRC(), req))
	if resp.Topics[0].AuthorizedOperations != az.AllOperations(az.Topic) || resp.AuthorizedOperations != az.AllOperations(az.Cluster) {
		t.Fatalf("%d %d", resp.Topics[0].AuthorizedOperations, resp.AuthorizedOperations)
	}
	if resp := h.handleMetadata(testRC(), metadataReq(10, "orders")).(*kmsg.MetadataResponse); resp.Topics[0].AuthorizedOperations != authorizedOperationsOmitted {
		t.Fatal(resp.Topics[0].AuthorizedOperations)
	}

	// A listener without an advertised endpoint.
	rc := testRC()
	rc.Listener = "OTHER"
	resp = h.handleMetadata(rc, metadataReq(9, "orders")).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.ListenerNotFound.Code {
		t.Fatalf("%+v", resp)
	}
}

func TestMetadataNoAutoCreate(t *testing.T) {
	h := newAdminHandler(t, "auto.create.topics.enable=false")
	resp := h.handleMetadata(testRC(), metadataReq(3, "x")).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", resp.Topics)
	}
}
