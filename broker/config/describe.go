package config

import (
	"slices"
	"strconv"
	"strings"
)

// ConfigEntry is one config as DescribeConfigs reports it.
type ConfigEntry struct {
	Name          string
	Value         *string // nil: no value, or sensitive
	Source        Source
	ReadOnly      bool
	Sensitive     bool
	Type          Type
	Documentation string
	// Synonyms lists where the value could come from, highest
	// precedence first; the first is the one in effect.
	Synonyms []ConfigSynonym
}

// ConfigSynonym is one entry of ConfigEntry.Synonyms.
type ConfigSynonym struct {
	Name   string
	Value  *string
	Source Source
}

// wanted reports whether a name passes a DescribeConfigs key filter (nil
// or empty: everything).
func wanted(keys []string, name string) bool {
	return len(keys) == 0 || slices.Contains(keys, name)
}

// brokerSynonymNames is Kafka's DynamicBrokerConfig.brokerConfigSynonyms:
// the names that define the same broker setting, highest first.
func brokerSynonymNames(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

// synonymsLocked lists, layer by layer (dynamic broker, dynamic default,
// static, default) and within a layer in the order of names, every layer
// that sets one of the names, as Kafka's ConfigHelper.configSynonyms.
func (c *KafkaConfig) synonymsLocked(names []string, sensitive bool) []ConfigSynonym {
	var out []ConfigSynonym
	for _, l := range c.layersLocked() {
		for _, n := range names {
			if s, ok := l.values[n]; ok {
				var v *string
				if !sensitive {
					v = ptr(s)
				}
				out = append(out, ConfigSynonym{Name: n, Value: v, Source: l.source})
			}
		}
	}
	return out
}

// DescribeBroker describes the configs of a broker resource: "<node.id>"
// gives every broker config with its value in effect; "" gives the
// cluster-wide dynamic defaults only, as Kafka. keys filters (nil: all).
// An unexpected resource name is an error wrapping kerr.InvalidRequest.
func (c *KafkaConfig) DescribeBroker(resource string, keys []string) ([]ConfigEntry, error) {
	if resource != "" {
		if _, err := strconv.ParseInt(resource, 10, 32); err != nil {
			return nil, invalidRequest("Broker id must be an integer, but it is: %s", resource)
		}
		if resource != strconv.Itoa(int(c.NodeID)) {
			return nil, invalidRequest("Unexpected broker id, expected %d or empty string, but received %s", c.NodeID, resource)
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var names []string
	if resource == "" {
		names = sortedKeys(c.dynDefault)
	} else {
		seen := make(map[string]bool)
		for _, d := range BrokerDefs() {
			names = append(names, d.Name)
			seen[d.Name] = true
		}
		// Keys no definition names: unknown keys of the file (as
		// Kafka's originals), custom and listener-prefixed dynamic keys.
		var others []string
		for _, m := range []map[string]string{c.static, c.dynDefault, c.dynBroker} {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					others = append(others, k)
				}
			}
		}
		slices.Sort(others)
		names = append(names, others...)
	}
	var out []ConfigEntry
	for _, name := range names {
		if !wanted(keys, name) {
			continue
		}
		d := brokerIndex[name]
		if d == nil {
			if base, ok := listenerBase(name); ok {
				d = brokerIndex[base]
			}
		}
		// A key with no known type is treated as sensitive, as Kafka's
		// KafkaConfig.maybeSensitive.
		e := ConfigEntry{Name: name, Sensitive: true, ReadOnly: true}
		if d != nil {
			e.Sensitive = d.Sensitive()
			e.ReadOnly = d.Dynamic == ReadOnly
			e.Type = d.Type
			e.Documentation = d.Doc
			if d.StoredOnly {
				e.Documentation += storedOnlyNote
			}
		}
		if !e.Sensitive {
			if d != nil && d.Name == name {
				if v, _ := c.brokerValueLocked(name); v != nil {
					e.Value = ptr(formatValue(v))
				}
			} else if s, _, ok := c.brokerRawLocked(name); ok {
				e.Value = ptr(s)
			}
		}
		if resource != "" {
			if eff, ok := c.effectiveLocked(name); ok {
				if !e.Sensitive {
					e.Value = ptr(eff.value)
				}
				e.Source = eff.source
				e.Synonyms = eff.synonyms
				out = append(out, e)
				continue
			}
		}
		syns := c.synonymsLocked(brokerSynonymNames(name), e.Sensitive)
		if resource == "" {
			syns = slices.DeleteFunc(syns, func(s ConfigSynonym) bool { return s.Source != SourceDynamicDefaultBroker })
		}
		// Drop the synonyms above the described name (Kafka's dropWhile).
		for len(syns) > 0 && syns[0].Name != name {
			syns = syns[1:]
		}
		e.Source = SourceDefault
		if len(syns) > 0 {
			e.Source = syns[0].Source
		}
		e.Synonyms = syns
		out = append(out, e)
	}
	return out, nil
}

// DescribeTopic describes every topic config of a topic with the given
// overrides: the value in effect, its source (TOPIC_CONFIG for an override,
// else where the broker default comes from) and synonyms (the override,
// then the broker synonyms by layer). keys filters (nil: all).
func (c *KafkaConfig) DescribeTopic(overrides map[string]string, keys []string) []ConfigEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []ConfigEntry
	for _, td := range topicDefs {
		if !wanted(keys, td.Name) {
			continue
		}
		v, src, from := c.topicValueLocked(td.Name, overrides)
		e := ConfigEntry{
			Name:          td.Name,
			Value:         ptr(formatValue(v)),
			Source:        src,
			Sensitive:     td.Sensitive(),
			Type:          td.Type,
			Documentation: td.Doc,
		}
		if e.Sensitive {
			e.Value = nil
		}
		syns := c.synonymsLocked(td.Synonyms(), e.Sensitive)
		if src != SourceTopic && from != "" {
			// Start at the synonym in effect: with log.retention.ms
			// static and log.retention.hours dynamic, ms wins (Kafka's
			// precedence), though the dynamic layer comes first.
			for len(syns) > 0 && !(syns[0].Name == from && syns[0].Source == src) {
				syns = syns[1:]
			}
		}
		if src == SourceTopic {
			syns = append([]ConfigSynonym{{Name: td.Name, Value: e.Value, Source: SourceTopic}}, syns...)
		}
		e.Synonyms = syns
		out = append(out, e)
	}
	return out
}

// effective is a broker key's value in effect when it is not set at any
// layer and its default does not say what the broker uses: the value is
// derived from other keys (log.dirs from log.dir, broker.id from node.id,
// advertised.listeners from listeners, log.retention.ms from
// log.retention.hours, ...). DescribeConfigs reports the value the broker
// uses, with the source of the key it came from, and that key's settings
// as synonyms (where Kafka reports null).
type effective struct {
	value    string
	source   Source
	synonyms []ConfigSynonym
}

// derivedFrom names, for each derived key, the keys its value comes from,
// highest precedence first.
var derivedFrom = map[string][]string{
	"log.dirs":                   {"log.dir"},
	"broker.id":                  {"node.id"},
	"node.id":                    {"broker.id"},
	"advertised.listeners":       {"listeners"},
	"metadata.log.dir":           {"log.dirs", "log.dir"},
	"inter.broker.listener.name": {"security.inter.broker.protocol", "advertised.listeners", "listeners"},
	"log.roll.ms":                {"log.roll.hours"},
	"log.roll.jitter.ms":         {"log.roll.jitter.hours"},
	"log.retention.ms":           {"log.retention.minutes", "log.retention.hours"},
	"log.flush.interval.ms":      {"log.flush.scheduler.interval.ms"},
	"queued.max.request.bytes":   {}, // from the memory budget
}

// effectiveLocked returns the derived value of name when name itself is
// not set at any layer; c.mu held.
func (c *KafkaConfig) effectiveLocked(name string) (effective, bool) {
	from, ok := derivedFrom[name]
	if !ok {
		return effective{}, false
	}
	if c.isSetAnywhereLocked(name) {
		return effective{}, false // set: reported as it is
	}
	if name == "node.id" && !c.isSetAnywhereLocked("broker.id") {
		return effective{}, false // node.id's own default is in effect
	}
	var value string
	switch name {
	case "log.dirs":
		value = strings.Join(c.LogDirs, ",")
	case "broker.id", "node.id":
		value = strconv.Itoa(int(c.NodeID))
	case "advertised.listeners":
		parts := make([]string, len(c.AdvertisedListeners))
		for i, l := range c.AdvertisedListeners {
			parts[i] = l.String()
		}
		value = strings.Join(parts, ",")
	case "metadata.log.dir":
		value = c.MetadataLogDir
	case "inter.broker.listener.name":
		value = c.InterBrokerListenerName
	case "queued.max.request.bytes":
		value = strconv.FormatInt(c.QueuedMaxRequestBytes, 10)
	default: // time synonyms: the topic config they feed, in ms
		topic := map[string]string{"log.roll.ms": "segment.ms", "log.roll.jitter.ms": "segment.jitter.ms",
			"log.retention.ms": "retention.ms", "log.flush.interval.ms": "flush.ms"}[name]
		v, _, _ := c.topicValueLocked(topic, nil)
		value = formatValue(v)
	}
	if value == "" {
		return effective{}, false
	}
	e := effective{value: value, source: SourceDefault}
	e.synonyms = c.synonymsLocked(from, false)
	if len(e.synonyms) > 0 {
		e.source = e.synonyms[0].Source
	}
	return e, true
}

// isSetAnywhereLocked reports whether a layer other than the defaults
// sets name; c.mu held.
func (c *KafkaConfig) isSetAnywhereLocked(name string) bool {
	for _, l := range c.layersLocked() {
		if _, ok := l.values[name]; ok && l.source != SourceDefault {
			return true
		}
	}
	return false
}
