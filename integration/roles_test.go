package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rolesCluster is Kafka's production layout as processes: three
// controller-only nodes (ids 1-3) and broker-only nodes (ids 4 and up),
// each started from the settings of Kafka's controller.properties and
// broker.properties. Broker 6 finds the quorum through
// controller.quorum.voters, the others through
// controller.quorum.bootstrap.servers.
type rolesCluster struct {
	ctrls, brokers []clusterNode
	procs          map[int32]*brokerProcess
	start          func(id int32)
}

// rolesMetadataSettings make the metadata log small: snapshots every few
// KiB and segments deleted behind them, so that a restarted broker
// catches up across snapshots (segments below metadata.log.segment.bytes'
// 8 MiB, through the setting for tests). Only for small topics: a batch
// larger than a segment (the 50 partitions of __consumer_offsets are 4
// KiB) stops the quorum.
var rolesMetadataSettings = []string{
	"metadata.log.max.record.bytes.between.snapshots=2048",
	"internal.metadata.log.segment.bytes=2048",
	"metadata.max.retention.bytes=1",
}

// startRolesCluster starts three controllers and the given number of
// brokers; settings are added to every node's.
func startRolesCluster(t *testing.T, brokers int, settings ...string) *rolesCluster {
	t.Helper()
	c := &rolesCluster{procs: map[int32]*brokerProcess{}}
	for i := range 3 {
		c.ctrls = append(c.ctrls, clusterNode{id: int32(i + 1), ctrl: freePort(t), dir: t.TempDir()})
	}
	for i := range brokers {
		c.brokers = append(c.brokers, clusterNode{id: int32(i + 4), port: freePort(t), dir: t.TempDir()})
	}
	var voters, bootstrap []string
	for _, n := range c.ctrls {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.ctrl))
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", n.ctrl))
	}
	common := append([]string{"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"moldau.metrics.listener=", "broker.session.timeout.ms=4000", "broker.heartbeat.interval.ms=500"}, settings...)
	c.start = func(id int32) {
		var own []string
		var addr string
		if id <= 3 {
			n := c.ctrls[id-1]
			addr = fmt.Sprintf("127.0.0.1:%d", n.ctrl)
			own = []string{fmt.Sprintf("node.id=%d", id), "process.roles=controller",
				"listeners=CONTROLLER://" + addr, "advertised.listeners=CONTROLLER://" + addr,
				"controller.quorum.voters=" + strings.Join(voters, ","), "log.dirs=" + n.dir}
		} else {
			n := c.brokers[id-4]
			addr = n.seed()
			quorum := "controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ",")
			if id == 6 {
				quorum = "controller.quorum.voters=" + strings.Join(voters, ",")
			}
			own = []string{fmt.Sprintf("node.id=%d", id), "process.roles=broker", quorum,
				"listeners=PLAINTEXT://" + addr, "advertised.listeners=PLAINTEXT://" + addr,
				"inter.broker.listener.name=PLAINTEXT", "log.dirs=" + n.dir}
		}
		var args []string
		for _, o := range append(own, common...) {
			args = append(args, "--override", o)
		}
		c.procs[id] = launchProcess(t, addr, args...)
	}
	last := int32(3 + brokers)
	for id := int32(1); id <= last; id++ {
		c.start(id)
	}
	for id := int32(1); id <= last; id++ {
		c.procs[id].waitStarted(t)
	}
	return c
}

func (c *rolesCluster) seeds() []string {
	var s []string
	for _, n := range c.brokers {
		s = append(s, n.seed())
	}
	return s
}

// describeControllers sends DescribeCluster with the controller endpoint
// type (KIP-919) to a controller listener.
func describeControllers(t *testing.T, addr string) (*kmsg.DescribeClusterResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	return resp, err
}

// describeQuorumResponse sends DescribeQuorum for __cluster_metadata-0.
func describeQuorumResponse(cl *kgo.Client) (*kmsg.DescribeQuorumResponse, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return req.RequestWith(ctx, cl)
}

// describeQuorum sends DescribeQuorum through a broker (which forwards it
// to the active controller) and returns __cluster_metadata-0's state.
func describeQuorum(cl *kgo.Client) (kmsg.DescribeQuorumResponseTopicPartition, error) {
	resp, err := describeQuorumResponse(cl)
	if err != nil {
		return kmsg.DescribeQuorumResponseTopicPartition{}, err
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.DescribeQuorumResponseTopicPartition{}, fmt.Errorf("DescribeQuorum: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	p := resp.Topics[0].Partitions[0]
	return p, kerr.ErrorForCode(p.ErrorCode)
}

// TestSeparateRoles runs three controller-only and three broker-only
// processes: Metadata lists only the brokers, DescribeCluster on a
// controller listener the controllers; RF-3 topics are produced and
// consumed with kgo and kcat through a kill -9 of a broker (restarted, it
// catches up across metadata snapshots) and of the active controller (the
// brokers follow the new one); a retired broker is unregistered.
func TestSeparateRoles(t *testing.T) {
	c := startRolesCluster(t, 3, rolesMetadataSettings...)
	adm := newAdmin(t, strings.Join(c.seeds(), ","))

	// Metadata names the brokers only; the active controller is a
	// controller-only node (KRaft reports a random broker as the
	// controller id to clients; Moldau names the active controller only
	// if it is a broker, else another live broker).
	eventually(t, 30*time.Second, func() error {
		// A new client each time, as below: the same one answered from
		// its metadata from before broker 5 was unfenced for 30 s, in
		// about one run in eight.
		md, err := newAdmin(t, strings.Join(c.seeds(), ",")).BrokerMetadata(context.Background())
		if err != nil {
			return err
		}
		ids := md.Brokers.NodeIDs()
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{4, 5, 6}) {
			return fmt.Errorf("Metadata lists brokers %v, want 4, 5, 6", ids)
		}
		return nil
	})
	// DescribeCluster with the controller endpoint type, on a controller.
	eventually(t, 30*time.Second, func() error {
		resp, err := describeControllers(t, fmt.Sprintf("127.0.0.1:%d", c.ctrls[0].ctrl))
		if err != nil {
			return err
		}
		var ids []int32
		for _, b := range resp.Brokers {
			ids = append(ids, b.NodeID)
			if want := c.ctrls[b.NodeID-1].ctrl; b.Port != int32(want) {
				return fmt.Errorf("controller %d at port %d, want %d", b.NodeID, b.Port, want)
			}
		}
		if !slices.Equal(ids, []int32{1, 2, 3}) || resp.ControllerID < 1 || resp.ControllerID > 3 || resp.EndpointType != 2 {
			return fmt.Errorf("DescribeCluster(controller): controllers %v, active %d, type %d", ids, resp.ControllerID, resp.EndpointType)
		}
		return nil
	})
	// DescribeQuorum, forwarded by a broker: the brokers are observers.
	qcl := newClient(t, strings.Join(c.seeds(), ","))
	eventually(t, 30*time.Second, func() error {
		q, err := describeQuorum(qcl)
		if err != nil {
			return err
		}
		var obs []int32
		for _, o := range q.Observers {
			obs = append(obs, o.ReplicaID)
		}
		slices.Sort(obs)
		if !slices.Equal(obs, []int32{4, 5, 6}) || len(q.CurrentVoters) != 3 {
			return fmt.Errorf("quorum voters %v observers %v", q.CurrentVoters, obs)
		}
		return nil
	})
	// DescribeQuorum v2's nodes: the controllers' registered endpoints.
	eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
		resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), qcl)
		if err != nil {
			return err
		}
		var nodes []string
		for _, n := range resp.Nodes {
			for _, l := range n.Listeners {
				nodes = append(nodes, fmt.Sprintf("%d:%s:%d", n.NodeID, l.Name, l.Port))
			}
		}
		var want []string
		for _, n := range c.ctrls {
			want = append(want, fmt.Sprintf("%d:CONTROLLER:%d", n.id, n.ctrl))
		}
		slices.Sort(nodes)
		if !slices.Equal(nodes, want) {
			return fmt.Errorf("DescribeQuorum v%d nodes %v, want %v", resp.Version, nodes, want)
		}
		return nil
	})

	topic := "roles"
	if _, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, strings.Join(c.seeds(), ","), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produced := 0
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for range n {
			rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("v-%d", produced))})
			produced++
		}
		if err := cl.ProduceSync(ctxTimeout(t, 60*time.Second), rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(300)

	// kill -9 a broker; the others serve; metadata changes while it is
	// down (a topic, configs) pass several snapshots.
	c.procs[5].kill(t)
	produce(300)
	for i := range 30 {
		if _, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 1, 2, map[string]*string{"retention.ms": new(fmt.Sprint(3600000 + i))}, fmt.Sprintf("churn-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.start(5)
	c.procs[5].waitStarted(t)
	eventually(t, 30*time.Second, func() error {
		snaps, _ := filepath.Glob(filepath.Join(c.brokers[1].dir, "__cluster_metadata-0", "*.checkpoint"))
		if len(snaps) == 0 {
			return fmt.Errorf("broker 5 has no metadata snapshot")
		}
		return nil
	})
	if out := c.procs[5].Out.String(); !strings.Contains(out, "installed snapshot from the leader") {
		t.Errorf("restarted broker 5 caught up without the leader's snapshot:\n%s", out)
	}
	// It serves the metadata made while it was down.
	cl5 := newClient(t, c.brokers[1].seed())
	eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(context.Background(), cl5)
		if err != nil {
			return err
		}
		if len(resp.Topics) < 31 {
			return fmt.Errorf("broker 5 knows %d topics", len(resp.Topics))
		}
		return nil
	})

	// kill -9 the active controller: the brokers follow the new one.
	q, err := describeQuorum(qcl)
	if err != nil {
		t.Fatal(err)
	}
	active := q.LeaderID
	c.procs[active].kill(t)
	eventually(t, 30*time.Second, func() error {
		_, err := adm.CreateTopic(ctxTimeout(t, 10*time.Second), 3, 3, nil, "after-controller-kill")
		return err
	})
	produce(300)
	var leader int32
	eventually(t, 30*time.Second, func() error {
		q, err := describeQuorum(qcl)
		if err != nil {
			return err
		}
		if q.LeaderID == active || q.LeaderID < 1 {
			return fmt.Errorf("leader %d", q.LeaderID)
		}
		leader = q.LeaderID
		return nil
	})

	// A retired broker: stopped, then unregistered (UnregisterBroker,
	// forwarded by another broker to the active controller).
	c.procs[6].stop(t)
	eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = 6
		resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), qcl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		return err
	})
	eventually(t, 30*time.Second, func() error {
		// A new client each time: kgo answers a Metadata request from
		// its own recent metadata.
		md, err := newAdmin(t, strings.Join(c.seeds()[:2], ",")).BrokerMetadata(context.Background())
		if err != nil {
			return err
		}
		ids := md.Brokers.NodeIDs()
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{4, 5}) {
			return fmt.Errorf("Metadata lists brokers %v after unregistering 6", ids)
		}
		return nil
	})

	// Every record, read back by kcat (librdkafka) from the brokers.
	// Each line names the record's partition and offset, so that a
	// record read twice tells a log holding it twice (two offsets) from
	// a consumer reading one offset twice. Only standard output holds
	// records: librdkafka logs to standard error, here that the stopped
	// broker 6 refuses connections (stop 31 counted the words of that
	// line as records, in about one run in ten).
	kc := exec.Command("kcat", "-C", "-b", strings.Join(c.seeds(), ","), "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %s\n")
	var stderr strings.Builder
	kc.Stderr = &stderr
	out, err := kc.Output()
	if err != nil {
		t.Fatalf("kcat: %v\n%s%s", err, out, stderr.String())
	}
	at := map[string][]string{} // value -> "partition/offset" it was read at
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("kcat printed %q", line)
		}
		at[f[2]] = append(at[f[2]], f[0]+"/"+f[1])
	}
	for i := range produced {
		v := fmt.Sprintf("v-%d", i)
		switch where := at[v]; {
		case len(where) == 0:
			t.Errorf("record %s missing", v)
		case len(where) > 1:
			t.Errorf("record %s read %d times, at partition/offset %v", v, len(where), where)
		}
	}
	if len(lines) != produced {
		t.Fatalf("kcat read %d records, %d were produced", len(lines), produced)
	}
	// A controller-only node stops cleanly on SIGTERM (exit 0).
	for id := int32(1); id <= 3; id++ {
		if id != active && id != leader {
			c.procs[id].stop(t)
		}
	}
}

// TestKgoConformanceSeparateRoles runs kgo's must-pass list against the
// three brokers of a cluster of three controller-only and three
// broker-only processes with KGO_TEST_RF=3. It takes several minutes, more
// than CI affords on top of TestKgoConformanceThreeNodes, so it runs only
// with MOLDAU_ROLES_KGO=1:
//
//	MOLDAU_ROLES_KGO=1 go test -count=1 -run 'TestKgoConformanceSeparateRoles$' -timeout 30m ./integration/
func TestKgoConformanceSeparateRoles(t *testing.T) {
	if os.Getenv("MOLDAU_ROLES_KGO") == "" {
		t.Skip("set MOLDAU_ROLES_KGO=1: kgo's suite against separate roles runs by hand (several minutes)")
	}
	mustPass := withoutSASLTests(readList(t, "testdata/kgo-must-pass.txt"))
	c := startRolesCluster(t, 3)
	enableShareGroups(t, c.seeds()...)
	seeds := strings.Join(c.seeds(), ",")
	run := "^(" + strings.Join(mustPass, "|") + ")$"
	requireKgoPass(t, rerunRacy(t, runKgo(t, seeds, run, "KGO_TEST_RF=3"), seeds, "KGO_TEST_RF=3"), mustPass)
}
