package kapi

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/controller/controllertest"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// serveController sends one request through the controller listener's
// Handle at version v and decodes the answer.
func serveController(t *testing.T, h *ControllerHandler, req kmsg.Request, v int16) kmsg.Response {
	t.Helper()
	req.SetVersion(v)
	var got *Response
	h.Handle(context.Background(), &Request{APIKey: req.Key(), APIVersion: v, CorrelationID: 7, Body: req.AppendTo(nil)}, func(r *Response) { got = r })
	if got == nil || got.Close {
		t.Fatalf("%s v%d not answered: %+v", kmsg.NameForKey(req.Key()), v, got)
	}
	body := got.Buf[8:]
	resp := req.ResponseKind()
	resp.SetVersion(v)
	if resp.IsFlexible() && req.Key() != apiVersionsKey {
		body = body[1:] // the response header's empty tagged fields
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T: %v", resp, err)
	}
	return resp
}

// AlterPartition is a controller API: the controller listener lists and
// serves it (v0-3), the broker's data plane neither lists nor serves it.
func TestAlterPartitionOnControllerListenerOnly(t *testing.T) {
	cfg, _, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	q := controllertest.New(cfg.NodeID)
	ctrl := controller.New(controller.Config{NodeID: cfg.NodeID, ClusterID: "test-cluster", Broker: cfg, Raft: q, Logger: logger, MaxReplicationFactor: 3})
	ctrl.Start()
	q.Register(ctrl)
	t.Cleanup(func() { ctrl.Close(); q.Close() })
	q.Elect(cfg.NodeID)
	h := NewControllerHandler(cfg.NodeID, logger, ctrl, nil)
	ch := &localChannel{h: h, leader: q.Leader}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.ClusterID, reg.IncarnationID = id, "test-cluster", uuid.Random()
		r, err := ch.Send(ctx, reg)
		if err != nil {
			t.Fatal(err)
		}
		epochs[id] = r.(*kmsg.BrokerRegistrationResponse).BrokerEpoch
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, epochs[id], 1<<40
		if r, err := ch.Send(ctx, hb); err != nil || r.(*kmsg.BrokerHeartbeatResponse).IsFenced {
			t.Fatalf("heartbeat %d: %v %v", id, r, err)
		}
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Replicas = []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	ct.Topics = append(ct.Topics, rt)
	cr, err := ch.Send(ctx, ct)
	if err != nil || cr.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %+v %v", cr, err)
	}
	topicID := cr.(*kmsg.CreateTopicsResponse).Topics[0].TopicID

	av := serveController(t, h, kmsg.NewPtrApiVersionsRequest(), 3).(*kmsg.ApiVersionsResponse)
	if !slices.ContainsFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
		return k.ApiKey == 56 && k.MinVersion == 0 && k.MaxVersion == 3
	}) {
		t.Fatalf("controller ApiVersions lacks AlterPartition 0-3: %+v", av.ApiKeys)
	}

	alter := func(brokerEpoch int64) *kmsg.AlterPartitionRequest {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.BrokerID, req.BrokerEpoch = 1, brokerEpoch
		at := kmsg.NewAlterPartitionRequestTopic()
		at.TopicID = topicID
		ap := kmsg.NewAlterPartitionRequestTopicPartition()
		for _, id := range []int32{1, 2} {
			m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			m.BrokerID, m.BrokerEpoch = id, epochs[id]
			ap.NewEpochISR = append(ap.NewEpochISR, m)
		}
		at.Partitions = append(at.Partitions, ap)
		req.Topics = append(req.Topics, at)
		return req
	}
	resp := serveController(t, h, alter(epochs[1]), 3).(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopidID != topicID {
		t.Fatalf("AlterPartition: %+v", resp)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != 0 || p.PartitionEpoch != 1 || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("AlterPartition partition: %+v", p)
	}
	resp = serveController(t, h, alter(epochs[1]+1), 3).(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != kerr.StaleBrokerEpoch.Code || len(resp.Topics) != 0 {
		t.Fatalf("stale broker epoch: %+v", resp)
	}

	// The broker's data plane: not listed, and refused.
	if _, _, ok := SupportedVersions(56); ok {
		t.Fatal("the broker listener lists AlterPartition")
	}
	bh := New(Config{NodeID: 1, Logger: logger, Broker: cfg, Metadata: metadata.NewLoader(nil), Controller: ch})
	defer bh.Close()
	done := make(chan *Response, 1)
	body := alter(epochs[1]).AppendTo(nil)
	bh.Handle(context.Background(), &Request{APIKey: 56, APIVersion: 3, CorrelationID: 1, Body: body, Listener: "PLAINTEXT"}, func(r *Response) { done <- r })
	if r := <-done; !r.Close {
		t.Fatal("the broker listener served AlterPartition")
	}
}
