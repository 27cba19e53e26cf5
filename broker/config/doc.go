// Package config is Moldau's broker configuration: Kafka's KafkaConfig and
// LogConfig definitions, the server.properties parser, and the dynamic
// broker configs set with AlterConfigs (Kafka's DynamicBrokerConfig).
//
// # Definitions
//
// Every key the broker reads is defined once, in brokerDefs (broker keys,
// Kafka's KafkaConfig/ServerLogConfigs/SocketServerConfigs names and
// defaults) and topicDefs (topic keys, Kafka's TopicConfig/LogConfig). A
// definition carries the type, default, documentation, importance,
// validator and whether (and at which level) it can be changed
// dynamically. DescribeConfigs, the validation of CreateTopics and
// AlterConfigs, the example config/server.properties and Load all read the
// same tables.
//
// # Precedence
//
// A broker key resolves, highest first, to: the per-broker dynamic config
// (resource "<node.id>"), the cluster-wide dynamic default (resource ""),
// the static config (server.properties and command-line overrides), the
// default. A topic key resolves to the topic's override, then to its broker
// synonyms in Kafka's order (ServerTopicConfigSynonyms: retention.ms ←
// log.retention.ms, log.retention.minutes, log.retention.hours), each
// resolved as above, then to the topic default. Where a topic key has
// several broker synonyms the first one set at any level wins, exactly as
// Kafka's KafkaConfig.logRetentionTimeMillis: log.retention.ms beats
// log.retention.minutes beats log.retention.hours.
//
// # Errors
//
// Load returns one-line errors naming the key, the value and what was
// expected. Validation for the admin APIs returns errors that wrap kerr
// sentinels (INVALID_CONFIG for topic configs, INVALID_REQUEST for broker
// configs, as Kafka) and whose Error() is the message for the client.
//
// # Concurrency
//
// A KafkaConfig is safe for concurrent use. Its exported fields are the
// static configuration, set by Load and never changed afterwards; the
// dynamic layer is behind a lock and read through the accessor methods
// (Int, Long, Bool, String, LogConfig, Describe...).
package config
