package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/moldau/moldau/broker/memory"
)

// The socket server's limits: the request memory pool
// (queued.max.request.bytes), the connection quotas (Kafka's
// ConnectionQuotas: max.connections, max.connections.per.ip,
// max.connections.per.ip.overrides, max.connection.creation.rate and the
// listener.name.<listener>. forms of max.connections and
// max.connection.creation.rate) and the time to receive one request
// (moldau.socket.request.receive.timeout.ms).

// RequestReceiveTimeoutKey is the total time a peer has to send one
// request once its first byte arrived. Kafka has no such limit (a request
// may take up to connections.max.idle.ms between two bytes).
const RequestReceiveTimeoutKey = "moldau.socket.request.receive.timeout.ms"

// networkDefs are the keys of this file, added to brokerDefs.
var networkDefs = []*Def{
	def("queued.max.request.bytes", TypeLong, nil, Medium, "The number of queued bytes allowed before no more requests are read: a memory pool that every request frame above 16 KiB reserves before its body is read (a connection whose frame does not fit stops reading until memory is returned, as Kafka mutes it); responses and decompressed batches are counted in it too, without waiting. -1 (or 0) is unbounded, Kafka's default. Moldau's default, when unset, is a quarter of the memory budget: GOMEMLIMIT if set (moldau serve sets it from the cgroup memory limit when the user has not), else the cgroup limit, else the machine's memory; at least 16 MiB. Set, it must be at least socket.request.max.bytes (as Kafka requires); the derived default may be smaller, and a frame larger than the pool is then read when the pool is idle, alone."),
	def(RequestReceiveTimeoutKey, TypeLong, int64(30000), Medium, "The time a peer has, from the first byte of a request, to send all of it; a connection that takes longer (a slowloris sender dribbling a frame) is closed, and logged once per peer and minute. Time spent waiting for queued.max.request.bytes memory does not count. -1 disables it (Kafka has no such limit). A Moldau setting.", orValidator{atLeast(1), funcValidator{func(v any) bool { return v == int64(-1) }, "-1"}}, ClusterWide),
	def("max.connections.per.ip.overrides", TypeString, "", Medium, "A comma-separated list of per-ip or hostname overrides to the default maximum number of connections, host:count (an example value is \"hostName:100,127.0.0.1:200\"). Hostnames are resolved when the setting is applied.", funcValidator{func(v any) bool { _, err := ParseIPOverrides(v.(string)); return err == nil }, "a comma-separated list of host:count, count >= 0"}, ClusterWide),
	def("max.connection.creation.rate", TypeInt, maxInt32, Medium, "The maximum connection creation rate (connections per second) the broker accepts; listener-level limits may be set with the listener prefix, listener.name.<listener>.max.connection.creation.rate. New connections are delayed (throttled), not refused, when the broker or the listener limit is reached; connections on the inter-broker listener only by the listener's limit. Moldau allows a burst of one second's worth (Kafka measures the rate over quota.window.num samples).", atLeast(0), ClusterWide),
}

// listenerQuotaKeys are the quota keys Kafka lets a listener override
// (SocketServer.ListenerReconfigurableConfigs).
var listenerQuotaKeys = []string{"max.connections", "max.connection.creation.rate"}

// ConnectionQuotas are the connection limits in effect (Kafka's
// ConnectionQuotas settings). math.MaxInt32 means no limit, as Kafka's
// defaults.
type ConnectionQuotas struct {
	MaxConnections            int32            // max.connections
	MaxConnectionsPerIP       int32            // max.connections.per.ip
	PerIPOverrides            map[string]int32 // max.connections.per.ip.overrides: host or IP -> limit
	MaxConnectionCreationRate int32            // max.connection.creation.rate, per second
	// Listeners holds listener.name.<listener>.max.connections and
	// .max.connection.creation.rate, by listener name (upper case).
	Listeners map[string]ListenerQuota
}

// ListenerQuota is one listener's limits (math.MaxInt32 when unset).
type ListenerQuota struct {
	MaxConnections            int32
	MaxConnectionCreationRate int32
}

// ListenerKey is a listener's form of a broker key,
// listener.name.<listener lower case>.<key>, as Kafka's
// ListenerName.configPrefix.
func ListenerKey(listener, key string) string {
	return "listener.name." + strings.ToLower(listener) + "." + key
}

// ConnectionQuotaKeys are the keys the connection quotas read, for a
// Reconfigurable: the broker-wide ones and each listener's forms.
func ConnectionQuotaKeys(listeners []string) []string {
	keys := []string{"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connection.creation.rate"}
	for _, l := range listeners {
		for _, k := range listenerQuotaKeys {
			keys = append(keys, ListenerKey(l, k))
		}
	}
	return keys
}

// ConnectionQuotasFrom builds the quotas from values keyed as
// ConnectionQuotaKeys (as Get returns them, nil when unset), checking them
// as Kafka does: max.connections.per.ip may be 0 only with overrides, and
// a listener's limits must be positive.
func ConnectionQuotasFrom(values map[string]any, listeners []string) (ConnectionQuotas, error) {
	i32 := func(k string, dflt int32) int32 {
		if v, ok := values[k].(int32); ok {
			return v
		}
		return dflt
	}
	q := ConnectionQuotas{
		MaxConnections:            i32("max.connections", math.MaxInt32),
		MaxConnectionsPerIP:       i32("max.connections.per.ip", math.MaxInt32),
		MaxConnectionCreationRate: i32("max.connection.creation.rate", math.MaxInt32),
		Listeners:                 make(map[string]ListenerQuota),
	}
	s, _ := values["max.connections.per.ip.overrides"].(string)
	var err error
	if q.PerIPOverrides, err = ParseIPOverrides(s); err != nil {
		return q, err
	}
	if q.MaxConnectionsPerIP == 0 && len(q.PerIPOverrides) == 0 {
		return q, fmt.Errorf("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set")
	}
	for _, l := range listeners {
		lq := ListenerQuota{
			MaxConnections:            i32(ListenerKey(l, "max.connections"), math.MaxInt32),
			MaxConnectionCreationRate: i32(ListenerKey(l, "max.connection.creation.rate"), math.MaxInt32),
		}
		if lq.MaxConnections <= 0 {
			return q, fmt.Errorf("Invalid max.connections %d", lq.MaxConnections)
		}
		if lq.MaxConnectionCreationRate <= 0 {
			return q, fmt.Errorf("Invalid max.connection.creation.rate %d", lq.MaxConnectionCreationRate)
		}
		q.Listeners[strings.ToUpper(l)] = lq
	}
	return q, nil
}

// ConnectionQuotas returns the quotas in effect for the broker listeners.
func (c *KafkaConfig) ConnectionQuotas() (ConnectionQuotas, error) {
	names := c.BrokerListenerNames()
	c.mu.RLock()
	values := c.valuesLocked(ConnectionQuotaKeys(names))
	c.mu.RUnlock()
	return ConnectionQuotasFrom(values, names)
}

// BrokerListenerNames are the names of the (non-controller) listeners.
func (c *KafkaConfig) BrokerListenerNames() []string {
	names := make([]string, len(c.Listeners))
	for i, l := range c.Listeners {
		names[i] = l.Name
	}
	return names
}

// RequestReceiveTimeout is moldau.socket.request.receive.timeout.ms in
// effect; 0 when disabled.
func (c *KafkaConfig) RequestReceiveTimeout() time.Duration {
	return receiveTimeout(c.Get(RequestReceiveTimeoutKey))
}

// RequestReceiveTimeoutFrom converts a value of
// moldau.socket.request.receive.timeout.ms, as Get returns it, to a
// duration; 0 when disabled.
func RequestReceiveTimeoutFrom(v any) time.Duration { return receiveTimeout(v) }

func receiveTimeout(v any) time.Duration {
	ms, _ := v.(int64)
	if ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
}

var hostPatternRE = regexp.MustCompile(`^[\w.:\-\[\]%]+$`)

// ParseIPOverrides parses max.connections.per.ip.overrides,
// "host:count,host:count" (IPv6 literals in brackets or bare; the count
// follows the last colon), as Kafka's KafkaConfig.getMap with
// Utils.validHostPattern.
func ParseIPOverrides(s string) (map[string]int32, error) {
	out := make(map[string]int32)
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndexByte(e, ':')
		if i <= 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q is not host:count", e)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(e[:i]), "["), "]")
		n, err := strconv.ParseInt(strings.TrimSpace(e[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q does not end in a count >= 0", e)
		}
		if !hostPatternRE.MatchString(host) {
			return nil, fmt.Errorf("max.connections.per.ip.overrides contains invalid addresses : %s", host)
		}
		out[host] = int32(n)
	}
	return out, nil
}

// fillNetwork reads the request memory pool and checks the connection
// quotas of the static configuration.
func (c *KafkaConfig) fillNetwork() error {
	if c.isSet("queued.max.request.bytes") {
		v := c.staticValue("queued.max.request.bytes").(int64)
		switch {
		case v <= 0:
			c.QueuedMaxRequestBytes = -1
		case v < int64(c.SocketRequestMaxBytes):
			return &ValueError{Name: "queued.max.request.bytes", Value: strconv.FormatInt(v, 10),
				Expected: fmt.Sprintf("-1 (unbounded) or at least socket.request.max.bytes (%d), as Kafka requires", c.SocketRequestMaxBytes)}
		default:
			c.QueuedMaxRequestBytes = v
		}
	} else {
		budget, source := memory.Budget()
		c.QueuedMaxRequestBytes = memory.DefaultQueuedMaxRequestBytes(budget)
		c.MemoryBudget, c.MemoryBudgetSource = budget, source
	}
	names := c.BrokerListenerNames()
	values := make(map[string]any)
	for _, k := range ConnectionQuotaKeys(names) {
		values[k] = c.staticAny(k)
	}
	if _, err := ConnectionQuotasFrom(values, names); err != nil {
		return &ValueError{Name: "max.connections", Value: "", Expected: err.Error()}
	}
	return nil
}

// staticAny resolves a key, listener forms included, from the static
// layer and the defaults; nil when unset with no default.
func (c *KafkaConfig) staticAny(name string) any {
	if brokerIndex[name] != nil {
		return c.staticValue(name)
	}
	base, ok := listenerBase(name)
	d := brokerIndex[base]
	if !ok || d == nil {
		return nil
	}
	s, set := c.static[name]
	if !set {
		return nil
	}
	v, _ := d.Parse(s)
	return v
}

// brokerDefFor returns the definition of a broker key, or of the key a
// listener form (listener.name.<listener>.<key>) names.
func brokerDefFor(name string) *Def {
	if d := brokerIndex[name]; d != nil {
		return d
	}
	if base, ok := listenerBase(name); ok {
		return brokerIndex[base]
	}
	return nil
}
