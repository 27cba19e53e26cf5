package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// reregister registers a new incarnation of a broker, naming
// previousEpoch as that of its last clean shutdown (-1: unclean), and
// heartbeats it once: it is unfenced.
func reregister(t *testing.T, c *QuorumController, id int32, previousEpoch int64) int64 {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = id, "cluster", uuid.Random()
	req.PreviousBrokerEpoch = previousEpoch
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+id)
	req.Listeners = append(req.Listeners, l)
	resp, err := c.RegisterBroker(ctx(t), req)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("register %d: %+v %v", id, resp, err)
	}
	return resp.BrokerEpoch
}

func fence(t *testing.T, c *QuorumController, id int32, epoch int64) {
	t.Helper()
	heartbeat(t, c, id, epoch, func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })
}

func samePartition(p metadata.Partition, leader int32, isr, elr, lastKnown []int32) bool {
	return p.Leader == leader && slices.Equal(p.ISR, isr) && slices.Equal(p.ELR, elr) && slices.Equal(p.LastKnownELR, lastKnown)
}

// KIP-966 on the controller: replicas that leave an ISR below
// min.insync.replicas stay eligible; an empty ISR elects from them; a
// clean restart keeps a broker eligible, an unclean one does not; with
// ISR and ELR empty the last leader is elected when it returns; an ISR
// back at min.insync.replicas clears the lists.
func TestEligibleLeaderReplicas(t *testing.T) {
	c, _, _ := newReplicatedController(t)
	if !image(t, c).ELREnabled() {
		t.Fatal("a new cluster has eligible.leader.replicas.version 1")
	}
	e := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		e[id] = register(t, c, id, nil)
	}
	createAssigned(t, c, "t", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	get := func() metadata.Partition { return partition(t, c, "t", 0) }

	// 3 falls out: the ISR is still at min.insync.replicas, no ELR.
	fence(t, c, 3, e[3])
	if p := get(); !samePartition(p, 1, []int32{1, 2}, nil, nil) {
		t.Fatalf("after fencing 3: %+v", p)
	}
	// 2 falls out: below min.insync.replicas, 2 is eligible.
	fence(t, c, 2, e[2])
	if p := get(); !samePartition(p, 1, []int32{1}, []int32{2}, nil) {
		t.Fatalf("after fencing 2: %+v", p)
	}
	// The leader goes: the ISR is empty, 1 and 2 are eligible, 1 was
	// the last leader; nobody alive to lead.
	fence(t, c, 1, e[1])
	if p := get(); !samePartition(p, metadata.NoLeader, []int32{}, []int32{1, 2}, []int32{1}) && !samePartition(p, metadata.NoLeader, nil, []int32{1, 2}, []int32{1}) {
		t.Fatalf("after fencing 1: %+v", p)
	}
	// 3 comes back: it was never eligible, so it does not lead
	// (without unclean election).
	heartbeat(t, c, 3, e[3], nil)
	if p := get(); p.Leader != metadata.NoLeader {
		t.Fatalf("3 leads out of the ELR: %+v", p)
	}
	// 2 restarts cleanly: still eligible, and elected from the ELR; it
	// is the ISR now and the last known leader is forgotten.
	e[2] = reregister(t, c, 2, e[2])
	if p := get(); !slices.Equal(p.ELR, []int32{1, 2}) {
		t.Fatalf("a clean restart left the ELR: %+v", p)
	}
	heartbeat(t, c, 2, e[2], nil)
	if p := get(); !samePartition(p, 2, []int32{2}, []int32{1}, nil) || p.LeaderRecoveryState != leaderRecovered {
		t.Fatalf("2 elected from the ELR: %+v", p)
	}
	if n := uncleanCount(t, c); n != 0 {
		t.Fatalf("an election from the ELR counted as unclean: %v", n)
	}
	// 1 restarts uncleanly: it leaves the ELR.
	e[1] = reregister(t, c, 1, -1)
	if p := get(); !samePartition(p, 2, []int32{2}, nil, nil) {
		t.Fatalf("after 1's unclean restart: %+v", p)
	}
	heartbeat(t, c, 1, e[1], nil)
	// 3 joins the ISR: back at min.insync.replicas, the ELR is clear.
	p := get()
	got, err := alterPartition(t, c, alterReq{version: 3, broker: 2, brokerEpoch: e[2], topic: "t", leaderEpoch: p.LeaderEpoch, partEpoch: p.PartitionEpoch, isr: []int32{2, 3}})
	if err != nil || got.ErrorCode != 0 {
		t.Fatalf("expand: %+v %v", got, err)
	}
	if p := get(); !samePartition(p, 2, []int32{2, 3}, nil, nil) {
		t.Fatalf("after the expansion: %+v", p)
	}

	// The last ISR member alone, unclean restart: ISR and ELR empty,
	// and the last leader leads again when it returns (counted as an
	// unclean election, RECOVERING, as Kafka's balanced recovery).
	createAssigned(t, c, "u", [][]int32{{1, 2}}, map[string]string{"min.insync.replicas": "2"})
	if got, err := alterPartition(t, c, alterReq{version: 3, broker: 1, brokerEpoch: e[1], topic: "u", isr: []int32{1}}); err != nil || got.ErrorCode != 0 {
		t.Fatalf("shrink u: %+v %v", got, err)
	}
	fence(t, c, 2, e[2])
	fence(t, c, 1, e[1])
	if p := partition(t, c, "u", 0); p.Leader != metadata.NoLeader || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1, 2}) || !slices.Equal(p.LastKnownELR, []int32{1}) {
		t.Fatalf("u with every replica fenced: %+v", p)
	}
	e[1] = reregister(t, c, 1, -1)
	e[2] = reregister(t, c, 2, -1)
	if p := partition(t, c, "u", 0); p.Leader != metadata.NoLeader || len(p.ISR) != 0 || len(p.ELR) != 0 || !slices.Equal(p.LastKnownELR, []int32{1}) {
		t.Fatalf("u after unclean restarts: %+v", p)
	}
	heartbeat(t, c, 2, e[2], nil)
	if p := partition(t, c, "u", 0); p.Leader != metadata.NoLeader {
		t.Fatalf("u led by a replica that was not its last leader: %+v", p)
	}
	heartbeat(t, c, 1, e[1], nil)
	if p := partition(t, c, "u", 0); !samePartition(p, 1, []int32{1}, nil, nil) || p.LeaderRecoveryState != leaderRecovering {
		t.Fatalf("u's last leader back: %+v", p)
	}
	if n := uncleanCount(t, c); n != 1 {
		t.Fatalf("unclean elections: %v", n)
	}
}

// The ELR fields survive the metadata log and snapshots: records
// round-trip, and an image rebuilt from its own records keeps them.
func TestELRRecordsRoundTrip(t *testing.T) {
	r := metadata.NewPartitionChangeRecord(uuid.Random(), 3)
	r.ISR, r.EligibleLeaderReplicas, r.LastKnownElr = []int32{}, []int32{1, 2}, []int32{1}
	got, err := metadata.Decode(metadata.Encode(r))
	if err != nil {
		t.Fatal(err)
	}
	g := got.(*metadata.PartitionChangeRecord)
	if g.ISR == nil || len(g.ISR) != 0 || !slices.Equal(g.EligibleLeaderReplicas, []int32{1, 2}) || !slices.Equal(g.LastKnownElr, []int32{1}) {
		t.Fatalf("change record: %+v", g)
	}
	pr := &metadata.PartitionRecord{PartitionID: 0, TopicID: uuid.Random(), Replicas: []int32{1, 2, 3}, ISR: []int32{3}, Leader: 3,
		EligibleLeaderReplicas: []int32{1}, LastKnownElr: []int32{2}}
	got, err = metadata.Decode(metadata.Encode(pr))
	if err != nil {
		t.Fatal(err)
	}
	gp := got.(*metadata.PartitionRecord)
	if !slices.Equal(gp.EligibleLeaderReplicas, []int32{1}) || !slices.Equal(gp.LastKnownElr, []int32{2}) || len(gp.Directories) != 3 {
		t.Fatalf("partition record: %+v", gp)
	}
	plain := &metadata.PartitionRecord{PartitionID: 0, TopicID: uuid.Random(), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}
	if b := metadata.Encode(plain); b[2] != 0 {
		t.Fatalf("a partition without ELR is written as v%d", b[2])
	}
}
