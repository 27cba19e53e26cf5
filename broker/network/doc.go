// Package network is Moldau's network layer (Kafka's kafka.network): the
// SocketServer with its acceptors, processors and connections, the request
// channel, the request handler pool (Kafka's KafkaRequestHandlerPool),
// connection quotas and the request memory pool's use, the socket
// server's Prometheus metrics, and the one broker-to-broker client the
// broker's inter-broker senders share.
//
// It knows nothing of the broker's wiring: package broker builds a
// SocketServer per plane (NewSocketServer with a Config), hands it its
// RequestHandler (kapi's Handler or ControllerHandler), applies dynamic
// configs through ResizeHandlers, ResizeProcessors, SetConnectionQuotas and
// SetRequestReceiveTimeout, and closes it in its shutdown order.
// Dependencies point one way: broker imports network, never the reverse;
// network imports kapi for kapi.Request and kapi.Response.
//
// What it guarantees, in short (each in its section below): one goroutine
// per connection, no processor thread; a frame is a 4-byte size and at
// most socket.request.max.bytes, and nothing before the handler allocates
// more than the frame; one request in flight per connection, so responses
// go out in request order; frames reserve queued.max.request.bytes before
// they are read; the acceptor enforces Kafka's connection quotas; Close
// stops accepting, drains, forces after ShutdownTimeout, then stops the
// handlers, and every goroutine has ended when it returns.
//
// # Request path
//
//	client ── TCP ──> Acceptor (one goroutine per listener)
//	                    │ round-robin over the listener's processors
//	                    v
//	                 Processor (num.network.threads per listener, as in Kafka)
//	                    │ owns its connections; each connection has one
//	                    │ goroutine doing its blocking reads and writes
//	                    v
//	                 RequestChannel (queued.max.requests, bounded)
//	                    │
//	                    v
//	                 KafkaRequestHandlerPool (num.io.threads goroutines)
//	                    │ RequestHandler.Handle(ctx, req, respond)
//	                    v
//	                 respond ──> the connection's goroutine writes the response
//
// # Security: channel builders
//
// A listener may have a ChannelBuilder (ListenerConfig.ChannelBuilder;
// broker/security's SslFactory for an SSL listener, its
// SaslChannelBuilder for SASL_PLAINTEXT and SASL_SSL; nil is PLAINTEXT).
// Its Authenticate runs in the connection's goroutine before the first
// request is read (channel_builder.go): the TLS handshake, then the
// principal, kept on the connection and copied into every kapi.Request
// (Principal; User:ANONYMOUS on PLAINTEXT). The handshake is bounded by
// the request receive timeout (connections.max.idle.ms when that is
// disabled), as a request is, and a drain or forced shutdown interrupts
// it through the socket's deadline. A failed handshake (a PLAINTEXT
// client on an SSL listener, garbage, a certificate refused, a timeout)
// closes that connection with reason authentication_failed, is counted
// in kafka_server_socketservermetrics_authentication_total{result} and
// logged once per peer and minute (peerLog) with a hint for the usual
// mistakes; a TLS client on a PLAINTEXT listener shows as an invalid size
// with a hint. A TLS connection writes fetched file regions by copying
// them through the TLS layer (no sendfile). Completed requests are logged
// at DEBUG with their principal (Kafka's kafka.request.logger).
//
// A SaslChannelBuilder's connection then logs in (sasl.go, Kafka's
// SaslServerAuthenticator): until it has, only ApiVersions (to the
// handler), SaslHandshake and SaslAuthenticate (answered in the
// connection's goroutine through kapi.SaslHandshake and
// kapi.SaslAuthenticate, never queued for the handler pool) are read,
// each at most sasl.server.max.receive.size and read into a buffer that
// grows from 4 KiB as bytes arrive; anything else closes the connection
// (invalidrequests reason sasl_unexpected_request, sasl_size). After
// SaslHandshake v0 the tokens are raw frames, each answered with one. A
// failed login waits connection.failed.authentication.delay.ms on a timer
// (a parked goroutine, interrupted by a forced shutdown), sends the
// failure and closes (authentication_failed). A SaslHandshake on an
// authenticated connection re-authenticates (KIP-368; the principal must
// not change); once a session's lifetime has passed, the next request
// other than SaslHandshake closes the connection (session_expired).
//
// # Processors and connections
//
// Kafka's processor is a thread running a java.nio Selector over many
// sockets. In Go the runtime netpoller is that selector: a goroutine blocked
// in Read costs a parked goroutine and an epoll registration, not a thread.
// So a Processor here is not a goroutine but the owner of a group of
// connections: their registry, their count, their busy-time accounting
// (for the idle gauge) and their shutdown. Each connection has exactly one
// goroutine that reads a request, queues it, waits for its response and
// writes it. A processor goroutine would only add a hop. A connection costs
// its goroutine's stack and a 4 KiB read buffer (which lets pipelined small
// requests be read with one system call).
//
// A response may ask for its connection to be throttled
// (kapi.Response.Throttle, set by kapi for a client over its quota): the
// connection goroutine writes it (or nothing, for NoResponse), then
// reads nothing from that connection for the throttle time, as Kafka's
// processor mutes a throttled channel until its ThrottledChannel expires
// (KIP-219). The wait is a timer in the connection's goroutine, not a
// delay queue; a drain or a forced shutdown ends it and closes the
// connection.
//
// Connection ids are Kafka's: "localHost:localPort-remoteHost:remotePort-index",
// index counting the processor's connections.
//
// # Connection close listeners
//
// Config.DisconnectListeners are told of every connection that closes, by
// its id, whatever closed it (the peer, an I/O error, the idle timeout,
// the handler, eviction, shutdown): Kafka's ConnectionDisconnectListener,
// which its Processor calls from close and processDisconnected. The share
// session cache is one (replica/share: a share session ends with the
// connection that opened it). A listener runs on the closing connection's
// goroutine once its socket is closed and it is unregistered, so it costs
// nothing per request and must be cheap and must not block; a panic in
// one is logged and swallowed, as Kafka swallows a listener's exception.
// A connection is closed only once its request in flight is answered
// (it is muted meanwhile), except by a forced shutdown, so a listener is
// not told of a connection whose request is still being handled.
//
// # Resizing at run time
//
// num.io.threads and num.network.threads are dynamic, as in Kafka: the
// broker registers a config.Reconfigurable that calls ResizeHandlers and
// ResizeProcessors. A handler goroutine asked to stop finishes its request
// first. New processors take new connections at once; a removed processor
// takes no more and its connections close after their request in flight
// (Kafka closes them too; clients reconnect), and it is forgotten once it
// has none. The idle gauges follow: the handler gauge divides by the
// pool's current size, the processor window starts over.
//
// # Framing and limits
//
// A request is a 4-byte big-endian size followed by that many bytes. A size
// below zero or above socket.request.max.bytes closes the connection
// before anything is allocated. Nothing before kapi allocates more than
// the frame (CVE-2022-34917): the request header parser
// (parseRequestHeader, fuzzed) is bounded by the frame and allocates at
// most the client id string. Files: connection.go (the serving loop),
// connection_read.go (reading a request), frame.go (frame buffers),
// request_header.go (the header parser), response.go (writing responses).
//
// # Request memory (queued.max.request.bytes)
//
// The data plane has a memory pool (broker/memory.Pool, Kafka's
// SimpleMemoryPool) of queued.max.request.bytes. A frame above 16 KiB
// reserves its size before its body is read; while the pool cannot hold
// it the connection does not read (muted, as Kafka mutes a channel when
// the pool is out of memory; its peer's TCP window closes), and small
// frames take their bytes without waiting, so a connection's next small
// request is never muted. Reservations wait in line; one larger than the
// whole pool (possible because the derived default may be smaller than
// socket.request.max.bytes) is read when no other large frame holds
// memory, alone. The bytes
// go back once the response has been written (or the request dropped).
// A frame above 1 MiB starts in a 1 MiB buffer, so a peer announcing a
// large frame and sending nothing holds 1 MiB; once that MiB has arrived
// the whole frame is allocated (its bytes are reserved), or, with an
// unbounded pool (-1), the buffer doubles as bytes arrive. The controller plane has its own pool of the same size (Kafka's
// ControllerServer has its own SocketServer), so clients filling the data
// plane's never hold the metadata quorum up.
//
// What else counts, without ever waiting (Pool.Take, which may drive the
// pool below zero and so mutes new large frames until it is back): each
// response's buffer while it is written (fetched record data is sent with
// sendfile from the page cache and is not in the buffer, so a Fetch
// response counts only its headers), and each batch decompressed for
// validation while it is validated (log.Config.Memory). Nothing that
// holds pool memory ever waits for pool memory, so the produce path
// cannot deadlock against the fetch path or itself. What the pool does
// not count: kmsg's decoded request structures (kmsg checks every array
// count against the bytes left, so they stay under about 16 times the
// frame, reached only by frames made of empty array elements) and the Go
// runtime's headroom between collections; hence the derived default of a
// quarter of the memory budget (see broker/memory).
//
// # Request receive time
//
// The first byte of a request may take connections.max.idle.ms to come;
// the rest of the frame, moldau.socket.request.receive.timeout.ms (30 s by
// default, dynamic; Kafka has no such limit), not counting time spent
// waiting for pool memory. A slower peer (a slowloris sender dribbling a
// frame) is closed with reason receive_timeout.
//
// # Connection quotas
//
// On the data plane, the acceptor applies Kafka's ConnectionQuotas
// (connection_quotas.go): it waits, holding the accepted socket, while the
// listener (listener.name.<l>.max.connections) or the broker
// (max.connections) is full or the creation rate
// (max.connection.creation.rate, and per listener) is over its quota; a
// connection from an address at max.connections.per.ip (or its
// max.connections.per.ip.overrides entry) is closed at once. All are
// dynamic; lowering max.connections closes the least recently used
// connections above it (idle ones first). The inter-broker listener, when
// there are several, is protected as in Kafka. The rate is a token bucket
// holding one second's worth (Kafka averages over its quota window).
//
// # Misbehaving peers in the log and the metrics
//
// Invalid frames, receive timeouts and per-IP rejections are logged at
// most once per peer address, kind and minute (peerLog, at most 4096
// addresses remembered per minute); the others are counted in the minute's
// connection summary (log_lines_suppressed) and in
// kafka_network_socketserver_suppressedlogs_total. Every such event is
// counted: kafka_network_socketserver_invalidrequests_total{reason},
// kafka_server_socketservermetrics_connection_close_reason_total{reason},
// kafka_network_acceptor_blocked_seconds_total,
// kafka_server_socketservermetrics_connection_accept_throttled_total, and
// the pool's kafka_network_socketserver_memorypoolavailable,
// _memorypoolused, _memorypoolwaitingconnections and
// kafka_server_socketservermetrics_memorypooldepletedtimetotal (ms).
//
// The header is v1 (api key, api version, correlation id, nullable client
// id) or v2 (v1 plus tagged fields) when the (key, version) is flexible,
// which kmsg's request types tell us. An API key kmsg does not know, a
// truncated header or a bad client id length closes the connection; the
// exception is a Moldau-private key the server was configured with
// (Config.PrivateAPIKeys: the metadata quorum's messages on
// the controller listener), passed to the handler with a v1 header.
//
// # Muting and ordering
//
// A connection has at most one request in flight: once a request is queued,
// its goroutine does not read again until the response has been written (or
// the handler answered NoResponse, for acks=0). Responses are therefore
// written in request order, as Kafka guarantees. respond is guarded: a
// second call for the same request is logged and dropped, so a buggy
// handler cannot answer the next request of the connection.
//
// # Responses
//
// A kapi.Response is written as Buf[:At0], region 0, Buf[At0:At1], region 1,
// ..., Buf[Atn:]. A FileRegion goes to a *net.TCPConn with sendfile(2) at
// the region's explicit offset (never the file's shared position); other
// connections fall back to a copy from an io.SectionReader. Release is
// called once the response has been written or dropped, also when the
// connection is gone by the time the handler answers. Close writes Buf, if
// any, closes the connection and logs CloseReason with the peer.
//
// # Connection logging
//
// Each connection opened or closed is logged at DEBUG, with its reason
// (peer, idle, refused, bad_request, io_error, shutdown, receive_timeout,
// max_connections, per_ip_limit, authentication_failed, processor_removed). At INFO there is
// one summary line per minute (ConnectionSummaryInterval), only when
// something happened: opened N, closed M by reason, open now. A connection
// the request handler closed (an API or version not served, a malformed
// request) is logged at INFO the first time its reason appears in an
// interval and counted in the summary after that, so a client reconnecting
// several times a second costs one line a minute.
//
// # Idle connections, socket options
//
// The read waiting for the next request, and each read or write of a
// request, has a deadline of connections.max.idle.ms: a connection with no
// traffic for that long is closed, but never while its request is being
// handled (the connection is not reading then). socket.send.buffer.bytes and
// socket.receive.buffer.bytes are applied when positive (-1 leaves the OS
// default); TCP_NODELAY is on.
//
// # Back-pressure
//
// The RequestChannel holds at most queued.max.requests requests. When it is
// full, connection goroutines block on it and stop reading, so memory is
// bounded by connections × one frame each, and by the request memory pool.
// Every blocking send or receive also selects on shutdown.
//
// # Failures
//
// An error on one connection closes that connection only. A panic in
// RequestHandler.Handle is recovered by the handler pool, logged with its
// stack, and answered with a Close response: the broker keeps serving.
//
// # Shutdown
//
// SocketServer.Close: (1) stops accepting (StopAccepting) and waits for the
// acceptors; (2) drains: connections waiting for their next request close
// now, the others finish the request in flight and close; (3) after
// ShutdownTimeout (30 s by default) forces the rest: the handler context is
// cancelled and every socket's deadline is set to the past; (4) stops the
// handler pool and the metrics sampler. Every goroutine is started through
// a group that refuses new work once shutdown began, and Close waits for
// all of them. Close is idempotent. (The broker calls
// replica.Manager.BeginShutdown between (1) and (2); see package broker.)
//
// # Idle gauges
//
// kafka_network_socketserver_networkprocessoravgidlepercent: Kafka's value is
// the average over processors of the fraction of time a processor thread
// waits in select. Here a connection goroutine is "busy" for its processor
// from the moment a request's size prefix has arrived until the request is
// in the RequestChannel (reading the body, parsing the header, and waiting
// on a full channel, which blocks Kafka's processor thread too), and from
// the moment its response is available until it is written. Waiting for the
// next request and waiting, muted, for the handler are idle, as they are in
// select for Kafka. Per processor, busy = (sum of its connections' busy
// time over the window) / wall time of the window, clamped to 0..1 (several
// connections may be busy at once: a processor is a group of goroutines, not
// one thread); the gauge is the average of 1 - busy over all processors,
// over a sliding window of the last 5 seconds, sampled every second.
//
// kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent: the
// time the handler goroutines spend waiting for a request on the
// RequestChannel divided by (wall time × num.io.threads), over the same
// sliding window: 1 - (time spent inside Handle) / (wall × num.io.threads).
// A request whose Handle is still running counts as busy up to the sample.
// An asynchronous handler that returns before calling respond (a delayed
// fetch) frees its goroutine, as in Kafka.
//
// # Metrics
//
// Metrics (NewMetrics) registers the collectors on a caller's
// prometheus.Registerer, never the global one, with the names Kafka's usual
// JMX Prometheus exporter produces. The six request-time percentiles
// (RequestMetrics' *TimeMs) are broker/summary Vecs, a few atomic adds per
// observation.
//
// # Broker-to-broker client
//
// A node sends to other nodes over brokerConn (broker_conn.go), the one
// broker-to-broker client (Kafka's NetworkClient): a TCP connection, dialed
// on first use with a 2 s timeout (through the channel's DialFunc, which
// the broker wraps with a TLS handshake when the target listener is SSL), carrying one request at a time framed
// with kmsg.RequestFormatter; the response must carry the request's
// correlation id and be at most 100 MiB, and is decoded with kmsg (a
// flexible response header's tags first, except for ApiVersions). The
// caller's context bounds the exchange (30 s without a deadline); any
// failure closes the connection, and the next request dials again.
// Retryable failures wrap errConnClosed or are net errors.
//
// Two channels are built on it:
//
//	ControllerChannel   to the active controller (Kafka's
//	                    NodeToControllerChannelManager): one connection
//	                    per voter on the controller listener, in-process
//	                    through kapi's ControllerHandler when this node
//	                    leads; NOT_CONTROLLER and connection failures
//	                    retried every 50 ms against whoever leads, until
//	                    the caller's context ends or Close
//	InterBrokerChannel  to brokers on inter.broker.listener.name, as the
//	                    metadata image has their endpoints: up to maxConns
//	                    connections per destination (a request takes an
//	                    idle one, else opens one, else queues on one in
//	                    turn); to this broker, the request is encoded and
//	                    handed to its RequestHandler as if it had come over
//	                    that listener. One per sender: the transaction
//	                    markers, AddPartitionsToTxn, and each replica
//	                    fetcher (replica.BrokerClient). Errors are the
//	                    caller's to retry.
//
// Both are safe for concurrent use; Close closes their connections and is
// idempotent.
//
// # Thread-safety
//
// SocketServer's exported methods are safe for concurrent use. The
// RequestHandler is called concurrently from num.io.threads goroutines.
package network
