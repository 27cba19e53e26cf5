package config

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Group configs (KIP-848's GROUP config resource, Kafka's GroupConfig):
// per-group overrides of broker defaults, set with IncrementalAlterConfigs
// or AlterConfigs on resource type 32 and stored as ConfigRecords. Moldau
// defines the consumer-protocol keys and the share group keys (KIP-932);
// Kafka's streams.* keys are for streams groups, which Moldau does not
// serve yet, and are refused as unknown.

// The group config keys (Kafka's GroupConfig names).
const (
	GroupConsumerSessionTimeoutMs    = "consumer.session.timeout.ms"
	GroupConsumerHeartbeatIntervalMs = "consumer.heartbeat.interval.ms"
	GroupShareSessionTimeoutMs       = "share.session.timeout.ms"
	GroupShareHeartbeatIntervalMs    = "share.heartbeat.interval.ms"
	GroupShareRecordLockDurationMs   = "share.record.lock.duration.ms"
	GroupShareAutoOffsetReset        = "share.auto.offset.reset"
	GroupShareIsolationLevel         = "share.isolation.level"
)

// groupDef is one group config: an INT of at least atLeast whose default
// is a broker config and whose value must lie within two other broker
// configs, or a STRING with a fixed default and a validator.
type groupDef struct {
	name     string
	typ      Type
	dflt     string // INT: the broker config with the default; STRING: the default
	min, max string // INT: the broker configs that bound it
	atLeast  int64  // INT: the ConfigDef's own lower bound
	doc      string // STRING: the documentation
	valid    func(value string) string
}

// groupDefs are in Kafka's definition order, which is the order in which
// Kafka parses them and so reports the first bad one.
var groupDefs = []groupDef{
	{name: GroupConsumerSessionTimeoutMs, typ: TypeInt, dflt: "group.consumer.session.timeout.ms", min: "group.consumer.min.session.timeout.ms", max: "group.consumer.max.session.timeout.ms", atLeast: 1},
	{name: GroupConsumerHeartbeatIntervalMs, typ: TypeInt, dflt: "group.consumer.heartbeat.interval.ms", min: "group.consumer.min.heartbeat.interval.ms", max: "group.consumer.max.heartbeat.interval.ms", atLeast: 1},
	{name: GroupShareSessionTimeoutMs, typ: TypeInt, dflt: "group.share.session.timeout.ms", min: "group.share.min.session.timeout.ms", max: "group.share.max.session.timeout.ms", atLeast: 1},
	{name: GroupShareHeartbeatIntervalMs, typ: TypeInt, dflt: "group.share.heartbeat.interval.ms", min: "group.share.min.heartbeat.interval.ms", max: "group.share.max.heartbeat.interval.ms", atLeast: 1},
	{name: GroupShareRecordLockDurationMs, typ: TypeInt, dflt: "group.share.record.lock.duration.ms", min: "group.share.min.record.lock.duration.ms", max: "group.share.max.record.lock.duration.ms", atLeast: 1000},
	{name: GroupShareAutoOffsetReset, typ: TypeString, dflt: "latest", valid: validShareAutoOffsetReset,
		doc: "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically reset the offset to the earliest offset</li><li>latest: automatically reset the offset to the latest offset</li><li>by_duration:<duration>: automatically reset the offset to a configured <duration> from the current timestamp. <duration> must be specified in ISO8601 format. The offset will be reset to the latest offset if the timestamp exceeds the latest timestamp of the partition.</li><li>anything else: throw exception to the share consumer.</li></ul>"},
	{name: GroupShareIsolationLevel, typ: TypeString, dflt: "read_uncommitted", valid: validShareIsolationLevel,
		doc: "Controls how to read records written transactionally. If set to \"read_committed\", the share group will only deliver transactional records which have been committed. If set to \"read_uncommitted\", the share group will return all messages, even transactional messages which have been aborted. Non-transactional records will be returned unconditionally in either mode."},
}

// groupBounds are the INT keys in the order Kafka's GroupConfig checks
// them against the broker's bounds.
var groupBounds = []string{
	GroupConsumerHeartbeatIntervalMs, GroupConsumerSessionTimeoutMs,
	GroupShareHeartbeatIntervalMs, GroupShareSessionTimeoutMs, GroupShareRecordLockDurationMs,
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

// ParseGroupInt parses an INT group config value as Kafka's ConfigDef
// does (Range.atLeast(1), or 1000 for share.record.lock.duration.ms), with
// ConfigException's messages (INVALID_CONFIG).
func ParseGroupInt(name, value string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
	if err != nil {
		return 0, invalidConfig("Invalid value %s for configuration %s: Not a number of type INT", value, name)
	}
	least := int64(1)
	if d := groupDefFor(name); d != nil && d.atLeast > 0 {
		least = d.atLeast
	}
	if n < least {
		return 0, invalidConfig("Invalid value %d for configuration %s: Value must be at least %d", n, name, least)
	}
	return int32(n), nil
}

// ParseGroupString checks a STRING group config value (trimmed, as
// ConfigDef parses it) with the key's validator.
func ParseGroupString(name, value string) (string, error) {
	v := strings.TrimSpace(value)
	if d := groupDefFor(name); d != nil && d.valid != nil {
		if msg := d.valid(v); msg != "" {
			return "", invalidConfig("Invalid value %s for configuration %s: %s", v, name, msg)
		}
	}
	return v, nil
}

// isoDuration is java.time.Duration.parse's format: PnDTnHnMn.nS, each
// part optional (at least one), signs allowed, case-insensitive.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// ParseISODuration is java.time.Duration.parse.
func ParseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || m[3] == "T" || m[2] == "" && m[3] == "" {
		return 0, false
	}
	num := func(x string) int64 {
		if x == "" {
			return 0
		}
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	d := time.Duration(num(m[2]))*24*time.Hour + time.Duration(num(m[4]))*time.Hour +
		time.Duration(num(m[5]))*time.Minute + time.Duration(num(m[6]))*time.Second
	if frac := m[7]; frac != "" {
		ns := num((frac + "000000000")[:9])
		if strings.HasPrefix(m[6], "-") {
			ns = -ns
		}
		d += time.Duration(ns)
	}
	if m[1] == "-" {
		d = -d
	}
	return d, true
}

// ShareAutoOffsetReset is a parsed share.auto.offset.reset (Kafka's
// ShareGroupAutoOffsetResetStrategy): "earliest", "latest", or
// "by_duration" with ByDuration.
type ShareAutoOffsetReset struct {
	Type       string
	ByDuration time.Duration
}

// ParseShareAutoOffsetReset is ShareGroupAutoOffsetResetStrategy.fromString.
func ParseShareAutoOffsetReset(v string) (ShareAutoOffsetReset, bool) {
	switch {
	case v == "earliest" || v == "latest":
		return ShareAutoOffsetReset{Type: v}, true
	case strings.HasPrefix(v, "by_duration:"):
		d, ok := ParseISODuration(strings.TrimPrefix(v, "by_duration:"))
		if !ok || d < 0 {
			return ShareAutoOffsetReset{}, false
		}
		return ShareAutoOffsetReset{Type: "by_duration", ByDuration: d}, true
	}
	return ShareAutoOffsetReset{}, false
}

func validShareAutoOffsetReset(v string) string {
	if _, ok := ParseShareAutoOffsetReset(v); ok {
		return ""
	}
	return "Invalid value `" + v + "` for configuration " + GroupShareAutoOffsetReset + ". The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
}

func validShareIsolationLevel(v string) string {
	if v == "read_committed" || v == "read_uncommitted" {
		return ""
	}
	return "String must be one of: read_committed, read_uncommitted"
}

// ValidateGroupConfigs checks the whole set of a group's configs as Kafka's
// GroupConfigManager.validate: unknown keys first ("Unknown group config
// name"), then each value, the keys not set taking the broker's defaults,
// then the broker's bounds in Kafka's order (consumer heartbeat interval
// and session timeout, share heartbeat interval, session timeout and
// record lock duration), then each session timeout above its heartbeat
// interval. Every error is INVALID_CONFIG.
func (c *KafkaConfig) ValidateGroupConfigs(configs map[string]string) error {
	for _, k := range sortedKeys(configs) {
		if groupDefFor(k) == nil {
			return invalidConfig("Unknown group config name: %s", k)
		}
	}
	vals := map[string]int32{}
	for _, d := range groupDefs {
		v, ok := configs[d.name]
		if d.typ == TypeString {
			if ok {
				if _, err := ParseGroupString(d.name, v); err != nil {
					return err
				}
			}
			continue
		}
		if !ok {
			v = strconv.Itoa(int(c.GetInt(d.dflt)))
		}
		n, err := ParseGroupInt(d.name, v)
		if err != nil {
			return err
		}
		vals[d.name] = n
	}
	for _, name := range groupBounds {
		d := groupDefFor(name)
		if vals[name] < c.GetInt(d.min) {
			return invalidConfig("%s must be greater than or equal to %s", name, d.min)
		}
		if vals[name] > c.GetInt(d.max) {
			return invalidConfig("%s must be less than or equal to %s", name, d.max)
		}
	}
	for _, p := range [][2]string{{GroupConsumerSessionTimeoutMs, GroupConsumerHeartbeatIntervalMs}, {GroupShareSessionTimeoutMs, GroupShareHeartbeatIntervalMs}} {
		if vals[p[0]] <= vals[p[1]] {
			return invalidConfig("%s must be greater than %s", p[0], p[1])
		}
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
		value, doc := d.dflt, d.doc
		if d.typ == TypeInt {
			value = strconv.Itoa(int(c.GetInt(d.dflt)))
			if bd := brokerIndex[d.dflt]; bd != nil {
				doc = bd.Doc
			}
		}
		if v, ok := overrides[d.name]; ok {
			src, value = SourceGroup, strings.TrimSpace(v)
			if d.typ == TypeInt {
				if n, err := ParseGroupInt(d.name, v); err == nil {
					value = strconv.Itoa(int(n))
				}
			}
		}
		out = append(out, ConfigEntry{
			Name:          d.name,
			Value:         ptr(value),
			Source:        src,
			Type:          d.typ,
			Documentation: doc,
			Synonyms:      []ConfigSynonym{{Name: d.name, Value: ptr(value), Source: src}},
		})
	}
	return out
}
