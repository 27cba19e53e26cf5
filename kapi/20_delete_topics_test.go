package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDeleteTopics(t *testing.T) {
	h := newAdminHandler(t)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := h.createTopic(n, 1, 1, nil, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 5
	req.TopicNames = []string{"a", "missing", "b", "b"}
	resp := roundTrip[*kmsg.DeleteTopicsResponse](t, h.handleDeleteTopics(testRC(), req))
	got := map[string]int16{}
	for _, rt := range resp.Topics {
		got[*rt.Topic] = rt.ErrorCode
	}
	if got["a"] != 0 || got["missing"] != kerr.UnknownTopicOrPartition.Code || got["b"] != kerr.InvalidRequest.Code || len(resp.Topics) != 3 {
		t.Fatalf("%v", got)
	}
	if _, ok := h.image().Topic("a"); ok {
		t.Fatal("a not deleted")
	}
	// v6: by id.
	c, _ := h.image().Topic("c")
	req = kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: c.ID}, {TopicID: [16]byte{9}}, {}}
	resp = roundTrip[*kmsg.DeleteTopicsResponse](t, h.handleDeleteTopics(testRC(), req))
	if resp.Topics[0].ErrorCode != 0 || *resp.Topics[0].Topic != "c" || resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code ||
		resp.Topics[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", resp.Topics)
	}
}

func TestDeleteTopicsDisabled(t *testing.T) {
	h := newAdminHandler(t, "delete.topic.enable=false")
	h.createTopic("a", 1, 1, nil, nil, false)
	for v, want := range map[int16]int16{2: kerr.InvalidRequest.Code, 3: kerr.TopicDeletionDisabled.Code} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = v
		req.TopicNames = []string{"a"}
		resp := h.handleDeleteTopics(testRC(), req).(*kmsg.DeleteTopicsResponse)
		if resp.Topics[0].ErrorCode != want {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
	}
}

func TestCreatePartitions(t *testing.T) {
	h := newAdminHandler(t)
	h.createTopic("a", 1, 1, nil, nil, false)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	req.Topics = []kmsg.CreatePartitionsRequestTopic{
		{Topic: "a", Count: 3},
		{Topic: "missing", Count: 3},
	}
	resp := roundTrip[*kmsg.CreatePartitionsResponse](t, h.handleCreatePartitions(testRC(), req))
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", resp.Topics)
	}
	for _, tc := range []struct {
		rt   kmsg.CreatePartitionsRequestTopic
		want int16
	}{
		{kmsg.CreatePartitionsRequestTopic{Topic: "a", Count: 3}, kerr.InvalidPartitions.Code},
		{kmsg.CreatePartitionsRequestTopic{Topic: "a", Count: 2}, kerr.InvalidPartitions.Code},
		{kmsg.CreatePartitionsRequestTopic{Topic: "a", Count: 5, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}}, kerr.InvalidReplicaAssignment.Code},
		{kmsg.CreatePartitionsRequestTopic{Topic: "a", Count: 4, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{2}}}}, kerr.InvalidReplicaAssignment.Code},
		{kmsg.CreatePartitionsRequestTopic{Topic: "a", Count: 4, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}}, 0},
	} {
		req.Topics = []kmsg.CreatePartitionsRequestTopic{tc.rt}
		resp := h.handleCreatePartitions(testRC(), req).(*kmsg.CreatePartitionsResponse)
		if resp.Topics[0].ErrorCode != tc.want {
			t.Errorf("%+v: %d %v", tc.rt, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
		}
	}
	if tp, _ := h.image().Topic("a"); len(tp.Partitions) != 4 {
		t.Fatal(len(tp.Partitions))
	}
}
