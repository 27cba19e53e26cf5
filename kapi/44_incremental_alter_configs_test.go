package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func incAlter(t *testing.T, h *Handler, typ kmsg.ConfigResourceType, name string, validateOnly bool, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	req.ValidateOnly = validateOnly
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: typ, ResourceName: name, Configs: ops}}
	return roundTrip[*kmsg.IncrementalAlterConfigsResponse](t, h.handleIncrementalAlterConfigs(testRC(), req)).Resources[0]
}

func op(name string, o kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = name, o
	if o != kmsg.IncrementalAlterConfigOpDelete {
		c.Value = kmsg.StringPtr(value)
	}
	return c
}

func TestIncrementalAlterConfigs(t *testing.T) {
	h := newAdminHandler(t)
	h.createTopic("a", 1, 1, nil, map[string]string{"segment.ms": "1000"}, false)
	topic := kmsg.ConfigResourceTypeTopic
	for _, tc := range []struct {
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want int16
	}{
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "5")}, 0},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact")}, 0},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("segment.ms", kmsg.IncrementalAlterConfigOpDelete, "")}, 0},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, "5")}, kerr.InvalidConfig.Code},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "x")}, kerr.InvalidConfig.Code},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("nope", kmsg.IncrementalAlterConfigOpSet, "1")}, kerr.InvalidConfig.Code},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("a", kmsg.IncrementalAlterConfigOpSet, "1"), op("a", kmsg.IncrementalAlterConfigOpSet, "1")}, kerr.InvalidRequest.Code},
	} {
		if r := incAlter(t, h, topic, "a", false, tc.ops...); r.ErrorCode != tc.want {
			t.Errorf("%+v: %d %v", tc.ops, r.ErrorCode, r.ErrorMessage)
		}
	}
	tp, _ := h.image().Topic("a")
	if len(tp.Configs) != 2 || tp.Configs["retention.ms"] != "5" || tp.Configs["cleanup.policy"] != "delete,compact" {
		t.Fatalf("%v", tp.Configs)
	}
	if r := incAlter(t, h, topic, "missing", false, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "5")); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", r)
	}
	// validate_only changes nothing.
	incAlter(t, h, topic, "a", true, op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "6"))
	if tp, _ := h.image().Topic("a"); tp.Configs["retention.ms"] != "5" {
		t.Fatal("validate_only changed the config")
	}

	// Broker: dynamic keys only.
	broker := kmsg.ConfigResourceTypeBroker
	if r := incAlter(t, h, broker, "", false, op("log.retention.ms", kmsg.IncrementalAlterConfigOpSet, "1234")); r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	if h.cfg.Broker.LogConfig(nil).RetentionMs != 1234 || h.image().BrokerConfigs("")["log.retention.ms"] != "1234" {
		t.Fatal("dynamic default not applied")
	}
	if r := incAlter(t, h, broker, "1", false, op("num.partitions", kmsg.IncrementalAlterConfigOpSet, "3")); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", r)
	}
	if r := incAlter(t, h, broker, "7", false, op("log.retention.ms", kmsg.IncrementalAlterConfigOpSet, "1")); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", r)
	}
	if r := incAlter(t, h, broker, "", false, op("log.retention.ms", kmsg.IncrementalAlterConfigOpDelete, "")); r.ErrorCode != 0 ||
		h.cfg.Broker.LogConfig(nil).RetentionMs != 7*24*3600*1000 {
		t.Fatalf("%+v", r)
	}
}

func TestAlterConfigs(t *testing.T) {
	h := newAdminHandler(t)
	h.createTopic("a", 1, 1, nil, map[string]string{"segment.ms": "1000"}, false)
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	req.Resources = []kmsg.AlterConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a", Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("7")}}},
		{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "1"},
	}
	resp := roundTrip[*kmsg.AlterConfigsResponse](t, h.handleAlterConfigs(testRC(), req))
	if resp.Resources[0].ErrorCode != 0 || resp.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", resp.Resources)
	}
	// The whole set is replaced: segment.ms is gone.
	if tp, _ := h.image().Topic("a"); len(tp.Configs) != 1 || tp.Configs["retention.ms"] != "7" {
		t.Fatalf("%v", tp.Configs)
	}
	req.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a"}, {ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a"}}
	resp = h.handleAlterConfigs(testRC(), req).(*kmsg.AlterConfigsResponse)
	if resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code || resp.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", resp.Resources)
	}
}
