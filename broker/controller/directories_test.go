package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
)

// registerWithDirs registers a broker with log dirs (BrokerRegistration
// v4) and unfences it.
func registerWithDirs(t *testing.T, c *QuorumController, id int32, dirs ...uuid.UUID) int64 {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID, req.ClusterID, req.IncarnationID = id, "cluster", uuid.Random()
	for _, d := range dirs {
		req.LogDirs = append(req.LogDirs, d)
	}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+id)
	req.Listeners = append(req.Listeners, l)
	resp, err := c.RegisterBroker(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	heartbeat(t, c, id, resp.BrokerEpoch, nil)
	return resp.BrokerEpoch
}

func assignDirs(t *testing.T, c *QuorumController, broker int32, epoch int64, topicID uuid.UUID, dir uuid.UUID, parts ...int32) *kmsg.AssignReplicasToDirsResponse {
	t.Helper()
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = broker, epoch
	d := kmsg.NewAssignReplicasToDirsRequestDirectory()
	d.ID = dir
	tp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
	tp.TopicID = topicID
	for _, p := range parts {
		rp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
		rp.Partition = p
		tp.Partitions = append(tp.Partitions, rp)
	}
	d.Topics = append(d.Topics, tp)
	req.Directories = append(req.Directories, d)
	resp, err := c.AssignReplicasToDirs(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A broker's replicas are assigned to its dirs; when a heartbeat names
// one of them offline, the broker leaves the ISR and leadership of its
// replicas there (and only there), the dir leaves its registration, and
// the replica may not lead again while the dir is offline.
func TestDirectoryOfflineMovesLeadership(t *testing.T) {
	c, _, _ := newReplicatedController(t)
	d1, d2 := uuid.Random(), uuid.Random()
	e1 := registerWithDirs(t, c, 1, d1, d2)
	registerWithDirs(t, c, 2, uuid.Random())
	registerWithDirs(t, c, 3, uuid.Random())
	cr := createAssigned(t, c, "t", [][]int32{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {2, 1, 3}}, nil)
	if cr.ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(cr.ErrorCode))
	}
	topicID := uuid.UUID(cr.TopicID)

	// Partitions 0 and 1 in d1, 2 and 3 in d2.
	for _, a := range []struct {
		dir   uuid.UUID
		parts []int32
	}{{d1, []int32{0, 1}}, {d2, []int32{2, 3, 4}}} {
		resp := assignDirs(t, c, 1, e1, topicID, a.dir, a.parts...)
		for _, p := range resp.Directories[0].Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("assign %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	tp, _ := image(t, c).Topic("t")
	for _, p := range tp.Partitions[:4] {
		want := d1
		if p.Index >= 2 {
			want = d2
		}
		if p.Directory(1) != want || p.Directory(2) != (uuid.UUID{}) || p.Leader != 1 {
			t.Fatalf("partition %d: dirs %v, leader %d", p.Index, p.Directories, p.Leader)
		}
	}
	// Assigning again changes nothing.
	before := image(t, c).Offset
	assignDirs(t, c, 1, e1, topicID, d1, 0)
	if after := image(t, c).Offset; after != before {
		t.Errorf("a repeated assignment wrote records (offset %d -> %d)", before, after)
	}

	heartbeat(t, c, 1, e1, func(hb *kmsg.BrokerHeartbeatRequest) {
		hb.Version = 1
		hb.OfflineLogDirs = [][16]byte{d2}
	})
	im := image(t, c)
	tp, _ = im.Topic("t")
	for _, p := range tp.Partitions[:4] {
		inD2 := p.Index >= 2
		if inD2 != (p.Leader != 1) || inD2 == slices.Contains(p.ISR, 1) {
			t.Errorf("partition %d: leader %d ISR %v (in the offline dir: %v)", p.Index, p.Leader, p.ISR, inD2)
		}
	}
	// A follower replica in the offline dir leaves the ISR; the leader
	// stays.
	if p := tp.Partitions[4]; p.Leader != 2 || slices.Contains(p.ISR, 1) || len(p.ISR) != 2 {
		t.Errorf("partition 4 (broker 1 a follower in the offline dir): leader %d ISR %v", p.Leader, p.ISR)
	}
	if b := im.Brokers[1]; !slices.Equal(b.LogDirs, []uuid.UUID{d1}) {
		t.Errorf("broker 1's online dirs: %v, want only %v", b.LogDirs, d1)
	}
	// The next heartbeat naming the same dir changes nothing.
	before = im.Offset
	heartbeat(t, c, 1, e1, func(hb *kmsg.BrokerHeartbeatRequest) {
		hb.Version = 1
		hb.OfflineLogDirs = [][16]byte{d2}
	})
	if after := image(t, c).Offset; after != before {
		t.Errorf("a repeated offline report wrote records (offset %d -> %d)", before, after)
	}
	// A preferred-leader election does not give partition 2 back to
	// broker 1: its replica is offline.
	er := kmsg.NewPtrElectLeadersRequest()
	er.Version = 2
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "t", []int32{2}
	er.Topics = append(er.Topics, et)
	if _, err := c.ElectLeaders(ctx(t), er); err != nil {
		t.Fatal(err)
	}
	tp, _ = image(t, c).Topic("t")
	if p := tp.Partitions[2]; p.Leader == 1 {
		t.Errorf("partition 2 led by broker 1 again, whose dir is offline")
	}
	// Its leader may not take it back into the ISR (KIP-841's
	// INELIGIBLE_REPLICA).
	p2 := tp.Partitions[2]
	im = image(t, c)
	rp, err := alterPartition(t, c, alterReq{version: 3, broker: p2.Leader, brokerEpoch: im.Brokers[p2.Leader].Epoch, topic: "t", partition: 2,
		leaderEpoch: p2.LeaderEpoch, partEpoch: p2.PartitionEpoch, isr: append(slices.Clone(p2.ISR), 1)})
	if err != nil || rp.ErrorCode != kerr.IneligibleReplica.Code {
		t.Errorf("ISR expansion to the offline replica: %v %v", err, kerr.ErrorForCode(rp.ErrorCode))
	}
	// An assignment into the offline dir takes that replica out too.
	assignDirs(t, c, 1, e1, topicID, d2, 0)
	tp, _ = image(t, c).Topic("t")
	if p := tp.Partitions[0]; p.Leader == 1 || slices.Contains(p.ISR, 1) || p.Directory(1) != d2 {
		t.Errorf("partition 0 moved into the offline dir: leader %d ISR %v dir %v", p.Index, p.ISR, p.Directory(1))
	}
}

// AssignReplicasToDirs refuses a stale broker epoch whole, and unknown
// topics, partitions and non-replicas per partition.
func TestAssignReplicasToDirsErrors(t *testing.T) {
	c, _, _ := newTestController(t)
	d := uuid.Random()
	e1 := registerWithDirs(t, c, 1, d)
	registerWithDirs(t, c, 2, uuid.Random())
	ct := createTopic(t, c, "one", 1, 1)
	topicID := uuid.UUID(ct.TopicID)
	tp, _ := image(t, c).Topic("one")
	owner := tp.Partitions[0].Replicas[0]
	other := int32(3) - owner

	if _, err := c.AssignReplicasToDirs(ctx(t), &kmsg.AssignReplicasToDirsRequest{BrokerID: 1, BrokerEpoch: e1 + 100}); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Errorf("stale epoch: %v", err)
	}
	if _, err := c.AssignReplicasToDirs(ctx(t), &kmsg.AssignReplicasToDirsRequest{BrokerID: 9, BrokerEpoch: 1}); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Errorf("unknown broker: %v", err)
	}
	epochOf := func(b int32) int64 { return image(t, c).Brokers[b].Epoch }
	check := func(resp *kmsg.AssignReplicasToDirsResponse, want ...*kerr.Error) {
		t.Helper()
		ps := resp.Directories[0].Topics[0].Partitions
		for i, w := range want {
			if got := kerr.ErrorForCode(ps[i].ErrorCode); !(w == nil && got == nil) && (w == nil || !errors.Is(got, w)) {
				t.Errorf("partition %d: %v, want %v", ps[i].Partition, got, w)
			}
		}
	}
	check(assignDirs(t, c, owner, epochOf(owner), uuid.Random(), d, 0), kerr.UnknownTopicID)
	check(assignDirs(t, c, owner, epochOf(owner), topicID, d, 5, -1), kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition)
	check(assignDirs(t, c, other, epochOf(other), topicID, d, 0), kerr.NotLeaderForPartition)
	check(assignDirs(t, c, owner, epochOf(owner), topicID, d, 0, 0), nil, kerr.InvalidRequest)
}
