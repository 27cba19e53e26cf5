package kapi

// IncrementalAlterConfigs, versions 0 to 1.
//
//   - v0: resources with per-key operations SET, DELETE, APPEND and
//     SUBTRACT (KIP-339); validate_only.
//   - v1: flexible.
//
// Semantics are Kafka's ConfigAdminManager.preprocess (broker) and
// ConfigurationControlManager.incrementalAlterConfigs (controller):
//   - a resource given twice: INVALID_REQUEST for each; a key given twice
//     in one resource, or a null value for anything but DELETE:
//     INVALID_REQUEST; an unknown operation: INVALID_REQUEST.
//   - APPEND and SUBTRACT apply to LIST configs only (else INVALID_CONFIG);
//     they start from the current value, or the config's default, split on
//     commas; APPEND adds the values not yet present, SUBTRACT removes
//     them. DELETE of a key that is not set is a no-op.
//   - the resulting set is validated as for AlterConfigs (see
//     33_alter_configs.go): TOPIC errors are INVALID_CONFIG, BROKER errors
//     INVALID_REQUEST; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER_LOGGER "<node.id>": INVALID_CONFIG, since Moldau has no
//     per-logger levels yet (an empty or other id: INVALID_REQUEST).
//   - any other type: INVALID_REQUEST.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/config"
)

func (h *Handler) handleIncrementalAlterConfigs(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, r := range req.Resources {
		var err error
		if dup[i] {
			err = apierr.Errorf(kerr.InvalidRequest, "Each resource must appear at most once.")
		} else {
			err = h.incrementalAlter(r, req.ValidateOnly)
		}
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.ErrorCode, rr.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (h *Handler) incrementalAlter(r kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	seen := map[string]bool{}
	var nulls []string
	for _, c := range r.Configs {
		if seen[c.Name] {
			return apierr.Errorf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return apierr.Errorf(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeBrokerLogger:
		if err := h.checkBrokerLoggerResource(r.ResourceName); err != nil {
			return err
		}
		return apierr.Errorf(kerr.InvalidConfig, "Moldau does not support changing log levels with BROKER_LOGGER resources yet")
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker:
	default:
		return apierr.Errorf(kerr.InvalidRequest, "Unknown resource type %d", int8(r.ResourceType))
	}
	topic := r.ResourceType == kmsg.ConfigResourceTypeTopic
	return h.alterResource(r.ResourceType, r.ResourceName, func(cur map[string]string) (map[string]string, error) {
		if cur == nil {
			cur = map[string]string{}
		}
		for _, c := range r.Configs {
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				cur[c.Name] = *c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, c.Name)
			case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
				if t, ok := config.ConfigType(topic, c.Name); !ok || t != config.TypeList {
					return nil, apierr.Errorf(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", c.Op, c.Name)
				}
				old, ok := cur[c.Name]
				if !ok {
					old, _ = config.DefaultValue(topic, c.Name)
				}
				cur[c.Name] = applyListOp(c.Op, old, *c.Value)
			default:
				return nil, apierr.Errorf(kerr.InvalidRequest, "Unknown operations type %d", int8(c.Op))
			}
		}
		return cur, nil
	}, validateOnly)
}

// applyListOp applies APPEND or SUBTRACT to a comma-separated list, as
// Kafka's ConfigurationControlManager.
func applyListOp(op kmsg.IncrementalAlterConfigOp, old, values string) string {
	var parts []string
	if strings.TrimSpace(old) != "" {
		for _, p := range strings.Split(old, ",") {
			parts = append(parts, strings.TrimSpace(p))
		}
	}
	for _, v := range strings.Split(values, ",") {
		v = strings.TrimSpace(v)
		if op == kmsg.IncrementalAlterConfigOpAppend {
			if !slices.Contains(parts, v) {
				parts = append(parts, v)
			}
		} else if i := slices.Index(parts, v); i >= 0 {
			parts = slices.Delete(parts, i, i+1)
		}
	}
	return strings.Join(parts, ",")
}
