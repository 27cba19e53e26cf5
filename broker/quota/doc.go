// Package quota holds the broker's client quota managers: Kafka's
// ClientQuotaManager for the producer, consumer and request quotas, and
// its ControllerMutationQuotaManager. With no quota set nothing is
// limited, as in Kafka, and nothing is recorded.
//
// # Client quotas (ClientQuotaManager)
//
// A ClientQuotaManager enforces one quota type: Produce
// (producer_byte_rate, the bytes of Produce requests), Fetch
// (consumer_byte_rate, the bytes of consumers' Fetch responses) or Request
// (request_percentage, request handler time in percent of one thread).
// kapi records each request against them and throttles the client (see
// kapi/client_quotas.go); the socket server mutes a throttled connection
// (KIP-219, broker/network).
//
// The quotas are read from the current metadata image on use: a client's
// (user, client id) is resolved once per image, in Kafka's order of
// precedence over the 8 levels of /config/users/<user>/clients/<client-id>
// down to /config/clients/<default> (resolve), so a quota set, changed or
// removed applies to the next request. The user is the principal's name,
// ANONYMOUS when unauthenticated. Per request the cost is one map lookup
// and a sample added under the manager's lock (none at all while the image
// has no client quota).
//
// The value is measured by Kafka's Sensor arithmetic: a Rate over
// quota.window.num samples of quota.window.size.seconds (11 of 1 s by
// default; rate.go), one per quota entity in effect, keyed as Kafka's
// metric tags are (a default quota limits each user or client id on its
// own). A client whose rate goes over its quota is throttled for
// QuotaUtils.throttleTime, (observed-quota)/quota × the rate's window:
// unbounded for the byte rates and bounded by one window for the request
// quota, as in Kafka 4 (ClientRequestQuotaManager). As in Kafka, a new
// client is measured over samples-1 windows, so it may send that many
// windows' worth of its quota at once; a client at full speed is held to
// its quota on average over quota.window.num windows, in bursts.
//
// Metrics, per entity with a quota in effect and a client seen, with
// Kafka's JMX exporter names: kafka_server_produce_byte_rate,
// kafka_server_fetch_byte_rate, kafka_server_request_request_time and the
// three kafka_server_*_throttle_time (the mean throttle in ms), labelled
// user and client_id ("" where the entity has none). A client idle for an
// hour is forgotten, as Kafka expires its sensors.
//
// Where Moldau differs from Kafka:
//
//   - request_percentage measures handler time only: Kafka adds the time
//     a network thread spent on the request, and Moldau's connection
//     goroutines are not measured. Requests answered later (a delayed
//     produce or fetch, a forwarded admin request) count the time until
//     the handler returned.
//   - consumer_byte_rate counts a fetch response's record bytes, not its
//     whole size (Kafka's getResponseSize); the headers are a few dozen
//     bytes a partition. ShareFetch is not counted.
//   - The exemptions from the request quota are by API key (the
//     inter-broker APIs) rather than by an authorized cluster action.
//   - The user label is the user name as is; Kafka's is URL-encoded
//     (Sanitizer). The throttle-time mean is over 2 windows of 30 s,
//     Kafka's metrics defaults, whatever metrics.num.samples and
//     metrics.sample.window.ms say.
//   - client.quota.callback.class (custom quota callbacks) and per-IP
//     request quotas are not supported.
//
// # Controller mutation quota (MutationQuotas)
//
// Kafka's controller mutation quota (KIP-599): the partitions a client may
// create or delete per second, as a token bucket per client, with the
// rates set as controller_mutation_rate client quotas. Moldau enforces it
// on the broker that receives the request, before the request is
// forwarded to the controller (Kafka enforces it on the controller, which
// learns the client from the forwarding envelope). Its throttle time is
// returned and, as Kafka does, the connection is muted for it.
//
// Quotas are per broker, as in Kafka: a client spreading its requests over
// brokers gets the rate on each.
//
// Safe for concurrent use.
package quota
