package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestParseProperties(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[string]string
	}{
		{"equals", "a=b\n", map[string]string{"a": "b"}},
		{"colon", "a: b", map[string]string{"a": "b"}},
		{"space separator", "a   b c", map[string]string{"a": "b c"}},
		{"spaces around equals", "  a  =  b  ", map[string]string{"a": "b  "}},
		{"comments", "# c\n! c\n  # indented\na=1", map[string]string{"a": "1"}},
		{"blank lines", "\n\n\t\na=1\n\n", map[string]string{"a": "1"}},
		{"empty value", "a=\nb", map[string]string{"a": "", "b": ""}},
		{"continuation", "a=one,\\\n    two,\\\n  three", map[string]string{"a": "one,two,three"}},
		{"escaped backslash is not continuation", "a=x\\\\\nb=y", map[string]string{"a": `x\`, "b": "y"}},
		{"escapes", `a=tab\there\u0041\=`, map[string]string{"a": "tab\thereA="}},
		{"escaped separator in key", `a\=b=c`, map[string]string{"a=b": "c"}},
		{"crlf", "a=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"later wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"equals in value", "a=b=c", map[string]string{"a": "b=c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props, err := ParseProperties(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range props {
				got[p.Key] = p.Value
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := Default()
	if c.NodeID != 1 || len(c.Listeners) != 1 || c.Listeners[0] != (Listener{"PLAINTEXT", "localhost", 9092}) {
		t.Fatalf("node %d listeners %v", c.NodeID, c.Listeners)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"./moldau-data"}) || c.MetadataLogDir != "./moldau-data" {
		t.Fatalf("log dirs %v %q", c.LogDirs, c.MetadataLogDir)
	}
	if c.NumIOThreads != 8 || c.NumNetworkThreads != 3 || c.QueuedMaxRequests != 500 || c.SocketRequestMaxBytes != 104857600 ||
		c.NumPartitions != 1 || c.DefaultReplicationFactor != 1 || !c.AutoCreateTopicsEnable || !c.DeleteTopicEnable ||
		c.OffsetsTopicNumPartitions != 50 || c.OffsetsTopicReplicationFactor != 3 || c.FetchMaxBytes != 57671680 ||
		c.MessageMaxBytes != 1048588 || c.MetricsListener != "localhost:9404" || c.ConnectionsMaxIdle.Milliseconds() != 600000 {
		t.Fatalf("defaults: %+v", c)
	}
	lc := c.LogConfig(nil)
	if lc.RetentionMs != 7*24*3600*1000 || lc.SegmentMs != 7*24*3600*1000 || lc.SegmentBytes != 1<<30 ||
		lc.MaxMessageBytes != 1048588 || lc.FlushIntervalMs != 1<<63-1 || lc.MessageTimestampType != "CreateTime" ||
		!reflect.DeepEqual(lc.CleanupPolicy, []string{"delete"}) || lc.MessageTimestampAfterMaxMs != 3600000 {
		t.Fatalf("log config: %+v", lc)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		overrides []string
		want      string
	}{
		{[]string{"num.io.threads=abc"}, `invalid value "abc" for configuration num.io.threads: expected an integer >= 1`},
		{[]string{"num.io.threads=0"}, `invalid value "0" for configuration num.io.threads: expected an integer >= 1`},
		{[]string{"auto.create.topics.enable=yes"}, `invalid value "yes" for configuration auto.create.topics.enable: expected true or false`},
		{[]string{"log.message.timestamp.type=Now"}, `expected one of: CreateTime, LogAppendTime`},
		{[]string{"log.cleanup.policy=delete,forever"}, `expected a comma-separated list of: compact, delete`},
		{[]string{"listeners=localhost:9092"}, `configuration listeners: expected a comma-separated list of NAME://host:port`},
		{[]string{"listeners=PLAINTEXT://:9092,plaintext://:9093"}, `unique listener names (PLAINTEXT appears twice)`},
		{[]string{"listeners=PLAINTEXT://:70000"}, `ports in [0, 65535]`},
		{[]string{"listeners=PLAINTEXT://:9092", "security.inter.broker.protocol=SSL"}, `the name of a listener in advertised.listeners`},
		{[]string{"ssl.client.auth=sometimes"}, `one of: required, requested, none`},
		{[]string{"ssl.enabled.protocols=TLSv1.1"}, `TLSv1.2, TLSv1.3`},
		{[]string{"listeners=FOO://:9093"}, `no protocol for FOO`},
		{[]string{"advertised.listeners=OTHER://h:1"}, `OTHER is not`},
		{[]string{"advertised.listeners=PLAINTEXT://0.0.0.0:9092"}, `unspecified address`},
		{[]string{"node.id=2", "broker.id=3"}, `broker.id`},
		{[]string{"process.roles=controller"}, `only KRaft controller listeners from controller.listener.names when process.roles=controller`},
		{[]string{"process.roles=controller", "listeners=CONTROLLER://:9093", "controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT"}, `including this node, when process.roles=controller`},
		{[]string{"process.roles=controller", "node.id=4", "listeners=CONTROLLER://:9093", "controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT", "controller.quorum.voters=1@h:9093"}, `the node id must be included in the set of voters`},
		{[]string{"process.roles=broker"}, `either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters`},
		{[]string{"process.roles=broker", "node.id=1", "controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT", "controller.quorum.voters=1@h:9093"}, `the node id must not be included in the set of voters`},
		{[]string{"process.roles=broker", "listeners=PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT", "controller.quorum.bootstrap.servers=h:9093"}, `no KRaft controller listeners from controller.listener.names when process.roles=broker`},
		{[]string{"process.roles=broker", "controller.quorum.bootstrap.servers=nohost"}, `host:port entries`},
		{[]string{"process.roles=broker", "controller.quorum.bootstrap.servers=h:9093"}, `controller.listener.names`},
		{[]string{"moldau.metrics.listener=nope"}, `moldau.metrics.listener`},
		{[]string{"novalue"}, `expected key=value`},
		{[]string{"metadata.log.segment.bytes=2048"}, `invalid value "2048" for configuration metadata.log.segment.bytes: expected an integer >= 8388608`},
		{[]string{"internal.metadata.log.segment.bytes=8"}, `configuration internal.metadata.log.segment.bytes: expected an integer >= 12`},
	} {
		_, _, err := Load("", tc.overrides)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.overrides, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: multi-line error %q", tc.overrides, err)
		}
	}
}

// Metadata segments below 8 MiB only through Kafka's setting for tests,
// with a warning, and it is not described.
func TestInternalMetadataSegmentBytes(t *testing.T) {
	c, warnings, err := Load("", []string{"internal.metadata.log.segment.bytes=2048"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MetadataLogSegmentBytes != 2048 || len(warnings) != 1 || !strings.Contains(warnings[0], "only supported for testing") {
		t.Fatalf("segment bytes %d, warnings %q", c.MetadataLogSegmentBytes, warnings)
	}
	if _, ok := BrokerDef("internal.metadata.log.segment.bytes"); ok {
		t.Fatal("internal.metadata.log.segment.bytes is a described broker config")
	}
}

// Kafka's own broker.properties and controller.properties (static
// voters) load.
func TestLoadRoles(t *testing.T) {
	ctrl, _, err := Load("", []string{"process.roles=controller", "node.id=1",
		"controller.quorum.voters=1@localhost:9093,2@localhost:9094,3@localhost:9095",
		"listeners=CONTROLLER://:9093", "advertised.listeners=CONTROLLER://localhost:9093",
		"controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"})
	if err != nil {
		t.Fatal(err)
	}
	if ctrl.IsBroker() || !ctrl.IsController() || len(ctrl.Listeners) != 0 || len(ctrl.ControllerListeners) != 1 ||
		len(ctrl.AdvertisedControllerListeners) != 1 || ctrl.AdvertisedControllerListeners[0].Host != "localhost" {
		t.Fatalf("controller: %+v %+v", ctrl.ControllerListeners, ctrl.AdvertisedControllerListeners)
	}
	for _, quorum := range []string{"controller.quorum.bootstrap.servers=localhost:9093,localhost:9094", "controller.quorum.voters=1@localhost:9093"} {
		b, _, err := Load("", []string{"process.roles=broker", "node.id=4", quorum,
			"listeners=PLAINTEXT://localhost:9092", "inter.broker.listener.name=PLAINTEXT", "advertised.listeners=PLAINTEXT://localhost:9092",
			"controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"})
		if err != nil {
			t.Fatalf("%s: %v", quorum, err)
		}
		if !b.IsBroker() || b.IsController() || len(b.QuorumBootstrapServers)+len(b.QuorumVoters) == 0 {
			t.Fatalf("%s: broker %v %v", quorum, b.QuorumBootstrapServers, b.QuorumVoters)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.properties")
	text := `# Kafka-style config
process.roles=broker,controller
node.id=4
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
advertised.listeners=PLAINTEXT://broker1:9092
log.dirs=/a, /b
num.partitions: 3
log.retention.hours 24
no.such.key=1
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, warnings, err := Load(path, []string{"num.partitions=5"})
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 4 || c.NumPartitions != 5 || !reflect.DeepEqual(c.LogDirs, []string{"/a", "/b"}) {
		t.Fatalf("%+v", c)
	}
	if len(c.Listeners) != 1 || c.Listeners[0].Port != 9092 || len(c.ControllerListeners) != 1 {
		t.Fatalf("listeners %v controller %v", c.Listeners, c.ControllerListeners)
	}
	if c.AdvertisedListeners[0].Host != "broker1" || c.InterBrokerListenerName != "PLAINTEXT" {
		t.Fatalf("advertised %v ibl %s", c.AdvertisedListeners, c.InterBrokerListenerName)
	}
	var unknown bool
	for _, w := range warnings {
		unknown = unknown || strings.Contains(w, `"no.such.key"`) && strings.Contains(w, "server.properties:11")
	}
	if !unknown {
		t.Fatalf("no warning for the unknown key: %q", warnings)
	}
	if got := c.LogConfig(nil).RetentionMs; got != 24*3600*1000 {
		t.Fatalf("retention %d", got)
	}
}

func TestBrokerIDSynonym(t *testing.T) {
	c, _, err := Load("", []string{"broker.id=7"})
	if err != nil || c.NodeID != 7 {
		t.Fatalf("%v %v", c, err)
	}
}

func TestRetentionPrecedence(t *testing.T) {
	for _, tc := range []struct {
		overrides []string
		want      int64
	}{
		{nil, 168 * 3600000},
		{[]string{"log.retention.hours=1"}, 3600000},
		{[]string{"log.retention.hours=1", "log.retention.minutes=2"}, 120000},
		{[]string{"log.retention.hours=1", "log.retention.minutes=2", "log.retention.ms=3"}, 3},
		{[]string{"log.retention.ms=-1"}, -1},
		{[]string{"log.retention.hours=-1"}, -1},
		{[]string{"log.retention.minutes=-5"}, -1},
	} {
		c, _, err := Load("", tc.overrides)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.LogConfig(nil).RetentionMs; got != tc.want {
			t.Errorf("%v: retention.ms %d, want %d", tc.overrides, got, tc.want)
		}
	}
	c, _, _ := Load("", []string{"log.roll.hours=2", "log.flush.scheduler.interval.ms=5", "message.max.bytes=100"})
	lc := c.LogConfig(map[string]string{"retention.ms": "42"})
	if lc.SegmentMs != 2*3600000 || lc.FlushIntervalMs != 5 || lc.MaxMessageBytes != 100 || lc.RetentionMs != 42 {
		t.Fatalf("%+v", lc)
	}
}

func entry(entries []ConfigEntry, name string) ConfigEntry {
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	return ConfigEntry{}
}

func TestDescribeAndDynamic(t *testing.T) {
	c, _, err := Load("", []string{"log.retention.hours=24", "queued.max.requests=4"})
	if err != nil {
		t.Fatal(err)
	}
	e := entry(c.DescribeTopic(nil, nil), "retention.ms")
	if *e.Value != "86400000" || e.Source != SourceStaticBroker || len(e.Synonyms) != 2 ||
		e.Synonyms[0].Name != "log.retention.hours" || *e.Synonyms[0].Value != "24" || e.Synonyms[0].Source != SourceStaticBroker ||
		e.Synonyms[1].Source != SourceDefault {
		t.Fatalf("%+v %+v", e, e.Synonyms)
	}
	e = entry(c.DescribeTopic(map[string]string{"retention.ms": "5"}, []string{"retention.ms"}), "retention.ms")
	if *e.Value != "5" || e.Source != SourceTopic || e.Synonyms[0].Source != SourceTopic || len(e.Synonyms) != 3 {
		t.Fatalf("%+v", e)
	}
	if e := entry(c.DescribeTopic(nil, nil), "remote.storage.enable"); *e.Value != "false" || e.Source != SourceDefault {
		t.Fatalf("%+v", e)
	}

	// Dynamic: cluster default, then per broker.
	if err := c.ValidateDynamic("", map[string]string{"queued.max.requests": "9", "log.dirs": "/x"}); err == nil || !errors.Is(err, kerr.InvalidRequest) ||
		!strings.Contains(err.Error(), "Cannot update these configs dynamically: Set(log.dirs, queued.max.requests)") {
		t.Fatalf("got %v", err)
	}
	if err := c.ValidateDynamic("2", map[string]string{"log.retention.ms": "9"}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("got %v", err)
	}
	if err := c.ValidateDynamic("", map[string]string{"log.retention.ms": "x"}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("got %v", err)
	}
	if w := c.SetDynamic("", map[string]string{"log.retention.ms": "1000", "queued.max.requests": "2"}); len(w) != 1 {
		t.Fatalf("warnings %q", w)
	}
	if got := c.LogConfig(nil).RetentionMs; got != 1000 {
		t.Fatalf("retention %d", got)
	}
	e = entry(c.DescribeTopic(nil, nil), "retention.ms")
	if e.Source != SourceDynamicDefaultBroker || e.Synonyms[0].Name != "log.retention.ms" {
		t.Fatalf("%+v", e)
	}
	c.SetDynamic("1", map[string]string{"log.retention.ms": "2000"})
	if got := c.LogConfig(nil).RetentionMs; got != 2000 {
		t.Fatalf("retention %d", got)
	}
	be, err := c.DescribeBroker("1", []string{"log.retention.ms", "queued.max.requests", "log.retention.hours"})
	if err != nil || len(be) != 3 {
		t.Fatalf("%v %v", be, err)
	}
	if e := entry(be, "log.retention.ms"); *e.Value != "2000" || e.Source != SourceDynamicBroker || e.ReadOnly || len(e.Synonyms) != 4 {
		t.Fatalf("%+v", e)
	}
	if e := entry(be, "queued.max.requests"); *e.Value != "4" || e.Source != SourceStaticBroker || !e.ReadOnly || e.Type != TypeInt {
		t.Fatalf("%+v", e)
	}
	if e := entry(be, "log.retention.hours"); e.Source != SourceStaticBroker || len(e.Synonyms) != 2 {
		t.Fatalf("%+v", e)
	}
	de, _ := c.DescribeBroker("", nil)
	if len(de) != 1 || de[0].Source != SourceDynamicDefaultBroker || len(de[0].Synonyms) != 1 {
		t.Fatalf("%+v", de)
	}
	if _, err := c.DescribeBroker("9", nil); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("got %v", err)
	}
	if c.GetLong("log.retention.ms") != 2000 || c.GetInt("queued.max.requests") != 4 {
		t.Fatal("getters")
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		configs map[string]string
		want    string
	}{
		{map[string]string{"retention.ms": "100", "cleanup.policy": "compact,delete"}, ""},
		{map[string]string{"retention.msx": "100"}, "Unknown topic config name: retention.msx"},
		{map[string]string{"retention.ms": "abc"}, `invalid value "abc" for configuration retention.ms: expected an integer >= -1`},
		{map[string]string{"segment.bytes": "1000"}, `expected an integer >= 1048576`},
		{map[string]string{"compression.type": "brotli"}, `one of`},
		{map[string]string{"remote.storage.enable": "true"}, "Tiered Storage"},
		{map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict"},
		{map[string]string{"compression.gzip.level": "-1"}, ""},
		{map[string]string{"compression.gzip.level": "0"}, "compression.gzip.level"},
	} {
		err := c.ValidateTopicConfigs(tc.configs)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.configs, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%v: got %v, want %q", tc.configs, err, tc.want)
		}
	}
}

// With remote.log.storage.system.enable, a topic may be tiered, as Kafka's
// LogConfig.validate allows it, and its log config says so.
func TestValidateTieredTopicConfigs(t *testing.T) {
	c, warnings, err := Load("", []string{"remote.log.storage.system.enable=true", "rsm.config.dir=/x", "rlmm.config.remote.log.metadata.topic.num.partitions=7"})
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	if got := c.Originals("rlmm.config."); got["remote.log.metadata.topic.num.partitions"] != "7" || len(got) != 1 {
		t.Fatalf("originals %v", got)
	}
	for _, tc := range []struct {
		configs map[string]string
		want    string
	}{
		{map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "1048576"}, ""},
		{map[string]string{"remote.storage.enable": "true", "cleanup.policy": "compact"}, "cleanup.policy=delete"},
		{map[string]string{"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "2000"}, "more than retention.ms"},
		{map[string]string{"remote.storage.enable": "true", "retention.bytes": "1000", "local.retention.bytes": "-1"}, "must not be -1"},
		{map[string]string{"remote.storage.enable": "false", "cleanup.policy": "compact"}, ""},
		{map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true", "local.retention.bytes": "1048576"}, "identical value"},
		{map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true", "retention.ms": "5000", "local.retention.ms": "5000"}, ""},
	} {
		err := c.ValidateTopicConfigs(tc.configs)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.configs, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%v: got %v, want %q", tc.configs, err, tc.want)
		}
	}
	// Turning tiering off needs remote.log.delete.on.disable (KIP-950).
	tiered := map[string]string{"remote.storage.enable": "true"}
	for _, tc := range []struct {
		current, next map[string]string
		ok            bool
	}{
		{tiered, map[string]string{"remote.storage.enable": "false"}, false},
		{tiered, map[string]string{}, false},
		{tiered, map[string]string{"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, true},
		{tiered, map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true"}, true},
		{map[string]string{}, map[string]string{"remote.storage.enable": "false"}, true},
	} {
		err := c.ValidateTopicConfigChange(tc.current, tc.next)
		if tc.ok != (err == nil) || err != nil && !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%v to %v: %v", tc.current, tc.next, err)
		}
	}
	lc := c.LogConfig(map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "1048576"})
	if !lc.RemoteStorageEnable || lc.LocalRetentionBytes != 1<<20 || lc.LocalRetentionMs != -2 {
		t.Fatalf("log config %+v", lc)
	}
	if Default().LogConfig(map[string]string{"remote.storage.enable": "true"}).RemoteStorageEnable {
		t.Fatal("a broker without the system enabled made a tiered log")
	}
}

func TestDefinitionsParse(t *testing.T) {
	for _, d := range BrokerDefs() { // Kafka's generated keys included
		if d.Default != nil {
			if _, err := d.Parse(*d.Default); err != nil {
				t.Errorf("default of %s: %v", d.Name, err)
			}
		}
	}
	for _, d := range topicDefs {
		if _, err := d.Parse(*d.Default); err != nil {
			t.Errorf("default of %s: %v", d.Name, err)
		}
	}
}

// TestExampleConfig checks that broker/config/server.properties loads cleanly and
// documents every broker key.
func TestExampleConfig(t *testing.T) {
	path := "server.properties"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skip("no example config:", err)
	}
	if _, warnings, err := Load(path, nil); err != nil || len(warnings) != 0 {
		t.Fatalf("%v %q", err, warnings)
	}
	text := string(b)
	for _, d := range slices.Concat(brokerDefs, networkDefs, sslDefs) {
		if !strings.Contains(text, "\n"+d.Name+"=") && !strings.Contains(text, "\n#"+d.Name+"=") {
			t.Errorf("%s is not in %s", d.Name, path)
		}
	}
}

// DescribeConfigs reports the value the broker uses for keys derived from
// others, with the source of the key it came from (issue 12, point 5).
func TestDescribeEffectiveValues(t *testing.T) {
	c := Default()
	be, err := c.DescribeBroker("1", []string{"log.dirs", "broker.id", "advertised.listeners", "log.retention.ms", "metadata.log.dir"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name, value string
		source      Source
	}{
		{"log.dirs", "./moldau-data", SourceDefault},
		{"broker.id", "1", SourceDefault},
		{"advertised.listeners", "PLAINTEXT://localhost:9092", SourceDefault},
		{"log.retention.ms", "604800000", SourceDefault},
		{"metadata.log.dir", "./moldau-data", SourceDefault},
	} {
		e := entry(be, want.name)
		if e.Value == nil || *e.Value != want.value || e.Source != want.source {
			t.Errorf("%s: %v from %v, want %s from %v", want.name, e.Value, e.Source, want.value, want.source)
		}
	}
	c, _, err = Load("", []string{"log.dir=/data/k", "broker.id=7", "node.id=7", "log.retention.hours=1"})
	if err != nil {
		t.Fatal(err)
	}
	be, _ = c.DescribeBroker("7", []string{"log.dirs", "log.retention.ms"})
	if e := entry(be, "log.dirs"); *e.Value != "/data/k" || e.Source != SourceStaticBroker || e.Synonyms[0].Name != "log.dir" {
		t.Errorf("log.dirs: %+v", e)
	}
	if e := entry(be, "log.retention.ms"); *e.Value != "3600000" || e.Source != SourceStaticBroker {
		t.Errorf("log.retention.ms: %+v", e)
	}
	// Set explicitly: reported as set.
	c, _, _ = Load("", []string{"log.dirs=/a,/b"})
	be, _ = c.DescribeBroker("1", []string{"log.dirs"})
	if e := entry(be, "log.dirs"); *e.Value != "/a,/b" || e.Source != SourceStaticBroker {
		t.Errorf("log.dirs: %+v", e)
	}
}

// Every key Kafka defines is known, with Kafka's dynamic update mode; the
// ones Moldau does not act on say so.
func TestKafkaBrokerKeys(t *testing.T) {
	for name, mode := range map[string]DynamicMode{
		"sasl.kerberos.min.time.before.relogin": PerBroker,
		"num.io.threads":                        ClusterWide,
		"num.network.threads":                   ClusterWide,
		"background.threads":                    ClusterWide,
		"num.replica.fetchers":                  ClusterWide,
		"log.cleaner.threads":                   ClusterWide,
		"listeners":                             PerBroker,
		"max.connections":                       ClusterWide,
		"log.dirs":                              ReadOnly,
		"queued.max.requests":                   ReadOnly,
		"ssl.keystore.location":                 PerBroker,
		"remote.fetch.max.wait.ms":              ClusterWide,
		"metric.reporters":                      ClusterWide,
		"log.roll.hours":                        ReadOnly,
		"log.roll.ms":                           ClusterWide,
	} {
		d, ok := BrokerDef(name)
		if !ok || d.Dynamic != mode {
			t.Errorf("%s: known %v, mode %v, want %v", name, ok, d, mode)
		}
	}
	if d, _ := BrokerDef("sasl.kerberos.min.time.before.relogin"); !d.StoredOnly || d.Type != TypeLong || *d.Default != "60000" {
		t.Errorf("%+v", d)
	}
	if d, _ := BrokerDef("num.io.threads"); d.StoredOnly {
		t.Error("num.io.threads is applied")
	}
	if n := len(BrokerDefs()); n < 290 {
		t.Errorf("%d broker keys, want Kafka's ~300", n)
	}
	be, _ := Default().DescribeBroker("1", []string{"background.threads"})
	if !strings.Contains(be[0].Documentation, "does not act on it") {
		t.Errorf("background.threads documentation: %q", be[0].Documentation)
	}
}

// AlterConfigs' rules, as Kafka's DynamicBrokerConfig.validateConfigs.
func TestValidateDynamicKafkaRules(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		resource string
		configs  map[string]string
		want     string // "" accepted
	}{
		{"1", map[string]string{"sasl.kerberos.min.time.before.relogin": "30000"}, ""},
		{"", map[string]string{"sasl.kerberos.min.time.before.relogin": "30000"}, "Cannot update these configs at default cluster level, broker id must be specified: Set(sasl.kerberos.min.time.before.relogin)"},
		{"1", map[string]string{"ssl.keystore.location": "/k"}, "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{"1", map[string]string{"listener.name.plaintext.ssl.keystore.location": "/k"}, ""},
		{"", map[string]string{"listener.name.plaintext.max.connections": "10"}, ""},
		{"", map[string]string{"listener.name.plaintext.ssl.keystore.location": "/k"}, "broker id must be specified"},
		{"1", map[string]string{"sasl.kerberos.min.time.before.relogin": "soon"}, "sasl.kerberos.min.time.before.relogin"},
		{"", map[string]string{"my.plugin.setting": "x"}, ""}, // custom configs are allowed, as Kafka
		{"", map[string]string{"num.io.threads": "16"}, ""},
		{"", map[string]string{"num.io.threads": "17"}, "value should not be greater than double the current value 8"},
		{"", map[string]string{"num.io.threads": "3"}, "value should be at least half the current value 8"},
		{"", map[string]string{"num.network.threads": "0"}, "num.network.threads"},
		{"", map[string]string{"num.network.threads": "7"}, "value should not be greater than double the current value 3"},
		{"", map[string]string{"log.dirs": "/x"}, "Cannot update these configs dynamically: Set(log.dirs)"},
	} {
		err := c.ValidateDynamic(tc.resource, tc.configs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q %v: %v", tc.resource, tc.configs, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, kerr.InvalidRequest)):
			t.Errorf("%q %v: %v, want %q", tc.resource, tc.configs, err, tc.want)
		}
	}
}

type testReconfigurable struct {
	calls    [][2]map[string]any
	validate error
}

func (r *testReconfigurable) ReconfigurableConfigs() []string { return []string{"log.cleaner.threads"} }
func (r *testReconfigurable) ValidateReconfiguration(v map[string]any) error {
	return r.validate
}
func (r *testReconfigurable) Reconfigure(o, n map[string]any) {
	r.calls = append(r.calls, [2]map[string]any{o, n})
}

// A Reconfigurable hears about changes of its keys only, with the values
// before and after, and can refuse them.
func TestReconfigurable(t *testing.T) {
	c := Default()
	r := &testReconfigurable{}
	remove := c.AddReconfigurable(r)
	c.SetDynamic("", map[string]string{"log.retention.ms": "5"})
	if len(r.calls) != 0 {
		t.Fatalf("called for an unrelated key: %v", r.calls)
	}
	c.SetDynamic("", map[string]string{"log.cleaner.threads": "3"})
	if len(r.calls) != 1 || r.calls[0][0]["log.cleaner.threads"] != int32(1) || r.calls[0][1]["log.cleaner.threads"] != int32(3) {
		t.Fatalf("calls %v", r.calls)
	}
	r.validate = errors.New("no more than 2 cleaner threads here")
	if err := c.ValidateDynamic("", map[string]string{"log.cleaner.threads": "4"}); err == nil || !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("got %v", err)
	}
	remove()
	c.SetDynamic("", nil)
	if len(r.calls) != 1 {
		t.Fatalf("called after removal: %v", r.calls)
	}
}

// Group configs are checked as a whole, the keys not set taking the
// broker's defaults, with Kafka's GroupConfig messages.
func TestValidateGroupConfigs(t *testing.T) {
	c, _, err := Load("", []string{"group.consumer.min.session.timeout.ms=1000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		configs map[string]string
		msg     string
	}{
		{map[string]string{"consumer.session.timeout.ms": "1500"}, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{map[string]string{"consumer.session.timeout.ms": "1500", "consumer.heartbeat.interval.ms": "5000"}, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{map[string]string{"consumer.session.timeout.ms": "999"}, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{"consumer.heartbeat.interval.ms": "2147483648"}, "Invalid value 2147483648 for configuration consumer.heartbeat.interval.ms: Not a number of type INT"},
		{map[string]string{"consumer.session.timeout.ms": "5001"}, ""},
	} {
		err := c.ValidateGroupConfigs(tc.configs)
		if tc.msg == "" && err != nil || tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%v: %v, want %q", tc.configs, err, tc.msg)
		}
	}
}

// Share group configs: Kafka's validators and the bounds of the
// group.share.* broker configs; the durations Java's Duration.parse takes.
func TestValidateShareGroupConfigs(t *testing.T) {
	c, _, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		configs map[string]string
		msg     string
	}{
		{map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}, ""},
		{map[string]string{"share.auto.offset.reset": "by_duration:P1DT2H3M4.5S", "share.isolation.level": "read_committed"}, ""},
		{map[string]string{"share.auto.offset.reset": "by_duration:"}, "share.auto.offset.reset: Invalid value `by_duration:`"},
		{map[string]string{"share.auto.offset.reset": "Earliest"}, "The value must be either 'earliest', 'latest'"},
		{map[string]string{"share.record.lock.duration.ms": "60001"}, "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		{map[string]string{"share.heartbeat.interval.ms": "4999"}, "share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"},
		{map[string]string{"share.session.timeout.ms": "60001"}, "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"},
		{map[string]string{"share.isolation.level": "read_committed "}, ""},
	} {
		err := c.ValidateGroupConfigs(tc.configs)
		if tc.msg == "" && err != nil || tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%v: %v, want %q", tc.configs, err, tc.msg)
		}
	}
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT1H", time.Hour, true}, {"P2D", 48 * time.Hour, true}, {"pt1.5s", 1500 * time.Millisecond, true},
		{"PT-1M", -time.Minute, true}, {"-PT1S", -time.Second, true}, {"P", 0, false}, {"PT", 0, false}, {"1H", 0, false},
	} {
		got, ok := ParseISODuration(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseISODuration(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	// DescribeGroup reports every share key, the defaults of strings fixed.
	entries := c.DescribeGroup(map[string]string{"share.auto.offset.reset": "earliest"}, nil)
	got := map[string]string{}
	for _, e := range entries {
		got[e.Name] = *e.Value
	}
	if got["share.auto.offset.reset"] != "earliest" || got["share.isolation.level"] != "read_uncommitted" || got["share.record.lock.duration.ms"] != "30000" || got["share.session.timeout.ms"] != "45000" {
		t.Errorf("%v", got)
	}
}
