// Package console is `moldau console`: a web page showing a Kafka cluster
// (Moldau or Apache Kafka) live, read through the Kafka protocol only.
//
// # Model
//
// A [Poller] owns one kgo/kadm client. About once a second it asks the
// cluster a bounded set of questions (Metadata, DescribeCluster,
// DescribeQuorum, DescribeLogDirs, three ListOffsets, a Fetch and an
// OffsetForLeaderEpoch per leader for the lanes' records, ListGroups,
// DescribeGroups, ConsumerGroupDescribe, OffsetFetch, ListTransactions,
// DescribeTransactions, DescribeProducers; optionally the Prometheus text
// of --metrics-url)
// and assembles the answers into a [Snapshot]: plain data, the one thing
// the page renders from. It also follows __consumer_offsets and
// __transaction_state with a kgo consumer of its own and decodes their
// records with kmsg into [InternalEvent]s (see "Internal topics"), and
// with Config.Controllers the metadata log (see "The metadata log").
// Each part of a snapshot comes from one API; when
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
// group records (kmsg has no schema for them) with the group
// coordinator's own schemas (group.DescribeRecord), topic ids named
// from the metadata; a record of an unknown type or version is shown by
// type, version and size; a tombstone is a deletion. Transactional offset
// commits are read uncommitted: they show when written, before their
// transaction ends.
//
// # The metadata log
//
// Brokers do not serve __cluster_metadata to clients, in Kafka nor
// here, but the quorum's leader answers Fetch of __cluster_metadata-0 on
// the controller listener, for its observers (broker/raft's
// observer_serve.go; Kafka's KafkaRaftClient.handleFetchRequest). Given
// Config.Controllers (--bootstrap-controller), the poller follows it
// there (metalog.go) as a read-only observer with no replica id:
// ReplicaID and ReplicaState.ID -1, as a consumer. Kafka's leader keeps
// no state for a fetcher whose id is below 0
// (LeaderState.updateReplicaState), so it counts toward neither the
// high watermark nor the voters' lag and is not among DescribeQuorum's
// observers; Moldau's leader does the same. A Fetch names the fetch
// offset with the epoch of the batch before it and a current leader
// epoch at least that (Kafka answers INVALID_REQUEST otherwise, and
// FENCED_LEADER_EPOCH, with the epoch, to an old one: the next Fetch
// carries it). The first answer gives the high watermark; the events
// start [metadataBacklog] records before it when the log holds more,
// fetched with the leader's epoch (Kafka validates an offset against
// the epoch's end only). An answer naming a snapshot (the offset is
// below the log start) moves the fetch offset to the snapshot's end:
// the snapshot is not fetched. Kafka's leader answers past the high
// watermark (uncommitted batches); only the whole batches below it are
// read, so an event is never one the quorum may yet lose. A
// NOT_LEADER_OR_FOLLOWER answer names the leader and, from v16, its
// endpoint (NodeEndpoints): the next Fetch goes there; without an
// endpoint, or after a failure, to the next bootstrap controller.
//
// One Fetch is in flight at a time, on a goroutine of its own, waiting
// at most the poll interval (100 to 500 ms) for records and answering
// at most [metadataFetchBytes]; a tick takes its answer if it came,
// never waiting, and sends the next. Each record is decoded with
// broker/metadata's codec (Kafka's MetadataRecordSerde framing) into an
// [InternalEvent] of kind "metadata" (Topic __cluster_metadata,
// partition 0): the record type's name and its main fields in words,
// topic ids named by the TopicRecords read and the Metadata's topics;
// a config that names a password, a secret or a JAAS configuration is
// shown without its value. The events join the internal topics'
// window of the newest [maxInternalEvents]. Control records (leader
// changes, voter sets) are not shown.
//
// # The lanes' records
//
// Each lane draws its replica's log as cells, one per offset, from
// Partition.Records: per offset one character of shape (record, tombstone,
// aborted record, commit or abort marker, compacted gap, not read) and one
// of key colour (an FNV-1a hash of the key onto eight colours), about 120
// bytes of JSON a partition with records. The poller reads them with a
// Fetch sent to the leader: read_uncommitted, so aborted records and the
// control batches (the markers) are in the answer; from at most [maxCells]
// offsets before the high watermark (a consumer cannot read past it),
// [cellsPartitionBytes] a partition and [cellsTickBytes] a tick over all
// leaders; no fetch session. A Fetch answers a partition from one segment
// only, as Kafka's does, so a partition whose answer stops short of the
// high watermark with room to spare is asked again from there, at most
// [maxFetchRounds] Fetches a leader a tick. The record batches' headers
// tell which offsets a batch covers, so an offset inside a batch without a
// record is a compacted gap, and one past the last whole batch of the
// answer is "not read". Kafka gives aborted_transactions only to
// read_committed fetches, which stop at the last stable offset, so an
// aborted record is told by its producer's next marker in the answer being
// an abort; a record whose marker is past the high watermark is in an open
// transaction and drawn as a record.
//
// Only partitions whose log start, high watermark, leader or leader epoch
// changed since their last read are read, at most [maxCellReads] a tick
// (the rest keep their previous cells and are read on the next ticks), and
// an unchanged one again after [cellsRefresh] ticks, since the cleaner
// changes records without moving an offset. An empty partition is not
// read. A cluster of more than [maxCellPartitions] partitions gets no
// cells (Snapshot.Truncated["records"]). The same request set sends an
// OffsetForLeaderEpoch for the leader's current epoch, whose end offset is
// the leader's log end as of that read (ListOffsets gives a client the
// high watermark instead); the offsets from the high watermark to it are
// drawn as faded empty cells. A follower's own log end is not in the
// protocol (Kafka's DescribeLogDirs offset_lag is a future replica's, 0
// otherwise), so every replica draws the leader's, its lane style saying
// whether it is in the ISR. Offsets below the log start are drawn deleted;
// when a lane's log end goes back between snapshots (a truncation), the
// offsets that went away flash after the log end for a few seconds (they
// stay still under prefers-reduced-motion). Segment boundaries are not
// drawn: no Kafka API tells a client where a segment starts, and Moldau
// exposes them only to `moldau log dump` on the broker's own files.
//
// # Announcements
//
// web/announce.js compares each snapshot with the one before (forward in
// time only) and says what changed in an aria-live log region: a broker
// down, fenced or back, a new active controller, new partition leaders
// and replicas leaving or rejoining the ISR (one message per broker, the
// user's topics named before the internal ones), a group rebalanced; at
// most four messages a snapshot, six on screen, each fading after 8 s.
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
// # Actions
//
// POST /api/act/{kind}/{action} (a JSON body, [actBody]; [Action] is
// what is logged) acts on the cluster with the poller's client, one
// request at a time as Kafka's tools would send it, under the poll
// timeout (at least 10 s):
//
//   - partition/elect {topic, partition, type: preferred|unclean}:
//     ElectLeaders (kafka-leader-election.sh); ELECTION_NOT_NEEDED is
//     success, as in the tool.
//   - partition/delete-records {topic, partition, offset}: DeleteRecords
//     (-1: the high watermark).
//   - group/reset-offsets {group, topic, partition (-1: every partition
//     of the topic), to: earliest|latest|offset, offset}: ListGroups,
//     refused unless the group is Empty or Dead with
//     kafka-consumer-groups.sh's message, then ListOffsets and an
//     OffsetCommit with no generation (an explicit offset is kept
//     within the log, as --to-offset).
//   - group/delete {group}: DeleteGroups (NON_EMPTY_GROUP with members).
//   - txn/abort {transactional_id}: kafka-transactions.sh abort on each
//     partition DescribeTransactions lists: DescribeProducers gives the
//     producer's epoch, the epoch of the coordinator of its last marker
//     and the transaction's first offset; an ABORT marker with them
//     (transaction version 0) goes to the leader by WriteTxnMarkers. The
//     coordinator is not told and ends the transaction when it times out.
//     A transaction in PrepareCommit is refused: its COMMIT markers are
//     on their way, and an ABORT would split it.
//   - broker/alter-config {broker, name, value (null: delete)}:
//     IncrementalAlterConfigs of the BROKER resource (kafka-configs.sh
//     --alter --entity-type brokers); an entry that is not dynamic is
//     refused by the broker, whose own message is shown.
//
// The answer is {ok, message}, or {error, message} with Kafka's error by
// name: 409 when the cluster (or the group's state) refused, 400 for a
// bad request, 404 for a partition the topic lacks or an unknown action,
// 502 or 504 when the cluster failed or did not answer. A
// body must be application/json (as the dev API: another site's form
// cannot post one without a preflight). Every action, done or refused,
// is one Info line in Config.Logger and is handed to Config.OnAction
// (`moldau dev` adds it to its event log). With Config.ReadOnly, and in
// a replay, every action answers 403 and the page (told by
// <body data-read-only>) shows none.
//
// The page's side is web/actions.js: the buttons above the selection's
// details, built once per selection and kept across snapshots; a
// destructive action asks inline, and the panel holds still while it
// asks; window.moldauActions.register(kind, fn) is the hook by which an
// extension adds its own (the dev panel: a node's faults on its broker).
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
// closes the consumer of the internal topics (and its goroutines) and
// stops the metadata log's Fetch in flight (waiting for its goroutine)
// when it returns.
//
// # Extensions
//
// `moldau dev` (package dev) serves this console with more: Config.Mount
// adds its handlers to the mux and hands it the [Poller], whose snapshots
// it follows for its event log; Config.Scripts adds its panel's module to
// the page; Config.Producers names its built-in producers;
// Config.Controllers are its controllers (their proxies' addresses,
// dialled directly, as the leader names them in NodeEndpoints), and a
// rebuilt cluster's go to [Poller.SetControllers]. A [Recorder]
// keeps a poller's snapshots as frames (each the top-level fields that
// changed; of the internal topics' records only those added since the
// frame before, as the window of 500 would fill nearly every frame) for a
// [Run], the export of a dev run;
// [ServeReplay] serves the page on a [Replay] of one instead of a poller
// (both are a source of snapshots to the handler), with its timeline
// module (web/replay.js) and /api/replay to play, pause and seek. The
// animated diagram builds on the same Snapshot: new parts
// are new fields, the page's diagram reads Snapshot.Brokers and
// Snapshot.Topics, its wires (web/wires.js) Snapshot.Producers,
// Snapshot.Groups and Snapshot.Wires.
package console
