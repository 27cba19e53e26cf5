package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	az "github.com/moldau/moldau/broker/security/authorizer"
)

func TestDescribeCluster(t *testing.T) {
	h := newAdminHandler(t)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		req.EndpointType = 1
		req.IncludeClusterAuthorizedOperations = true
		resp := roundTrip[*kmsg.DescribeClusterResponse](t, h.handleDescribeCluster(testRC(), req))
		if resp.ErrorCode != 0 || resp.ClusterID != "test-cluster" || resp.ControllerID != 1 || len(resp.Brokers) != 1 ||
			resp.Brokers[0].Port != 9092 || resp.ClusterAuthorizedOperations != az.AllOperations(az.Cluster) {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 1
	req.EndpointType = 2
	if resp := h.handleDescribeCluster(testRC(), req).(*kmsg.DescribeClusterResponse); resp.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("%+v", resp)
	}
}

func TestDescribeLogDirs(t *testing.T) {
	h := newAdminHandler(t)
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		resp := roundTrip[*kmsg.DescribeLogDirsResponse](t, h.handleDescribeLogDirs(testRC(), req))
		if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 || resp.Dirs[0].Dir == "" {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
}

// On the controller plane DescribeCluster lists the registered controllers
// with an endpoint on the request's listener (KIP-919); the broker
// endpoint type is MISMATCHED_ENDPOINT_TYPE there.
func TestDescribeClusterControllers(t *testing.T) {
	h := NewControllerHandler(1, nil, nil, nil)
	d := metadata.NewDelta(metadata.Empty)
	for id := int32(3); id >= 1; id-- {
		eps := []metadata.BrokerEndpoint{{Name: "CONTROLLER", Host: "c", Port: uint16(9090 + id)}}
		if id == 2 {
			eps[0].Name = "OTHER"
		}
		if err := d.Replay(&metadata.RegisterControllerRecord{ControllerID: id, EndPoints: eps}); err != nil {
			t.Fatal(err)
		}
	}
	im := d.Apply()
	leader := int32(3)
	h.SetCluster("cid", func() *metadata.Image { return im }, func() int32 { return leader })
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType = 2, 2
	resp := h.describeCluster(req, "CONTROLLER")
	if resp.ErrorCode != 0 || resp.ClusterID != "cid" || resp.EndpointType != 2 || resp.ControllerID != 3 ||
		len(resp.Brokers) != 2 || resp.Brokers[0].NodeID != 1 || resp.Brokers[1].Port != 9093 {
		t.Fatalf("%+v", resp)
	}
	leader = 2 // not on this listener
	if resp := h.describeCluster(req, "CONTROLLER"); resp.ControllerID != -1 {
		t.Fatalf("active controller %d, not among the listed", resp.ControllerID)
	}
	req.EndpointType = 1
	if resp := h.describeCluster(req, "CONTROLLER"); resp.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("%+v", resp)
	}
	req.EndpointType = 7
	if resp := h.describeCluster(req, "CONTROLLER"); resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("%+v", resp)
	}
}
