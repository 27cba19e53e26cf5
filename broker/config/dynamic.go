package config

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The dynamic layer: broker configs set with AlterConfigs and
// IncrementalAlterConfigs on the broker resource "<node.id>" (per broker)
// or "" (the cluster-wide default), as Kafka's DynamicBrokerConfig. The
// controller validates a change with ValidateDynamic and writes it to the
// metadata log as ConfigRecords; every broker installs what the metadata
// holds with SetDynamic as it applies them (at start-up too).

// layer is one level of broker config values, highest precedence first.
type layer struct {
	values map[string]string
	source Source
}

// layersLocked returns the layers of broker values, highest first, the
// dynamic ones only with the keys that may be dynamic at that level.
func (c *KafkaConfig) layersLocked() [4]layer {
	return [4]layer{
		{c.dynBroker, SourceDynamicBroker},
		{c.dynDefault, SourceDynamicDefaultBroker},
		{c.static, SourceStaticBroker},
		{defaultValues, SourceDefault},
	}
}

var defaultValues = func() map[string]string {
	m := make(map[string]string)
	for _, d := range brokerIndex {
		if d.Default != nil {
			m[d.Name] = *d.Default
		}
	}
	return m
}()

// brokerRawLocked finds a broker key's raw value at the highest layer that
// sets it.
func (c *KafkaConfig) brokerRawLocked(name string) (string, Source, bool) {
	for _, l := range c.layersLocked() {
		if s, ok := l.values[name]; ok {
			return s, l.source, true
		}
	}
	return "", SourceDefault, false
}

// brokerValueLocked resolves a defined broker key to its parsed value (nil
// when unset with no default) and source.
//
// A listener form (listener.name.<listener>.<key>) is parsed as its key
// and has no default of its own.
func (c *KafkaConfig) brokerValueLocked(name string) (any, Source) {
	d := brokerIndex[name]
	if d == nil {
		if d = brokerDefFor(name); d == nil {
			return nil, SourceUnknown
		}
	}
	for _, l := range c.layersLocked() {
		if s, ok := l.values[name]; ok {
			if v, err := d.Parse(s); err == nil {
				return v, l.source
			}
		}
	}
	return nil, SourceDefault
}

// topicValueLocked resolves a topic config: the override, else the first
// broker synonym set at any level, else the first synonym's default, else
// the topic default. It returns the value converted to the topic config's
// unit and type, its source and the broker synonym it came from ("" for an
// override or the topic default).
func (c *KafkaConfig) topicValueLocked(name string, overrides map[string]string) (any, Source, string) {
	td := topicIndex[name]
	if s, ok := overrides[name]; ok {
		if v, err := td.Parse(s); err == nil {
			return v, SourceTopic, ""
		}
	}
	for _, pass := range []bool{true, false} { // set values first, then defaults
		for _, syn := range td.synonyms {
			for _, l := range c.layersLocked() {
				if pass == (l.source == SourceDefault) {
					continue
				}
				s, ok := l.values[syn.name]
				if !ok {
					continue
				}
				v, err := brokerIndex[syn.name].Parse(s)
				if err != nil {
					continue
				}
				return convert(v, syn.conv, td), l.source, syn.name
			}
		}
	}
	v, _ := parseType(td.Type, *td.Default)
	return v, SourceDefault, ""
}

// convert turns a broker synonym's value into the topic config's unit and
// Go type.
func convert(v any, conv conversion, td *TopicDef) any {
	f, isNum := toFloat(v)
	if !isNum {
		return v
	}
	n := int64(f)
	if x, ok := v.(int64); ok {
		n = x
	}
	switch conv {
	case hoursToMs:
		n *= 3600000
	case minutesToMs:
		n *= 60000
	}
	if td.Name == "retention.ms" && n < 0 {
		n = -1 // as KafkaConfig.logRetentionTimeMillis
	}
	switch td.Type {
	case TypeInt:
		return int32(n)
	case TypeShort:
		return int16(n)
	case TypeLong:
		return n
	case TypeDouble:
		return f
	}
	return v
}

// Get returns the current value of a broker config (dynamic included): a
// bool, string, int16, int32, int64, float64 or []string, or nil if it has
// no value or is not defined.
func (c *KafkaConfig) Get(name string) any {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, _ := c.brokerValueLocked(name)
	return v
}

// GetInt returns the current value of an INT (or SHORT) broker config.
func (c *KafkaConfig) GetInt(name string) int32 {
	switch v := c.Get(name).(type) {
	case int32:
		return v
	case int16:
		return int32(v)
	}
	return 0
}

// GetLong returns the current value of a LONG broker config.
func (c *KafkaConfig) GetLong(name string) int64 { v, _ := c.Get(name).(int64); return v }

// GetBool returns the current value of a BOOLEAN broker config.
func (c *KafkaConfig) GetBool(name string) bool { v, _ := c.Get(name).(bool); return v }

// GetString returns the current value of a STRING broker config.
func (c *KafkaConfig) GetString(name string) string { v, _ := c.Get(name).(string); return v }

// GetList returns the current value of a LIST broker config.
func (c *KafkaConfig) GetList(name string) []string {
	v, _ := c.Get(name).([]string)
	return slices.Clone(v)
}

// CheckBrokerResource checks the name of a BROKER config resource: "" (the
// cluster default) or this node's id, as Kafka's
// validateResourceNameIsCurrentNodeId. Errors wrap kerr.InvalidRequest.
func (c *KafkaConfig) CheckBrokerResource(resource string) error {
	if resource == "" {
		return nil
	}
	id, err := strconv.ParseInt(resource, 10, 32)
	if err != nil {
		return invalidRequest("Node id must be an integer, but it is: %s", resource)
	}
	if int32(id) != c.NodeID {
		return invalidRequest("Unexpected broker id, expected %d, but received %s", c.NodeID, resource)
	}
	return nil
}

// ValidateDynamic checks a complete new dynamic config set for a broker
// resource, as Kafka's DynamicBrokerConfig.validate, in Kafka's order and
// with its messages: keys that cannot be updated dynamically ("Cannot
// update these configs dynamically: Set(log.dirs)"), SSL keystore and
// truststore keys without a listener prefix, values that do not parse or
// validate, per-broker keys at the cluster-default level, then the thread
// counts (DynamicThreadPool: at least 1, at least half and at most double
// the current value) and every Reconfigurable's own check. A key Kafka
// does not define is a custom config and, as Kafka's DynamicConfig.Broker
// allows them, accepted and stored. Listener overrides
// (listener.name.<listener>.<key>) are checked as their key, and are
// per-broker unless the key is a cluster-level listener config. Errors wrap
// kerr.InvalidRequest (as Kafka's broker does for BROKER resources).
func (c *KafkaConfig) ValidateDynamic(resource string, configs map[string]string) error {
	return c.validateDynamic(resource, configs, true)
}

// ValidateDynamicOther checks a new dynamic config set for the BROKER
// resource of another node, as the controller does when a broker forwards
// one (Kafka's ControllerConfigurationValidator): the name is a node id,
// the keys may be updated dynamically and their values parse. What only
// that node can check (its Reconfigurables, a key store on its disk) it
// checks when it applies them.
func (c *KafkaConfig) ValidateDynamicOther(resource string, configs map[string]string) error {
	id, err := strconv.ParseInt(resource, 10, 32)
	if err != nil || id < 0 {
		return invalidRequest("Node id must be an integer, but it is: %s", resource)
	}
	return c.validateDynamicKeys(resource, configs)
}

// validateDynamic is ValidateDynamic; without reconfiguration it skips the
// checks against the values in effect (thread counts, Reconfigurables),
// as for persisted configs installed at start-up.
func (c *KafkaConfig) validateDynamic(resource string, configs map[string]string, reconfiguration bool) error {
	if err := c.CheckBrokerResource(resource); err != nil {
		return err
	}
	if err := c.validateDynamicKeys(resource, configs); err != nil {
		return err
	}
	if !reconfiguration {
		return nil
	}
	return c.validateReconfiguration(resource, configs)
}

// validateDynamicKeys is validateDynamic's check of the keys and values
// alone.
func (c *KafkaConfig) validateDynamicKeys(resource string, configs map[string]string) error {
	var nonDynamic, noPrefix, perBroker []string
	keys := sortedKeys(configs)
	for _, k := range keys {
		if base, ok := listenerBase(k); ok {
			if !clusterLevelListenerConfigs[base] {
				perBroker = append(perBroker, k)
			}
			continue
		}
		d := brokerIndex[k]
		switch {
		case d == nil: // a custom config
		case sslReconfigurableConfigs[k]:
			noPrefix = append(noPrefix, k)
		case d.Dynamic == ReadOnly:
			nonDynamic = append(nonDynamic, k)
		case d.Dynamic == PerBroker:
			perBroker = append(perBroker, k)
		}
	}
	if len(nonDynamic) > 0 {
		return invalidRequest("Cannot update these configs dynamically: %s", scalaSet(nonDynamic))
	}
	if len(noPrefix) > 0 {
		return invalidRequest("These security configs can be dynamically updated only per-listener using the listener prefix: %s", scalaSet(noPrefix))
	}
	for _, k := range keys {
		name := k
		if base, ok := listenerBase(k); ok {
			name = base
		}
		if d := brokerIndex[name]; d != nil {
			if _, err := d.Parse(configs[k]); err != nil {
				return invalidRequest("%s", err.Error())
			}
		}
	}
	if resource == "" && len(perBroker) > 0 {
		return invalidRequest("Cannot update these configs at default cluster level, broker id must be specified: %s", scalaSet(perBroker))
	}
	return nil
}

// scalaSet formats names as Kafka's messages do (a Scala Set).
func scalaSet(names []string) string { return "Set(" + strings.Join(names, ", ") + ")" }

// validateReconfiguration checks the values that would be in effect after
// installing configs for resource: the thread counts, then each
// Reconfigurable whose keys change.
func (c *KafkaConfig) validateReconfiguration(resource string, configs map[string]string) error {
	c.mu.RLock()
	next := c.withDynamicLocked(resource, configs)
	var errs []error
	for _, name := range sortedKeys(threadCountConfigs) {
		cur, _ := c.brokerValueLocked(name)
		nv, _ := next.brokerValueLocked(name)
		if err := validateThreadCount(name, cur, nv); err != nil {
			errs = append(errs, err)
		}
	}
	type check struct {
		r   Reconfigurable
		new map[string]any
	}
	var checks []check
	for _, r := range c.reconfigurables {
		oldV, newV := c.valuesLocked(r.ReconfigurableConfigs()), next.valuesLocked(r.ReconfigurableConfigs())
		if !sameValues(oldV, newV) {
			checks = append(checks, check{r, newV})
		}
	}
	c.mu.RUnlock()
	if len(errs) > 0 {
		return errs[0]
	}
	for _, ch := range checks {
		if err := ch.r.ValidateReconfiguration(ch.new); err != nil {
			return invalidRequest("%s", err.Error())
		}
	}
	return nil
}

// validateThreadCount is Kafka's DynamicThreadPool.validateReconfiguration.
func validateThreadCount(name string, cur, next any) error {
	o, ok1 := cur.(int32)
	n, ok2 := next.(int32)
	if !ok1 || !ok2 || o == n {
		return nil
	}
	msg := fmt.Sprintf("Dynamic thread count update validation failed for %s=%d", name, n)
	switch {
	case n <= 0:
		return invalidRequest("%s, value should be at least 1", msg)
	case n < o/2:
		return invalidRequest("%s, value should be at least half the current value %d", msg, o)
	case n > o*2:
		return invalidRequest("%s, value should not be greater than double the current value %d", msg, o)
	}
	return nil
}

// withDynamicLocked returns a copy of the config's layers with resource's
// dynamic set replaced by configs (for validation); c.mu held.
func (c *KafkaConfig) withDynamicLocked(resource string, configs map[string]string) *KafkaConfig {
	next := &KafkaConfig{NodeID: c.NodeID, static: c.static, dynBroker: c.dynBroker, dynDefault: c.dynDefault}
	if resource == "" {
		next.dynDefault = configs
	} else {
		next.dynBroker = configs
	}
	return next
}

// valuesLocked resolves names to their values in effect; c.mu held (or c
// private).
func (c *KafkaConfig) valuesLocked(names []string) map[string]any {
	m := make(map[string]any, len(names))
	for _, n := range names {
		m[n], _ = c.brokerValueLocked(n)
	}
	return m
}

func sameValues(a, b map[string]any) bool {
	for k, v := range a {
		if formatValue(v) != formatValue(b[k]) || (v == nil) != (b[k] == nil) {
			return false
		}
	}
	return len(a) == len(b)
}

// SetDynamic installs the dynamic configs of a broker resource ("" for the
// cluster default, or this node's id), replacing the previous set, then
// calls Reconfigure on every Reconfigurable whose keys changed value
// (outside the config's lock). Keys that are not valid dynamic configs at
// that level are dropped and reported in the warnings, as Kafka's
// fromPersistentProps does; a resource naming another node is ignored
// (warning).
func (c *KafkaConfig) SetDynamic(resource string, configs map[string]string) []string {
	if err := c.CheckBrokerResource(resource); err != nil {
		return []string{fmt.Sprintf("dynamic configs of broker resource %q ignored: %v", resource, err)}
	}
	var warnings []string
	kept := make(map[string]string, len(configs))
	for _, k := range sortedKeys(configs) {
		one := map[string]string{k: configs[k]}
		if err := c.validateDynamic(resource, one, false); err != nil {
			warnings = append(warnings, fmt.Sprintf("dynamic config %s of broker resource %q ignored: %v", k, resource, err))
			continue
		}
		kept[k] = configs[k]
	}
	c.mu.Lock()
	rs := slices.Clone(c.reconfigurables)
	old := make([]map[string]any, len(rs))
	for i, r := range rs {
		old[i] = c.valuesLocked(r.ReconfigurableConfigs())
	}
	if resource == "" {
		c.dynDefault = kept
	} else {
		c.dynBroker = kept
	}
	updated := make([]map[string]any, len(rs))
	for i, r := range rs {
		updated[i] = c.valuesLocked(r.ReconfigurableConfigs())
	}
	c.mu.Unlock()
	for i, r := range rs {
		if !sameValues(old[i], updated[i]) {
			r.Reconfigure(old[i], updated[i])
		}
	}
	return warnings
}

// Dynamic returns the dynamic configs installed for a broker resource.
func (c *KafkaConfig) Dynamic(resource string) map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if resource == "" {
		return maps.Clone(c.dynDefault)
	}
	if resource == strconv.Itoa(int(c.NodeID)) {
		return maps.Clone(c.dynBroker)
	}
	return nil
}

// ValidateTopicConfigs checks a topic's complete set of overrides, as
// Kafka's LogConfig.validate: unknown names, bad values, tiered storage
// (remote.storage.enable=true only where the broker's
// remote.log.storage.system.enable is, see validateRemoteStorageLocked) and
// min.compaction.lag.ms <= max.compaction.lag.ms. Errors wrap
// kerr.InvalidConfig.
func (c *KafkaConfig) ValidateTopicConfigs(configs map[string]string) error {
	keys := sortedKeys(configs)
	for _, k := range keys {
		if topicIndex[k] == nil {
			return invalidConfig("Unknown topic config name: %s", k)
		}
	}
	for _, k := range keys {
		if _, err := topicIndex[k].Parse(configs[k]); err != nil {
			return asInvalidConfig(err)
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.validateRemoteStorageLocked(configs); err != nil {
		return err
	}
	minLag, _, _ := c.topicValueLocked("min.compaction.lag.ms", configs)
	maxLag, _, _ := c.topicValueLocked("max.compaction.lag.ms", configs)
	if minLag.(int64) > maxLag.(int64) {
		return invalidConfig("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)
	}
	return nil
}

// ValidateTopicConfigChange checks a topic's new overrides against its
// current ones: ValidateTopicConfigs, and, as Kafka's
// LogConfig.validateTurningOffRemoteStorageWithDelete, turning
// remote.storage.enable from true to false only with
// remote.log.delete.on.disable=true (the remote data is deleted); to keep
// it read-only, remote.log.copy.disable=true instead. Errors wrap
// kerr.InvalidConfig.
func (c *KafkaConfig) ValidateTopicConfigChange(current, next map[string]string) error {
	if err := c.ValidateTopicConfigs(next); err != nil {
		return err
	}
	was, _ := strconv.ParseBool(strings.TrimSpace(current["remote.storage.enable"]))
	if !was {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	val := func(name string) any { v, _, _ := c.topicValueLocked(name, next); return v }
	if val("remote.storage.enable") != true && val("remote.log.delete.on.disable") != true {
		return invalidConfig("It is invalid to disable remote storage without deleting remote data. " +
			"If you want to keep the remote data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. " +
			"If you want to disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`.")
	}
	return nil
}

// ConfigType returns the type of a topic config (topic true) or a broker
// config, and whether it is defined. IncrementalAlterConfigs uses it:
// APPEND and SUBTRACT apply to LIST configs only.
func ConfigType(topic bool, name string) (Type, bool) {
	if topic {
		if d := topicIndex[name]; d != nil {
			return d.Type, true
		}
		return TypeUnknown, false
	}
	if d := brokerIndex[name]; d != nil {
		return d.Type, true
	}
	return TypeUnknown, false
}

// DefaultValue returns the default of a topic or broker config (the start
// of an APPEND or SUBTRACT when the resource has no value, as Kafka).
func DefaultValue(topic bool, name string) (string, bool) {
	var d *Def
	if topic {
		if td := topicIndex[name]; td != nil {
			d = td.Def
		}
	} else {
		d = brokerIndex[name]
	}
	if d == nil || d.Default == nil {
		return "", false
	}
	return *d.Default, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MaxBrokerPartitions is max.broker.partitions in effect: the configured
// value, or, for -1, (open-file limit - 1024) * 3/4, at least 100; and a
// description of where it comes from, for error messages.
func (c *KafkaConfig) MaxBrokerPartitions() (int, string) {
	if v := c.GetInt("max.broker.partitions"); v >= 0 {
		return int(v), "max.broker.partitions"
	}
	limit := openFileLimit()
	if limit == 0 || limit > 1<<31 {
		return 1 << 30, "max.broker.partitions (no open-file limit)"
	}
	n := (int(limit) - 1024) * 3 / 4
	if n < 100 {
		n = 100
	}
	return n, fmt.Sprintf("max.broker.partitions, derived from the open-file limit (ulimit -n %d)", limit)
}

// validateRemoteStorageLocked checks a topic's tiered storage configs as
// Kafka's LogConfig.validate does: remote.storage.enable=true only when
// remote.log.storage.system.enable is, never with compaction, and the
// local retention within the total retention. mu held.
func (c *KafkaConfig) validateRemoteStorageLocked(configs map[string]string) error {
	val := func(name string) any { v, _, _ := c.topicValueLocked(name, configs); return v }
	if val("remote.storage.enable") != true {
		return nil
	}
	if !c.remoteStorageSystemEnabledLocked() {
		return invalidConfig("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	if slices.Contains(val("cleanup.policy").([]string), "compact") {
		return invalidConfig("Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy being an empty list.")
	}
	for _, k := range []string{"ms", "bytes"} {
		local, total := val("local.retention."+k).(int64), val("retention."+k).(int64)
		switch {
		case total == -1 && local < -2 || total != -1 && local == -1:
			return invalidConfig("Value must not be -1 as retention.%s value is set as %d.", k, total)
		case total != -1 && local > total:
			return invalidConfig("Value must not be more than retention.%s property value: %d", k, total)
		}
		// Kafka's validateRetentionConfigsWhenRemoteCopyDisabled: with
		// nothing more copied, local retention is the total one.
		if val("remote.log.copy.disable") == true && local != -2 && local != total {
			return invalidConfig("When `remote.log.copy.disable` is set to true, the `local.retention.%s` and `retention.%s` must be set to the identical value because there will be no more logs copied to the remote storage.", k, k)
		}
	}
	return nil
}
