// Package broker wires a Moldau node together (Kafka's KafkaRaftServer,
// BrokerServer and ControllerServer): it builds every part in Kafka's
// start-up order, tears them down in reverse, and owns the Prometheus
// registry and the HTTP endpoint. The network layer (the SocketServer, its
// acceptors, processors and connections, the request channel, the handler
// pool, connection quotas and the socket server's metrics) is package
// broker/network, and so is the one broker-to-broker client that the
// controller channel and the inter-broker channels share; broker imports
// it, never the reverse.
//
// # A node
//
// A node has the broker role and, by default, the controller role
// (process.roles=broker,controller: combined mode). Its parts, in start-up
// order (New, Start):
//
//	security          an SslFactory per SSL or SASL_SSL listener from its
//	                  ssl.* keys and a SaslChannelBuilder per SASL
//	                  listener from its mechanisms and JAAS configuration
//	                  (broker/security; a key store that does not load, a
//	                  JAAS value that does not parse or GSSAPI stops New),
//	                  and the dial functions of this node's own
//	                  connections: to controller.listener.names[0] (the
//	                  quorum, the controller channel) and to
//	                  inter.broker.listener.name (markers,
//	                  AddPartitionsToTxn, fetchers), Options.Dial with a
//	                  TLS handshake when that listener is SSL or SASL_SSL,
//	                  then a SASL login (sasl.mechanism.*.protocol, the
//	                  listener's JAAS username and password) when it is
//	                  SASL_*; Options.AddScram's credential records for
//	                  the bootstrap (security.go)
//	meta.properties   node.id and cluster.id in every log dir; a new
//	                  quorum's nodes derive the same cluster.id from
//	                  controller.quorum.voters, so no format step is needed
//	log.Manager       the partition logs (recovery after a crash)
//	metadata.Loader   the metadata image, and its publishers: dynamic
//	                  broker configs, then the ReplicaManager (and the
//	                  coordinators, which learn which partitions of their
//	                  internal topic they lead)
//	quorum            the metadata quorum (broker/raft) on
//	                  metadata.log.dir/__cluster_metadata-0, feeding every
//	                  committed batch to the loader and the controller
//	QuorumController  every cluster decision (broker/controller)
//	controller plane  a SocketServer on the controller listeners
//	                  (controller.listener.names) serving kapi's
//	                  ControllerHandler: the quorum's own messages, broker
//	                  registrations and heartbeats, forwarded admin requests
//	controller channel how this broker reaches the active controller
//	                  (network.ControllerChannel): in-process when it is
//	                  this node, else over the active voter's controller
//	                  listener
//	coordinators      the group coordinator (__consumer_offsets), the
//	                  transaction coordinator (__transaction_state) and the
//	                  share coordinator (__share_group_state), on the
//	                  coordinator runtime, writing through the
//	                  ReplicaManager; producer id blocks come from the
//	                  controller (AllocateProducerIds); the share
//	                  persister (SharePersister, share_coordinator.go)
//	                  reaches a key's share coordinator in-process or over
//	                  its own inter-broker channel
//	inter-broker channels how this broker sends to other brokers
//	                  (network.InterBrokerChannel), one channel per
//	                  sender as Kafka has one NetworkClient each: the
//	                  transaction coordinator's WriteTxnMarkers (one
//	                  connection per broker, one request at a time) and the
//	                  AddPartitionsToTxn of Kafka's AddPartitionsToTxnManager
//	                  (add_partitions_to_txn.go; up to 8 connections per
//	                  broker, since the coordinator may hold each add back
//	                  until the previous markers are written, and a marker
//	                  or another add queued behind it would wait too): to
//	                  the destination's inter.broker.listener.name endpoint
//	                  in the metadata; to this broker through its own
//	                  request handler, so local and remote partitions take
//	                  the same path; and each replica fetcher's
//	                  connections to the leaders (replication.go)
//	lifecycleManager  registers the broker (BrokerRegistration, with the
//	                  directory ids of its online log dirs) and heartbeats
//	                  (BrokerHeartbeat, naming its offline log dirs, at
//	                  once when one fails); the controller unfences it once
//	                  its metadata has caught up
//	assignmentsManager reports the log dir of each replica to the
//	                  controller (AssignReplicasToDirs, KIP-858), from a
//	                  reconciliation of the logs against the image after
//	                  each metadata update and after a replica moved
//	                  between log dirs (assignments.go)
//	data plane        a SocketServer on the broker listeners serving
//	                  kapi's Handler; it starts accepting only once the
//	                  broker is unfenced (Ready), after stray logs are gone
//
// With controller.quorum.voters empty the node is a quorum of one (no
// controller listener needed): `moldau serve` with no configuration. Three
// nodes naming each other in controller.quorum.voters are one cluster.
//
// Separate roles (roles.go), Kafka's production layout:
//
//   - process.roles=controller: the quorum, the controller and the
//     controller plane only. No data plane is built and the
//     lifecycleManager never registers, so the node is no broker: no
//     partitions, no coordinators (their parts exist but stay idle),
//     never in Metadata or DescribeCluster's broker list. Ready once the
//     controller plane listens. Like every controller it sends
//     ControllerRegistration to the active controller until the image
//     holds its registration, and its controller plane answers
//     DescribeCluster with the controller endpoint type from the
//     registered controllers.
//   - process.roles=broker: the quorum is a metadata observer
//     (broker/raft's OpenObserver) with no controller and no controller
//     plane; the controller channel reaches the active controller over
//     the network only, at the voter's address or the one the leader
//     advertised in a fetch response. A new node that knows the quorum
//     by controller.quorum.bootstrap.servers only asks them for the
//     cluster id (DescribeCluster) before writing meta.properties.
//
// Close runs in reverse: a controlled shutdown (the broker asks to shut
// down; the controller moves its leaderships away and fences it), the data
// plane drains, the share persister, the share coordinator, the
// transaction coordinator and then the group coordinator stop, the logs
// close cleanly, then the controller plane, the controller and the quorum.
//
// # Failures
//
// A log dir that fails goes offline and the others serve (the log and
// replica packages); the controller moves the leadership of the replicas
// in it to other brokers (broker/controller's directories.go). Three storage failures are fatal, as Kafka halts its
// process on them (fatal.go): every log dir failed ("all log dirs in ...
// have failed"), the log dir holding the metadata log (metadata.log.dir)
// failed, or the metadata quorum stopped on an I/O error of its log,
// snapshots or quorum-state. The broker then logs one ERROR line ("fatal
// error: shutting down the broker", with the reason and the cause, which
// names the file), closes Fatal() (FatalErr says why; WaitReady returns
// it) and closes itself at once, without a controlled shutdown: requests
// waiting for a controller are answered, the listeners close. `moldau
// serve` waits on Fatal() beside SIGINT and SIGTERM and exits 1; a test
// process that owns in-process brokers lives on. At start-up, dirs that
// fail to load in those ways make New fail.
//
// # Shutdown
//
// Broker.Close stops the data plane in the steps of SocketServer.Close
// (broker/network) and calls replica.Manager.BeginShutdown between (1),
// no new connections, and (2), the drain: fetches waiting in the
// purgatory (a consumer's long poll, up to fetch.max.wait.ms) are
// answered with what is there and later fetches do not wait, so the drain
// takes as long as the requests being handled, not the longest long poll,
// and SIGTERM ends `moldau serve` with exit 0.
//
// # Metrics and HTTP
//
// The broker has its own prometheus.Registry (Options.Registry, or a new
// one per broker, so several brokers run in one process) that every part
// registers on: network.NewMetrics for the data plane, the log manager,
// the replica manager, the controller and the quorum. ServeMetrics serves
// /metrics and /debug/pprof/ on its own mux (metrics.listener).
package broker
