package kapi

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// call serves req at version through Handle, as the socket server does,
// and decodes the response (one without file regions).
func call(t *testing.T, h *Handler, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	req.SetVersion(version)
	got := make(chan *Response, 1)
	h.Handle(context.Background(), &Request{APIKey: req.Key(), APIVersion: version, CorrelationID: 7, Body: req.AppendTo(nil), Listener: "PLAINTEXT"},
		func(r *Response) { got <- r })
	var r *Response
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s v%d: no answer", kmsg.NameForKey(req.Key()), version)
	}
	if r.Close || r.NoResponse || len(r.Regions) > 0 {
		t.Fatalf("%s v%d: close %v (%s), no response %v, %d regions", kmsg.NameForKey(req.Key()), version, r.Close, r.CloseReason, r.NoResponse, len(r.Regions))
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	body := r.Buf[8:] // size, correlation id
	if resp.IsFlexible() {
		body = body[1:] // empty header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp
}

// registerOtherBroker registers broker id with a PLAINTEXT endpoint on
// port and rack, unfenced, keeping this node's broker epoch.
func registerOtherBroker(t *testing.T, h *Handler, id int32, port int32, rack string) {
	t.Helper()
	ch := h.cfg.Controller.(*localChannel)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID, req.Rack = id, "test-cluster", uuid.Random(), &rack
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "other-host", uint16(port)
	req.Listeners = append(req.Listeners, l)
	r, err := ch.Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	epoch := r.(*kmsg.BrokerRegistrationResponse).BrokerEpoch
	for {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, epoch, h.image().Offset
		r, err := ch.Send(ctx, hb)
		if err != nil {
			t.Fatal(err)
		}
		if !r.(*kmsg.BrokerHeartbeatResponse).IsFenced {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := h.cfg.Metadata.WaitFor(ctx, func(im *metadata.Image) bool { b := im.Brokers[id]; return b != nil && !b.Fenced }); err != nil {
		t.Fatal(err)
	}
}

func oneBatch(t *testing.T) []byte {
	t.Helper()
	b := log.NewBatchBuilder(0)
	b.Add(time.Now().UnixMilli(), nil, []byte("v"))
	out, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func produceReq(topic string, id [16]byte, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchReq(topic string, id [16]byte, currentLeaderEpoch int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	req.ReplicaState.ID = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, currentLeaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// A Produce (v10+) or Fetch (v16+) to a broker that does not lead the
// partition names the leader and its endpoint (KIP-951); older versions
// and other errors carry none.
func TestLeaderHints(t *testing.T) {
	h := newAdminHandler(t)
	registerOtherBroker(t, h, 2, 9093, "rack-2")
	elsewhere, err := h.createTopic("elsewhere", -1, -1, [][]int32{{2}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	here, err := h.createTopic("here", -1, -1, [][]int32{{1}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p := elsewhere.Partitions[0]
	if p.Leader != 2 {
		t.Fatalf("leader %d, want 2", p.Leader)
	}
	checkNode := func(what string, id, port int32, host string, rack *string) {
		t.Helper()
		if id != 2 || host != "other-host" || port != 9093 || rack == nil || *rack != "rack-2" {
			t.Fatalf("%s: node endpoint %d %s:%d rack %v, want 2 other-host:9093 rack-2", what, id, host, port, rack)
		}
	}

	for v := int16(3); v <= 13; v++ {
		resp := call(t, h, produceReq("elsewhere", elsewhere.ID, oneBatch(t)), v).(*kmsg.ProduceResponse)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("produce v%d: error %d", v, sp.ErrorCode)
		}
		if v < 10 {
			if len(resp.Brokers) != 0 || sp.CurrentLeader.LeaderID != -1 {
				t.Fatalf("produce v%d carries a hint: %+v %+v", v, sp.CurrentLeader, resp.Brokers)
			}
			continue
		}
		if sp.CurrentLeader.LeaderID != 2 || sp.CurrentLeader.LeaderEpoch != p.LeaderEpoch || len(resp.Brokers) != 1 {
			t.Fatalf("produce v%d: current leader %+v, brokers %+v", v, sp.CurrentLeader, resp.Brokers)
		}
		b := resp.Brokers[0]
		checkNode("produce", b.NodeID, b.Port, b.Host, b.Rack)
	}
	// Led here: no hint.
	if resp := call(t, h, produceReq("here", here.ID, oneBatch(t)), 11).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 || len(resp.Brokers) != 0 {
		t.Fatalf("produce here: %+v", resp)
	}

	for v := int16(4); v <= 18; v++ {
		resp := call(t, h, fetchReq("elsewhere", elsewhere.ID, -1), v).(*kmsg.FetchResponse)
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("fetch v%d: error %d", v, sp.ErrorCode)
		}
		if v < 16 {
			if len(resp.Brokers) != 0 || sp.CurrentLeader.LeaderID != -1 {
				t.Fatalf("fetch v%d carries a hint", v)
			}
			continue
		}
		if sp.CurrentLeader.LeaderID != 2 || sp.CurrentLeader.LeaderEpoch != p.LeaderEpoch || len(resp.Brokers) != 1 {
			t.Fatalf("fetch v%d: current leader %+v, brokers %+v", v, sp.CurrentLeader, resp.Brokers)
		}
		b := resp.Brokers[0]
		checkNode("fetch", b.NodeID, b.Port, b.Host, b.Rack)
	}
	// UNKNOWN_LEADER_EPOCH hints nothing (FENCED_LEADER_EPOCH does: see
	// the integration test, where a restart moves the epoch).
	ep := here.Partitions[0].LeaderEpoch
	resp := call(t, h, fetchReq("here", here.ID, ep+1), 16).(*kmsg.FetchResponse)
	if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != kerr.UnknownLeaderEpoch.Code || sp.CurrentLeader.LeaderID != -1 || len(resp.Brokers) != 0 {
		t.Fatalf("unknown-epoch fetch: %d %+v %+v", sp.ErrorCode, sp.CurrentLeader, resp.Brokers)
	}
}
