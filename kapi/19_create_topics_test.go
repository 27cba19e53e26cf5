package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createReqTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

func TestCreateTopics(t *testing.T) {
	h := newAdminHandler(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	assigned := createReqTopic("assigned", -1, -1)
	assigned.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 1, Replicas: []int32{1}}, {Partition: 0, Replicas: []int32{1}}}
	req.Topics = []kmsg.CreateTopicsRequestTopic{
		createReqTopic("a", 3, 1, "retention.ms", "1000"),
		createReqTopic("dup", 1, 1),
		createReqTopic("dup", 1, 1),
		createReqTopic("defaults", -1, -1),
		createReqTopic("rf3", 1, 3),
		createReqTopic("badcfg", 1, 1, "retention.ms", "soon"),
		assigned,
	}
	resp := roundTrip[*kmsg.CreateTopicsResponse](t, h.handleCreateTopics(testRC(), req))
	if len(resp.Topics) != 6 {
		t.Fatalf("%d results", len(resp.Topics))
	}
	a := resp.Topics[0]
	if a.ErrorCode != 0 || a.NumPartitions != 3 || a.ReplicationFactor != 1 || a.TopicID == [16]byte{} {
		t.Fatalf("%+v", a)
	}
	var found bool
	for _, c := range a.Configs {
		if c.Name == "retention.ms" {
			found = *c.Value == "1000" && c.Source == 1
		}
	}
	if !found {
		t.Fatalf("retention.ms not reported as a topic config: %+v", a.Configs)
	}
	want := []int16{0, kerr.InvalidRequest.Code, 0, kerr.InvalidReplicationFactor.Code, kerr.InvalidConfig.Code, 0}
	for i, w := range want {
		if resp.Topics[i].ErrorCode != w {
			t.Errorf("%s: code %d, want %d (%v)", resp.Topics[i].Topic, resp.Topics[i].ErrorCode, w, resp.Topics[i].ErrorMessage)
		}
	}
	if resp.Topics[4].ErrorMessage == nil {
		t.Error("no error message")
	}
	if tp, _ := h.image().Topic("assigned"); len(tp.Partitions) != 2 {
		t.Fatalf("%+v", tp)
	}
	// Again: already exists; validate_only creates nothing.
	req.Topics = []kmsg.CreateTopicsRequestTopic{createReqTopic("a", 1, 1), createReqTopic("dry", 1, 1)}
	req.ValidateOnly = true
	for v := int16(0); v <= 7; v++ {
		req.Version = v
		resp = roundTrip[*kmsg.CreateTopicsResponse](t, h.handleCreateTopics(testRC(), req))
		if resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code || resp.Topics[1].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
	}
	if _, ok := h.image().Topic("dry"); ok {
		t.Fatal("validate_only created a topic")
	}
}
