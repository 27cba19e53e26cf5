package integration

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
)

// leaderEpochOf waits until the partition has a leader and returns its
// leader epoch.
func leaderEpochOf(t *testing.T, adm *kadm.Client, topic string, partition int32) int32 {
	t.Helper()
	var epoch int32
	eventually(t, 20*time.Second, func() error {
		md, err := adm.Metadata(ctxTimeout(t, 5*time.Second), topic)
		if err != nil {
			return err
		}
		p, ok := md.Topics[topic].Partitions[partition]
		if !ok || p.Err != nil || p.Leader < 0 {
			return fmt.Errorf("partition %s-%d: %+v", topic, partition, p)
		}
		epoch = p.LeaderEpoch
		return nil
	})
	return epoch
}

// offsetForLeaderEpoch asks one partition's end offset of epoch at version.
func (r *rawConn) offsetForLeaderEpoch(version int16, topic string, partition, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	r.t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := r.do(req, version).(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		r.t.Fatalf("OffsetForLeaderEpoch v%d: %+v", version, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// produceOneByOne appends n one-record batches, retrying while the partition
// has no leader yet after a restart.
func produceOneByOne(t *testing.T, addr, topic string, n int) {
	t.Helper()
	r := newRawConn(t, addr)
	for i := range n {
		eventually(t, 20*time.Second, func() error {
			return kerr.ErrorForCode(r.produceRaw(topic, nil, txnRecordBatch(t, -1, 0, 0, false, fmt.Sprint(i))).ErrorCode)
		})
	}
}

// A single broker's leader epoch moves at each controlled restart; the
// epochs that wrote data each end where the next began, the current one
// at the log end. An old current_leader_epoch is fenced, a newer one
// unknown; a Fetch v16 fenced names this broker as the leader (KIP-951);
// and a franz-go group consumer validates its committed position (offset
// and epoch) with OffsetForLeaderEpoch and resumes exactly there.
func TestOffsetForLeaderEpochAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	ctx := ctxTimeout(t, 90*time.Second)
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, "oe"); err != nil {
		t.Fatal(err)
	}
	e0 := leaderEpochOf(t, newAdmin(t, b.Seed()), "oe", 0)
	produceOneByOne(t, b.Seed(), "oe", 3) // offsets 0-2 in e0

	// A group consumer reads them and commits offset 3 with epoch e0.
	gc := newClient(t, b.Seed(), kgo.ConsumeTopics("oe"), kgo.ConsumerGroup("oe-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for got := 0; got < 3; {
		fs := gc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := gc.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	gc.Close()

	b.Close()
	b = startBroker(t, dir)
	e1 := leaderEpochOf(t, newAdmin(t, b.Seed()), "oe", 0)
	produceOneByOne(t, b.Seed(), "oe", 2) // offsets 3-4 in e1
	b.Close()
	b = startBroker(t, dir)
	e2 := leaderEpochOf(t, newAdmin(t, b.Seed()), "oe", 0)
	produceOneByOne(t, b.Seed(), "oe", 1) // offset 5 in e2
	if !(e0 < e1 && e1 < e2) {
		t.Fatalf("leader epochs %d, %d, %d do not grow across restarts", e0, e1, e2)
	}
	t.Logf("leader epochs %d, %d, %d", e0, e1, e2)

	r := newRawConn(t, b.Seed())
	type answer struct {
		code  int16
		epoch int32
		end   int64
	}
	expect := func(requested int32) answer {
		switch {
		case requested < e1:
			return answer{0, e0, 3}
		case requested < e2:
			return answer{0, e1, 5}
		case requested == e2:
			return answer{0, e2, 6}
		}
		return answer{0, -1, -1}
	}
	for v := int16(2); v <= 4; v++ {
		for ep := e0; ep <= e2+1; ep++ {
			for _, cur := range []int32{-1, e2} {
				sp := r.offsetForLeaderEpoch(v, "oe", 0, cur, ep)
				if got, want := (answer{sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset}), expect(ep); got != want {
					t.Errorf("v%d current %d epoch %d: %+v, want %+v", v, cur, ep, got, want)
				}
			}
		}
		if sp := r.offsetForLeaderEpoch(v, "oe", 0, e1, e0); sp.ErrorCode != kerr.FencedLeaderEpoch.Code || sp.EndOffset != -1 {
			t.Errorf("v%d current %d (old): %+v, want FENCED_LEADER_EPOCH", v, e1, sp)
		}
		if sp := r.offsetForLeaderEpoch(v, "oe", 0, e2+1, e0); sp.ErrorCode != kerr.UnknownLeaderEpoch.Code || sp.EndOffset != -1 {
			t.Errorf("v%d current %d (newer): %+v, want UNKNOWN_LEADER_EPOCH", v, e2+1, sp)
		}
		if sp := r.offsetForLeaderEpoch(v, "no-such-topic", 0, -1, e0); sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d unknown topic: %+v", v, sp)
		}
	}

	// A fetch at the old epoch is fenced and told the current leader.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxBytes, fetch.SessionEpoch, fetch.ReplicaState.ID = -1, 1<<20, -1, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "oe", describeTopic(t, newAdmin(t, b.Seed()), "oe").ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, e1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr := r.do(fetch, 16).(*kmsg.FetchResponse)
	sp := fr.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.FencedLeaderEpoch.Code || sp.CurrentLeader.LeaderID != 1 || sp.CurrentLeader.LeaderEpoch != e2 ||
		len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != 1 || fmt.Sprintf("%s:%d", fr.Brokers[0].Host, fr.Brokers[0].Port) != b.Seed() {
		t.Fatalf("fenced fetch v16: error %d, current leader %+v, brokers %+v (broker at %s)", sp.ErrorCode, sp.CurrentLeader, fr.Brokers, b.Seed())
	}

	// The group resumes at its committed offset 3 (epoch e0) after
	// validating it with OffsetForLeaderEpoch: e0 ended at 3, so nothing
	// was lost and nothing is read twice.
	var asked atomic.Int32
	gc = newClient(t, b.Seed(), kgo.ConsumeTopics("oe"), kgo.ConsumerGroup("oe-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.WithHooks(brokerWriteHook(func(key int16) {
			if key == int16(kmsg.OffsetForLeaderEpoch) {
				asked.Add(1)
			}
		})))
	var offsets []int64
	for len(offsets) < 3 {
		fs := gc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(rec *kgo.Record) { offsets = append(offsets, rec.Offset) })
	}
	if fmt.Sprint(offsets) != "[3 4 5]" {
		t.Fatalf("the group resumed at offsets %v, want [3 4 5]", offsets)
	}
	if asked.Load() == 0 {
		t.Fatal("franz-go did not validate its committed position with OffsetForLeaderEpoch")
	}
}

// brokerWriteHook calls fn with the key of every request a kgo client
// writes.
type brokerWriteHook func(key int16)

func (h brokerWriteHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	h(key)
}

// On a three-node cluster, a Produce (v10+) or Fetch (v16+) sent to a
// broker that does not lead the partition is answered
// NOT_LEADER_OR_FOLLOWER with the leader, its epoch and its endpoint and
// rack (KIP-951); Produce v9 and Fetch v15 carry no hint.
func TestLeaderHintsThreeNodes(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	bs := make([]*broker.Broker, 3)
	for i, n := range nodes {
		bs[i] = startInProcessNode(t, n, nodes)
	}
	t.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	waitReady(t, bs...)
	adm := newAdmin(t, nodes[0].seed())
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "hints"); err != nil {
		t.Fatal(err)
	}
	// A partition led by node 2 or 3, as node 1 sees it.
	var part, leader, epoch int32 = -1, -1, -1
	var id [16]byte
	eventually(t, 20*time.Second, func() error {
		md, err := newAdmin(t, nodes[0].seed()).Metadata(ctx, "hints")
		if err != nil {
			return err
		}
		td := md.Topics["hints"]
		id = td.ID
		for _, p := range td.Partitions {
			if p.Err == nil && p.Leader > 1 {
				part, leader, epoch = p.Partition, p.Leader, p.LeaderEpoch
				return nil
			}
		}
		return fmt.Errorf("no partition led by another node yet: %+v", td.Partitions)
	})
	ln := nodes[leader-1]
	checkHint := func(what string, code int16, cur struct{ id, epoch int32 }, eps []hintEndpoint) {
		t.Helper()
		if code != kerr.NotLeaderForPartition.Code || cur.id != leader || cur.epoch != epoch || len(eps) != 1 {
			t.Fatalf("%s: error %d, current leader %+v, %d endpoints; want NOT_LEADER_OR_FOLLOWER, leader %d epoch %d, one endpoint", what, code, cur, len(eps), leader, epoch)
		}
		e := eps[0]
		if e.id != leader || fmt.Sprintf("%s:%d", e.host, e.port) != ln.seed() || e.rack == nil || *e.rack != fmt.Sprintf("rack-%d", leader) {
			t.Fatalf("%s: endpoint %d %s:%d rack %v, want %d %s rack-%d", what, e.id, e.host, e.port, e.rack, leader, ln.seed(), leader)
		}
	}

	r := newRawConn(t, nodes[0].seed())
	for _, v := range []int16{9, 10, 12, 13} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "hints", id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = part, txnRecordBatch(t, -1, 0, 0, false, "x")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := r.do(req, v).(*kmsg.ProduceResponse)
		sp := resp.Topics[0].Partitions[0]
		if v < 10 {
			if sp.ErrorCode != kerr.NotLeaderForPartition.Code || len(resp.Brokers) != 0 || sp.CurrentLeader.LeaderID != -1 {
				t.Fatalf("produce v%d: error %d, hint %+v %+v", v, sp.ErrorCode, sp.CurrentLeader, resp.Brokers)
			}
			continue
		}
		var eps []hintEndpoint
		for _, b := range resp.Brokers {
			eps = append(eps, hintEndpoint{b.NodeID, b.Host, b.Port, b.Rack})
		}
		checkHint(fmt.Sprintf("produce v%d", v), sp.ErrorCode, struct{ id, epoch int32 }{sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch}, eps)
	}
	for _, v := range []int16{15, 16, 17, 18} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.ReplicaState.ID = -1, 1<<20, -1, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "hints", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = part, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := r.do(req, v).(*kmsg.FetchResponse)
		sp := resp.Topics[0].Partitions[0]
		if v < 16 {
			if sp.ErrorCode != kerr.NotLeaderForPartition.Code || len(resp.Brokers) != 0 || sp.CurrentLeader.LeaderID != -1 {
				t.Fatalf("fetch v%d: error %d, hint %+v %+v", v, sp.ErrorCode, sp.CurrentLeader, resp.Brokers)
			}
			continue
		}
		var eps []hintEndpoint
		for _, b := range resp.Brokers {
			eps = append(eps, hintEndpoint{b.NodeID, b.Host, b.Port, b.Rack})
		}
		checkHint(fmt.Sprintf("fetch v%d", v), sp.ErrorCode, struct{ id, epoch int32 }{sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch}, eps)
	}
	// OffsetForLeaderEpoch on a broker that does not lead the partition.
	if sp := r.offsetForLeaderEpoch(4, "hints", part, -1, 0); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("OffsetForLeaderEpoch on a follower: %+v", sp)
	}
}

type hintEndpoint struct {
	id   int32
	host string
	port int32
	rack *string
}
