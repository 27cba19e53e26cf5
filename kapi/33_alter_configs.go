package kapi

// AlterConfigs, versions 0 to 2.
//
//   - v0: resources (type, name, the complete new set of configs) and
//     validate_only.
//   - v1: no change on the wire.
//   - v2: flexible.
//
// AlterConfigs replaces the whole set of a resource's configs: keys not
// given are removed (Kafka deprecates it for IncrementalAlterConfigs for
// that reason). Semantics are Kafka's ConfigAdminManager.preprocess on the
// broker and ConfigurationControlManager.legacyAlterConfigs on the
// controller:
//   - a resource given twice: INVALID_REQUEST for each; duplicate keys or a
//     null value: INVALID_REQUEST.
//   - TOPIC: "" is INVALID_REQUEST, an invalid name INVALID_TOPIC_EXCEPTION;
//     unknown keys and bad values INVALID_CONFIG; then an unknown topic
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER "<node.id>" or "" (cluster default): every key Kafka defines,
//     at Kafka's dynamic update mode (read-only keys, SSL keys without a
//     listener prefix, per-broker keys at the cluster level and bad values
//     are INVALID_REQUEST with Kafka's messages, see
//     config.KafkaConfig.ValidateDynamic); keys Kafka does not define are
//     custom configs, stored as Kafka does; another broker id
//     INVALID_REQUEST. Installing the change resizes the pools that follow
//     it (num.io.threads, num.network.threads).
//   - any other type, BROKER_LOGGER included: INVALID_REQUEST.
//
// Changes are persisted in the metadata store (whose listeners update the
// logs' configs) and dynamic broker configs are installed in the broker's
// KafkaConfig. validate_only checks everything and changes nothing.

import (
	"maps"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
)

func (h *Handler) handleAlterConfigs(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, r := range req.Resources {
		var err error
		if dup[i] {
			err = apierr.Errorf(kerr.InvalidRequest, "Each resource must appear at most once.")
		} else {
			err = h.legacyAlter(r, req.ValidateOnly)
		}
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (h *Handler) legacyAlter(r kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	seen := map[string]bool{}
	var nulls []string
	configs := map[string]string{}
	for _, c := range r.Configs {
		if seen[c.Name] {
			return apierr.Errorf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return apierr.Errorf(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker:
		return h.alterResource(r.ResourceType, r.ResourceName, func(map[string]string) (map[string]string, error) {
			return configs, nil
		}, validateOnly)
	}
	return apierr.Errorf(kerr.InvalidRequest, "Unknown resource type %d", int8(r.ResourceType))
}

// duplicateResources marks the resources that appear more than once.
func duplicateResources(n int, at func(int) (kmsg.ConfigResourceType, string)) []bool {
	type key struct {
		t    kmsg.ConfigResourceType
		name string
	}
	count := map[key]int{}
	for i := range n {
		t, name := at(i)
		count[key{t, name}]++
	}
	dup := make([]bool, n)
	for i := range n {
		t, name := at(i)
		dup[i] = count[key{t, name}] > 1
	}
	return dup
}

// alterResource computes a TOPIC or BROKER resource's new complete config
// set from its current one, validates it and stores it.
func (h *Handler) alterResource(typ kmsg.ConfigResourceType, name string, update func(current map[string]string) (map[string]string, error), validateOnly bool) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if name == "" {
			return apierr.Errorf(kerr.InvalidRequest, "Default topic resources are not allowed.")
		}
		if err := validateTopicName(name); err != nil {
			return err
		}
		t, exists := h.cfg.Metadata.Topic(name)
		next, err := update(maps.Clone(t.Configs))
		if err != nil {
			return err
		}
		if err := h.cfg.Broker.ValidateTopicConfigs(next); err != nil {
			return err
		}
		if !exists {
			return apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
		}
		if validateOnly {
			return nil
		}
		if _, err := h.cfg.Metadata.AlterTopicConfigs(name, next); err != nil {
			return err
		}
		h.log.Info("altered topic configs", "topic", name, "configs", next)
		return nil

	case kmsg.ConfigResourceTypeBroker:
		if err := h.cfg.Broker.CheckBrokerResource(name); err != nil {
			return err
		}
		next, err := update(h.cfg.Metadata.BrokerConfigs(name))
		if err != nil {
			return err
		}
		if err := h.cfg.Broker.ValidateDynamic(name, next); err != nil {
			return err
		}
		if validateOnly {
			return nil
		}
		if err := h.cfg.Metadata.AlterBrokerConfigs(name, next); err != nil {
			return err
		}
		for _, w := range h.cfg.Broker.SetDynamic(name, next) {
			h.log.Warn(w)
		}
		h.log.Info("altered dynamic broker configs", "resource", name, "configs", next)
		return nil
	}
	return apierr.Errorf(kerr.InvalidRequest, "Unknown resource type %d", int8(typ))
}
