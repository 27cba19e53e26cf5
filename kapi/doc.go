// Package kapi is Moldau's KafkaApis: it decodes each request with kmsg,
// runs it against the broker's parts and encodes the response.
//
// One file per API key (00_produce.go, 01_fetch.go, ...), each opening with
// the versions it serves and how they differ. versions.go holds the one
// table of supported APIs and versions: it builds the ApiVersions response,
// and Handle refuses anything outside it (an unknown key or version closes
// the connection, as Kafka does; ApiVersions at an unknown version is
// answered in the v0 format with UNSUPPORTED_VERSION, KIP-511).
//
// Metadata and decisions: handlers read the cluster metadata from the
// image this broker has applied (MetadataCache, no lock), and never decide
// what the cluster should be: CreateTopics, DeleteTopics, CreatePartitions,
// AlterConfigs, IncrementalAlterConfigs, AlterClientQuotas, ElectLeaders,
// UpdateFeatures, DescribeQuorum, auto-creation and producer-id blocks are
// forwarded to the active controller
// (ControllerChannel, forward.go; the delegation token requests in an
// Envelope naming the client's principal, 58_envelope.go), and an answer
// that changed something is
// relayed once this broker's metadata shows the change. The controller
// plane, served on the controller listener, is controller_apis.go.
//
// Authorization: with an authorizer (Config.Authorizer, Kafka's
// StandardAuthorizer), every handler first asks what Kafka's KafkaApis and
// AuthHelper ask, before it looks anything up, so that a refusal tells
// nothing of what exists: authorize.go (the helpers and config
// resources), authorize_groups.go and authorize_txn.go (the group and
// transaction APIs' splitting of refused topics from the rest), and a
// cluster operation wrapped around the admin handlers in versions.go
// (clusterOp, and shareStateOp for the share coordinator's inter-broker
// APIs, share_state.go). A refused part of a request answers Kafka's code and is not
// passed on; listings leave out what the principal may not describe.
//
// Errors: inner packages return Go errors wrapping kerr sentinels;
// ErrorCode turns them into Kafka error codes, here and nowhere else, and
// anything unrecognised is UNKNOWN_SERVER_ERROR.
//
// Responses: Handle calls respond exactly once per request, possibly later
// and from another goroutine (a fetch or acks=all produce waiting in a
// purgatory), and always, even for acks=0 (NoResponse), because the socket
// server keeps the connection muted until then. A fetch response carries
// its record batches as file regions that the socket server sends with
// sendfile: the response is encoded by kmsg with a marker in place of each
// partition's records, and encodeWithRegions splices the regions in
// (tested byte for byte against kmsg's own encoding for every version).
//
// Quotas: client quotas (client_quotas.go, with broker/quota's managers)
// record each request's bytes and handler time; every response is encoded
// through RequestContext.encode, which puts the request's throttle time in
// throttle_time_ms and on Response.Throttle, for the socket server to mute
// the connection that long after sending it (KIP-219). The controller
// mutation quota is quotas.go.
//
// Groups: FindCoordinator (creating __consumer_offsets on first use) and
// the group and offset APIs hand their requests to the group coordinator
// (coordinator/group) and answer from its callback, so a JoinGroup or
// SyncGroup waiting for a rebalance, or a commit waiting for its record
// to be committed, holds no handler goroutine. Version differences of
// the wire format (LeaveGroup before v3, OffsetFetch before v8, JoinGroup
// v0's rebalance timeout) are shaped here; every decision is the
// coordinator's.
//
// Thread-safety: a Handler is safe for concurrent use by the handler pool.
// Fetch sessions (KIP-227) live in a bounded cache; one session is used by
// one request at a time, as a client sends one fetch per session at once.
package kapi
