package config

import (
	"strconv"
	"strings"
)

// Group configs (KIP-848's GROUP config resource, Kafka's GroupConfig):
// per-group overrides of broker defaults, set with IncrementalAlterConfigs
// or AlterConfigs on resource type 32 and stored as ConfigRecords. Moldau
// defines the consumer-protocol keys only; Kafka's share.* and streams.*
// keys are for share and streams groups, which Moldau does not serve yet,
// and are refused as unknown.

// The group config keys (Kafka's GroupConfig names).
const (
	GroupConsumerSessionTimeoutMs    = "consumer.session.timeout.ms"
	GroupConsumerHeartbeatIntervalMs = "consumer.heartbeat.interval.ms"
)

// groupDef is one group config: an INT of at least 1 whose default is a
// broker config and whose value must lie within two other broker configs.
type groupDef struct {
	name     string
	dflt     string // the broker config with the default
	min, max string // the broker configs that bound it
}

// groupDefs are in Kafka's definition order, which is the order in which
// Kafka parses them and so reports the first bad one.
var groupDefs = []groupDef{
	{GroupConsumerSessionTimeoutMs, "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{GroupConsumerHeartbeatIntervalMs, "group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
}

func groupDefFor(name string) *groupDef {
	for i := range groupDefs {
		if groupDefs[i].name == name {
			return &groupDefs[i]
		}
	}
	return nil
}

// GroupConfigNames are the group configs Moldau accepts, in Kafka's order.
func GroupConfigNames() []string {
	names := make([]string, len(groupDefs))
	for i, d := range groupDefs {
		names[i] = d.name
	}
	return names
}

// ParseGroupInt parses a group config value as Kafka's ConfigDef does for
// an INT with Range.atLeast(1), with ConfigException's messages
// (INVALID_CONFIG).
func ParseGroupInt(name, value string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
	if err != nil {
		return 0, invalidConfig("Invalid value %s for configuration %s: Not a number of type INT", value, name)
	}
	if n < 1 {
		return 0, invalidConfig("Invalid value %d for configuration %s: Value must be at least 1", n, name)
	}
	return int32(n), nil
}

// ValidateGroupConfigs checks the whole set of a group's configs as Kafka's
// GroupConfigManager.validate: unknown keys first ("Unknown group config
// name"), then each value, the keys not set taking the broker's defaults,
// then the broker's bounds in Kafka's order (heartbeat interval, session
// timeout, then the session timeout above the heartbeat interval). Every
// error is INVALID_CONFIG.
func (c *KafkaConfig) ValidateGroupConfigs(configs map[string]string) error {
	for _, k := range sortedKeys(configs) {
		if groupDefFor(k) == nil {
			return invalidConfig("Unknown group config name: %s", k)
		}
	}
	vals := map[string]int32{}
	for _, d := range groupDefs {
		v, ok := configs[d.name]
		if !ok {
			v = strconv.Itoa(int(c.GetInt(d.dflt)))
		}
		n, err := ParseGroupInt(d.name, v)
		if err != nil {
			return err
		}
		vals[d.name] = n
	}
	hb, session := vals[GroupConsumerHeartbeatIntervalMs], vals[GroupConsumerSessionTimeoutMs]
	for _, name := range []string{GroupConsumerHeartbeatIntervalMs, GroupConsumerSessionTimeoutMs} {
		d := groupDefFor(name)
		if vals[name] < c.GetInt(d.min) {
			return invalidConfig("%s must be greater than or equal to %s", name, d.min)
		}
		if vals[name] > c.GetInt(d.max) {
			return invalidConfig("%s must be less than or equal to %s", name, d.max)
		}
	}
	if session <= hb {
		return invalidConfig("%s must be greater than %s", GroupConsumerSessionTimeoutMs, GroupConsumerHeartbeatIntervalMs)
	}
	return nil
}

// DescribeGroup describes every group config of a group with the given
// overrides, as Kafka's ConfigHelper.createGroupConfigEntry: the value in
// effect (the override, else the broker's default), source GROUP_CONFIG
// for an override and DEFAULT_CONFIG otherwise (even when the broker's
// default is set in server.properties: Kafka reports it so), one synonym
// (the key itself, with that value and source), never read-only or
// sensitive. keys filters (nil: all).
func (c *KafkaConfig) DescribeGroup(overrides map[string]string, keys []string) []ConfigEntry {
	var out []ConfigEntry
	for _, d := range groupDefs {
		if !wanted(keys, d.name) {
			continue
		}
		src := SourceDefault
		value := strconv.Itoa(int(c.GetInt(d.dflt)))
		if v, ok := overrides[d.name]; ok {
			src, value = SourceGroup, v
			if n, err := ParseGroupInt(d.name, v); err == nil {
				value = strconv.Itoa(int(n))
			}
		}
		doc := ""
		if bd := brokerIndex[d.dflt]; bd != nil {
			doc = bd.Doc
		}
		out = append(out, ConfigEntry{
			Name:          d.name,
			Value:         ptr(value),
			Source:        src,
			Type:          TypeInt,
			Documentation: doc,
			Synonyms:      []ConfigSynonym{{Name: d.name, Value: ptr(value), Source: src}},
		})
	}
	return out
}
