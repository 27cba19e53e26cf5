// Package integration holds Moldau's end-to-end tests: real brokers
// (in-process through broker.New, or as `moldau serve` processes for the
// crash tests), stock clients (franz-go, kcat, confluent-kafka-python,
// kafka-python) over real TCP sockets, and franz-go's own kgo integration
// suite run as a conformance suite against a Moldau broker.
//
// MOLDAU_TEST_SEEDS points the client-side tests at another cluster (for
// example Apache Kafka) to compare behaviour; tests that need to start or
// kill the broker themselves are not affected.
package integration
