package controller

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
)

// Config changes (Kafka's ConfigurationControlManager): topic configs,
// dynamic broker configs (per broker id, or "" for the cluster default) and
// group configs (GROUP, KIP-848: per group id, validated as Kafka's
// ControllerConfigurationValidator does; the group need not exist).
// BROKER_LOGGER resources never reach the controller: each broker answers
// them itself.

// IncrementalAlterConfigs sets, deletes, appends to and subtracts from
// configs, each resource independently.
func (c *QuorumController) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	resp, _, err := write(ctx, c, "incrementalAlterConfigs", func(im *metadata.Image) (writeResult[*kmsg.IncrementalAlterConfigsResponse], error) {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		recs := alterEach(len(req.Resources), req.ValidateOnly,
			func(i int) (kmsg.ConfigResourceType, string) {
				return req.Resources[i].ResourceType, req.Resources[i].ResourceName
			},
			func(i int) ([]metadata.Record, error) { return c.incrementalAlter(im, req.Resources[i]) },
			func(i int, err error) {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
				rr.ErrorCode, rr.ErrorMessage = apierr.Code(err), errorMessage(err)
				resp.Resources = append(resp.Resources, rr)
			})
		return writeResult[*kmsg.IncrementalAlterConfigsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

// alterEach runs alter for each of n resources, refusing resources named
// twice, and gathers the records of those that succeed (none with
// validateOnly); result is called for each resource in order.
func alterEach(n int, validateOnly bool, at func(i int) (kmsg.ConfigResourceType, string),
	alter func(i int) ([]metadata.Record, error), result func(i int, err error)) []metadata.Record {
	dup := duplicateResources(n, at)
	var recs []metadata.Record
	for i := range n {
		var err error
		var rrecs []metadata.Record
		if dup[i] {
			err = apierr.Errorf(kerr.InvalidRequest, "Each resource must appear at most once.")
		} else {
			rrecs, err = alter(i)
		}
		if err == nil && !validateOnly {
			recs = append(recs, rrecs...)
		}
		result(i, err)
	}
	return recs
}

func (c *QuorumController) incrementalAlter(im *metadata.Image, r kmsg.IncrementalAlterConfigsRequestResource) ([]metadata.Record, error) {
	seen := map[string]bool{}
	var nulls []string
	for _, cf := range r.Configs {
		if seen[cf.Name] {
			return nil, apierr.Errorf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[cf.Name] = true
		if cf.Op != kmsg.IncrementalAlterConfigOpDelete && cf.Value == nil {
			nulls = append(nulls, cf.Name)
		}
	}
	if len(nulls) > 0 {
		return nil, apierr.Errorf(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeGroupConfig:
	default:
		return nil, apierr.Errorf(kerr.InvalidRequest, "Unknown resource type %d", int8(r.ResourceType))
	}
	topic := r.ResourceType == kmsg.ConfigResourceTypeTopic
	group := r.ResourceType == kmsg.ConfigResourceTypeGroupConfig
	return c.alterResource(im, r.ResourceType, r.ResourceName, func(cur map[string]string) (map[string]string, error) {
		for _, cf := range r.Configs {
			switch cf.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				cur[cf.Name] = *cf.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, cf.Name)
			case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
				// No group config is a LIST.
				if t, ok := config.ConfigType(topic, cf.Name); group || !ok || t != config.TypeList {
					return nil, apierr.Errorf(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", cf.Op, cf.Name)
				}
				old, ok := cur[cf.Name]
				if !ok {
					old, _ = config.DefaultValue(topic, cf.Name)
				}
				cur[cf.Name] = applyListOp(cf.Op, old, *cf.Value)
			default:
				return nil, apierr.Errorf(kerr.InvalidRequest, "Unknown operations type %d", int8(cf.Op))
			}
		}
		return cur, nil
	})
}

// AlterConfigs replaces each resource's configs whole (the legacy API).
func (c *QuorumController) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	resp, _, err := write(ctx, c, "alterConfigs", func(im *metadata.Image) (writeResult[*kmsg.AlterConfigsResponse], error) {
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		recs := alterEach(len(req.Resources), req.ValidateOnly,
			func(i int) (kmsg.ConfigResourceType, string) {
				return req.Resources[i].ResourceType, req.Resources[i].ResourceName
			},
			func(i int) ([]metadata.Record, error) { return c.legacyAlter(im, req.Resources[i]) },
			func(i int, err error) {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
				rr.ErrorCode, rr.ErrorMessage = apierr.Code(err), errorMessage(err)
				resp.Resources = append(resp.Resources, rr)
			})
		return writeResult[*kmsg.AlterConfigsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

func (c *QuorumController) legacyAlter(im *metadata.Image, r kmsg.AlterConfigsRequestResource) ([]metadata.Record, error) {
	seen := map[string]bool{}
	var nulls []string
	configs := map[string]string{}
	for _, cf := range r.Configs {
		if seen[cf.Name] {
			return nil, apierr.Errorf(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[cf.Name] = true
		if cf.Value == nil {
			nulls = append(nulls, cf.Name)
			continue
		}
		configs[cf.Name] = *cf.Value
	}
	if len(nulls) > 0 {
		return nil, apierr.Errorf(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	switch r.ResourceType {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeGroupConfig:
		return c.alterResource(im, r.ResourceType, r.ResourceName, func(map[string]string) (map[string]string, error) {
			return configs, nil
		})
	}
	return nil, apierr.Errorf(kerr.InvalidRequest, "Unknown resource type %d", int8(r.ResourceType))
}

// alterResource validates the new configs of a resource and returns the
// ConfigRecords that turn the current ones into them.
func (c *QuorumController) alterResource(im *metadata.Image, typ kmsg.ConfigResourceType, name string, update func(current map[string]string) (map[string]string, error)) ([]metadata.Record, error) {
	var res metadata.ConfigResource
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if name == "" {
			return nil, apierr.Errorf(kerr.InvalidRequest, "Default topic resources are not allowed.")
		}
		if err := ValidateTopicName(name); err != nil {
			return nil, err
		}
		res = metadata.ConfigResource{Type: metadata.TopicResource, Name: name}
	case kmsg.ConfigResourceTypeGroupConfig:
		if name == "" {
			return nil, apierr.Errorf(kerr.InvalidRequest, "Default group resources are not allowed.")
		}
		res = metadata.ConfigResource{Type: metadata.GroupResource, Name: name}
	default:
		if name != "" && name != strconv.Itoa(int(c.cfg.NodeID)) {
			// Another node's: checked here as far as the
			// controller can (ValidateDynamicOther below).
		} else if err := c.cfg.Broker.CheckBrokerResource(name); err != nil {
			return nil, err
		}
		res = metadata.ConfigResource{Type: metadata.BrokerResource, Name: name}
	}
	cur := maps.Clone(im.Configs[res])
	if cur == nil {
		cur = map[string]string{}
	}
	next, err := update(maps.Clone(cur))
	if err != nil {
		return nil, err
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := c.cfg.Broker.ValidateTopicConfigChange(cur, next); err != nil {
			return nil, err
		}
		if _, ok := im.Topic(name); !ok {
			return nil, apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if err := c.cfg.Broker.ValidateGroupConfigs(next); err != nil {
			return nil, err
		}
	default:
		validate := c.cfg.Broker.ValidateDynamic
		if name != "" && name != strconv.Itoa(int(c.cfg.NodeID)) {
			validate = c.cfg.Broker.ValidateDynamicOther
		}
		if err := validate(name, next); err != nil {
			return nil, err
		}
	}
	var recs []metadata.Record
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		if _, keep := next[k]; !keep {
			recs = append(recs, &metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(next)) {
		if v, had := cur[k]; !had || v != next[k] {
			val := next[k]
			recs = append(recs, &metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k, Value: &val})
		}
	}
	if len(recs) > 0 {
		c.log.Info("altering configs", "resource_type", typ.String(), "resource", name, "configs", next)
	}
	return recs, nil
}

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
