package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GROUP resources (type 32): IncrementalAlterConfigs and AlterConfigs set
// them, DescribeConfigs reports every group config with Kafka's sources
// and synonyms, and out-of-bounds values are INVALID_CONFIG.
func TestGroupConfigResources(t *testing.T) {
	h := newAdminHandler(t, "group.consumer.heartbeat.interval.ms=6000")
	group := kmsg.ConfigResourceTypeGroupConfig

	// Nothing set: the broker's values, DEFAULT_CONFIG (Kafka reports the
	// broker's group.consumer.* value so, even when it is set statically).
	r := describeConfigs(t, h, 4, group, "g")
	if r.ErrorCode != 0 || len(r.Configs) != 7 {
		t.Fatalf("%+v", r)
	}
	for _, c := range r.Configs {
		want := map[string]string{"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "6000",
			"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "5000", "share.record.lock.duration.ms": "30000",
			"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted"}[c.Name]
		typ := kmsg.ConfigTypeInt
		if c.Name == "share.auto.offset.reset" || c.Name == "share.isolation.level" {
			typ = kmsg.ConfigTypeString
		}
		if *c.Value != want || c.Source != kmsg.ConfigSourceDefaultConfig || c.ReadOnly || c.IsSensitive ||
			c.ConfigType != typ || c.Documentation == nil || len(c.ConfigSynonyms) != 1 ||
			c.ConfigSynonyms[0].Name != c.Name || *c.ConfigSynonyms[0].Value != want || c.ConfigSynonyms[0].Source != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("%+v", c)
		}
	}

	if r := incAlter(t, h, group, "g", false, op("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, "50000")); r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	r = describeConfigs(t, h, 4, group, "g", "consumer.session.timeout.ms")
	if len(r.Configs) != 1 {
		t.Fatalf("%+v", r)
	}
	if c := r.Configs[0]; *c.Value != "50000" || c.Source != kmsg.ConfigSourceGroupConfig ||
		len(c.ConfigSynonyms) != 1 || c.ConfigSynonyms[0].Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("%+v", c)
	}
	// v0 has no source: is_default says it.
	if c := describeConfigs(t, h, 0, group, "g", "consumer.session.timeout.ms").Configs[0]; c.IsDefault || *c.Value != "50000" {
		t.Fatalf("%+v", c)
	}

	for _, tc := range []struct {
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want int16
		msg  string
	}{
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, "70000")}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.heartbeat.interval.ms", kmsg.IncrementalAlterConfigOpSet, "1000")}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("streams.heartbeat.interval.ms", kmsg.IncrementalAlterConfigOpSet, "5000")}, kerr.InvalidConfig.Code,
			"Unknown group config name: streams.heartbeat.interval.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("share.heartbeat.interval.ms", kmsg.IncrementalAlterConfigOpSet, "45000")}, kerr.InvalidConfig.Code,
			"share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, "50000"),
			op("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, "50000")}, kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
	} {
		r := incAlter(t, h, group, "g", false, tc.ops...)
		if r.ErrorCode != tc.want || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("%+v: %d %v", tc.ops, r.ErrorCode, r.ErrorMessage)
		}
	}
	if r := incAlter(t, h, group, "", false, op("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, "50000")); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", r)
	}
	if r := describeConfigs(t, h, 4, group, ""); r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != "Group name must not be empty" {
		t.Fatalf("%+v", r)
	}
	// validate_only changes nothing.
	incAlter(t, h, group, "g", true, op("consumer.session.timeout.ms", kmsg.IncrementalAlterConfigOpSet, "55000"))
	if got := h.image().GroupConfigs("g"); len(got) != 1 || got["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("%v", got)
	}

	// The legacy AlterConfigs takes GROUP too and replaces the whole set.
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	req.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: group, ResourceName: "g",
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "consumer.heartbeat.interval.ms", Value: kmsg.StringPtr("7000")}}}}
	resp := roundTrip[*kmsg.AlterConfigsResponse](t, h.handleAlterConfigs(testRC(), req))
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("%+v", resp.Resources)
	}
	if got := h.image().GroupConfigs("g"); len(got) != 1 || got["consumer.heartbeat.interval.ms"] != "7000" {
		t.Fatalf("%v", got)
	}
	r = describeConfigs(t, h, 4, group, "g")
	for _, c := range r.Configs {
		if c.Name == "consumer.session.timeout.ms" && (c.Source != kmsg.ConfigSourceDefaultConfig || *c.Value != "45000") ||
			c.Name == "consumer.heartbeat.interval.ms" && (c.Source != kmsg.ConfigSourceGroupConfig || *c.Value != "7000") {
			t.Fatalf("%+v", c)
		}
	}
}
