package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupBrokerOverrides make rebalances quick in tests.
var groupBrokerOverrides = []string{"group.initial.rebalance.delay.ms=100"}

func produceN(t testing.TB, seed, topic string, n int, prefix string) {
	t.Helper()
	cl := newClient(t, seed, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // kafka-python has no snappy
	ctx := ctxTimeout(t, 30*time.Second)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: []byte(prefix + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func createTopic(t testing.TB, adm *kadm.Client, partitions int32, topic string) {
	t.Helper()
	r, err := adm.CreateTopic(ctxTimeout(t, 10*time.Second), partitions, 1, nil, topic)
	if err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
}

// A kgo group member consumes and commits; after a restart of the broker
// the group, its committed offsets and the __consumer_offsets topic
// (internal, compacted) are still there, and a new member resumes where
// the old one committed.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, groupBrokerOverrides...)
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 3, "orders")
	produceN(t, b.Seed(), "orders", 30, "a")

	consume := func(seed string, n int) []string {
		cl := newClient(t, seed, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
		defer cl.Close()
		ctx := ctxTimeout(t, 30*time.Second)
		var got []string
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("poll: %v", err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		return got
	}
	if got := consume(b.Seed(), 30); len(got) != 30 {
		t.Fatalf("consumed %d", len(got))
	}

	md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if td := md.Topics["__consumer_offsets"]; !td.IsInternal || len(td.Partitions) != 50 {
		t.Fatalf("__consumer_offsets: internal %v, %d partitions", td.IsInternal, len(td.Partitions))
	}
	rc, err := adm.DescribeTopicConfigs(ctxTimeout(t, 10*time.Second), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	cfgs, _ := rc.On("__consumer_offsets", nil)
	for _, c := range cfgs.Configs {
		if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "compact") {
			t.Fatalf("cleanup.policy = %v", c.MaybeValue())
		}
	}

	b.Close()
	b2 := startBroker(t, dir, groupBrokerOverrides...)
	adm2 := newAdmin(t, b2.Seed())
	var offsets kadm.OffsetResponses
	eventually(t, 20*time.Second, func() error {
		offsets, err = adm2.FetchOffsets(ctxTimeout(t, 10*time.Second), "g1")
		return err
	})
	var total int64
	offsets.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 30 {
		t.Fatalf("committed offsets after restart sum to %d, want 30: %v", total, offsets)
	}
	groups, err := adm2.ListGroups(ctxTimeout(t, 10*time.Second))
	if err != nil || !slices.Contains(groups.Groups(), "g1") {
		t.Fatalf("ListGroups after restart: %v %v", groups.Groups(), err)
	}
	produceN(t, b2.Seed(), "orders", 9, "b")
	got := consume(b2.Seed(), 9)
	sort.Strings(got)
	for _, v := range got {
		if v[0] != 'b' {
			t.Fatalf("after restart the group re-consumed %q (all: %v)", v, got)
		}
	}
}

// DescribeGroups shows what each member holds; a group deleted with
// DeleteGroups stays deleted after a restart.
func TestGroupDescribeAndDelete(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, groupBrokerOverrides...)
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 4, "events")

	var mu sync.Mutex
	held := map[string]map[int32]bool{} // client id -> partitions
	newMember := func(id string) *kgo.Client {
		return newClient(t, b.Seed(), kgo.ClientID(id), kgo.ConsumerGroup("g2"), kgo.ConsumeTopics("events"),
			kgo.Balancers(kgo.RangeBalancer()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				if held[id] == nil {
					held[id] = map[int32]bool{}
				}
				for _, p := range m["events"] {
					held[id][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m["events"] {
					delete(held[id], p)
				}
			}))
	}
	c1, c2 := newMember("c1"), newMember("c2")
	ctx := ctxTimeout(t, 60*time.Second)
	for _, c := range []*kgo.Client{c1, c2} {
		go func() {
			for ctx.Err() == nil {
				if fs := c.PollFetches(ctx); errors.Is(fs.Err0(), kgo.ErrClientClosed) {
					return
				}
			}
		}()
	}
	eventually(t, 30*time.Second, func() error {
		described, err := adm.DescribeGroups(ctx, "g2")
		if err != nil {
			return err
		}
		g := described["g2"]
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
		}
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, m := range g.Members {
			ca, ok := m.Assigned.AsConsumer()
			if !ok {
				return errors.New("assignment is not the consumer protocol's")
			}
			var parts []int32
			for _, t := range ca.Topics {
				parts = append(parts, t.Partitions...)
			}
			if len(parts) != len(held[m.ClientID]) {
				return fmt.Errorf("member %s: described %v, holds %v", m.ClientID, parts, held[m.ClientID])
			}
			for _, p := range parts {
				if !held[m.ClientID][p] {
					return fmt.Errorf("member %s: described %v, holds %v", m.ClientID, parts, held[m.ClientID])
				}
			}
			total += len(parts)
			if m.ClientHost != "/127.0.0.1" {
				return fmt.Errorf("client host %q", m.ClientHost)
			}
		}
		if total != 4 {
			return fmt.Errorf("%d partitions assigned", total)
		}
		return nil
	})

	// A live group cannot be deleted.
	del, err := adm.DeleteGroups(ctx, "g2")
	if err != nil || !errors.Is(del["g2"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a live group: %v %v", err, del["g2"].Err)
	}
	c1.Close()
	c2.Close()
	eventually(t, 20*time.Second, func() error {
		del, err := adm.DeleteGroups(ctx, "g2")
		if err != nil {
			return err
		}
		return del["g2"].Err
	})
	b.Close()
	b2 := startBroker(t, dir, groupBrokerOverrides...)
	adm2 := newAdmin(t, b2.Seed())
	eventually(t, 20*time.Second, func() error {
		described, err := adm2.DescribeGroups(ctxTimeout(t, 10*time.Second), "g2")
		if err != nil {
			return err
		}
		if g := described["g2"]; g.State != "Dead" || !errors.Is(g.Err, kerr.GroupIDNotFound) {
			return fmt.Errorf("deleted group after restart: state %q err %v", g.State, g.Err)
		}
		return nil
	})
	groups, err := adm2.ListGroups(ctxTimeout(t, 10*time.Second))
	if err != nil || slices.Contains(groups.Groups(), "g2") {
		t.Fatalf("deleted group listed after restart: %v %v", groups.Groups(), err)
	}
}

// FindCoordinator answers every key of a batch (v4+), creating
// __consumer_offsets once; transactional ids wait for their coordinator.
func TestFindCoordinator(t *testing.T) {
	b := startBroker(t, "")
	cl := newClient(t, b.Seed())
	ctx := ctxTimeout(t, 10*time.Second)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"a", "b", "c"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Coordinators) != 3 {
		t.Fatalf("coordinators: %+v", resp.Coordinators)
	}
	for _, c := range resp.Coordinators {
		if c.ErrorCode != 0 || c.NodeID != 1 || c.Port == 0 {
			t.Fatalf("coordinator %+v", c)
		}
	}
	// Transactional ids: __transaction_state is created on first use.
	req.CoordinatorType = 1
	resp, err = req.RequestWith(ctx, cl)
	if err != nil || len(resp.Coordinators) != 3 {
		t.Fatalf("transaction coordinator: %+v %v", resp, err)
	}
	for _, c := range resp.Coordinators {
		if c.ErrorCode != 0 || c.NodeID != 1 || c.Port == 0 {
			t.Fatalf("transaction coordinator %+v", c)
		}
	}
	req.CoordinatorType = 2 // share groups: not served
	if resp, err = req.RequestWith(ctx, cl); err != nil || resp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("share coordinator: %+v %v", resp, err)
	}
	old := kmsg.NewPtrFindCoordinatorRequest()
	old.Version = 2
	old.CoordinatorKey = "a"
	oresp, err := old.RequestWith(ctx, cl)
	if err != nil || oresp.ErrorCode != 0 || oresp.NodeID != 1 {
		t.Fatalf("v2: %+v %v", oresp, err)
	}
}

// /metrics shows the groups by protocol and state, the offset commits and
// rebalances, and each group's committed offset, so that the consumer lag
// is the log end (ListOffsets) minus kafka_consumergroup_current_offset
// (and is also exported as kafka_consumergroup_lag).
func TestGroupMetrics(t *testing.T) {
	b := startBroker(t, "", groupBrokerOverrides...)
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 2, "lagged")
	produceN(t, b.Seed(), "lagged", 20, "x")
	cl := newClient(t, b.Seed(), kgo.ConsumerGroup("lg"), kgo.ConsumeTopics("lagged"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	ctx := ctxTimeout(t, 30*time.Second)
	got := 0
	for got < 20 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	produceN(t, b.Seed(), "lagged", 6, "y") // 3 more per partition: the lag
	ends, err := adm.ListEndOffsets(ctx, "lagged")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		m := scrape(t, b.MetricsAddr().String())
		for _, want := range []string{
			`kafka_server_group_coordinator_metrics_group_count{protocol="classic"}`,
			`kafka_coordinator_group_groupmetadatamanager_numgroupsstable`,
			`kafka_server_group_coordinator_metrics_num_partitions{state="active"}`,
		} {
			if v, ok := m[want]; !ok || v < 1 {
				return fmt.Errorf("%s = %v", want, v)
			}
		}
		if v := m["kafka_server_group_coordinator_metrics_offset_commit_total"]; v < 2 {
			return fmt.Errorf("offset commits %v", v)
		}
		if v := m["kafka_server_group_coordinator_metrics_rebalance_total"]; v < 1 {
			return fmt.Errorf("rebalances %v", v)
		}
		if v := m[`kafka_consumergroup_members{consumergroup="lg"}`]; v != 1 {
			return fmt.Errorf("members %v", v)
		}
		for p := int32(0); p < 2; p++ {
			labels := fmt.Sprintf(`{consumergroup="lg",partition="%d",topic="lagged"}`, p)
			cur, ok := m["kafka_consumergroup_current_offset"+labels]
			if !ok {
				return fmt.Errorf("no current offset for partition %d", p)
			}
			end, _ := ends.Lookup("lagged", p)
			if lag := float64(end.Offset) - cur; lag != 3 {
				return fmt.Errorf("partition %d: end %d - committed %v = %v, want 3", p, end.Offset, cur, lag)
			}
			if lag := m["kafka_consumergroup_lag"+labels]; lag != 3 {
				return fmt.Errorf("partition %d: kafka_consumergroup_lag %v", p, lag)
			}
		}
		return nil
	})
}
