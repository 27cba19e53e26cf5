package config

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moldau/moldau/log"
)

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	Name string // e.g. PLAINTEXT (upper case, as Kafka normalises it)
	Host string // "" binds every interface
	Port int
}

// String formats the listener as NAME://host:port.
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// KafkaConfig is the broker's configuration (Kafka's KafkaConfig): the
// static properties, typed, plus the dynamic broker configs set with
// AlterConfigs, which win over the file. Safe for concurrent use.
//
// The exported fields are the static configuration and never change after
// Load. Values that may be changed dynamically are read through GetInt,
// GetLong, GetBool, GetString, GetList and LogConfig.
type KafkaConfig struct {
	NodeID                           int32             // node.id (broker.id is a synonym)
	Listeners                        []Listener        // listeners, default PLAINTEXT://localhost:9092; without controller listeners
	AdvertisedListeners              []Listener        // advertised.listeners, default: listeners
	ListenerSecurityProtocolMap      map[string]string // listener.security.protocol.map
	LogDirs                          []string          // log.dirs (log.dir)
	MetadataLogDir                   string            // metadata.log.dir, default first of log.dirs
	NumNetworkThreads                int               // num.network.threads, 3
	NumIOThreads                     int               // num.io.threads, 8
	QueuedMaxRequests                int               // queued.max.requests, 500
	RequestTimeout                   time.Duration     // request.timeout.ms, 30000
	SocketRequestMaxBytes            int32             // socket.request.max.bytes, 104857600
	SocketSendBufferBytes            int               // socket.send.buffer.bytes, 102400 (-1: OS default)
	SocketReceiveBufferBytes         int               // socket.receive.buffer.bytes, 102400
	ConnectionsMaxIdle               time.Duration     // connections.max.idle.ms, 600000
	NumPartitions                    int32             // num.partitions, 1
	DefaultReplicationFactor         int16             // default.replication.factor, 1
	AutoCreateTopicsEnable           bool              // auto.create.topics.enable, true
	DeleteTopicEnable                bool              // delete.topic.enable, true
	OffsetsTopicNumPartitions        int32             // offsets.topic.num.partitions, 50
	TransactionStateLogNumPartitions int32             // transaction.state.log.num.partitions, 50
	FetchMaxBytes                    int32             // fetch.max.bytes, 57671680
	MessageMaxBytes                  int32             // message.max.bytes, 1048588 (static value; dynamic: GetInt)
	RackID                           string            // broker.rack
	MetricsListener                  string            // moldau.metrics.listener: host:port for /metrics and /debug/pprof, "" off

	NumRecoveryThreadsPerDataDir          int           // num.recovery.threads.per.data.dir, 2
	LogRetentionCheckInterval             time.Duration // log.retention.check.interval.ms, 300000
	LogFlushSchedulerInterval             time.Duration // log.flush.scheduler.interval.ms
	LogFlushOffsetCheckpointInterval      time.Duration // log.flush.offset.checkpoint.interval.ms, 60000
	LogFlushStartOffsetCheckpointInterval time.Duration // log.flush.start.offset.checkpoint.interval.ms, 60000
	ProducerIDExpirationCheckInterval     time.Duration // producer.id.expiration.check.interval.ms, 600000

	ProcessRoles            []string         // process.roles, default broker,controller
	ControllerListenerNames []string         // controller.listener.names
	ControllerListeners     []Listener       // listeners named in controller.listener.names (served by the controller plane)
	QuorumVoters            map[int32]string // controller.quorum.voters: id -> host:port; empty: this node alone
	// QuorumBootstrapServers is controller.quorum.bootstrap.servers
	// (host:port, KIP-853): where a broker-only node looks for the
	// quorum when controller.quorum.voters is not set.
	QuorumBootstrapServers []string
	// AdvertisedControllerListeners are the controller listeners as a
	// controller registers them (ControllerRegistration): their entries
	// in advertised.listeners, else the listeners themselves.
	AdvertisedControllerListeners []Listener
	BrokerSessionTimeout          time.Duration // broker.session.timeout.ms, 9000
	BrokerHeartbeatInterval       time.Duration // broker.heartbeat.interval.ms, 2000
	QuorumElectionTimeout         time.Duration // controller.quorum.election.timeout.ms, 1000
	QuorumFetchTimeout            time.Duration // controller.quorum.fetch.timeout.ms, 2000
	MetadataLogSegmentBytes       int32         // metadata.log.segment.bytes
	// metadata.log.max.record.bytes.between.snapshots
	MetadataSnapshotMaxNewRecordBytes int64
	MetadataSnapshotMaxInterval       time.Duration // metadata.log.max.snapshot.interval.ms, 1h
	MetadataMaxRetentionBytes         int64         // metadata.max.retention.bytes
	InterBrokerListenerName           string        // inter.broker.listener.name (resolved)
	SocketListenBacklogSize           int           // socket.listen.backlog.size, 50
	MaxConnections                    int           // max.connections
	MaxConnectionsPerIP               int           // max.connections.per.ip
	// QueuedMaxRequestBytes is queued.max.request.bytes in effect: -1
	// unbounded, else the request memory pool's size (derived from the
	// memory budget when unset).
	QueuedMaxRequestBytes int64
	// MemoryBudget and MemoryBudgetSource are the budget the derived
	// queued.max.request.bytes comes from (0 and "" when it is set).
	MemoryBudget       int64
	MemoryBudgetSource string

	MinInSyncReplicas                    int32         // min.insync.replicas (static value)
	ReplicaLagTimeMax                    time.Duration // replica.lag.time.max.ms, 30000
	OffsetsTopicReplicationFactor        int16         // offsets.topic.replication.factor, 3
	TransactionStateLogReplicationFactor int16         // transaction.state.log.replication.factor, 3
	GroupInitialRebalanceDelay           time.Duration // group.initial.rebalance.delay.ms, 3000
	GroupMinSessionTimeout               time.Duration // group.min.session.timeout.ms, 6000
	GroupMaxSessionTimeout               time.Duration // group.max.session.timeout.ms, 1800000
	OffsetsRetention                     time.Duration // offsets.retention.minutes, 10080
	LogCleanerEnable                     bool          // log.cleaner.enable, true

	// Source is the properties file read ("" when none).
	Source string

	// static holds the file and the overrides, raw, by key (unknown
	// keys included, as Kafka's originals).
	static map[string]string

	mu              sync.RWMutex
	dynBroker       map[string]string // resource "<node.id>"
	dynDefault      map[string]string // resource ""
	reconfigurables []*registration
}

var (
	// brokerIndex holds brokerDefs, then the keys of kafkaBrokerDefs
	// that brokerDefs does not define (a key moved to broker_defs.go,
	// because Moldau now acts on it, simply wins over the generated one).
	brokerIndex = func() map[string]*Def {
		m := make(map[string]*Def, len(brokerDefs)+len(networkDefs)+len(sslDefs)+len(saslDefs)+len(kafkaBrokerDefs))
		for _, d := range slices.Concat(brokerDefs, networkDefs, sslDefs, saslDefs) {
			if m[d.Name] != nil {
				panic("config: duplicate definition " + d.Name)
			}
			m[d.Name] = d
		}
		for _, name := range storedOnlyBrokerKeys {
			if d := m[name]; d != nil {
				d.StoredOnly = true
			}
		}
		for _, d := range kafkaBrokerDefs {
			if m[d.Name] == nil {
				m[d.Name] = d
			}
		}
		return m
	}()
	topicIndex = func() map[string]*TopicDef {
		m := make(map[string]*TopicDef, len(topicDefs))
		for _, d := range topicDefs {
			m[d.Name] = d
			for _, s := range d.synonyms {
				if brokerIndex[s.name] == nil {
					panic("config: topic config " + d.Name + " has undefined synonym " + s.name)
				}
			}
		}
		return m
	}()
)

// BrokerDefs returns the broker config definitions, sorted by name: those
// Moldau acts on and those it only stores (Def.StoredOnly).
func BrokerDefs() []*Def {
	defs := make([]*Def, 0, len(brokerIndex))
	for _, d := range brokerIndex {
		defs = append(defs, d)
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

// TopicDefs returns the topic config definitions, sorted by name.
func TopicDefs() []*TopicDef { return slices.Clone(topicDefs) }

// BrokerDef returns the definition of a broker config.
func BrokerDef(name string) (*Def, bool) { d, ok := brokerIndex[name]; return d, ok }

// TopicDef returns the definition of a topic config.
func LookupTopicDef(name string) (*TopicDef, bool) { d, ok := topicIndex[name]; return d, ok }

// internalMetadataLogSegmentBytes is Kafka's internal (undescribed, for
// tests only) internal.metadata.log.segment.bytes: metadata segments
// below the 8 MiB metadata.log.segment.bytes allows, so that tests see
// snapshots and deleted segments after a few KiB of metadata.
var internalMetadataLogSegmentBytes = def("internal.metadata.log.segment.bytes", TypeInt, nil, Low,
	"The size of a segment of the metadata log, only for testing: it overrides metadata.log.segment.bytes.", atLeast(12))

// Load reads a server.properties file (path "" means none: all defaults)
// and applies overrides ("key=value"). It returns warnings for unknown keys.
// A bad value is an error naming the key, the value and what was expected.
func Load(path string, overrides []string) (*KafkaConfig, []string, error) {
	static := make(map[string]string)
	var warnings []string
	where := make(map[string]string)
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("reading configuration: %w", err)
		}
		props, err := ParseProperties(string(b))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", path, err)
		}
		for _, p := range props {
			static[p.Key] = p.Value
			where[p.Key] = fmt.Sprintf("%s:%d", path, p.Line)
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("invalid override %q: expected key=value", o)
		}
		static[k] = v
		where[k] = "override"
	}
	keys := make([]string, 0, len(static))
	for k := range static {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := brokerDefFor(k) // listener.name.<listener>.<key> too
		if k == internalMetadataLogSegmentBytes.Name {
			d = internalMetadataLogSegmentBytes
			warnings = append(warnings, "overriding internal.metadata.log.segment.bytes is only supported for testing; setting this value too low may lead to an inability to write batches of metadata records")
		}
		if d == nil && pluginProperty(static, k) {
			continue // the remote storage and metadata managers' own
		}
		if d == nil {
			warnings = append(warnings, fmt.Sprintf("unknown configuration %q (%s) is ignored", k, where[k]))
			continue
		}
		if _, err := d.Parse(static[k]); err != nil {
			return nil, warnings, err
		}
	}
	c := &KafkaConfig{Source: path, static: static}
	w, err := c.fill()
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	return c, warnings, nil
}

// pluginProperty reports whether k is for tiered storage's managers: it
// starts with remote.log.storage.manager.impl.prefix (rsm.config.) or
// remote.log.metadata.manager.impl.prefix (rlmm.config.), as configured
// in static. Kafka hands these to the plugins, not checking them itself.
func pluginProperty(static map[string]string, k string) bool {
	for name, def := range map[string]string{"remote.log.storage.manager.impl.prefix": "rsm.config.", "remote.log.metadata.manager.impl.prefix": "rlmm.config."} {
		prefix := def
		if v, ok := static[name]; ok {
			prefix = v
		}
		if prefix != "" && strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// Default returns the configuration with every default, as Load("", nil).
func Default() *KafkaConfig {
	c, _, err := Load("", nil)
	if err != nil {
		panic("config: defaults do not load: " + err.Error())
	}
	return c
}

// staticValue resolves a broker key from the static layer and defaults.
func (c *KafkaConfig) staticValue(name string) any {
	d := brokerIndex[name]
	if s, ok := c.static[name]; ok {
		if v, err := d.Parse(s); err == nil {
			return v
		}
	}
	if d.Default == nil {
		return nil
	}
	v, _ := parseType(d.Type, *d.Default)
	return v
}

func (c *KafkaConfig) isSet(name string) bool { _, ok := c.static[name]; return ok }

// fill sets the typed fields from the static layer and checks the rules
// that span keys.
func (c *KafkaConfig) fill() (warnings []string, err error) {
	controllerRole, err := c.fillRoles()
	if err != nil {
		return nil, err
	}
	if err := c.fillListeners(); err != nil {
		return nil, err
	}
	if err := c.fillQuorum(controllerRole); err != nil {
		return nil, err
	}
	if err := c.fillAdvertised(); err != nil {
		return nil, err
	}
	if err := c.fillRoleListeners(); err != nil {
		return nil, err
	}
	if err := c.fillLogDirs(); err != nil {
		return nil, err
	}
	// Metrics listener.
	c.MetricsListener = strings.TrimSpace(c.staticString("moldau.metrics.listener"))
	if c.MetricsListener != "" {
		_, port, err := net.SplitHostPort(c.MetricsListener)
		if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 0 || p > 65535 {
			return nil, c.badStatic("moldau.metrics.listener", "host:port with a port in [0, 65535], or empty to disable")
		}
	}
	c.NumNetworkThreads = int(c.staticInt32("num.network.threads"))
	c.NumIOThreads = int(c.staticInt32("num.io.threads"))
	c.QueuedMaxRequests = int(c.staticInt32("queued.max.requests"))
	c.RequestTimeout = c.staticMs32("request.timeout.ms")
	c.SocketRequestMaxBytes = c.staticInt32("socket.request.max.bytes")
	c.SocketSendBufferBytes = int(c.staticInt32("socket.send.buffer.bytes"))
	c.SocketReceiveBufferBytes = int(c.staticInt32("socket.receive.buffer.bytes"))
	c.SocketListenBacklogSize = int(c.staticInt32("socket.listen.backlog.size"))
	c.MaxConnections = int(c.staticInt32("max.connections"))
	c.MaxConnectionsPerIP = int(c.staticInt32("max.connections.per.ip"))
	c.ConnectionsMaxIdle = c.staticMs64("connections.max.idle.ms")
	if err := c.fillNetwork(); err != nil {
		return nil, err
	}
	if err := c.fillServer(); err != nil {
		return nil, err
	}
	return warnings, nil
}

// staticInt32 and the functions after it read a static value of a known
// type (the key's definition fixes it).
func (c *KafkaConfig) staticInt32(k string) int32 { return c.staticValue(k).(int32) }

func (c *KafkaConfig) staticInt64(k string) int64 { return c.staticValue(k).(int64) }

func (c *KafkaConfig) staticString(k string) string { s, _ := c.staticValue(k).(string); return s }

func (c *KafkaConfig) staticMs32(k string) time.Duration {
	return time.Duration(c.staticInt32(k)) * time.Millisecond
}

// staticMs64 is a duration in milliseconds, Long.MAX_VALUE (Kafka's
// "forever") capped to the longest time.Duration.
func (c *KafkaConfig) staticMs64(k string) time.Duration {
	v := c.staticInt64(k)
	if v > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(v) * time.Millisecond
}

// badStatic is the error for key k's static value, which is not what was
// expected.
func (c *KafkaConfig) badStatic(k, expected string) error {
	return &ValueError{Name: k, Value: strings.TrimSpace(c.staticString(k)), Expected: expected}
}

// fillRoles checks process.roles and node.id (or broker.id) and says
// whether this node is a controller.
func (c *KafkaConfig) fillRoles() (controller bool, err error) {
	c.ProcessRoles = c.staticValue("process.roles").([]string)
	seen := map[string]bool{}
	for _, r := range c.ProcessRoles {
		if seen[r] {
			return false, &ValueError{Name: "process.roles", Value: strings.Join(c.ProcessRoles, ","), Expected: "each role at most once"}
		}
		seen[r] = true
	}
	if len(c.ProcessRoles) == 0 {
		return false, &ValueError{Name: "process.roles", Value: "", Expected: "broker, controller or broker,controller"}
	}
	c.NodeID = c.staticInt32("node.id")
	if brokerID := c.staticInt32("broker.id"); brokerID >= 0 {
		switch {
		case !c.isSet("node.id"):
			c.NodeID = brokerID
		case brokerID != c.NodeID:
			return false, &ValueError{Name: "broker.id", Value: strconv.Itoa(int(brokerID)), Expected: fmt.Sprintf("the same value as node.id (%d), or unset", c.NodeID)}
		}
	}
	return seen["controller"], nil
}

// fillListeners splits listeners into the broker's and the controller's,
// checking their security protocols.
func (c *KafkaConfig) fillListeners() error {
	str := c.staticString
	all, err := parseListeners("listeners", str("listeners"))
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return c.badStatic("listeners", "at least one listener NAME://host:port")
	}
	c.ListenerSecurityProtocolMap, err = parseProtocolMap(str("listener.security.protocol.map"))
	if err != nil {
		return err
	}
	for _, n := range strings.Split(str("controller.listener.names"), ",") {
		if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
			c.ControllerListenerNames = append(c.ControllerListenerNames, n)
		}
	}
	for _, l := range all {
		if _, ok := c.ListenerSecurityProtocolMap[l.Name]; !ok {
			return &ValueError{Name: "listeners", Value: str("listeners"), Expected: fmt.Sprintf("listener names present in listener.security.protocol.map (no protocol for %s)", l.Name)}
		}
		if slices.Contains(c.ControllerListenerNames, l.Name) {
			c.ControllerListeners = append(c.ControllerListeners, l)
			continue
		}
		c.Listeners = append(c.Listeners, l)
	}
	switch {
	case c.IsBroker() && len(c.Listeners) == 0:
		return c.badStatic("listeners", "at least one listener that is not a controller listener, since process.roles contains the broker role")
	case !c.IsBroker() && len(c.Listeners) > 0:
		return c.badStatic("listeners", "only KRaft controller listeners from controller.listener.names when process.roles=controller")
	case !c.IsBroker() && len(c.ControllerListeners) == 0:
		return &ValueError{Name: "controller.listener.names", Value: strings.Join(c.ControllerListenerNames, ","), Expected: "at least one value appearing in the 'listeners' configuration when running the KRaft controller role"}
	case c.IsBroker() && !c.IsController() && len(c.ControllerListeners) > 0:
		return c.badStatic("listeners", "no KRaft controller listeners from controller.listener.names when process.roles=broker")
	}
	return nil
}

// IsBroker reports whether process.roles contains broker.
func (c *KafkaConfig) IsBroker() bool { return slices.Contains(c.ProcessRoles, "broker") }

// IsController reports whether process.roles contains controller.
func (c *KafkaConfig) IsController() bool { return slices.Contains(c.ProcessRoles, "controller") }

// fillRoleListeners sets the controller listeners as a controller
// advertises them.
func (c *KafkaConfig) fillRoleListeners() error {
	if !c.IsController() {
		return nil
	}
	c.AdvertisedControllerListeners = slices.Clone(c.ControllerListeners)
	if !c.isSet("advertised.listeners") {
		return nil
	}
	adv, err := parseListeners("advertised.listeners", c.staticString("advertised.listeners"))
	if err != nil {
		return err
	}
	for _, a := range adv {
		if i := slices.IndexFunc(c.AdvertisedControllerListeners, func(l Listener) bool { return l.Name == a.Name }); i >= 0 {
			c.AdvertisedControllerListeners[i] = a
		}
	}
	return nil
}

// fillAdvertised sets advertised.listeners (the listeners if unset) and
// the inter-broker listener.
func (c *KafkaConfig) fillAdvertised() error {
	str := c.staticString
	if !c.IsBroker() {
		// A controller-only node has no broker listeners: its
		// advertised.listeners name controller listeners (KIP-853).
		c.InterBrokerListenerName = strings.ToUpper(strings.TrimSpace(str("inter.broker.listener.name")))
		return nil
	}
	if c.isSet("advertised.listeners") && strings.TrimSpace(str("advertised.listeners")) != "" {
		adv, err := parseListeners("advertised.listeners", str("advertised.listeners"))
		if err != nil {
			return err
		}
		adv = slices.DeleteFunc(adv, func(a Listener) bool {
			// A combined node may advertise its controller listener
			// (KIP-853); it is not a broker endpoint.
			return c.IsController() && slices.Contains(c.ControllerListenerNames, a.Name)
		})
		for _, a := range adv {
			if !slices.ContainsFunc(c.Listeners, func(l Listener) bool { return l.Name == a.Name }) {
				return c.badStatic("advertised.listeners", "listener names that are among the (broker) listeners: "+a.Name+" is not")
			}
			if ip := net.ParseIP(a.Host); ip != nil && ip.IsUnspecified() {
				return c.badStatic("advertised.listeners", "routable hosts: "+a.Host+" is the unspecified address")
			}
		}
		c.AdvertisedListeners = adv
	} else {
		c.AdvertisedListeners = slices.Clone(c.Listeners)
	}
	ibl := strings.ToUpper(strings.TrimSpace(str("inter.broker.listener.name")))
	if ibl == "" {
		c.InterBrokerListenerName = c.AdvertisedListeners[0].Name
		p := str("security.inter.broker.protocol")
		switch {
		case slices.ContainsFunc(c.AdvertisedListeners, func(l Listener) bool { return l.Name == p }):
			c.InterBrokerListenerName = p
		case c.isSet("security.inter.broker.protocol"):
			// Kafka names the inter-broker listener after the protocol.
			return c.badStatic("security.inter.broker.protocol", "the name of a listener in advertised.listeners (the inter-broker listener is the one named after the protocol; or set inter.broker.listener.name)")
		}
		return nil
	}
	if c.isSet("security.inter.broker.protocol") {
		return c.badStatic("inter.broker.listener.name", "only one of inter.broker.listener.name and security.inter.broker.protocol to be set")
	}
	if !slices.ContainsFunc(c.AdvertisedListeners, func(l Listener) bool { return l.Name == ibl }) {
		return c.badStatic("inter.broker.listener.name", "a listener name defined in advertised.listeners")
	}
	c.InterBrokerListenerName = ibl
	return nil
}

// fillLogDirs sets log.dirs (log.dir if unset) and metadata.log.dir.
func (c *KafkaConfig) fillLogDirs() error {
	dirs := c.staticString("log.dirs")
	if !c.isSet("log.dirs") || strings.TrimSpace(dirs) == "" {
		dirs = c.staticString("log.dir")
	}
	for _, d := range strings.Split(dirs, ",") {
		if d = strings.TrimSpace(d); d != "" && !slices.Contains(c.LogDirs, d) {
			c.LogDirs = append(c.LogDirs, d)
		}
	}
	if len(c.LogDirs) == 0 {
		return c.badStatic("log.dirs", "at least one directory")
	}
	c.MetadataLogDir = strings.TrimSpace(c.staticString("metadata.log.dir"))
	if c.MetadataLogDir == "" {
		c.MetadataLogDir = c.LogDirs[0]
	}
	return nil
}

// fillServer sets the topic, log, replication and group defaults.
func (c *KafkaConfig) fillServer() error {
	i32, ms32, ms64 := c.staticInt32, c.staticMs32, c.staticMs64
	c.NumPartitions = i32("num.partitions")
	rf := i32("default.replication.factor")
	if rf < 1 || rf > 32767 {
		return c.badStatic("default.replication.factor", "an integer in [1, 32767]")
	}
	c.DefaultReplicationFactor = int16(rf)
	c.AutoCreateTopicsEnable = c.staticValue("auto.create.topics.enable").(bool)
	c.DeleteTopicEnable = c.staticValue("delete.topic.enable").(bool)
	c.OffsetsTopicNumPartitions = i32("offsets.topic.num.partitions")
	c.TransactionStateLogNumPartitions = i32("transaction.state.log.num.partitions")
	c.FetchMaxBytes = i32("fetch.max.bytes")
	c.MessageMaxBytes = i32("message.max.bytes")
	c.RackID = strings.TrimSpace(c.staticString("broker.rack"))
	c.NumRecoveryThreadsPerDataDir = int(i32("num.recovery.threads.per.data.dir"))
	c.LogRetentionCheckInterval = ms64("log.retention.check.interval.ms")
	c.LogFlushSchedulerInterval = ms64("log.flush.scheduler.interval.ms")
	c.LogFlushOffsetCheckpointInterval = ms32("log.flush.offset.checkpoint.interval.ms")
	c.LogFlushStartOffsetCheckpointInterval = ms32("log.flush.start.offset.checkpoint.interval.ms")
	c.ProducerIDExpirationCheckInterval = ms32("producer.id.expiration.check.interval.ms")
	c.MinInSyncReplicas = i32("min.insync.replicas")
	c.ReplicaLagTimeMax = ms64("replica.lag.time.max.ms")
	c.OffsetsTopicReplicationFactor = c.staticValue("offsets.topic.replication.factor").(int16)
	c.TransactionStateLogReplicationFactor = c.staticValue("transaction.state.log.replication.factor").(int16)
	c.GroupInitialRebalanceDelay = ms32("group.initial.rebalance.delay.ms")
	c.GroupMinSessionTimeout = ms32("group.min.session.timeout.ms")
	c.GroupMaxSessionTimeout = ms32("group.max.session.timeout.ms")
	c.OffsetsRetention = time.Duration(i32("offsets.retention.minutes")) * time.Minute
	c.LogCleanerEnable = c.staticValue("log.cleaner.enable").(bool)
	return nil
}

// fillQuorum reads the metadata quorum's settings: the voters, and which
// controller listener this node serves them on.
func (c *KafkaConfig) fillQuorum(controllerRole bool) error {
	ms := func(k string) time.Duration { return time.Duration(c.staticValue(k).(int32)) * time.Millisecond }
	c.BrokerSessionTimeout = ms("broker.session.timeout.ms")
	c.BrokerHeartbeatInterval = ms("broker.heartbeat.interval.ms")
	c.QuorumElectionTimeout = ms("controller.quorum.election.timeout.ms")
	c.QuorumFetchTimeout = ms("controller.quorum.fetch.timeout.ms")
	c.MetadataLogSegmentBytes = c.staticValue("metadata.log.segment.bytes").(int32)
	if raw, ok := c.static[internalMetadataLogSegmentBytes.Name]; ok {
		v, err := internalMetadataLogSegmentBytes.Parse(raw)
		if err != nil {
			return err
		}
		c.MetadataLogSegmentBytes = v.(int32)
	}
	c.MetadataSnapshotMaxNewRecordBytes = c.staticValue("metadata.log.max.record.bytes.between.snapshots").(int64)
	c.MetadataSnapshotMaxInterval = time.Duration(c.staticValue("metadata.log.max.snapshot.interval.ms").(int64)) * time.Millisecond
	c.MetadataMaxRetentionBytes = c.staticValue("metadata.max.retention.bytes").(int64)
	bootstrap := c.staticValue("controller.quorum.bootstrap.servers").([]string)
	for _, b := range bootstrap {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			return &ValueError{Name: "controller.quorum.bootstrap.servers", Value: b, Expected: "host:port entries"}
		}
		c.QuorumBootstrapServers = append(c.QuorumBootstrapServers, b)
	}
	raw := c.staticValue("controller.quorum.voters").([]string)
	voters, err := ParseQuorumVoters(raw)
	if err != nil {
		return err
	}
	c.QuorumVoters = voters
	switch {
	case len(voters) == 0 && !controllerRole && len(c.QuorumBootstrapServers) == 0:
		return &ValueError{Name: "controller.quorum.voters", Value: "", Expected: "the voters of the metadata quorum, id@host:port,...: if process.roles=broker, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of controllers"}
	case len(voters) == 0 && controllerRole && len(c.QuorumBootstrapServers) > 0:
		// A controller joining a quorum (KIP-853): it follows the log as
		// an observer until AddRaftVoter adds it.
		if len(c.ControllerListeners) == 0 {
			return &ValueError{Name: "controller.listener.names", Value: strings.Join(c.ControllerListenerNames, ","), Expected: "the name of a listener in listeners, for the controller (e.g. CONTROLLER with listeners=...,CONTROLLER://host:port)"}
		}
		return nil
	case len(voters) == 0 && !c.IsBroker():
		return &ValueError{Name: "controller.quorum.voters", Value: "", Expected: "the voters of the metadata quorum, id@host:port,..., including this node, when process.roles=controller"}
	case len(voters) == 0 && !controllerRole && len(c.ControllerListenerNames) == 0:
		return &ValueError{Name: "controller.listener.names", Value: "", Expected: "the name of the controllers' listener (e.g. CONTROLLER), with its protocol in listener.security.protocol.map, when process.roles=broker"}
	case len(voters) == 0 && !controllerRole:
		return nil // a broker that finds the quorum through the bootstrap servers
	case len(voters) == 0:
		return nil // this node alone is the quorum
	case !controllerRole:
		if _, ok := voters[c.NodeID]; ok {
			return &ValueError{Name: "controller.quorum.voters", Value: strings.Join(raw, ","), Expected: fmt.Sprintf("not to contain node.id %d: if process.roles contains just the 'broker' role, the node id must not be included in the set of voters", c.NodeID)}
		}
		if len(c.ControllerListenerNames) == 0 {
			return &ValueError{Name: "controller.listener.names", Value: "", Expected: "the name of the controllers' listener (e.g. CONTROLLER), with its protocol in listener.security.protocol.map, when process.roles=broker"}
		}
		return nil
	}
	if _, ok := voters[c.NodeID]; !ok {
		return &ValueError{Name: "controller.quorum.voters", Value: strings.Join(raw, ","), Expected: fmt.Sprintf("this node (node.id %d) among the voters: if process.roles contains the 'controller' role, the node id must be included in the set of voters", c.NodeID)}
	}
	if len(c.ControllerListeners) == 0 {
		return &ValueError{Name: "controller.listener.names", Value: strings.Join(c.ControllerListenerNames, ","), Expected: "the name of a listener in listeners, for the controller (e.g. CONTROLLER with listeners=...,CONTROLLER://host:port)"}
	}
	return nil
}

// ParseQuorumVoters parses controller.quorum.voters: id@host:port entries.
func ParseQuorumVoters(entries []string) (map[int32]string, error) {
	voters := map[int32]string{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		bad := &ValueError{Name: "controller.quorum.voters", Value: e, Expected: "id@host:port"}
		id, addr, ok := strings.Cut(e, "@")
		if !ok {
			return nil, bad
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, bad
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, bad
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return nil, bad
		}
		if _, dup := voters[int32(n)]; dup {
			return nil, &ValueError{Name: "controller.quorum.voters", Value: e, Expected: "each voter id once"}
		}
		voters[int32(n)] = addr
	}
	return voters, nil
}

// listenerRE is Kafka's EndPoint regex: NAME://host:port, with an IPv6
// host in brackets.
var listenerRE = regexp.MustCompile(`^([^:/\s]+)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$`)

func parseListeners(key, s string) ([]Listener, error) {
	var out []Listener
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		m := listenerRE.FindStringSubmatch(part)
		if m == nil {
			return nil, &ValueError{Name: key, Value: s, Expected: "a comma-separated list of NAME://host:port (" + part + " is not)"}
		}
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return nil, &ValueError{Name: key, Value: s, Expected: "ports in [0, 65535] (" + part + ")"}
		}
		l := Listener{Name: strings.ToUpper(m[1]), Host: m[2], Port: port}
		for _, o := range out {
			if o.Name == l.Name {
				return nil, &ValueError{Name: key, Value: s, Expected: "unique listener names (" + l.Name + " appears twice)"}
			}
			if port != 0 && o.Port == port && o.Host == l.Host {
				return nil, &ValueError{Name: key, Value: s, Expected: "a different host:port per listener (" + part + ")"}
			}
		}
		out = append(out, l)
	}
	return out, nil
}

var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

func parseProtocolMap(s string) (map[string]string, error) {
	m := make(map[string]string)
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, proto, ok := strings.Cut(part, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || !slices.Contains(securityProtocols, proto) {
			return nil, &ValueError{Name: "listener.security.protocol.map", Value: s, Expected: "NAME:PROTOCOL,... with PROTOCOL one of " + strings.Join(securityProtocols, ", ")}
		}
		m[name] = proto
	}
	return m, nil
}

// Advertised returns the advertised listeners as clients should see them:
// an empty host becomes the machine's host name (as Kafka advertises the
// canonical host name), and port 0 becomes the port actually bound, which
// boundPort reports for a listener name (nil: leave 0).
func (c *KafkaConfig) Advertised(boundPort func(listener string) int) []Listener {
	out := slices.Clone(c.AdvertisedListeners)
	for i := range out {
		if out[i].Host == "" {
			h, err := os.Hostname()
			if err != nil || h == "" {
				h = "localhost"
			}
			out[i].Host = h
		}
		if out[i].Port == 0 && boundPort != nil {
			out[i].Port = boundPort(out[i].Name)
		}
	}
	return out
}

// LogConfig resolves a topic's log.Config from its overrides and the
// broker's defaults (static and dynamic).
func (c *KafkaConfig) LogConfig(topicOverrides map[string]string) log.Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v := func(name string) any { val, _, _ := c.topicValueLocked(name, topicOverrides); return val }
	lc := log.Config{
		SegmentBytes:                v("segment.bytes").(int32),
		SegmentMs:                   v("segment.ms").(int64),
		SegmentJitterMs:             v("segment.jitter.ms").(int64),
		SegmentIndexBytes:           v("segment.index.bytes").(int32),
		IndexIntervalBytes:          v("index.interval.bytes").(int32),
		FlushIntervalMessages:       v("flush.messages").(int64),
		FlushIntervalMs:             v("flush.ms").(int64),
		RetentionMs:                 v("retention.ms").(int64),
		RetentionBytes:              v("retention.bytes").(int64),
		FileDeleteDelayMs:           v("file.delete.delay.ms").(int64),
		MaxMessageBytes:             v("max.message.bytes").(int32),
		MessageTimestampType:        v("message.timestamp.type").(string),
		MessageTimestampBeforeMaxMs: v("message.timestamp.before.max.ms").(int64),
		MessageTimestampAfterMaxMs:  v("message.timestamp.after.max.ms").(int64),
		CompressionType:             strings.ToLower(v("compression.type").(string)),
		CleanupPolicy:               slices.Clone(v("cleanup.policy").([]string)),
		MinInSyncReplicas:           v("min.insync.replicas").(int32),
		Preallocate:                 v("preallocate").(bool),
		DeleteRetentionMs:           v("delete.retention.ms").(int64),
		MinCleanableDirtyRatio:      v("min.cleanable.dirty.ratio").(float64),
		MinCompactionLagMs:          v("min.compaction.lag.ms").(int64),
		MaxCompactionLagMs:          v("max.compaction.lag.ms").(int64),
		// Tiered storage acts only where the broker runs it: a topic
		// created elsewhere with remote.storage.enable (validated by a
		// controller whose system is enabled) is a local log here.
		RemoteStorageEnable:  v("remote.storage.enable").(bool) && c.remoteStorageSystemEnabledLocked(),
		LocalRetentionMs:     v("local.retention.ms").(int64),
		LocalRetentionBytes:  v("local.retention.bytes").(int64),
		RemoteLogCopyDisable: v("remote.log.copy.disable").(bool),
	}
	return lc
}

// remoteStorageSystemEnabledLocked is remote.log.storage.system.enable
// (read-only: the static value). mu held.
func (c *KafkaConfig) remoteStorageSystemEnabledLocked() bool {
	v, _ := c.staticValue("remote.log.storage.system.enable").(bool)
	return v
}

// Originals returns the properties whose names start with prefix, with
// the prefix removed, as given in the file and overrides (unknown names
// included): Kafka's originalsWithPrefix, with which the remote storage
// and metadata managers get their rsm.config. and rlmm.config.
// properties.
func (c *KafkaConfig) Originals(prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range c.static {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = v
		}
	}
	return out
}
