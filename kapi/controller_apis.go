package kapi

// The controller plane (Kafka's ControllerApis): what a node with the
// controller role serves on its controller listener (controller.listener.names):
//
//   - ApiVersions, with the versions below.
//   - BrokerRegistration and BrokerHeartbeat (KIP-631), from every broker.
//   - CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
//     IncrementalAlterConfigs, AlterClientQuotas, ElectLeaders,
//     UpdateFeatures, AlterUserScramCredentials, CreateAcls and DeleteAcls, forwarded by brokers (or sent by an admin client
//     with --bootstrap-controller), and AllocateProducerIds.
//   - CreateDelegationToken, RenewDelegationToken and
//     ExpireDelegationToken, forwarded by brokers in an Envelope (see
//     58_envelope.go) that names the client's principal.
//   - DescribeQuorum (KIP-595).
//   - ControllerRegistration (KIP-919) from every controller, and
//     DescribeCluster v1-2 with the controller endpoint type: the
//     registered controllers' endpoints on the request's listener (Kafka
//     requires v2 here; Moldau also answers v1, the first with the
//     endpoint type). Any node of the quorum answers it.
//   - Fetch (v12-17, of __cluster_metadata-0 only) and FetchSnapshot, from
//     metadata observers: broker-only nodes following the log (see
//     broker/raft's observer).
//   - AlterPartition, from partition leaders (see 56_alter_partition.go).
//   - AssignReplicasToDirs (KIP-858), from every broker: the log dir of
//     each of its replicas.
//   - AddRaftVoter and RemoveRaftVoter (KIP-853), from admin clients or
//     forwarded by brokers, and UpdateRaftVoter from the voters, which
//     Kafka serves on the controller listener only.
//   - The metadata quorum's own messages, on a Moldau-private API key that
//     ApiVersions does not list (see QuorumAPI).
//
// A node that is not the active controller answers NOT_CONTROLLER in every
// error field; brokers and admin clients then find the active one.
//
// With an authorizer, everything but ApiVersions needs CLUSTER_ACTION on
// the cluster (the quorum's own messages too: a refused peer is closed),
// so the controller listener serves brokers, controllers and super users
// only. Kafka's ControllerApis authorizes an admin request sent straight
// to a controller by its own rights; Moldau's brokers forward the
// client's request without an envelope, having authorized it themselves,
// so the controller cannot tell the client's rights from the broker's and
// is stricter instead.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/security/authorizer"
)

// ControllerAPI is the controller as the controller plane calls it
// (*controller.QuorumController).
type ControllerAPI interface {
	CreateTopics(context.Context, *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error)
	DeleteTopics(context.Context, *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error)
	CreatePartitions(context.Context, *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error)
	AlterConfigs(context.Context, *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error)
	IncrementalAlterConfigs(context.Context, *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error)
	AllocateProducerIDs(context.Context, *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error)
	RegisterBroker(context.Context, *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error)
	BrokerHeartbeat(context.Context, *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error)
	AlterClientQuotas(context.Context, *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error)
	AlterPartition(context.Context, *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
	AssignReplicasToDirs(context.Context, *kmsg.AssignReplicasToDirsRequest) (*kmsg.AssignReplicasToDirsResponse, error)
	ElectLeaders(context.Context, *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error)
	UnregisterBroker(context.Context, *kmsg.UnregisterBrokerRequest) (*kmsg.UnregisterBrokerResponse, error)
	RegisterController(context.Context, *kmsg.ControllerRegistrationRequest) (*kmsg.ControllerRegistrationResponse, error)
	AlterPartitionReassignments(context.Context, *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error)
	ListPartitionReassignments(context.Context, *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error)
	UpdateFeatures(context.Context, *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, error)
	AlterUserScramCredentials(context.Context, *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error)
	CreateAcls(context.Context, *kmsg.CreateACLsRequest) (*kmsg.CreateACLsResponse, error)
	DeleteAcls(context.Context, *kmsg.DeleteACLsRequest) (*kmsg.DeleteACLsResponse, error)
	// Delegation tokens (38-40): principals are "Type:name".
	CreateDelegationToken(ctx context.Context, owner, requester string, renewers []string, maxLifetimeMs int64) (metadata.DelegationToken, error)
	DelegationTokenHMAC(tokenID string) []byte
	RenewDelegationToken(ctx context.Context, principal string, hmac []byte, periodMs int64) (int64, error)
	ExpireDelegationToken(ctx context.Context, principal string, hmac []byte, periodMs int64) (int64, error)
}

// QuorumAPI is the metadata quorum as the controller plane calls it.
type QuorumAPI interface {
	// DescribeQuorum answers for __cluster_metadata-0.
	DescribeQuorum(*kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse
	// TransportKey is the private API key of the quorum's messages.
	TransportKey() int16
	// HandleTransport takes one request body on that key and returns
	// the response body.
	HandleTransport(body []byte) ([]byte, error)
	// Fetch and FetchSnapshot serve the metadata observers (broker-only
	// nodes) __cluster_metadata-0. Fetch calls done once, possibly
	// later from another goroutine: a long poll waits up to the fetch's
	// max wait (at most 500 ms) for a commit without holding a handler.
	Fetch(req *kmsg.FetchRequest, done func(*kmsg.FetchResponse))
	FetchSnapshot(*kmsg.FetchSnapshotRequest) *kmsg.FetchSnapshotResponse
	// AddRaftVoter and RemoveRaftVoter change the voters (KIP-853),
	// returning once the new set is committed; errors wrap kerr codes.
	AddRaftVoter(context.Context, *kmsg.AddRaftVoterRequest) error
	RemoveRaftVoter(context.Context, *kmsg.RemoveRaftVoterRequest) error
	// UpdateRaftVoter answers a voter telling its endpoints (KIP-853),
	// with the leader in every answer (see 82_update_raft_voter.go).
	UpdateRaftVoter(context.Context, *kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse
}

// ControllerHandler serves the controller plane. Safe for concurrent use.
type ControllerHandler struct {
	nodeID     int32
	log        *slog.Logger
	controller ControllerAPI
	quorum     QuorumAPI
	apis       map[int16]api
	authorizer *authorizer.StandardAuthorizer
	// cluster answers DescribeCluster (SetCluster); nil: not served.
	cluster *controllerCluster
}

// controllerCluster is what DescribeCluster on the controller plane
// reads: the cluster id, the registered controllers and the active one.
type controllerCluster struct {
	clusterID string
	image     func() *metadata.Image
	leader    func() int32
}

// SetCluster makes the controller plane answer DescribeCluster with the
// controller endpoint type (KIP-919) from the registered controllers of
// image, leader being the active controller. Call before serving.
func (h *ControllerHandler) SetCluster(clusterID string, image func() *metadata.Image, leader func() int32) {
	h.cluster = &controllerCluster{clusterID: clusterID, image: image, leader: leader}
}

// SetAuthorizer makes the controller plane require CLUSTER_ACTION (see
// the file comment). Call before serving.
func (h *ControllerHandler) SetAuthorizer(a *authorizer.StandardAuthorizer) { h.authorizer = a }

// clusterAction reports whether the request's principal has CLUSTER_ACTION.
func (h *ControllerHandler) clusterAction(r *Request) bool {
	return h.authorizer == nil || h.authorizer.Authorize(sessionOf(r), authorizer.Action{
		Operation: authorizer.ClusterAction, ResourceType: authorizer.Cluster, Name: authorizer.ClusterName, RefCount: 1, LogIfDenied: true})
}

// controllerAPIVersions are the versions the controller plane serves.
var controllerAPIVersions = []struct{ key, min, max int16 }{
	{1, 12, 17}, // Fetch, of __cluster_metadata-0 by observers
	{18, 0, 4},  // ApiVersions
	{19, 0, 7},  // CreateTopics
	{20, 0, 6},  // DeleteTopics
	{30, 0, 3},  // CreateAcls
	{31, 0, 3},  // DeleteAcls
	{33, 0, 2},  // AlterConfigs
	{37, 0, 3},  // CreatePartitions
	{38, 0, 3},  // CreateDelegationToken
	{39, 0, 2},  // RenewDelegationToken
	{40, 0, 2},  // ExpireDelegationToken
	{43, 0, 2},  // ElectLeaders
	{44, 0, 1},  // IncrementalAlterConfigs
	{45, 0, 1},  // AlterPartitionReassignments
	{46, 0, 0},  // ListPartitionReassignments
	{49, 0, 1},  // AlterClientQuotas
	{51, 0, 0},  // AlterUserScramCredentials
	{55, 0, 2},  // DescribeQuorum
	{56, 0, 3},  // AlterPartition
	{57, 0, 2},  // UpdateFeatures
	{58, 0, 0},  // Envelope
	{59, 0, 1},  // FetchSnapshot
	{60, 1, 2},  // DescribeCluster, controller endpoints
	{62, 0, 4},  // BrokerRegistration
	{63, 0, 1},  // BrokerHeartbeat
	{64, 0, 0},  // UnregisterBroker
	{67, 0, 0},  // AllocateProducerIds
	{70, 0, 0},  // ControllerRegistration
	{73, 0, 0},  // AssignReplicasToDirs
	{80, 0, 1},  // AddRaftVoter (KIP-853)
	{81, 0, 0},  // RemoveRaftVoter
	{82, 0, 0},  // UpdateRaftVoter, from voters (controller listener only)
}

// NewControllerHandler returns the controller plane's handler.
func NewControllerHandler(nodeID int32, logger *slog.Logger, c ControllerAPI, q QuorumAPI) *ControllerHandler {
	if logger == nil {
		logger = slog.Default()
	}
	h := &ControllerHandler{nodeID: nodeID, log: logger, controller: c, quorum: q, apis: map[int16]api{}}
	for _, v := range controllerAPIVersions {
		if max := kmsg.RequestForKey(v.key).MaxVersion(); v.max > max {
			panic(fmt.Sprintf("kapi: controller table names %s v%d, kmsg knows v%d", kmsg.NameForKey(v.key), v.max, max))
		}
		h.apis[v.key] = api{key: v.key, min: v.min, max: v.max}
	}
	return h
}

// Handle serves one request on the controller listener.
func (h *ControllerHandler) Handle(ctx context.Context, r *Request, respond func(*Response)) {
	if h.quorum != nil && r.APIKey == h.quorum.TransportKey() {
		if !h.clusterAction(r) {
			respond(&Response{Close: true, CloseReason: "metadata quorum message from a principal without CLUSTER_ACTION"})
			return
		}
		body, err := h.quorum.HandleTransport(r.Body)
		if err != nil {
			respond(&Response{Close: true, CloseReason: "metadata quorum message: " + err.Error()})
			return
		}
		buf := make([]byte, 8, 8+len(body))
		be32(buf[4:], uint32(r.CorrelationID))
		buf = append(buf, body...)
		be32(buf, uint32(len(buf)-4))
		respond(&Response{Buf: buf})
		return
	}
	a, ok := h.apis[r.APIKey]
	if !ok || r.APIVersion < a.min || r.APIVersion > a.max {
		if r.APIKey == apiVersionsKey {
			respond(encodeResponse(r, h.apiVersions(kmsg.NewPtrApiVersionsRequest(), true)))
			return
		}
		respond(&Response{Close: true, CloseReason: fmt.Sprintf("%s v%d is not served on the controller listener", kmsg.NameForKey(r.APIKey), r.APIVersion)})
		return
	}
	kreq, err := decodeRequest(r.APIKey, r.APIVersion, r.Body)
	if err != nil {
		respond(&Response{Close: true, CloseReason: err.Error()})
		return
	}
	if av, ok := kreq.(*kmsg.ApiVersionsRequest); ok {
		respond(encodeResponse(r, h.apiVersions(av, false)))
		return
	}
	if dc, ok := kreq.(*kmsg.DescribeClusterRequest); ok && h.cluster != nil && h.clusterAction(r) {
		respond(encodeResponse(r, h.describeCluster(dc, r.Listener)))
		return
	}
	if f, ok := kreq.(*kmsg.FetchRequest); ok && h.quorum != nil && h.clusterAction(r) {
		h.quorum.Fetch(f, func(resp *kmsg.FetchResponse) { respond(encodeResponse(r, resp)) })
		return
	}
	var resp kmsg.Response
	if h.clusterAction(r) {
		ctx = withCaller(ctx, caller{principal: r.principal(), tokenAuth: r.TokenAuthenticated, protocol: r.SecurityProtocol})
		resp, err = h.Dispatch(ctx, kreq)
	} else {
		err = apierr.Errorf(kerr.ClusterAuthorizationFailed, "Request %s on the controller listener is not authorized.", kmsg.NameForKey(r.APIKey))
	}
	// Every request of the controller plane has an error response
	// (TestResponseErrorCodesReadEveryErrorResponse).
	if ap, ok := kreq.(*kmsg.AlterPartitionRequest); ok && err != nil {
		resp = alterPartitionError(ap, err)
	} else if err != nil {
		resp = errorResponse(kreq, err)
	}
	respond(encodeResponse(r, resp))
}

func (h *ControllerHandler) apiVersions(req *kmsg.ApiVersionsRequest, unsupported bool) *kmsg.ApiVersionsResponse {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if unsupported {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	for _, v := range controllerAPIVersions {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.key, v.min, v.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// Dispatch runs a controller-plane request against the controller; the
// broker's in-process forwarding path calls it too, so both paths are one.
// An error is request-wide (NOT_CONTROLLER, a timeout).
func (h *ControllerHandler) Dispatch(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c := h.controller
	switch req := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return c.CreateTopics(ctx, req)
	case *kmsg.DeleteTopicsRequest:
		return c.DeleteTopics(ctx, req)
	case *kmsg.CreatePartitionsRequest:
		return c.CreatePartitions(ctx, req)
	case *kmsg.AlterConfigsRequest:
		return c.AlterConfigs(ctx, req)
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.IncrementalAlterConfigs(ctx, req)
	case *kmsg.AllocateProducerIDsRequest:
		return c.AllocateProducerIDs(ctx, req)
	case *kmsg.BrokerRegistrationRequest:
		return c.RegisterBroker(ctx, req)
	case *kmsg.BrokerHeartbeatRequest:
		return c.BrokerHeartbeat(ctx, req)
	case *kmsg.ControllerRegistrationRequest:
		return c.RegisterController(ctx, req)
	case *kmsg.AlterClientQuotasRequest:
		return c.AlterClientQuotas(ctx, req)
	case *kmsg.AlterPartitionRequest:
		return c.AlterPartition(ctx, req)
	case *kmsg.AssignReplicasToDirsRequest:
		return c.AssignReplicasToDirs(ctx, req)
	case *kmsg.ElectLeadersRequest:
		return c.ElectLeaders(ctx, req)
	case *kmsg.UnregisterBrokerRequest:
		return c.UnregisterBroker(ctx, req)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return c.AlterPartitionReassignments(ctx, req)
	case *kmsg.ListPartitionReassignmentsRequest:
		return c.ListPartitionReassignments(ctx, req)
	case *kmsg.UpdateFeaturesRequest:
		return c.UpdateFeatures(ctx, req)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return c.AlterUserScramCredentials(ctx, req)
	case *kmsg.CreateACLsRequest:
		return c.CreateAcls(ctx, req)
	case *kmsg.DeleteACLsRequest:
		return c.DeleteAcls(ctx, req)
	case *kmsg.CreateDelegationTokenRequest:
		return h.createDelegationToken(ctx, req)
	case *kmsg.RenewDelegationTokenRequest:
		return h.renewDelegationToken(ctx, req)
	case *kmsg.ExpireDelegationTokenRequest:
		return h.expireDelegationToken(ctx, req)
	case *kmsg.EnvelopeRequest:
		return h.dispatchEnvelope(ctx, req)
	case *kmsg.DescribeQuorumRequest:
		if h.quorum == nil {
			return nil, fmt.Errorf("%w: no metadata quorum here", kerr.NotController)
		}
		return h.quorum.DescribeQuorum(req), nil
	case *kmsg.FetchRequest:
		if h.quorum == nil {
			return nil, fmt.Errorf("%w: no metadata quorum here", kerr.NotLeaderForPartition)
		}
		ch := make(chan *kmsg.FetchResponse, 1)
		h.quorum.Fetch(req, func(resp *kmsg.FetchResponse) { ch <- resp })
		return <-ch, nil
	case *kmsg.FetchSnapshotRequest:
		if h.quorum == nil {
			return nil, fmt.Errorf("%w: no metadata quorum here", kerr.NotLeaderForPartition)
		}
		return h.quorum.FetchSnapshot(req), nil
	case *kmsg.AddRaftVoterRequest:
		if h.quorum == nil {
			return nil, fmt.Errorf("%w: no metadata quorum here", kerr.NotController)
		}
		ctx, cancel := context.WithTimeout(ctx, voterChangeTimeout(req.TimeoutMillis)-5*time.Second)
		defer cancel()
		if err := h.quorum.AddRaftVoter(ctx, req); err != nil {
			return nil, err
		}
		return req.ResponseKind(), nil
	case *kmsg.UpdateRaftVoterRequest:
		return h.handleUpdateRaftVoter(ctx, req)
	case *kmsg.RemoveRaftVoterRequest:
		if h.quorum == nil {
			return nil, fmt.Errorf("%w: no metadata quorum here", kerr.NotController)
		}
		ctx, cancel := context.WithTimeout(ctx, voterChangeTimeout(0)-5*time.Second)
		defer cancel()
		if err := h.quorum.RemoveRaftVoter(ctx, req); err != nil {
			return nil, err
		}
		return req.ResponseKind(), nil
	}
	return nil, fmt.Errorf("%w: %s is not a controller request", kerr.InvalidRequest, kmsg.NameForKey(req.Key()))
}

// encodeResponse frames a response to r (see Handler.encode).
func encodeResponse(r *Request, resp kmsg.Response) *Response {
	return (&Handler{}).encode(r, resp)
}
