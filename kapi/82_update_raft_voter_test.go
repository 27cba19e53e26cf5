package kapi

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// updateVoterQuorum answers UpdateRaftVoter with the leader it names.
type updateVoterQuorum struct {
	QuorumAPI
	got *kmsg.UpdateRaftVoterRequest
}

func (q *updateVoterQuorum) UpdateRaftVoter(_ context.Context, req *kmsg.UpdateRaftVoterRequest) *kmsg.UpdateRaftVoterResponse {
	q.got = req
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	resp.ErrorCode = kerr.RequestTimedOut.Code
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch, resp.CurrentLeader.Host, resp.CurrentLeader.Port = 2, 5, "ctrl2", 9093
	return resp
}

func (q *updateVoterQuorum) TransportKey() int16 { return 10000 }

// UpdateRaftVoter is served on the controller listener only, as Kafka's
// (listeners: controller): the controller plane lists v0 and hands it to
// the quorum, answering with the leader; brokers do not list it.
func TestUpdateRaftVoterOnControllerListenerOnly(t *testing.T) {
	q := &updateVoterQuorum{}
	h := NewControllerHandler(1, nil, nil, q)
	versions := serveController(t, h, kmsg.NewPtrApiVersionsRequest(), 3).(*kmsg.ApiVersionsResponse)
	listed := false
	for _, k := range versions.ApiKeys {
		if k.ApiKey == 82 {
			listed = k.MinVersion == 0 && k.MaxVersion == 0
		}
	}
	if !listed {
		t.Error("the controller listener does not list UpdateRaftVoter v0")
	}
	for _, k := range apiKeys(true) {
		if k.ApiKey == 82 {
			t.Error("the broker listener lists UpdateRaftVoter")
		}
	}

	req := kmsg.NewPtrUpdateRaftVoterRequest()
	req.VoterID, req.CurrentLeaderEpoch = 3, 5
	resp := serveController(t, h, req, 0).(*kmsg.UpdateRaftVoterResponse)
	if q.got == nil || q.got.VoterID != 3 {
		t.Fatalf("the quorum got %+v", q.got)
	}
	if resp.ErrorCode != kerr.RequestTimedOut.Code || resp.CurrentLeader.LeaderID != 2 || resp.CurrentLeader.Host != "ctrl2" || resp.CurrentLeader.Port != 9093 {
		t.Errorf("response %+v", resp)
	}
}
