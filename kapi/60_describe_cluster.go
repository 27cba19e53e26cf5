package kapi

// DescribeCluster, versions 0 to 2.
//
//   - v0: include_cluster_authorized_operations; the response has the
//     brokers, cluster id, controller id and cluster authorized operations
//     (KIP-700).
//   - v1: endpoint_type in request and response (KIP-919): 1 brokers,
//     2 controllers. A broker answers only for brokers: another type is
//     MISMATCHED_ENDPOINT_TYPE, an unknown one UNSUPPORTED_ENDPOINT_TYPE
//     (INVALID_REQUEST for both at v0).
//   - v2: include_fenced_brokers; brokers carry is_fenced (KIP-1073). This
//     node is never fenced.
//
// On the controller plane (ControllerHandler.describeCluster, KIP-919) it
// is the other way round: the controller endpoint type lists the
// registered controllers (ControllerRegistration) with an endpoint on the
// request's listener and the active controller; the broker type is
// MISMATCHED_ENDPOINT_TYPE. Kafka's controllers refuse v0 and v1 there;
// Moldau serves v1 and v2.
//
// As Kafka's AuthHelper.computeDescribeClusterResponse: the brokers are
// this node's endpoint on the request's listener; the controller id is
// this node (KRaft reports a live broker); authorized operations are
// -2147483648 unless requested, then every cluster operation (no
// authorizer yet).

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

const (
	endpointTypeBroker     int8 = 1
	endpointTypeController int8 = 2
)

func (h *Handler) handleDescribeCluster(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBroker
	et := req.EndpointType
	if req.Version < 1 {
		et = endpointTypeBroker
	}
	if et != endpointTypeBroker {
		code, msg := kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type "+strconv.Itoa(int(et))
		if et == endpointTypeController {
			code, msg = kerr.MismatchedEndpointType.Code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		}
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	resp.ClusterID = h.cfg.ClusterID
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if h.authorize(rc, az.Describe, az.Cluster, az.ClusterName) {
			resp.ClusterAuthorizedOperations = h.authorizedOperations(rc, az.Cluster, az.ClusterName)
		}
	}
	im := h.image()
	endpoints := h.aliveEndpoints(im, rc.Listener)
	for _, b := range im.SortedBrokers() {
		// v2 (KIP-1073) may list fenced brokers too; Moldau lists the
		// live ones, as v0 and v1 do, unless asked.
		ep, ok := endpoints[b.ID]
		if !ok && !(req.IncludeFencedBrokers && b.Fenced) {
			continue
		}
		if !ok {
			if ep, ok = b.Endpoint(rc.Listener); !ok {
				continue
			}
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack, rb.IsFenced = b.ID, ep.Host, int32(ep.Port), b.Rack, b.Fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	resp.ControllerID = h.controllerIDFor(endpoints)
	if _, ok := endpoints[resp.ControllerID]; !ok {
		resp.ControllerID = -1 // not among the listed nodes, as Kafka
	}
	return resp
}

// describeCluster answers DescribeCluster on the controller plane (Kafka's
// ControllerApis.handleDescribeCluster): the registered controllers with an
// endpoint on listener, and the active controller.
func (h *ControllerHandler) describeCluster(req *kmsg.DescribeClusterRequest, listener string) *kmsg.DescribeClusterResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeController
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	if req.EndpointType != endpointTypeController {
		code, msg := kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type "+strconv.Itoa(int(req.EndpointType))
		if req.EndpointType == endpointTypeBroker {
			code, msg = kerr.MismatchedEndpointType.Code, "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
		}
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	resp.ClusterID = h.cluster.clusterID
	resp.ControllerID = h.cluster.leader()
	listed := false
	for _, c := range h.cluster.image().SortedControllers() {
		ep, ok := c.Endpoint(listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = c.ID, ep.Host, int32(ep.Port)
		resp.Brokers = append(resp.Brokers, rb)
		listed = listed || c.ID == resp.ControllerID
	}
	if !listed {
		resp.ControllerID = -1
	}
	return resp
}
