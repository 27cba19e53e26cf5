package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
