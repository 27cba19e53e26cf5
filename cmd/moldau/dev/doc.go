// Package dev is `moldau dev`: a real local cluster to develop against,
// with faults, built-in traffic, delivery counters checked against the
// logs, and an event log, served with the console (package console) and
// a dev panel.
//
// # The cluster
//
// [Cluster] runs each node as a `moldau serve` child process of the same
// executable, in combined mode (broker and controller), with its data
// under the dev folder and its output in node-N.log beside it. Every node
// has three listeners of its own (PLAINTEXT for clients, REPLICATION for
// the other brokers, CONTROLLER for the quorum) and a [Proxy] in front of
// each; it advertises the client and replication proxies, and the voters
// are the controller proxies, so every connection a client or a node
// opens to a node goes through the dev process. On Linux the children get
// SIGKILL if the dev process dies (PR_SET_DEATHSIG), and run in their own
// process group, so a Ctrl-C reaches `moldau dev` only, which then stops
// them (SIGTERM, SIGKILL after 15 s: the last nodes of a stopping quorum
// cannot finish a controlled shutdown).
//
// A [session] is one build of the cluster with its clients, traffic and
// ledger; [Dev.Rebuild] (POST /api/dev/rebuild, `moldau dev rebuild`)
// closes it (SIGKILL, data removed) and starts another from new
// [Settings], handing the console's poller a client on the new nodes
// (console.Poller.SetClient). The event log and the recording outlive
// sessions.
//
// # Links and faults
//
// A proxy forwards Kafka frames (a 4-byte size, then the frame) one at a
// time. It names a connection's [Link] from the client id of its first
// request: the nodes' own clients are called broker-N-..., moldau-raft-N
// and moldau-broker-N-to-controller, anything else reaching a client
// proxy is the clients. [Network] holds the faults: a node cut off from
// its peers (every link from or to it on the replication and controller
// proxies) or from the clients; a cut closes the matching connections and
// closes new ones after their first frame. LoseNext drops the next
// request or response on one link silently, as a network that loses a
// message: the client times out, or the next response it reads is for a
// later request. Kill (SIGKILL), stop (SIGTERM), start and restart act on
// the processes; KillController asks Metadata for the active controller
// and kills it.
//
// A slow disk: every node is started with two environment variables
// (FaultControlEnv, DiskDelayEnv) that no other broker gets. With them,
// `moldau serve` runs the node's partition logs (log.dirs, not the
// metadata quorum's log) through a log.DelayFS and serves GET and PUT
// /disk-delay?delay=200ms on a loopback port of its own; [Cluster.SlowDisk]
// sets it there, and keeps it for the node's next start. Each write,
// truncate and fsync of those logs then waits the delay (reads do not),
// so an acks=all produce to a partition the node leads takes at least
// the delay. A broker started any other way uses the OS file system
// directly: the hook costs production nothing.
//
// # Traffic, the ledger and the check
//
// [Traffic] runs franz-go producers and group consumers through the
// proxies. The console draws its running producers by name
// ([Traffic.Named], console.Config.Producers): the partitions and the
// idempotent producer id come from their acknowledged records, the rate
// from the records sent. Every record carries its id, PRODUCER:SEQ, in the header
// moldau-dev-id. The [Ledger] keeps one entry per record sent (its
// outcome, partition and offset; for a transaction, acknowledged only
// once committed) and every processing of a record by a consumer. A
// check ([Ledger.Check]) asks every node for the topics' metadata, takes
// per partition the leader of the highest epoch, reads the partition
// from that leader with Fetch from its log start to the high watermark of
// the first answer, and compares: acknowledged but lost (an acknowledged
// offset within the log whose record is nowhere in it), duplicates (one
// id at two offsets), processed twice, and skipped (an acknowledged
// record below the highest offset its group processed in its partition,
// never processed). Records acknowledged above the high watermark
// (acks=1, not yet replicated) or below the log start (retention) are not
// judged. Every anomaly names its offsets. The ledger holds a few hundred
// bytes a record: a dev run is bounded by its traffic.
//
// # Events
//
// [EventLog] is the run in time order: faults and node processes (from
// the API), leader, ISR, controller, broker and group changes (from the
// console's snapshots, so two changes within one poll show as one),
// rebalances seen by the built-in consumers, transaction outcomes,
// anomalies found by checks, and the actions taken from the console's
// details panel (console.Config.OnAction), done or refused. It keeps the last 10,000 in memory and is
// exported as JSON by GET /api/dev/events (the console's own /api/events
// is its snapshot stream). A [console.Recorder] follows the console's
// snapshots; GET /api/dev/run (`moldau dev events`) exports the events
// with its frames as a [console.Run], which `moldau console --replay`
// plays back.
//
// # API
//
// GET /api/dev/state, /api/dev/counters, /api/dev/events[?since=SEQ],
// /api/dev/run[?download=1];
// POST /api/dev/nodes/{id}/{kill|stop|start|restart|cut-peers|cut-clients|heal},
// /api/dev/nodes/{id}/slow {delay_ms} (0: a normal disk),
// /api/dev/controller/kill, /api/dev/lose {from, to, response},
// /api/dev/producers (a [ProducerConfig]), /api/dev/producers/{name}/{stop|wait},
// /api/dev/consumers (a [ConsumerConfig]), /api/dev/consumers/{name}/{close|crash|restart},
// /api/dev/check, /api/dev/rebuild (a [Settings]); GET /api/dev/settings.
// POSTs take JSON only (Content-Type application/json),
// so another site's form cannot reach them without a CORS preflight.
package dev
