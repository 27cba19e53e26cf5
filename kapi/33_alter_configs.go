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
//   - GROUP "<group id>" (type 32): accepted, as Kafka's
//     ConfigAdminManager.preprocess lets it through to the controller;
//     validated as for IncrementalAlterConfigs (see
//     44_incremental_alter_configs.go).
//   - any other type, BROKER_LOGGER included: INVALID_REQUEST.
//
// The controller decides and writes ConfigRecords; every broker applies
// them (the logs' configs, the dynamic broker configs in its KafkaConfig).
// This broker forwards the request and waits until its own metadata shows
// the change. validate_only checks everything and changes nothing.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleAlterConfigs(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterConfigsRequest)
	// ALTER_CONFIGS on each resource; the refused ones are answered
	// here, in their place, and not forwarded.
	refused := map[int]error{}
	all := req.Resources
	kept := req.Resources[:0:0]
	for i, res := range req.Resources {
		if err := h.authorizeConfigResource(rc, az.AlterConfigs, res.ResourceType, res.ResourceName); err != nil {
			refused[i] = err
			continue
		}
		kept = append(kept, res)
	}
	req.Resources = kept
	var resp *kmsg.AlterConfigsResponse
	if len(kept) > 0 || len(refused) == 0 {
		r, err := h.forward(rc.Context(), req, 0)
		if err != nil {
			req.Resources = all
			return errorResponse(req, err)
		}
		resp = r.(*kmsg.AlterConfigsResponse)
	} else {
		resp = req.ResponseKind().(*kmsg.AlterConfigsResponse)
	}
	if len(refused) > 0 {
		merged := make([]kmsg.AlterConfigsResponseResource, 0, len(all))
		j := 0
		for i, res := range all {
			if err, ok := refused[i]; ok {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, ErrorCode(err), ErrorMessage(err)
				merged = append(merged, rr)
			} else if j < len(resp.Resources) {
				merged = append(merged, resp.Resources[j])
				j++
			}
		}
		resp.Resources = merged
	}
	if !req.ValidateOnly {
		var changed []configExpectation
		for i, rr := range resp.Resources {
			if rr.ErrorCode != 0 || i >= len(req.Resources) {
				continue
			}
			e := configExpectation{res: configResource(rr.ResourceType, rr.ResourceName), set: map[string]string{}, whole: true}
			for _, c := range req.Resources[i].Configs {
				if c.Value != nil {
					e.set[c.Name] = *c.Value
				}
			}
			changed = append(changed, e)
		}
		h.waitForConfigs(rc.Context(), changed)
	}
	return resp
}
