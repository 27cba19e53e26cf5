package kapi

// DescribeConfigs, versions 0 to 4.
//
//   - v0: resources (type, name, optional key filter); entries carry
//     name, value, read_only, is_default and is_sensitive.
//   - v1: include_synonyms; entries carry config_source (instead of
//     is_default) and synonyms (KIP-226).
//   - v2: no change on the wire.
//   - v3: include_documentation; entries carry config_type and
//     documentation (KIP-569).
//   - v4: flexible.
//
// Resources, as Kafka's ConfigHelper.describeConfigs:
//   - TOPIC: every topic config with the value in effect, source
//     TOPIC_CONFIG for the topic's overrides, else where the broker default
//     comes from (see broker/config). Invalid name: INVALID_TOPIC_EXCEPTION;
//     unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER "<node.id>": every broker config Kafka defines, read_only
//     unless it can be changed dynamically, sensitive (PASSWORD, and keys
//     of no known type) with a null value; a key derived from another when
//     unset (log.dirs from log.dir, ...) with the value in effect and the
//     source it comes from; the keys Moldau only stores say so in their
//     documentation. BROKER "": the cluster-wide dynamic defaults
//     only. Another broker id, or a name that is not a number:
//     INVALID_REQUEST.
//   - BROKER_LOGGER "<node.id>": answered with no loggers (Moldau logs
//     with log/slog and has no per-logger levels yet); another id or an
//     empty name: INVALID_REQUEST, as Kafka.
//   - GROUP "<group id>" (KIP-848, type 32): the group configs Moldau
//     defines (consumer.session.timeout.ms, consumer.heartbeat.interval.ms;
//     Kafka also lists its share.* and streams.* keys), as Kafka's
//     createGroupConfigEntry: the group's value with source GROUP_CONFIG,
//     else the broker's group.consumer.* value with source DEFAULT_CONFIG,
//     one synonym of the same name, value and source. The group need not
//     exist. An empty name: INVALID_REQUEST "Group name must not be
//     empty".
//   - Any other type (CLIENT_METRICS): INVALID_REQUEST.
//
// A null or empty key filter means every key; unknown keys are omitted.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/controller"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDescribeConfigs(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		err := h.authorizeConfigResource(rc, az.DescribeConfigs, r.ResourceType, r.ResourceName)
		var entries []config.ConfigEntry
		if err == nil {
			entries, err = h.describeResource(r)
		}
		if err != nil {
			rr.ErrorCode = ErrorCode(err)
			rr.ErrorMessage = ErrorMessage(err)
			rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		for _, e := range entries {
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name = e.Name
			c.Value = e.Value
			c.ReadOnly = e.ReadOnly
			c.IsDefault = e.Source == config.SourceDefault
			c.Source = kmsg.ConfigSource(e.Source)
			c.IsSensitive = e.Sensitive
			c.ConfigType = kmsg.ConfigType(e.Type)
			if req.IncludeSynonyms {
				for _, s := range e.Synonyms {
					cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					cs.Name, cs.Value, cs.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
					c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
				}
			}
			if req.IncludeDocumentation && e.Documentation != "" {
				doc := e.Documentation
				c.Documentation = &doc
			}
			rr.Configs = append(rr.Configs, c)
		}
		if rr.Configs == nil {
			rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (h *Handler) describeResource(r kmsg.DescribeConfigsRequestResource) ([]config.ConfigEntry, error) {
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if err := controller.ValidateTopicName(r.ResourceName); err != nil {
			return nil, err
		}
		t, ok := h.image().Topic(r.ResourceName)
		if !ok {
			return nil, apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
		}
		return h.cfg.Broker.DescribeTopic(t.Configs, r.ConfigNames), nil
	case kmsg.ConfigResourceTypeBroker:
		return h.cfg.Broker.DescribeBroker(r.ResourceName, r.ConfigNames)
	case kmsg.ConfigResourceTypeBrokerLogger:
		if err := h.checkBrokerLoggerResource(r.ResourceName); err != nil {
			return nil, err
		}
		return nil, nil
	case kmsg.ConfigResourceTypeGroupConfig:
		if r.ResourceName == "" {
			return nil, apierr.Errorf(kerr.InvalidRequest, "Group name must not be empty")
		}
		return h.cfg.Broker.DescribeGroup(h.image().GroupConfigs(r.ResourceName), r.ConfigNames), nil
	}
	return nil, apierr.Errorf(kerr.InvalidRequest, "Unsupported resource type: %s", r.ResourceType)
}

// checkBrokerLoggerResource applies Kafka's rules for BROKER_LOGGER names.
func (h *Handler) checkBrokerLoggerResource(name string) error {
	if name == "" {
		return apierr.Errorf(kerr.InvalidRequest, "Broker id must not be empty")
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return apierr.Errorf(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != h.cfg.NodeID {
		return apierr.Errorf(kerr.InvalidRequest, "Unexpected broker id, expected %d but received %s", h.cfg.NodeID, name)
	}
	return nil
}
