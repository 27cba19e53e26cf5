package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func groupIncAlter(t *testing.T, c *QuorumController, group string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group, Configs: ops}}
	resp, err := c.IncrementalAlterConfigs(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0]
}

func setOp(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(value)}
}

func groupConfigsOf(t *testing.T, c *QuorumController, group string) map[string]string {
	t.Helper()
	im, _ := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	return im.GroupConfigs(group)
}

// Group configs (resource type 32) are validated against the broker's
// group.consumer.* bounds with Kafka's messages, need no existing group,
// and are stored as ConfigRecords of type 32.
func TestGroupConfigs(t *testing.T) {
	c, _, _ := newTestController(t)
	if r := groupIncAlter(t, c, "g", setOp("consumer.session.timeout.ms", "50000")); r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	if got := groupConfigsOf(t, c, "g"); len(got) != 1 || got["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("%v", got)
	}
	for _, tc := range []struct {
		group string
		ops   []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code  int16
		msg   string
	}{
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "1000")}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "60001")}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.heartbeat.interval.ms", "4999")}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.heartbeat.interval.ms", "15001")}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "x")}, kerr.InvalidConfig.Code,
			"Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "0")}, kerr.InvalidConfig.Code,
			"Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("streams.session.timeout.ms", "50000")}, kerr.InvalidConfig.Code,
			"Unknown group config name: streams.session.timeout.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.record.lock.duration.ms", "999")}, kerr.InvalidConfig.Code,
			"Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.record.lock.duration.ms", "14999")}, kerr.InvalidConfig.Code,
			"share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.session.timeout.ms", "44999")}, kerr.InvalidConfig.Code,
			"share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.auto.offset.reset", "none")}, kerr.InvalidConfig.Code,
			"Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.auto.offset.reset", "by_duration:-PT1H")}, kerr.InvalidConfig.Code,
			"Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.isolation.level", "READ_COMMITTED")}, kerr.InvalidConfig.Code,
			"Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"g", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "consumer.session.timeout.ms", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("1")}},
			kerr.InvalidConfig.Code, "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."},
		{"", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "50000")}, kerr.InvalidRequest.Code,
			"Default group resources are not allowed."},
	} {
		r := groupIncAlter(t, c, tc.group, tc.ops...)
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("%+v: %d %v", tc.ops, r.ErrorCode, r.ErrorMessage)
		}
	}
	if got := groupConfigsOf(t, c, "g"); len(got) != 1 || got["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("a refused change was written: %v", got)
	}

	// The legacy AlterConfigs replaces the whole set, as for topics.
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g",
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "consumer.heartbeat.interval.ms", Value: kmsg.StringPtr("6000")}}}}
	resp, err := c.AlterConfigs(ctx(t), req)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	if got := groupConfigsOf(t, c, "g"); len(got) != 1 || got["consumer.heartbeat.interval.ms"] != "6000" {
		t.Fatalf("%v", got)
	}
	// Deleting the last key removes the resource.
	del := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "consumer.heartbeat.interval.ms", Op: kmsg.IncrementalAlterConfigOpDelete}
	if r := groupIncAlter(t, c, "g", del); r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	if got := groupConfigsOf(t, c, "g"); got != nil {
		t.Fatalf("%v", got)
	}
}
