// Package console is `moldau console`: a web page showing a Kafka cluster
// (Moldau or Apache Kafka) live, read through the Kafka protocol only.
//
// # Model
//
// A [Poller] owns one kgo/kadm client. About once a second it asks the
// cluster a bounded set of questions (Metadata, DescribeCluster,
// DescribeQuorum, DescribeLogDirs, three ListOffsets, ListGroups,
// DescribeGroups, ConsumerGroupDescribe, OffsetFetch, ListTransactions,
// DescribeTransactions, DescribeProducers; optionally the Prometheus text
// of --metrics-url)
// and assembles the answers into a [Snapshot]: plain data, the one thing
// the page renders from. It also follows __consumer_offsets and
// __transaction_state with a kgo consumer of its own and decodes their
// records with kmsg into [InternalEvent]s (see "Internal topics"). Each part of a snapshot comes from one API; when
// an API fails, that part keeps its previous value and Snapshot.Errors
// names the part and the cause. An API the cluster does not serve
// (UNSUPPORTED_VERSION, or absent from ApiVersions) leaves its part empty
// and is asked again only every [unsupportedRetry] ticks.
//
// [Diff] compares two snapshots part by part (and topic by topic); the
// poller publishes a new snapshot, with a higher Seq, only when Diff finds
// a change, so an idle cluster costs the browser nothing.
//
// # Internal topics
//
// Both coordinators' logs are ordinary topics a client may Fetch, as in
// Kafka. The consumer starts on a topic once Metadata lists it,
// [internalBacklog] records before each partition's end; each fetch waits
// at most a poll interval, carries at most 1 MiB, and kgo keeps one in
// flight per broker, sending the next only once the last one's records
// are taken. A tick takes at most [maxInternalPerTick] buffered records
// without waiting, so a slow consumer never delays the other parts; the
// snapshot keeps the newest [maxInternalEvents]. Offset commits, group
// metadata and transaction states decode with kmsg; the KIP-848 and share
// group records (kmsg has no schema for them) are named with their type,
// value version and size; a tombstone is a deletion. Transactional offset
// commits are read uncommitted: they show when written, before their
// transaction ends. The metadata log (__cluster_metadata) is not
// readable by clients in Kafka, nor here: the quorum is shown from
// DescribeQuorum instead.
//
// # Flows
//
// Snapshot.Producers and Snapshot.Wires are who talks to whom and how
// fast (flows.go). Producers are the producer ids DescribeProducers lists
// on the leaders (internal topics left out) with a last timestamp within
// [producerIdle], named by their transactional id when ListTransactions
// knows it, plus the producers the embedding program names
// (Config.Producers: `moldau dev`'s, by client id, with their producer id
// when idempotent so the two are one box); at most [maxProducers], the
// fastest first. A wire aggregates partitions, never one per partition:
// producer to the leader of each partition it wrote, leader to follower
// (per broker pair and direction), leader to group member for its
// assigned partitions (the first [maxWiredGroups] groups, those with
// members first, and their first [maxWiredMembers] members), group to
// coordinator, transactional producer to coordinator. A wire's rate is
// records per second over [rateWindow], from counters the poll reads
// anyway: the leader's high watermark (produced, replicated), the
// group's committed offsets (consumed), the producer's last sequence
// number (per producer and partition); a counter that goes down (a new
// producer epoch, a re-created topic) has no rate. A wire with an end on
// a broker that is not alive is down; a wire of the previous snapshot
// that reached a broker now down is kept, down and with no rate, until
// the broker is alive again, so the page shows what the failure cut.
// Bytes per wire are an estimate (flows_bytes.go): a --metrics-url given
// as ID=URL (or the one URL of a one-broker cluster) is that broker's,
// and its bytes in, bytes out and replication bytes out per second are
// shared over its produce, consume and replicate wires by their records
// per second.
//
// DescribeProducers is one more request per leader and poll: on one
// broker with 100 topics of 10 partitions it added 0.1 to 0.15 % of a
// core to the console's 0.6 to 0.8 % (polling once a second, no
// producers; see the README).
//
// # Broker configuration
//
// A broker's configuration is not in the snapshot: the page asks GET
// /api/broker/{id}/configs when the broker is selected, and the poller
// sends one DescribeConfigs (BROKER resource) under the poll timeout.
// A [Replay] has no cluster to ask and answers 404.
//
// # Bounds
//
// Per tick: at most [maxGroups] groups and [maxTransactions] transactions
// are described (the rest are counted in Snapshot.Truncated), every request
// runs under a per-tick deadline, and a tick that overruns the interval
// delays the next one rather than piling up. The HTTP side serves at most
// Config.MaxClients server-sent-event streams at a time; each gets the
// full snapshot on connect, then every newer one (a slow client skips
// snapshots, it never queues them), and a comment line as a heartbeat.
//
// # Goroutines
//
// [Serve] starts the poller and the HTTP server and waits for ctx; on
// cancellation it shuts the server down (closing the event streams) and
// waits for every goroutine it started before returning. [Poller.Run]
// closes the consumer of the internal topics (and its goroutines) when
// it returns.
//
// # Extensions
//
// `moldau dev` (package dev) serves this console with more: Config.Mount
// adds its handlers to the mux and hands it the [Poller], whose snapshots
// it follows for its event log; Config.Scripts adds its panel's module to
// the page; Config.Producers names its built-in producers. A [Recorder]
// keeps a poller's snapshots as frames (each the top-level fields that
// changed, the internal topics' records left out: they would fill nearly
// every frame) for a [Run], the export of a dev run;
// [ServeReplay] serves the page on a [Replay] of one instead of a poller
// (both are a source of snapshots to the handler), with its timeline
// module (web/replay.js) and /api/replay to play, pause and seek. The
// animated diagram builds on the same Snapshot: new parts
// are new fields, the page's diagram reads Snapshot.Brokers and
// Snapshot.Topics, its wires (web/wires.js) Snapshot.Producers,
// Snapshot.Groups and Snapshot.Wires.
package console
