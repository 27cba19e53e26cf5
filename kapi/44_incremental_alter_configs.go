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
//   - GROUP "<group id>" (KIP-848, type 32): consumer.session.timeout.ms
//     and consumer.heartbeat.interval.ms, the whole resulting set checked
//     as Kafka's GroupConfigManager.validate (keys not set take the
//     broker's group.consumer.* defaults): an unknown key (share.* and
//     streams.* included, Moldau has no share or streams groups yet), a
//     value that is not an INT of at least 1, a value outside the broker's
//     group.consumer.min/max.* bounds, or a session timeout not above the
//     heartbeat interval: INVALID_CONFIG with Kafka's message; an empty
//     name: INVALID_REQUEST. The group need not exist; deleting a group
//     leaves its configs, as in Kafka. The group coordinator applies them
//     to the group's consumer-protocol members at their next heartbeat.
//   - BROKER_LOGGER "<node.id>": INVALID_CONFIG, since Moldau has no
//     per-logger levels yet (an empty or other id: INVALID_REQUEST);
//     answered by this broker, as Kafka does.
//   - any other type: INVALID_REQUEST.
//
// TOPIC, BROKER and GROUP resources are decided by the controller
// (broker/controller/configs.go); the broker forwards them and waits until
// its own metadata has the change.

import (
	"context"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleIncrementalAlterConfigs(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	// BROKER_LOGGER resources are this broker's; the rest go to the
	// controller as one request, and the answers are put back in order.
	fwd := *req
	fwd.Resources = nil
	local := map[int]error{}
	for i, r := range req.Resources {
		if err := h.authorizeConfigResource(rc, az.AlterConfigs, r.ResourceType, r.ResourceName); err != nil {
			local[i] = err
			continue
		}
		if r.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			local[i] = h.checkBrokerLoggerResource(r.ResourceName)
			if local[i] == nil {
				local[i] = apierr.Errorf(kerr.InvalidConfig, "Moldau does not support changing log levels with BROKER_LOGGER resources yet")
			}
			continue
		}
		if r.ResourceType == kmsg.ConfigResourceTypeBroker && r.ResourceName != "" {
			// Kafka's ConfigAdminManager: a broker's own configs are
			// sent to it (admin clients route them so), and it checks
			// what only it can (its Reconfigurables: a key store on its
			// disk) before the controller decides.
			if err := h.checkBrokerLoggerResource(r.ResourceName); err != nil {
				local[i] = err
				continue
			}
			if err := h.validateOwnBrokerConfigs(r); err != nil {
				local[i] = err
				continue
			}
		}
		fwd.Resources = append(fwd.Resources, r)
	}
	var fresp *kmsg.IncrementalAlterConfigsResponse
	var ferr error
	if len(fwd.Resources) > 0 {
		var r kmsg.Response
		if r, ferr = h.forward(rc.Context(), &fwd, 0); ferr == nil {
			fresp = r.(*kmsg.IncrementalAlterConfigsResponse)
		}
	}
	var changed []configExpectation
	j := 0
	for i, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		switch err, isLocal := local[i]; {
		case isLocal:
			rr.ErrorCode, rr.ErrorMessage = ErrorCode(err), ErrorMessage(err)
		case ferr != nil:
			rr.ErrorCode, rr.ErrorMessage = ErrorCode(ferr), ErrorMessage(ferr)
		case fresp != nil && j < len(fresp.Resources):
			rr = fresp.Resources[j]
			if rr.ErrorCode == 0 && !req.ValidateOnly {
				e := configExpectation{res: configResource(r.ResourceType, r.ResourceName), set: map[string]string{}}
				for _, c := range r.Configs {
					switch c.Op {
					case kmsg.IncrementalAlterConfigOpSet:
						e.set[c.Name] = *c.Value
					case kmsg.IncrementalAlterConfigOpDelete:
						e.deleted = append(e.deleted, c.Name)
					}
				}
				changed = append(changed, e)
			}
		}
		if _, isLocal := local[i]; !isLocal {
			j++
		}
		resp.Resources = append(resp.Resources, rr)
	}
	h.waitForConfigs(rc.Context(), changed)
	return resp
}

func configResource(t kmsg.ConfigResourceType, name string) metadata.ConfigResource {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return metadata.ConfigResource{Type: metadata.TopicResource, Name: name}
	case kmsg.ConfigResourceTypeGroupConfig:
		return metadata.ConfigResource{Type: metadata.GroupResource, Name: name}
	}
	return metadata.ConfigResource{Type: metadata.BrokerResource, Name: name}
}

// configExpectation is what a resource's configs must show once a change
// the controller accepted has reached this broker.
type configExpectation struct {
	res     metadata.ConfigResource
	set     map[string]string
	deleted []string
	whole   bool // set is the whole config (AlterConfigs)
}

func (e configExpectation) met(im *metadata.Image) bool {
	cur := im.Configs[e.res]
	if e.whole && len(cur) != len(e.set) {
		return false
	}
	for k, v := range e.set {
		if cur[k] != v {
			return false
		}
	}
	for _, k := range e.deleted {
		if _, ok := cur[k]; ok {
			return false
		}
	}
	return true
}

// waitForConfigs waits, bounded, until this broker's metadata shows the
// config changes the controller accepted, so that the client's next
// DescribeConfigs here sees them.
func (h *Handler) waitForConfigs(ctx context.Context, changed []configExpectation) {
	if len(changed) == 0 {
		return
	}
	h.waitForMetadata(ctx, 5*time.Second, func(im *metadata.Image) bool {
		for _, e := range changed {
			if !e.met(im) {
				return false
			}
		}
		return true
	})
}

// validateOwnBrokerConfigs checks this broker's resource as it would be
// after r's SET and DELETE operations (on the configs of the image this
// broker has), as Kafka's DynamicBrokerConfig.validate. APPEND and
// SUBTRACT leave it to the controller. Nil when there is nothing to check.
func (h *Handler) validateOwnBrokerConfigs(r kmsg.IncrementalAlterConfigsRequestResource) error {
	if h.cfg.Broker == nil {
		return nil
	}
	next := maps.Clone(h.image().Configs[metadata.ConfigResource{Type: metadata.BrokerResource, Name: r.ResourceName}])
	if next == nil {
		next = map[string]string{}
	}
	for _, cf := range r.Configs {
		switch {
		case cf.Op == kmsg.IncrementalAlterConfigOpSet && cf.Value != nil:
			next[cf.Name] = *cf.Value
		case cf.Op == kmsg.IncrementalAlterConfigOpDelete:
			delete(next, cf.Name)
		default:
			return nil
		}
	}
	return h.cfg.Broker.ValidateDynamic(r.ResourceName, next)
}
