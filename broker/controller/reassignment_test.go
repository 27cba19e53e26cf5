package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func reassign(t *testing.T, c *QuorumController, topic string, partition int32, replicas []int32, allowRF bool) kmsg.AlterPartitionAssignmentsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = 1, allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = partition, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.AlterPartitionReassignments(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// Reassignment on the controller, as Kafka's: the target replicas join
// first (replicas = target + removing, adding and removing set); the
// leader's AlterPartition naming them all in the ISR completes it (the
// removed leader is replaced, NEW_LEADER_ELECTED, the leader epoch
// moves); a cancel reverts to the original replicas; a reordering
// completes at once; bad targets are refused with Kafka's codes.
func TestPartitionReassignment(t *testing.T) {
	c, _, _ := newReplicatedController(t)
	c.cfg.MaxReplicationFactor = 0
	e := map[int32]int64{}
	for id := int32(1); id <= 4; id++ {
		e[id] = register(t, c, id, nil)
	}
	createAssigned(t, c, "r", [][]int32{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, nil)

	if got := reassign(t, c, "r", 0, []int32{2, 3, 4}, true); got.ErrorCode != 0 {
		t.Fatalf("reassign: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	p := partition(t, c, "r", 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 4, 1}) || !slices.Equal(p.AddingReplicas, []int32{4}) || !slices.Equal(p.RemovingReplicas, []int32{1}) ||
		p.Leader != 1 || p.LeaderEpoch != 0 || !slices.Equal(p.ISR, []int32{1, 2, 3}) {
		t.Fatalf("reassigning: %+v", p)
	}
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lr, err := c.ListPartitionReassignments(ctx(t), list)
	if err != nil || len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 || !slices.Equal(lr.Topics[0].Partitions[0].AddingReplicas, []int32{4}) {
		t.Fatalf("list: %+v %v", lr, err)
	}

	// Broker 4 caught up: the leader adds it; that completes the move,
	// and leadership leaves broker 1.
	got, err := alterPartition(t, c, alterReq{version: 3, broker: 1, brokerEpoch: e[1], topic: "r", leaderEpoch: p.LeaderEpoch, partEpoch: p.PartitionEpoch, isr: []int32{1, 2, 3, 4}})
	if err != nil || got.ErrorCode != kerr.NewLeaderElected.Code {
		t.Fatalf("completing AlterPartition: %+v %v", got, err)
	}
	p = partition(t, c, "r", 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 4}) || p.Reassigning() || p.Leader != 2 || p.LeaderEpoch != 1 || !slices.Equal(p.ISR, []int32{2, 3, 4}) {
		t.Fatalf("completed: %+v", p)
	}
	if lr, _ := c.ListPartitionReassignments(ctx(t), list); len(lr.Topics) != 0 {
		t.Fatalf("still listed: %+v", lr)
	}

	// Cancelled: back to the original replicas.
	if got := reassign(t, c, "r", 1, []int32{1, 2, 4}, true); got.ErrorCode != 0 {
		t.Fatalf("reassign 1: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if got := reassign(t, c, "r", 1, nil, true); got.ErrorCode != 0 {
		t.Fatalf("cancel: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if p := partition(t, c, "r", 1); !slices.Equal(p.Replicas, []int32{1, 2, 3}) || p.Reassigning() || p.Leader != 1 {
		t.Fatalf("cancelled: %+v", p)
	}

	// A reordering completes at once; the leader, still in the ISR, stays.
	if got := reassign(t, c, "r", 2, []int32{3, 2, 1}, true); got.ErrorCode != 0 {
		t.Fatalf("reorder: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if p := partition(t, c, "r", 2); !slices.Equal(p.Replicas, []int32{3, 2, 1}) || p.Reassigning() || p.Leader != 1 {
		t.Fatalf("reordered: %+v", p)
	}

	for _, bad := range []struct {
		name     string
		topic    string
		part     int32
		replicas []int32
		allowRF  bool
		want     *kerr.Error
	}{
		{"cancel with none in progress", "r", 2, nil, true, kerr.NoReassignmentInProgress},
		{"unregistered broker", "r", 2, []int32{1, 2, 9}, true, kerr.InvalidReplicaAssignment},
		{"broker twice", "r", 2, []int32{1, 2, 2}, true, kerr.InvalidReplicaAssignment},
		{"empty", "r", 2, []int32{}, true, kerr.InvalidReplicaAssignment},
		{"replication factor change refused", "r", 2, []int32{1, 2}, false, kerr.InvalidReplicationFactor},
		{"unknown topic", "nope", 0, []int32{1}, true, kerr.UnknownTopicOrPartition},
		{"unknown partition", "r", 7, []int32{1}, true, kerr.UnknownTopicOrPartition},
	} {
		if got := reassign(t, c, bad.topic, bad.part, bad.replicas, bad.allowRF); got.ErrorCode != bad.want.Code {
			t.Errorf("%s: %v, want %v", bad.name, kerr.ErrorForCode(got.ErrorCode), bad.want)
		}
	}
}

// Retiring a broker: UnregisterBroker removes its registration, and it
// leaves every ISR first (another replica leads what it led); an unknown
// broker is BROKER_ID_NOT_REGISTERED.
func TestUnregisterBroker(t *testing.T) {
	c, _, _ := newReplicatedController(t)
	for id := int32(1); id <= 3; id++ {
		register(t, c, id, nil)
	}
	createAssigned(t, c, "u", [][]int32{{3, 1, 2}}, nil)
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 3
	if _, err := c.UnregisterBroker(ctx(t), req); err != nil {
		t.Fatal(err)
	}
	im := image(t, c)
	if im.Brokers[3] != nil {
		t.Fatalf("broker 3 still registered: %+v", im.Brokers[3])
	}
	if p := partition(t, c, "u", 0); p.Leader == 3 || slices.Contains(p.ISR, 3) {
		t.Fatalf("after unregistering 3: %+v", p)
	}
	req.BrokerID = 9
	if _, err := c.UnregisterBroker(ctx(t), req); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unknown broker: %v", err)
	}
}
