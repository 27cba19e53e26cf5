package kapi

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
	"github.com/moldau/moldau/coordinator/share"
)

// shareHandler is a Handler whose share coordinator has one partition of
// __share_group_state, led here, over an in-memory log.
func shareHandler(t *testing.T) *Handler {
	t.Helper()
	h := New(Config{NodeID: 1})
	svc := share.NewService(share.Options{Log: runtimetest.NewMemLog(), NumPartitions: func() int32 { return 1 }})
	t.Cleanup(svc.Close)
	svc.OnElection(0, 1)
	h.cfg.Share = svc
	return h
}

// callShare runs one of the share-state handlers and returns its response.
func callShare(t *testing.T, h *Handler, req kmsg.Request) kmsg.Response {
	t.Helper()
	rc := &RequestContext{Request: &Request{APIKey: req.Key(), APIVersion: req.GetVersion()}, ctx: context.Background(), h: h}
	ch := make(chan kmsg.Response, 1)
	op := map[int16]func(*Handler, *RequestContext, kmsg.Request, func(kmsg.Response)){
		83: (*Handler).handleInitializeShareGroupState,
		84: (*Handler).handleReadShareGroupState,
		85: (*Handler).handleWriteShareGroupState,
		87: (*Handler).handleReadShareGroupStateSummary,
	}[req.Key()]
	op(h, rc, req, func(r kmsg.Response) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no response")
	}
	return nil
}

// Every partition of a request is answered in its place with its own
// error; a request with no group id is answered with no results, and
// WriteShareGroupState v0 carries no delivery-complete count.
func TestShareStateHandlers(t *testing.T) {
	h := shareHandler(t)
	a, b := [16]byte{1}, [16]byte{2}
	var init *kmsg.InitializeShareGroupStateResponse
	for {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = "g"
		req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{
			{TopicID: a, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 1, StartOffset: 5}, {Partition: -1}}},
			{TopicID: b, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 3, StateEpoch: 1, StartOffset: 0}}},
		}
		init = callShare(t, h, req).(*kmsg.InitializeShareGroupStateResponse)
		if init.Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			break
		}
		time.Sleep(time.Millisecond) // the shard is loading
	}
	codes := func(ps ...int16) []int16 { return ps }
	got := codes(init.Topics[0].Partitions[0].ErrorCode, init.Topics[0].Partitions[1].ErrorCode, init.Topics[1].Partitions[0].ErrorCode)
	if len(init.Topics) != 2 || got[0] != 0 || got[1] != kerr.InvalidRequest.Code || got[2] != 0 ||
		init.Topics[1].TopicID != b || init.Topics[0].Partitions[1].Partition != -1 {
		t.Fatalf("InitializeShareGroupState: %+v", init)
	}

	w := kmsg.NewPtrWriteShareGroupStateRequest()
	w.Version = 0
	w.GroupID = "g"
	w.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: a, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{
		{Partition: 0, StateEpoch: 1, LeaderEpoch: 0, StartOffset: -1, DeliveryCompleteCount: 99,
			StateBatches: []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{{FirstOffset: 5, LastOffset: 9, DeliveryState: 2, DeliveryCount: 1}}},
		{Partition: 1, StateEpoch: 1, LeaderEpoch: 0, StartOffset: -1},
	}}}
	wr := callShare(t, h, w).(*kmsg.WriteShareGroupStateResponse)
	if wr.Topics[0].Partitions[0].ErrorCode != 0 || wr.Topics[0].Partitions[1].ErrorCode != kerr.InvalidRequest.Code || wr.Topics[0].Partitions[1].ErrorMessage == nil {
		t.Fatalf("WriteShareGroupState: %+v", wr)
	}

	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = "g"
	r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: a, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: 0}}}}
	rr := callShare(t, h, r).(*kmsg.ReadShareGroupStateResponse)
	p := rr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.StateEpoch != 1 || p.StartOffset != 5 || len(p.StateBatches) != 1 || p.StateBatches[0].LastOffset != 9 {
		t.Fatalf("ReadShareGroupState: %+v", rr)
	}

	s := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	s.Version = 1
	s.GroupID = "g"
	s.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: a, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}, {Partition: 7}}}}
	sr := callShare(t, h, s).(*kmsg.ReadShareGroupStateSummaryResponse)
	if q := sr.Topics[0].Partitions; q[0].StartOffset != 5 || q[0].DeliveryCompleteCount != -1 || q[1].StartOffset != -1 || q[1].ErrorCode != 0 {
		t.Fatalf("ReadShareGroupStateSummary (v0 write: no count): %+v", sr)
	}

	s.GroupID = ""
	if sr := callShare(t, h, s).(*kmsg.ReadShareGroupStateSummaryResponse); len(sr.Topics) != 0 {
		t.Fatalf("no group id: %+v, want no results", sr)
	}
}

// Without a share coordinator, or refused, every partition of the request
// gets the error (errorResponse knows the five requests).
func TestShareStateErrorResponses(t *testing.T) {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = "g"
	req.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: [16]byte{1}, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	dr := errorResponse(req, errNoShareCoordinator).(*kmsg.DeleteShareGroupStateResponse)
	if len(dr.Topics[0].Partitions) != 2 || dr.Topics[0].Partitions[1].ErrorCode != kerr.CoordinatorNotAvailable.Code || dr.Topics[0].Partitions[1].Partition != 1 {
		t.Fatalf("error response %+v", dr)
	}
	for _, r := range []kmsg.Request{kmsg.NewPtrInitializeShareGroupStateRequest(), kmsg.NewPtrReadShareGroupStateRequest(),
		kmsg.NewPtrWriteShareGroupStateRequest(), kmsg.NewPtrReadShareGroupStateSummaryRequest()} {
		if errorResponse(r, kerr.ClusterAuthorizationFailed) == nil {
			t.Errorf("%s: no error response", kmsg.NameForKey(r.Key()))
		}
	}
}
