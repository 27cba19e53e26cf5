package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeConfigs(t *testing.T, h *Handler, v int16, typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = v
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: typ, ResourceName: name, ConfigNames: keys}}
	return roundTrip[*kmsg.DescribeConfigsResponse](t, h.handleDescribeConfigs(testRC(), req)).Resources[0]
}

func TestDescribeConfigs(t *testing.T) {
	h := newAdminHandler(t, "log.retention.hours=24")
	h.createTopic("a", 1, 1, nil, map[string]string{"cleanup.policy": "compact"}, false)
	for v := int16(0); v <= 4; v++ {
		r := describeConfigs(t, h, v, kmsg.ConfigResourceTypeTopic, "a")
		if r.ErrorCode != 0 || len(r.Configs) < 20 {
			t.Fatalf("v%d: %+v", v, r)
		}
		for _, c := range r.Configs {
			switch c.Name {
			case "cleanup.policy":
				if *c.Value != "compact" || v >= 1 && c.Source != kmsg.ConfigSourceDynamicTopicConfig || v == 0 && c.IsDefault {
					t.Fatalf("v%d: %+v", v, c)
				}
			case "retention.ms":
				if *c.Value != "86400000" || v >= 1 && (c.Source != kmsg.ConfigSourceStaticBrokerConfig || c.ConfigSynonyms[0].Name != "log.retention.hours") {
					t.Fatalf("v%d: %+v", v, c)
				}
				if v >= 3 && (c.ConfigType != kmsg.ConfigTypeLong || c.Documentation == nil) {
					t.Fatalf("v%d: %+v", v, c)
				}
			}
		}
	}
	if r := describeConfigs(t, h, 4, kmsg.ConfigResourceTypeTopic, "a", "segment.ms"); len(r.Configs) != 1 {
		t.Fatalf("%+v", r)
	}
	if r := describeConfigs(t, h, 4, kmsg.ConfigResourceTypeTopic, "missing"); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", r)
	}
	r := describeConfigs(t, h, 4, kmsg.ConfigResourceTypeBroker, "1", "log.retention.hours", "queued.max.requests")
	if r.ErrorCode != 0 || len(r.Configs) != 2 || r.Configs[0].Source != kmsg.ConfigSourceStaticBrokerConfig || !r.Configs[1].ReadOnly {
		t.Fatalf("%+v", r)
	}
	if r := describeConfigs(t, h, 4, kmsg.ConfigResourceTypeBroker, "2"); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%+v", r)
	}
	if r := describeConfigs(t, h, 4, kmsg.ConfigResourceTypeBroker, ""); r.ErrorCode != 0 || len(r.Configs) != 0 {
		t.Fatalf("%+v", r)
	}
	if r := describeConfigs(t, h, 4, kmsg.ConfigResourceTypeBrokerLogger, "1"); r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
}
