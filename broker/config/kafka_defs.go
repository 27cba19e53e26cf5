package config

import (
	"regexp"
	"strings"
)

// The keys Kafka defines beyond those Moldau acts on (kafkaBrokerDefs,
// generated into kafka_broker_defs.go from Kafka's ConfigDefs by gen/):
// known, typed and validated like the others, accepted in server.properties
// and, at Kafka's dynamic update mode, by AlterConfigs and
// IncrementalAlterConfigs, stored and reported by DescribeConfigs. Their
// Def.StoredOnly is set and their documentation says so.

// kdef builds a definition of kafkaBrokerDefs: name, type, default (nil
// or the value as Kafka writes it), importance, Kafka's dynamic update
// mode, the Kafka class that defines it, and an optional validator.
func kdef(name string, t Type, dflt any, imp Importance, mode DynamicMode, group string, v ...Validator) *Def {
	opts := []any{mode}
	for _, x := range v {
		opts = append(opts, x)
	}
	d := def(name, t, dflt, imp, "Apache Kafka broker config ("+group+").", opts...)
	d.StoredOnly = true
	return d
}

// storedOnlyBrokerKeys are keys of brokerDefs that Moldau reads at start-up
// (or not at all) but does not apply when they change at run time: Kafka
// lets AlterConfigs change them, so Moldau accepts and stores the change,
// and says in DescribeConfigs that it does not act on it.
var storedOnlyBrokerKeys = []string{
	"listeners", "advertised.listeners", "listener.security.protocol.map", // no run-time listener changes yet
	"background.threads",                                                 // Moldau has no KafkaScheduler pool
	"num.replica.fetchers",                                               // replication registers a Reconfigurable when it exists
	"remote.fetch.max.wait.ms", "remote.list.offsets.request.timeout.ms", // read when tiered storage starts
}

// storedOnlyNote ends the documentation of a StoredOnly key.
const storedOnlyNote = " Moldau stores and reports this setting but does not act on it (yet)."

// sslReconfigurableConfigs is Kafka's SslConfigs.RECONFIGURABLE_CONFIGS:
// dynamic, but only per listener (listener.name.<name>.<key>).
var sslReconfigurableConfigs = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.truststore.type": true, "ssl.truststore.location": true,
	"ssl.truststore.password": true, "ssl.keystore.certificate.chain": true, "ssl.keystore.key": true,
	"ssl.truststore.certificates": true,
}

// clusterLevelListenerConfigs is Kafka's
// DynamicBrokerConfig.ClusterLevelListenerConfigs: listener configs that
// may be set cluster-wide.
var clusterLevelListenerConfigs = map[string]bool{
	"max.connections": true, "max.connection.creation.rate": true, "num.network.threads": true,
}

// listenerMechanismConfigs are set per listener and SASL mechanism,
// listener.name.<name>.<mechanism>.<key> (Kafka's ListenerMechanismConfigs).
var listenerMechanismConfigs = []string{
	"sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
	"sasl.server.callback.handler.class", "connections.max.reauth.ms",
}

var listenerConfigRE = regexp.MustCompile(`^listener\.name\.[^.]*\.(.*)$`)

// listenerBase returns the broker key a listener override names
// (listener.name.<listener>.<key>, or .<mechanism>.<key> for the SASL
// mechanism configs), as Kafka's brokerConfigSynonyms.
func listenerBase(name string) (string, bool) {
	m := listenerConfigRE.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	for _, mc := range listenerMechanismConfigs {
		if strings.HasSuffix(m[1], mc) {
			return mc, true
		}
	}
	return m[1], true
}

// threadCountConfigs are validated as Kafka's DynamicThreadPool and
// DataPlaneAcceptor do: at least 1, at least half and at most double the
// current value.
var threadCountConfigs = map[string]bool{
	"num.io.threads": true, "num.network.threads": true, "num.replica.fetchers": true,
	"num.recovery.threads.per.data.dir": true, "background.threads": true,
}
