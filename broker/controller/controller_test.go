package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// fakeRaft is a one-node log that commits every append at once, on its own
// goroutine, as the quorum's listener callbacks arrive.
type fakeRaft struct {
	mu      sync.Mutex
	leader  bool
	epoch   int32
	next    int64
	batches []Batch
	c       *QuorumController
	hold    bool // keep appends uncommitted
	held    []Batch
	heard   map[int32]time.Time // LastHeard
}

func (f *fakeRaft) LastHeard(id int32) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.heard[id]
	return t, ok
}

var errNotLeader = errors.New("not the leader")

func (f *fakeRaft) ScheduleAppend(epoch int32, recs [][]byte) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.leader || epoch != f.epoch {
		return 0, errNotLeader
	}
	b := Batch{BaseOffset: f.next, LastOffset: f.next + int64(len(recs)) - 1, Epoch: epoch, Records: recs}
	f.next += int64(len(recs))
	f.batches = append(f.batches, b)
	if f.hold {
		f.held = append(f.held, b)
	} else {
		f.c.HandleCommit(b)
	}
	return b.LastOffset, nil
}

func (f *fakeRaft) release() {
	f.mu.Lock()
	held := f.held
	f.held, f.hold = nil, false
	f.mu.Unlock()
	for _, b := range held {
		f.c.HandleCommit(b)
	}
}

func (f *fakeRaft) elect(epoch int32, leader int32) {
	f.mu.Lock()
	f.leader, f.epoch = leader == 1, epoch
	f.mu.Unlock()
	f.c.HandleLeaderChange(leader, epoch)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestController(t *testing.T) (*QuorumController, *fakeRaft, *clock) {
	t.Helper()
	return newTestControllerWith(t, nil)
}

// newTestControllerWith is newTestController with the config changed by
// edit before the controller starts.
func newTestControllerWith(t *testing.T, edit func(*Config)) (*QuorumController, *fakeRaft, *clock) {
	t.Helper()
	cfg, _, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRaft{}
	clk := &clock{t: time.UnixMilli(1_700_000_000_000)}
	c := New(Config{NodeID: 1, ClusterID: "cluster", Broker: cfg, Raft: f, Now: clk.now, SessionTimeout: 9 * time.Second, MaxReplicationFactor: 1, Registerer: prometheus.NewRegistry()})
	if edit != nil {
		edit(&c.cfg)
	}
	f.c = c
	c.Start()
	t.Cleanup(c.Close)
	f.elect(1, 1)
	waitActive(t, c)
	return c, f, clk
}

func waitActive(t *testing.T, c *QuorumController) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !c.IsActive() {
		if time.Now().After(deadline) {
			t.Fatal("controller never became active")
		}
		time.Sleep(time.Millisecond)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func register(t *testing.T, c *QuorumController, id int32, rack *string) int64 {
	t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID, req.Rack = id, "cluster", uuid.Random(), rack
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", uint16(9000+id)
	req.Listeners = append(req.Listeners, l)
	resp, err := c.RegisterBroker(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, resp.BrokerEpoch, 1<<40
	hr, err := c.BrokerHeartbeat(ctx(t), hb)
	if err != nil || hr.IsFenced || !hr.IsCaughtUp {
		t.Fatalf("heartbeat: %+v %v", hr, err)
	}
	return resp.BrokerEpoch
}

func createTopic(t *testing.T, c *QuorumController, name string, partitions int32, rf int16) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp, err := c.CreateTopics(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0]
}

func TestBootstrapAndTopicLifecycle(t *testing.T) {
	c, f, _ := newTestController(t)
	// The claim record and the bootstrap batch are in the log.
	read(ctx(t), c, "check", func(im *metadata.Image) (bool, error) {
		if im.Features[metadata.MetadataVersionFeature] != 25 {
			t.Errorf("metadata.version %d", im.Features[metadata.MetadataVersionFeature])
		}
		return true, nil
	})
	// No broker registered: nothing to place on.
	if st := createTopic(t, c, "early", 3, 1); st.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("create with no brokers: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	for id := int32(1); id <= 3; id++ {
		register(t, c, id, nil)
	}
	st := createTopic(t, c, "orders", 6, -1)
	if st.ErrorCode != 0 || st.NumPartitions != 6 || st.ReplicationFactor != 1 || uuid.UUID(st.TopicID).IsZero() {
		t.Fatalf("create: %+v %v", st, kerr.ErrorForCode(st.ErrorCode))
	}
	im, _ := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	tp, _ := im.Topic("orders")
	leaders := map[int32]int{}
	for _, p := range tp.Partitions {
		leaders[p.Leader]++
	}
	if len(leaders) != 3 || leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
		t.Fatalf("leaders not striped over brokers: %v", leaders)
	}
	if st := createTopic(t, c, "orders", 1, 1); st.ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("duplicate: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if st := createTopic(t, c, "orders.x", 1, 3); st.ErrorCode != kerr.InvalidReplicationFactor.Code || st.ErrorMessage == nil {
		t.Fatalf("rf 3: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if st := createTopic(t, c, "bad name", 1, 1); st.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("bad name: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	// Every record written replays on an empty image to the same topics
	// (what every broker's loader does).
	d := metadata.NewDelta(metadata.Empty)
	f.mu.Lock()
	for _, b := range f.batches {
		for _, raw := range b.Records {
			r, err := metadata.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.mu.Unlock()
	if tp2, ok := d.Apply().Topic("orders"); !ok || len(tp2.Partitions) != 6 {
		t.Fatal("the log does not replay to the controller's state")
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	dt := kmsg.NewDeleteTopicsRequestTopic()
	name := "orders"
	dt.Topic = &name
	del.Topics = append(del.Topics, dt)
	dresp, err := c.DeleteTopics(ctx(t), del)
	if err != nil || dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v %v", dresp, err)
	}
	im, _ = read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	if _, ok := im.Topic("orders"); ok {
		t.Fatal("topic still there after delete")
	}
}

func TestFencingMovesLeadershipAndUnfenceRestoresIt(t *testing.T) {
	c, _, clk := newTestController(t)
	register(t, c, 1, nil)
	e2 := register(t, c, 2, nil)
	createTopic(t, c, "t", 4, 1)
	// Broker 1 keeps heartbeating, broker 2 goes silent.
	clk.add(5 * time.Second)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.CurrentMetadataOffset = 1, 1<<40
	hb.BrokerEpoch, _ = read(ctx(t), c, "epoch", func(im *metadata.Image) (int64, error) { return im.Brokers[1].Epoch, nil })
	if _, err := c.BrokerHeartbeat(ctx(t), hb); err != nil {
		t.Fatal(err)
	}
	clk.add(5 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		im, _ := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
		tp, _ := im.Topic("t")
		offline := 0
		for _, p := range tp.Partitions {
			if p.Replicas[0] == 2 && p.Leader == metadata.NoLeader && p.LeaderEpoch == 1 {
				offline++
			}
		}
		if im.Brokers[2].Fenced && offline == 2 && !im.Brokers[1].Fenced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 2 not fenced with its partitions offline: fenced=%v offline=%d", im.Brokers[2].Fenced, offline)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Broker 2 comes back (same incarnation, caught up): unfenced, and
	// its partitions get their leader back with a new epoch.
	hb2 := kmsg.NewPtrBrokerHeartbeatRequest()
	hb2.BrokerID, hb2.BrokerEpoch, hb2.CurrentMetadataOffset = 2, e2, 1<<40
	hr, err := c.BrokerHeartbeat(ctx(t), hb2)
	if err != nil || hr.IsFenced {
		t.Fatalf("heartbeat: %+v %v", hr, err)
	}
	im, _ := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	tp, _ := im.Topic("t")
	for _, p := range tp.Partitions {
		if p.Leader != p.Replicas[0] {
			t.Fatalf("partition %d leader %d, want %d", p.Index, p.Leader, p.Replicas[0])
		}
		if p.Replicas[0] == 2 && p.LeaderEpoch != 2 {
			t.Fatalf("partition %d leader epoch %d, want 2", p.Index, p.LeaderEpoch)
		}
	}
}

func TestResignFailsPendingWritesAndStandbyAnswersNotController(t *testing.T) {
	c, f, _ := newTestController(t)
	register(t, c, 1, nil)
	f.mu.Lock()
	f.hold = true
	f.mu.Unlock()
	errc := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "x", 1, 1
		req.Topics = append(req.Topics, rt)
		_, err := c.CreateTopics(ctx(t), req)
		errc <- err
	}()
	// Wait until the write is in the log, uncommitted.
	for {
		f.mu.Lock()
		n := len(f.held)
		f.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f.elect(2, 2)
	if err := <-errc; !IsNotController(err) {
		t.Fatalf("pending write after resignation: %v", err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	if _, err := c.CreateTopics(ctx(t), req); !IsNotController(err) {
		t.Fatalf("standby: %v", err)
	}
	// The held batch commits after all (the new leader kept it): the
	// standby's state has it.
	f.release()
	deadline := time.Now().Add(5 * time.Second)
	for {
		okc := make(chan bool, 1)
		c.queue.push(event{"peek", func() { _, ok := c.committed.Topic("x"); okc <- ok }})
		if <-okc {
			break
		}
		time.Sleep(2 * time.Millisecond)
		if time.Now().After(deadline) {
			t.Fatal("committed record not replayed on the standby")
		}
	}
}

func TestAllocateProducerIDs(t *testing.T) {
	c, _, _ := newTestController(t)
	e := register(t, c, 1, nil)
	var last int64 = -1
	for i := 0; i < 3; i++ {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = 1, e
		resp, err := c.AllocateProducerIDs(ctx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProducerIDStart <= last || resp.ProducerIDLen != ProducerIDBlockSize {
			t.Fatalf("block %d+%d after %d", resp.ProducerIDStart, resp.ProducerIDLen, last)
		}
		last = resp.ProducerIDStart
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = 1, e+100
	if _, err := c.AllocateProducerIDs(ctx(t), req); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
}

// A controlled shutdown moves the broker's leaderships away and fences it;
// after a controller failover a new incarnation registers at once, since
// the new controller never heard from the old one.
func TestControlledShutdownAndReregistration(t *testing.T) {
	c, f, _ := newTestController(t)
	e1 := register(t, c, 1, nil)
	createTopic(t, c, "t", 2, 1)
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset, hb.WantShutdown = 1, e1, 1<<40, true
	hr, err := c.BrokerHeartbeat(ctx(t), hb)
	if err != nil || !hr.ShouldShutdown || !hr.IsFenced {
		t.Fatalf("controlled shutdown heartbeat: %+v %v", hr, err)
	}
	im, _ := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	tp, _ := im.Topic("t")
	for _, p := range tp.Partitions {
		if p.Leader != metadata.NoLeader {
			t.Fatalf("partition %d still led by %d after controlled shutdown", p.Index, p.Leader)
		}
	}
	if !im.Brokers[1].Fenced {
		t.Fatal("broker not fenced after controlled shutdown")
	}
	// The controller fails over (here: a new epoch on the same node) and
	// the broker comes back as a new incarnation.
	f.elect(2, 1)
	waitActive(t, c)
	e2 := register(t, c, 1, nil)
	if e2 <= e1 {
		t.Fatalf("new broker epoch %d not after %d", e2, e1)
	}
	im, _ = read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	tp, _ = im.Topic("t")
	for _, p := range tp.Partitions {
		if p.Leader != 1 || p.LeaderEpoch != 2 {
			t.Fatalf("partition %d: leader %d epoch %d, want 1 and 2", p.Index, p.Leader, p.LeaderEpoch)
		}
	}
}

func TestControllerGauges(t *testing.T) {
	c, _, _ := newTestController(t)
	register(t, c, 1, nil)
	createTopic(t, c, "a", 3, 1)
	createTopic(t, c, "b", 2, 1)
	m := c.metrics
	deadline := time.Now().Add(5 * time.Second)
	for m.partitions.Load() != 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if m.active.Load() != 1 || m.topics.Load() != 2 || m.partitions.Load() != 5 || m.offline.Load() != 0 || m.live.Load() != 1 || m.fenced.Load() != 0 {
		t.Fatalf("gauges: active %d topics %d partitions %d offline %d live %d fenced %d",
			m.active.Load(), m.topics.Load(), m.partitions.Load(), m.offline.Load(), m.live.Load(), m.fenced.Load())
	}
}

// No request can push a broker past max.broker.partitions.
func TestPartitionCap(t *testing.T) {
	c, _, _ := newTestController(t)
	c.cfg.Broker.SetDynamic("", map[string]string{"max.broker.partitions": "10"})
	register(t, c, 1, nil)
	if st := createTopic(t, c, "a", 6, 1); st.ErrorCode != 0 {
		t.Fatalf("6 of 10: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	st := createTopic(t, c, "b", 5, 1)
	if st.ErrorCode != kerr.PolicyViolation.Code || st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, "max.broker.partitions") {
		t.Fatalf("11 of 10: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "a", 11
	req.Topics = append(req.Topics, rt)
	resp, err := c.CreatePartitions(ctx(t), req)
	if err != nil || resp.Topics[0].ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("grow to 11: %+v %v", resp, err)
	}
	rt.Count = 10
	req.Topics[0] = rt
	if resp, err := c.CreatePartitions(ctx(t), req); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("grow to 10: %+v %v", resp, err)
	}
}

// A broker's heartbeat names its offline log dirs (KIP-858): the
// controller records them per broker, and since every partition has one
// replica it leaves leadership as it is (the broker answers
// KAFKA_STORAGE_ERROR for the partitions of the dir); a heartbeat without
// them clears them.
func TestHeartbeatOfflineLogDirs(t *testing.T) {
	c, _, _ := newTestController(t)
	e := register(t, c, 1, nil)
	createTopic(t, c, "t", 2, 1)
	dir := uuid.Random()
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.Version = 1
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, e, 1<<40
	hb.OfflineLogDirs = [][16]byte{dir}
	if hr, err := c.BrokerHeartbeat(ctx(t), hb); err != nil || hr.IsFenced {
		t.Fatalf("heartbeat: %+v %v", hr, err)
	}
	if got := c.OfflineLogDirs(ctx(t)); len(got[1]) != 1 || got[1][0] != dir {
		t.Fatalf("offline dirs: %v", got)
	}
	im, _ := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	tp, _ := im.Topic("t")
	for _, p := range tp.Partitions {
		if p.Leader != 1 {
			t.Fatalf("partition %d: leader %d", p.Index, p.Leader)
		}
	}
	hb.OfflineLogDirs = nil
	if _, err := c.BrokerHeartbeat(ctx(t), hb); err != nil {
		t.Fatal(err)
	}
	if got := c.OfflineLogDirs(ctx(t)); len(got) != 0 {
		t.Fatalf("offline dirs after recovery: %v", got)
	}
}

// A broker restarting uncleanly (a new incarnation registering while the
// image still has it unfenced) keeps the leadership and leader epoch of
// the partitions it alone hosts: there is no one to move them to, and
// each restart used to bump every such epoch twice (leaderless at the
// registration, led again at the unfencing).
func TestReregistrationKeepsSoleReplicaLeadership(t *testing.T) {
	c, f, _ := newTestController(t)
	register(t, c, 1, nil)
	createTopic(t, c, "t", 2, 1)
	f.elect(2, 1) // the node restarts: its controller too
	waitActive(t, c)
	register(t, c, 1, nil)
	im, _ := read(ctx(t), c, "image", func(im *metadata.Image) (*metadata.Image, error) { return im, nil })
	tp, _ := im.Topic("t")
	for _, p := range tp.Partitions {
		if p.Leader != 1 || p.LeaderEpoch != 0 {
			t.Fatalf("partition %d: leader %d epoch %d after the restart, want 1 and 0", p.Index, p.Leader, p.LeaderEpoch)
		}
	}
}

// A controller that takes over from another combined node counts that
// node's broker session from when it last heard from it (the quorum's
// LastHeard), not from its own activation: a node killed while it was the
// active controller is fenced a session after it died. The other brokers
// get a full session.
func TestNewControllerCountsPreviousControllersSessionFromLastHeard(t *testing.T) {
	c, f, clk := newTestController(t)
	e := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		e[id] = register(t, c, id, nil)
	}
	f.elect(2, 2) // node 2 leads the quorum: this one stands by
	f.mu.Lock()
	f.heard = map[int32]time.Time{2: clk.now(), 3: clk.now()}
	f.mu.Unlock()
	clk.add(4 * time.Second) // node 2 dies; an election follows
	f.elect(3, -1)
	f.elect(4, 1)
	waitActive(t, c)
	clk.add(5500 * time.Millisecond) // 9.5 s after 2 was last heard of
	waitFor(t, c, "broker 2 fenced", func(im *metadata.Image) bool { return im.Brokers[2].Fenced })
	if im := image(t, c); im.Brokers[3].Fenced || im.Brokers[1].Fenced {
		t.Fatalf("a broker that was not the active controller lost its session early: %+v %+v", im.Brokers[1], im.Brokers[3])
	}
}

// An internal topic's replication factor is capped to the quorum's size
// on combined nodes only (a single node with no configuration gets 1);
// a controller-only quorum says nothing of the brokers, so the configured
// factor stands, as in Kafka.
func TestInternalReplicationFactor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		roles     []string
		voters    int
		bootstrap int
		want      int16
	}{
		{"single combined node", []string{"broker", "controller"}, 0, 0, 1},
		{"two combined voters", []string{"broker", "controller"}, 2, 0, 2},
		{"three combined voters", []string{"broker", "controller"}, 3, 0, 3},
		{"combined, bootstrap servers", []string{"broker", "controller"}, 0, 3, 3},
		{"one controller-only voter", []string{"controller"}, 1, 0, 3},
		{"controller-only, bootstrap servers", []string{"controller"}, 0, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := &config.KafkaConfig{ProcessRoles: tc.roles, QuorumVoters: map[int32]string{}}
			for i := range tc.voters {
				kc.QuorumVoters[int32(i+1)] = fmt.Sprintf("127.0.0.1:%d", 9093+i)
			}
			for i := range tc.bootstrap {
				kc.QuorumBootstrapServers = append(kc.QuorumBootstrapServers, fmt.Sprintf("127.0.0.1:%d", 9093+i))
			}
			c := &QuorumController{cfg: Config{Broker: kc}}
			if got := c.internalReplicationFactor(3); got != tc.want {
				t.Errorf("replication factor %d, want %d", got, tc.want)
			}
		})
	}
}
