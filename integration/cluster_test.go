package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
)

// clusterNode is one node of a three-node combined-mode cluster: its
// ports are fixed before any node starts, since every node names the
// others' controller listeners in controller.quorum.voters.
type clusterNode struct {
	id         int32
	port, ctrl int
	dir        string
}

func (n clusterNode) seed() string { return fmt.Sprintf("127.0.0.1:%d", n.port) }

// kraftOverrides are Kafka's own KRaft combined-mode settings for a node,
// and nothing else.
func kraftOverrides(n clusterNode, nodes []clusterNode) []string {
	var voters []string
	for _, o := range nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", o.id, o.ctrl))
	}
	return []string{
		fmt.Sprintf("node.id=%d", n.id),
		"process.roles=broker,controller",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.ctrl),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", n.port),
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.quorum.voters=" + strings.Join(voters, ","),
		"log.dirs=" + n.dir,
	}
}

func newClusterNodes(t testing.TB, n int) []clusterNode {
	nodes := make([]clusterNode, n)
	for i := range nodes {
		nodes[i] = clusterNode{id: int32(i + 1), port: freePort(t), ctrl: freePort(t), dir: t.TempDir()}
	}
	return nodes
}

// startInProcessNode builds and starts a node without waiting for it to be
// ready (it cannot be before a quorum forms).
func startInProcessNode(t testing.TB, n clusterNode, nodes []clusterNode, overrides ...string) *broker.Broker {
	t.Helper()
	cfg, warnings, err := config.Load("", append(append(kraftOverrides(n, nodes), "moldau.metrics.listener=", fmt.Sprintf("broker.rack=rack-%d", n.id)), overrides...))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(warnings) > 0 {
		t.Fatalf("config warnings: %v", warnings)
	}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}), &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", n.id)
	b, err := broker.New(cfg, broker.Options{Logger: logger})
	if err != nil {
		t.Fatalf("node %d: %v", n.id, err)
	}
	b.Start()
	return b
}

func waitReady(t testing.TB, bs ...*broker.Broker) {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	for _, b := range bs {
		if err := b.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A node is ready once it is unfenced itself; its image may not yet
	// show the others unfenced, and a client's first Metadata from it
	// would then list fewer brokers, which kgo keeps until its next
	// refresh (metadata.max.age.ms: minutes). Wait until every node sees
	// them all.
	eventually(t, 30*time.Second, func() error {
		for i, b := range bs {
			unfenced := 0
			for _, br := range b.Metadata().Brokers {
				if !br.Fenced {
					unfenced++
				}
			}
			if unfenced < len(bs) {
				return fmt.Errorf("node %d of %d sees %d unfenced brokers", i+1, len(bs), unfenced)
			}
		}
		return nil
	})
}

// Three nodes in one process form one cluster: a topic created through one
// is seen by all, its partitions are placed across the brokers, every node
// lists three brokers and names the same active controller; closing the
// active controller elects another that keeps serving creations, and
// nothing committed is lost.
func TestThreeNodeClusterInProcess(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	bs := make([]*broker.Broker, 3)
	for i, n := range nodes {
		bs[i] = startInProcessNode(t, n, nodes)
	}
	closed := make([]bool, 3)
	t.Cleanup(func() {
		for i, b := range bs {
			if !closed[i] {
				b.Close()
			}
		}
	})
	waitReady(t, bs...)

	adm := newAdmin(t, nodes[0].seed())
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "spread"); err != nil {
		t.Fatal(err)
	}
	// Seen by every node, with leaders on all three brokers.
	for _, n := range nodes {
		a := newAdmin(t, n.seed())
		eventually(t, 10*time.Second, func() error {
			md, err := a.Metadata(ctx, "spread")
			if err != nil {
				return err
			}
			if len(md.Brokers) != 3 {
				return fmt.Errorf("node %d lists %d brokers", n.id, len(md.Brokers))
			}
			for _, b := range md.Brokers {
				if b.Rack == nil || *b.Rack != fmt.Sprintf("rack-%d", b.NodeID) {
					return fmt.Errorf("node %d reports broker %d with rack %v", n.id, b.NodeID, b.Rack)
				}
			}
			td := md.Topics["spread"]
			if td.Err != nil || len(td.Partitions) != 6 {
				return fmt.Errorf("node %d: topic %v, %d partitions", n.id, td.Err, len(td.Partitions))
			}
			leaders := map[int32]bool{}
			for _, p := range td.Partitions {
				leaders[p.Leader] = true
			}
			if len(leaders) != 3 {
				return fmt.Errorf("node %d: leaders %v, want all three brokers", n.id, leaders)
			}
			return nil
		})
	}
	// Records produced through any node land on the leaders and read back.
	cl := newClient(t, nodes[1].seed(), kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range 60 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, nodes[2].seed(), kgo.ConsumeTopics("spread"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < 60 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	// A consumer group works across the cluster: __consumer_offsets is
	// spread over the three brokers, so its coordinator may be any of
	// them; offsets committed through one node are seen through another.
	gc := newClient(t, nodes[0].seed(), kgo.ConsumeTopics("spread"), kgo.ConsumerGroup("cluster-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got = 0
	for got < 60 {
		fs := gc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := gc.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := newAdmin(t, nodes[2].seed()).FetchOffsets(ctx, "cluster-group")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != 60 {
		t.Fatalf("committed offsets sum to %d through another node, want 60", committed)
	}

	// DescribeCluster names the active controller, the same on every node.
	active := bs[0].ActiveController()
	// Metadata lists the live (unfenced) brokers: all three, though a
	// broker starved of CPU long enough to miss its session may be
	// fenced for a moment and come back.
	eventually(t, 15*time.Second, func() error {
		bm, err := adm.BrokerMetadata(ctx)
		if err != nil || len(bm.Brokers) != 3 || bm.Controller != active {
			return fmt.Errorf("Metadata: %d brokers, controller %d (%v), active %d", len(bm.Brokers), bm.Controller, err, active)
		}
		return nil
	})
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctx, newClient(t, nodes[2].seed()))
	if err != nil || resp.ControllerID != active {
		t.Fatalf("DescribeCluster controller %d (%v), active is %d", resp.ControllerID, err, active)
	}
	q := kmsg.NewPtrDescribeQuorumRequest()
	qt := kmsg.NewDescribeQuorumRequestTopic()
	qt.Topic = "__cluster_metadata"
	qt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	q.Topics = append(q.Topics, qt)
	qr, err := q.RequestWith(ctx, newClient(t, nodes[1].seed()))
	if err != nil || qr.ErrorCode != 0 || len(qr.Topics) != 1 || len(qr.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum: %+v %v", qr, err)
	}
	if p := qr.Topics[0].Partitions[0]; p.LeaderID != active || len(p.CurrentVoters) != 3 {
		t.Fatalf("DescribeQuorum: leader %d voters %d, want %d and 3", p.LeaderID, len(p.CurrentVoters), active)
	}

	// Close the active controller: another is elected and serves.
	ai := slices.IndexFunc(nodes, func(n clusterNode) bool { return n.id == active })
	bs[ai].Close()
	closed[ai] = true
	other := nodes[(ai+1)%3]
	oa := newAdmin(t, other.seed())
	start := time.Now()
	eventually(t, 15*time.Second, func() error {
		resp, err := oa.CreateTopic(ctx, 1, 1, nil, "after-failover")
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		return err
	})
	t.Logf("a new controller served a creation %v after the old one closed", time.Since(start).Round(time.Millisecond))
	if na := bs[(ai+1)%3].ActiveController(); na == active || na < 0 {
		t.Fatalf("active controller still %d", na)
	}
	// The creation was answered by the new active controller's broker
	// once it had the topic; the node asked now may be a moment behind.
	eventually(t, 10*time.Second, func() error {
		topics, err := oa.ListTopics(ctx)
		if err != nil || !topics.Has("spread") || !topics.Has("after-failover") {
			return fmt.Errorf("topics after failover: %v %v", topics.Names(), err)
		}
		return nil
	})
}

// Three `moldau serve` processes started from Kafka's KRaft combined-mode
// settings form one cluster that kcat sees whole from any node. The active
// controller is killed with SIGKILL during a burst of topic creations; a
// new one is elected, and after the killed node restarts every creation
// that was answered with success exists on all nodes, none twice.
func TestThreeProcessClusterSurvivesKill9(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	procs := make([]*brokerProcess, 3)
	for i, n := range nodes {
		procs[i] = startClusterProcess(t, n, nodes)
	}
	for _, p := range procs {
		p.waitStarted(t)
	}
	// kcat -L against any node lists three brokers.
	for _, n := range nodes {
		out, err := exec.Command("kcat", "-L", "-b", n.seed(), "-m", "10").CombinedOutput()
		if err != nil {
			t.Fatalf("kcat -L %s: %v\n%s", n.seed(), err, out)
		}
		if !strings.Contains(string(out), "3 brokers:") {
			t.Fatalf("kcat -L %s does not list three brokers:\n%s", n.seed(), out)
		}
	}

	seeds := []string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()}
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequestTimeoutOverhead(5*time.Second)))
	ctx := ctxTimeout(t, 3*time.Minute)
	var active int32 = -1
	eventually(t, 10*time.Second, func() error {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		active = md.Controller
		if active < 1 {
			return fmt.Errorf("no controller yet")
		}
		return nil
	})

	var mu sync.Mutex
	var created []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("burst-%04d", i)
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			resp, err := adm.CreateTopic(cctx, 1, 1, nil, name)
			cancel()
			if err == nil && resp.Err == nil {
				mu.Lock()
				created = append(created, name)
				mu.Unlock()
			}
		}
	}()
	// Let some creations through, then kill the active controller.
	eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(created) < 20 {
			return fmt.Errorf("%d created", len(created))
		}
		return nil
	})
	ai := int(active - 1)
	procs[ai].kill(t)
	killedAt := time.Now()
	mu.Lock()
	before := len(created)
	mu.Unlock()
	// Creations keep succeeding through the survivors.
	eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(created) < before+20 {
			return fmt.Errorf("%d created since the kill", len(created)-before)
		}
		return nil
	})
	t.Logf("creations resumed within %v of the kill", time.Since(killedAt).Round(time.Millisecond))
	close(stop)
	wg.Wait()

	procs[ai] = startClusterProcess(t, nodes[ai], nodes)
	procs[ai].waitStarted(t)
	mu.Lock()
	want := slices.Clone(created)
	mu.Unlock()
	for _, n := range nodes {
		a := newAdmin(t, n.seed())
		eventually(t, 20*time.Second, func() error {
			md, err := a.Metadata(ctx)
			if err != nil {
				return err
			}
			for _, name := range want {
				td, ok := md.Topics[name]
				if !ok || td.Err != nil {
					return fmt.Errorf("node %d lacks %s", n.id, name)
				}
				if len(td.Partitions) != 1 {
					return fmt.Errorf("node %d: %s has %d partitions", n.id, name, len(td.Partitions))
				}
			}
			if len(md.Brokers) != 3 {
				return fmt.Errorf("node %d lists %d brokers", n.id, len(md.Brokers))
			}
			return nil
		})
	}
	t.Logf("%d acknowledged creations present on all three nodes", len(want))
}

// startClusterProcess starts a node as a `moldau serve` process with
// Kafka's KRaft settings, without waiting for it to be ready.
func startClusterProcess(t *testing.T, n clusterNode, nodes []clusterNode) *brokerProcess {
	t.Helper()
	var args []string
	for _, o := range append(kraftOverrides(n, nodes), "moldau.metrics.listener=") {
		args = append(args, "--override", o)
	}
	return launchProcess(t, n.seed(), args...)
}
