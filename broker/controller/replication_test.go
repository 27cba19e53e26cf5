package controller

import (
	"errors"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

// Replication on the controller: topics with several replicas, AlterPartition,
// elections among the ISR, unclean elections.

func newReplicatedController(t *testing.T) (*QuorumController, *fakeRaft, *clock) {
	t.Helper()
	return newTestControllerWith(t, func(cfg *Config) { cfg.MaxReplicationFactor = 3 })
}

func image(t *testing.T, c *QuorumController) *metadata.Image {
	t.Helper()
	im, err := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func partition(t *testing.T, c *QuorumController, topic string, p int32) metadata.Partition {
	t.Helper()
	tp, ok := image(t, c).Topic(topic)
	if !ok {
		t.Fatalf("no topic %s", topic)
	}
	return tp.Partitions[p]
}

// createAssigned creates a topic with a manual assignment and configs.
func createAssigned(t *testing.T, c *QuorumController, name string, assignment [][]int32, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for i, r := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cf := kmsg.NewCreateTopicsRequestTopicConfig()
		cf.Name, cf.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cf)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := c.CreateTopics(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0]
}

func heartbeat(t *testing.T, c *QuorumController, id int32, epoch int64, edit func(*kmsg.BrokerHeartbeatRequest)) *kmsg.BrokerHeartbeatResponse {
	t.Helper()
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, epoch, 1<<40
	if edit != nil {
		edit(hb)
	}
	resp, err := c.BrokerHeartbeat(ctx(t), hb)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// alterReq is one partition's AlterPartition at v3 (or older).
type alterReq struct {
	version      int16
	broker       int32
	brokerEpoch  int64
	topic        string
	partition    int32
	leaderEpoch  int32
	partEpoch    int32
	isr          []int32
	epochs       map[int32]int64 // v3 broker epochs; missing: -1
	recoveryStat int8
}

func alterPartition(t *testing.T, c *QuorumController, a alterReq) (kmsg.AlterPartitionResponseTopicPartition, error) {
	t.Helper()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = a.version
	req.BrokerID, req.BrokerEpoch = a.broker, a.brokerEpoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = a.topic
	if tp, ok := image(t, c).Topic(a.topic); ok {
		rt.TopicID = tp.ID
	}
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.LeaderRecoveryState = a.partition, a.leaderEpoch, a.partEpoch, a.recoveryStat
	if a.version >= 3 {
		for _, id := range a.isr {
			m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			m.BrokerID, m.BrokerEpoch = id, -1
			if e, ok := a.epochs[id]; ok {
				m.BrokerEpoch = e
			}
			rp.NewEpochISR = append(rp.NewEpochISR, m)
		}
	} else {
		rp.NewISR = a.isr
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.AlterPartition(ctx(t), req)
	if err != nil {
		return kmsg.AlterPartitionResponseTopicPartition{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response shape: %+v", resp)
	}
	if a.version >= 2 && resp.Topics[0].TopidID != rt.TopicID || a.version < 2 && resp.Topics[0].Topic != a.topic {
		t.Fatalf("response names another topic: %+v", resp.Topics[0])
	}
	return resp.Topics[0].Partitions[0], nil
}

func logLength(f *fakeRaft) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.batches)
}

func TestCreateReplicatedTopics(t *testing.T) {
	c, _, _ := newReplicatedController(t)
	racks := []string{"a", "b", "c"}
	for id := int32(1); id <= 6; id++ {
		register(t, c, id, &racks[(id-1)%3])
	}
	st := createTopic(t, c, "r3", 12, 3)
	if st.ErrorCode != 0 || st.ReplicationFactor != 3 {
		t.Fatalf("create rf 3: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	im := image(t, c)
	tp, _ := im.Topic("r3")
	leaders := map[int32]int{}
	for _, p := range tp.Partitions {
		if len(p.Replicas) != 3 || !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Fatalf("partition %d: %+v", p.Index, p)
		}
		seen := map[string]bool{}
		for _, r := range p.Replicas {
			seen[*im.Brokers[r].Rack] = true
		}
		if len(seen) != 3 {
			t.Fatalf("partition %d replicas %v not on three racks", p.Index, p.Replicas)
		}
		leaders[p.Leader]++
	}
	for id := int32(1); id <= 6; id++ {
		if leaders[id] == 0 {
			t.Fatalf("leaders not spread: %v", leaders)
		}
	}
	if st := createTopic(t, c, "r4", 1, 4); st.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("rf 4 over a cap of 3: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if st := createAssigned(t, c, "misr", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"}); st.ErrorCode != 0 {
		t.Fatalf("min.insync.replicas: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	if st := createAssigned(t, c, "misr0", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "0"}); st.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("min.insync.replicas 0: %v", kerr.ErrorForCode(st.ErrorCode))
	}
}

// A fenced broker may hold a replica of a new partition but is not in its
// ISR (Kafka's buildPartitionRegistration); a partition of fenced brokers
// only is refused.
func TestCreateWithFencedReplicas(t *testing.T) {
	c, _, _ := newReplicatedController(t)
	register(t, c, 1, nil)
	register(t, c, 2, nil)
	e3 := register(t, c, 3, nil)
	heartbeat(t, c, 3, e3, func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })
	if st := createAssigned(t, c, "t", [][]int32{{3, 1, 2}}, nil); st.ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if p := partition(t, c, "t", 0); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("partition with a fenced replica: %+v", p)
	}
	if st := createAssigned(t, c, "f", [][]int32{{3}}, nil); st.ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("only fenced replicas: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if st := createTopic(t, c, "p", 3, 3); st.ErrorCode != 0 {
		t.Fatalf("placed: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	tp, _ := image(t, c).Topic("p")
	for _, p := range tp.Partitions {
		if p.Leader == 3 || slices.Contains(p.ISR, 3) || !slices.Contains(p.Replicas, 3) {
			t.Fatalf("placed partition %d: %+v", p.Index, p)
		}
	}
}

func TestAlterPartition(t *testing.T) {
	c, f, _ := newReplicatedController(t)
	e := map[int32]int64{}
	for id := int32(1); id <= 4; id++ {
		e[id] = register(t, c, id, nil)
	}
	if st := createAssigned(t, c, "t", [][]int32{{1, 2, 3}}, nil); st.ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	base := alterReq{version: 3, broker: 1, brokerEpoch: e[1], topic: "t", epochs: e}
	with := func(edit func(*alterReq)) alterReq { a := base; edit(&a); return a }
	expect := func(name string, a alterReq, code int16) {
		t.Helper()
		got, err := alterPartition(t, c, a)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.ErrorCode != code {
			t.Fatalf("%s: got %v, want %v", name, kerr.ErrorForCode(got.ErrorCode), kerr.ErrorForCode(code))
		}
	}

	// Shrink: the partition epoch moves, the leader epoch does not.
	got, err := alterPartition(t, c, with(func(a *alterReq) { a.isr = []int32{1, 2} }))
	if err != nil || got.ErrorCode != 0 {
		t.Fatalf("shrink: %+v %v", got, err)
	}
	if got.LeaderID != 1 || got.LeaderEpoch != 0 || got.PartitionEpoch != 1 || !slices.Equal(got.ISR, []int32{1, 2}) || got.LeaderRecoveryState != 0 {
		t.Fatalf("shrink answered %+v", got)
	}
	if p := partition(t, c, "t", 0); !slices.Equal(p.ISR, []int32{1, 2}) || p.PartitionEpoch != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("image after shrink: %+v", p)
	}
	base.partEpoch = 1

	// The same ISR again: the current state, nothing written.
	n := logLength(f)
	got, err = alterPartition(t, c, with(func(a *alterReq) { a.isr = []int32{1, 2} }))
	if err != nil || got.ErrorCode != 0 || got.PartitionEpoch != 1 || !slices.Equal(got.ISR, []int32{1, 2}) {
		t.Fatalf("unchanged ISR: %+v %v", got, err)
	}
	if logLength(f) != n {
		t.Fatal("an unchanged ISR was written")
	}

	expand := []int32{1, 2, 3}
	expect("old partition epoch", with(func(a *alterReq) { a.isr, a.partEpoch = expand, 0 }), kerr.InvalidUpdateVersion.Code)
	expect("newer partition epoch", with(func(a *alterReq) { a.isr, a.partEpoch = expand, 2 }), kerr.NotController.Code)
	expect("old leader epoch", with(func(a *alterReq) { a.isr, a.leaderEpoch = expand, -1 }), kerr.FencedLeaderEpoch.Code)
	expect("newer leader epoch", with(func(a *alterReq) { a.isr, a.leaderEpoch = expand, 1 }), kerr.NotController.Code)
	expect("not the leader", with(func(a *alterReq) { a.isr, a.broker, a.brokerEpoch = expand, 2, e[2] }), kerr.InvalidRequest.Code)
	expect("not a replica", with(func(a *alterReq) { a.isr = []int32{1, 2, 4} }), kerr.InvalidRequest.Code)
	expect("duplicate", with(func(a *alterReq) { a.isr = []int32{1, 2, 2} }), kerr.InvalidRequest.Code)
	expect("without the leader", with(func(a *alterReq) { a.isr = []int32{2, 3} }), kerr.InvalidRequest.Code)
	expect("recovering with two", with(func(a *alterReq) { a.isr, a.recoveryStat = []int32{1, 2}, 1 }), kerr.InvalidRequest.Code)
	expect("recovered to recovering", with(func(a *alterReq) { a.isr, a.recoveryStat = []int32{1}, 1 }), kerr.InvalidRequest.Code)
	expect("v3 broker epoch mismatch", with(func(a *alterReq) {
		a.isr, a.epochs = expand, map[int32]int64{1: e[1], 2: e[2], 3: e[3] + 1}
	}), kerr.IneligibleReplica.Code)
	expect("unknown partition", with(func(a *alterReq) { a.isr, a.partition = expand, 7 }), kerr.UnknownTopicOrPartition.Code)
	expect("unknown topic id", with(func(a *alterReq) { a.isr, a.topic = expand, "nope" }), kerr.UnknownTopicID.Code)
	expect("unknown topic name", with(func(a *alterReq) { a.version, a.isr, a.topic = 1, expand, "nope" }), kerr.UnknownTopicOrPartition.Code)
	if _, err := alterPartition(t, c, with(func(a *alterReq) { a.isr, a.brokerEpoch = expand, e[1]-1 })); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale broker epoch: %v", err)
	}
	if _, err := alterPartition(t, c, with(func(a *alterReq) { a.isr, a.broker = expand, 9 })); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("unregistered broker: %v", err)
	}

	// Expand, epochs checked (v3) and unchecked (-1, and v2 by topic id).
	got, err = alterPartition(t, c, with(func(a *alterReq) { a.isr = expand }))
	if err != nil || got.ErrorCode != 0 || got.PartitionEpoch != 2 || got.LeaderEpoch != 0 || !slices.Equal(got.ISR, expand) {
		t.Fatalf("expand: %+v %v", got, err)
	}
	base.partEpoch = 2
	got, err = alterPartition(t, c, with(func(a *alterReq) { a.version, a.isr = 2, []int32{1, 3} }))
	if err != nil || got.ErrorCode != 0 || got.PartitionEpoch != 3 {
		t.Fatalf("v2 shrink: %+v %v", got, err)
	}
	base.partEpoch = 3

	// A fenced broker, or one shutting down, may not join the ISR.
	heartbeat(t, c, 2, e[2], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })
	expect("fenced member", with(func(a *alterReq) { a.isr = []int32{1, 3, 2} }), kerr.IneligibleReplica.Code)
	expect("fenced member, v1", with(func(a *alterReq) { a.version, a.isr = 1, []int32{1, 3, 2} }), kerr.OperationNotAttempted.Code)
	heartbeat(t, c, 3, e[3], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantShutdown = true })
	p := partition(t, c, "t", 0)
	if !slices.Equal(p.ISR, []int32{1}) || p.Leader != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("after 3 shut down: %+v", p)
	}
	base.partEpoch = p.PartitionEpoch
	expect("member shutting down", with(func(a *alterReq) { a.isr = []int32{1, 3} }), kerr.IneligibleReplica.Code)
}

// waitFor polls the controller's image until cond holds.
func waitFor(t *testing.T, c *QuorumController, what string, cond func(im *metadata.Image) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(image(t, c)) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A broker whose session expires leaves every ISR where others remain, and
// what it led moves to the next in-sync replica with a new leader epoch;
// where the ISR keeps it, its leadership moves nowhere.
// setFeature finalizes a feature level, as UpdateFeatures would.
func setFeature(t *testing.T, c *QuorumController, name string, level int16) {
	t.Helper()
	_, _, err := write(ctx(t), c, "setFeature", func(*metadata.Image) (writeResult[struct{}], error) {
		return writeResult[struct{}]{records: []metadata.Record{&metadata.FeatureLevelRecord{Name: name, FeatureLevel: level}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Without eligible leader replicas (eligible.leader.replicas.version 0).
func TestFencingMovesLeadershipToISRMember(t *testing.T) {
	c, f, clk := newReplicatedController(t)
	setFeature(t, c, metadata.EligibleLeaderReplicasFeature, 0)
	e := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		e[id] = register(t, c, id, nil)
	}
	createAssigned(t, c, "t", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, nil)
	createAssigned(t, c, "solo", [][]int32{{1, 2}}, nil)
	// solo's ISR is just broker 1.
	if got, err := alterPartition(t, c, alterReq{version: 3, broker: 1, brokerEpoch: e[1], topic: "solo", isr: []int32{1}}); err != nil || got.ErrorCode != 0 {
		t.Fatalf("shrink: %+v %v", got, err)
	}
	if v := c.metrics.imbalanced.Load(); v != 0 {
		t.Fatalf("imbalance before: %d", v)
	}
	clk.add(5 * time.Second)
	heartbeat(t, c, 2, e[2], nil)
	heartbeat(t, c, 3, e[3], nil)
	clk.add(5 * time.Second)
	waitFor(t, c, "broker 1 fenced", func(im *metadata.Image) bool { return im.Brokers[1].Fenced })

	want := []struct {
		leader, leaderEpoch, partEpoch int32
		isr                            []int32
	}{
		{2, 1, 1, []int32{2, 3}},
		{2, 0, 1, []int32{2, 3}},
		{3, 0, 1, []int32{3, 2}},
	}
	tp, _ := image(t, c).Topic("t")
	for i, w := range want {
		p := tp.Partitions[i]
		if p.Leader != w.leader || p.LeaderEpoch != w.leaderEpoch || p.PartitionEpoch != w.partEpoch || !slices.Equal(p.ISR, w.isr) {
			t.Fatalf("partition %d: %+v, want %+v", i, p, w)
		}
	}
	if p := partition(t, c, "solo", 0); p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("solo after fencing its only ISR member: %+v", p)
	}
	waitFor(t, c, "gauges", func(*metadata.Image) bool { return c.metrics.offline.Load() == 1 && c.metrics.imbalanced.Load() == 2 })

	// Broker 1 is back: it leads what has no leader and has it in the
	// ISR; the others keep their leaders (it must catch up and be
	// added by AlterPartition first).
	heartbeat(t, c, 1, e[1], nil)
	if p := partition(t, c, "solo", 0); p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Fatalf("solo after unfencing: %+v", p)
	}
	if p := partition(t, c, "t", 0); p.Leader != 2 {
		t.Fatalf("t-0 after unfencing: %+v", p)
	}

	// Controlled shutdown of 2: t-0 and t-1 move to 3.
	heartbeat(t, c, 2, e[2], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantShutdown = true })
	tp, _ = image(t, c).Topic("t")
	for i := range 3 {
		if p := tp.Partitions[i]; p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
			t.Fatalf("partition %d after 2 shut down: %+v", i, p)
		}
	}

	// A new incarnation of 3 (an unclean restart, after which the
	// controller has not heard from the old one) leaves the ISR too; as
	// the last member it stays there, no one leads until it is unfenced,
	// and then it leads again.
	before := partition(t, c, "t", 0)
	f.elect(2, 1)
	waitActive(t, c)
	register(t, c, 3, nil)
	tp, _ = image(t, c).Topic("t")
	for i := range 3 {
		if p := tp.Partitions[i]; p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
			t.Fatalf("partition %d after 3 re-registered and unfenced: %+v", i, p)
		}
	}
	if p := tp.Partitions[0]; p.LeaderEpoch != before.LeaderEpoch+2 {
		t.Fatalf("t-0 leader epoch %d after a leaderless spell, was %d", p.LeaderEpoch, before.LeaderEpoch)
	}
}

// With unclean.leader.election.enable, a partition whose ISR has no live
// member is led by a live replica outside it (the ISR becomes it,
// RECOVERING) and the election is counted; without, it stays leaderless
// with its ISR. Enabling the config later elects at the next unfencing.
// Without eligible leader replicas (with them, see TestEligibleLeaderReplicas).
func TestUncleanLeaderElection(t *testing.T) {
	c, _, _ := newReplicatedController(t)
	setFeature(t, c, metadata.EligibleLeaderReplicasFeature, 0)
	e := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		e[id] = register(t, c, id, nil)
	}
	createAssigned(t, c, "u", [][]int32{{1, 2, 3}}, map[string]string{"unclean.leader.election.enable": "true"})
	createAssigned(t, c, "c", [][]int32{{1, 2, 3}}, nil)
	for _, topic := range []string{"u", "c"} {
		if got, err := alterPartition(t, c, alterReq{version: 3, broker: 1, brokerEpoch: e[1], topic: topic, isr: []int32{1}}); err != nil || got.ErrorCode != 0 {
			t.Fatalf("shrink %s: %+v %v", topic, got, err)
		}
	}
	heartbeat(t, c, 1, e[1], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })

	if p := partition(t, c, "u", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderRecoveryState != leaderRecovering || p.LeaderEpoch != 1 {
		t.Fatalf("unclean election: %+v", p)
	}
	if p := partition(t, c, "c", 0); p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, []int32{1}) || p.LeaderRecoveryState != leaderRecovered {
		t.Fatalf("no unclean election: %+v", p)
	}
	if n := uncleanCount(t, c); n != 1 {
		t.Fatalf("unclean elections counted: %v", n)
	}

	// The recovered leader says so; the ISR may then grow.
	p := partition(t, c, "u", 0)
	got, err := alterPartition(t, c, alterReq{version: 3, broker: 2, brokerEpoch: e[2], topic: "u", leaderEpoch: p.LeaderEpoch, partEpoch: p.PartitionEpoch, isr: []int32{2}, recoveryStat: leaderRecovered})
	if err != nil || got.ErrorCode != 0 || got.LeaderRecoveryState != leaderRecovered || got.LeaderEpoch != p.LeaderEpoch {
		t.Fatalf("recovered: %+v %v", got, err)
	}

	// Enable it for "c" (cluster-wide) and unfence broker 3 after fencing
	// it: the unfencing elects again every leaderless partition.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	cf := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cf.Name, cf.Value = "unclean.leader.election.enable", kmsg.StringPtr("true")
	r.Configs = append(r.Configs, cf)
	req.Resources = append(req.Resources, r)
	if resp, err := c.IncrementalAlterConfigs(ctx(t), req); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("enable unclean election: %+v %v", resp, err)
	}
	heartbeat(t, c, 3, e[3], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })
	heartbeat(t, c, 3, e[3], nil)
	if p := partition(t, c, "c", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderRecoveryState != leaderRecovering {
		t.Fatalf("unclean election on unfencing: %+v", p)
	}
	if n := uncleanCount(t, c); n != 2 {
		t.Fatalf("unclean elections counted: %v", n)
	}
}

func uncleanCount(t *testing.T, c *QuorumController) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.metrics.unclean.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
