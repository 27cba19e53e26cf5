package integration

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The cluster APIs of the "operating a cluster" issue: ElectLeaders, leader
// balance, DescribeTopicPartitions, UpdateFeatures and ListConfigResources,
// against real brokers over TCP with kadm, kmsg, kcat and the moldau CLI.

// partitionLeaders is each partition's leader and leader epoch from
// Metadata, and its preferred (first) replica.
type partitionLeader struct{ leader, epoch, preferred int32 }

func partitionLeaders(t *testing.T, adm *kadm.Client, topic string) map[int32]partitionLeader {
	t.Helper()
	md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]partitionLeader{}
	for p, pd := range md.Topics[topic].Partitions {
		out[p] = partitionLeader{pd.Leader, pd.LeaderEpoch, pd.Replicas[0]}
	}
	return out
}

// stopAndReturn stops node i, waits until no partition of topic is led by
// it, starts it again and waits for full ISRs: the partitions it prefers
// are then led by others. It returns them, with their leader epochs.
func stopAndReturn(t *testing.T, c *replicatedCluster, topic string, partitions int32, i int) map[int32]partitionLeader {
	t.Helper()
	id := c.nodes[i].id
	c.stop(i)
	adm := newAdmin(t, strings.Join(c.seeds(), ","))
	eventually(t, 30*time.Second, func() error {
		for p, l := range partitionLeaders(t, adm, topic) {
			if l.leader == id || l.leader < 0 {
				return fmt.Errorf("%s-%d: leader %d with node %d stopped", topic, p, l.leader, id)
			}
		}
		return nil
	})
	c.restart(i)
	adm = newAdmin(t, strings.Join(c.seeds(), ","))
	waitISR(t, adm, topic, partitions, 3)
	moved := map[int32]partitionLeader{}
	for p, l := range partitionLeaders(t, adm, topic) {
		if l.preferred == id {
			if l.leader == id {
				t.Fatalf("%s-%d: back to node %d without an election", topic, p, id)
			}
			moved[p] = l
		}
	}
	if len(moved) == 0 {
		t.Fatalf("node %d is the preferred replica of no partition of %s", id, topic)
	}
	return moved
}

// waitPreferred waits until every partition in moved is led by its
// preferred replica at a higher leader epoch, as Metadata tells.
func waitPreferred(t *testing.T, adm *kadm.Client, topic string, moved map[int32]partitionLeader) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		now := partitionLeaders(t, adm, topic)
		for p, before := range moved {
			if l := now[p]; l.leader != before.preferred || l.epoch <= before.epoch {
				return fmt.Errorf("%s-%d: leader %d epoch %d, want %d above epoch %d", topic, p, l.leader, l.epoch, before.preferred, before.epoch)
			}
		}
		return nil
	})
}

// A broker stops and its leaderships move; it comes back and a PREFERRED
// ElectLeaders (the moldau CLI for one partition, kadm for the rest) gives
// them back, with a new leader epoch, as Metadata, DescribeTopicPartitions
// and kcat -L show; asking again is ELECTION_NOT_NEEDED.
func TestElectLeadersPreferred(t *testing.T) {
	const partitions = 6
	c := startReplicatedCluster(t, "auto.leader.rebalance.enable=false")
	adm := newAdmin(t, c.nodes[0].seed())
	ctx := ctxTimeout(t, 3*time.Minute)
	if _, err := adm.CreateTopic(ctx, partitions, 3, nil, "elect"); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, "elect", partitions, 3)
	moved := stopAndReturn(t, c, "elect", partitions, 0)
	adm = newAdmin(t, strings.Join(c.seeds(), ","))

	// One partition through the CLI, with kafka-leader-election.sh's
	// output.
	first := slices.Min(mapKeys(moved))
	cli := &cliCluster{brokers: strings.Join(c.seeds(), ",")}
	out := cli.ok(t, nil, "cluster", "elect", "--type", "preferred", "--topic", "elect", "--partition", fmt.Sprint(first))
	if want := fmt.Sprintf("Successfully completed leader election (PREFERRED) for partitions elect-%d\n", first); out != want {
		t.Fatalf("moldau cluster elect: %q, want %q", out, want)
	}
	waitPreferred(t, adm, "elect", map[int32]partitionLeader{first: moved[first]})

	// The rest through kadm, naming every partition: those already led
	// by their preferred replica are ELECTION_NOT_NEEDED.
	set := kadm.TopicsSet{}
	for p := range int32(partitions) {
		set.Add("elect", p)
	}
	rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	for p, r := range rs["elect"] {
		_, was := moved[p]
		if want := was && p != first; want != (r.Err == nil) || !want && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Fatalf("elect-%d: %v (%s)", p, r.Err, r.ErrMessage)
		}
	}
	waitPreferred(t, adm, "elect", moved)

	// Everything balanced: all partitions answer nothing, the CLI
	// prints nothing.
	rs, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil || len(rs["elect"]) != 0 {
		t.Fatalf("all partitions when balanced: %v %v", rs, err)
	}
	if out := cli.ok(t, nil, "cluster", "elect", "--type", "preferred", "--all-topic-partitions"); out != "" {
		t.Fatalf("moldau cluster elect --all-topic-partitions: %q", out)
	}
	out = cli.ok(t, nil, "cluster", "elect", "--type", "preferred", "--topic", "elect", "--partition", fmt.Sprint(first))
	if want := fmt.Sprintf("Valid replica already elected for partitions elect-%d\n", first); out != want {
		t.Fatalf("elect again: %q, want %q", out, want)
	}
	r := cli.moldau(t, nil, "cluster", "elect", "--type", "preferred", "--topic", "nope", "--partition", "0")
	if r.code != 1 || !strings.Contains(r.stdout, "Error completing leader election (PREFERRED) for partition: nope-0: UNKNOWN_TOPIC_OR_PARTITION") ||
		!strings.Contains(r.stderr, "1 replica(s) could not be elected") {
		t.Fatalf("unknown partition: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// DescribeTopicPartitions and kcat agree with Metadata.
	want := partitionLeaders(t, adm, "elect")
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "elect"
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, newClient(t, c.seeds()[1]))
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range resp.Topics[0].Partitions {
		if w := want[sp.Partition]; sp.LeaderID != w.leader || sp.LeaderEpoch != w.epoch || len(sp.ISR) != 3 {
			t.Fatalf("DescribeTopicPartitions elect-%d: %+v, Metadata %+v", sp.Partition, sp, w)
		}
	}
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Log("no kcat: skipping kcat -L")
		return
	}
	lout, err := exec.CommandContext(ctx, kcat, "-L", "-b", c.seeds()[2], "-t", "elect").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, lout)
	}
	for p, w := range want {
		if line := fmt.Sprintf("partition %d, leader %d,", p, w.leader); !strings.Contains(string(lout), line) {
			t.Fatalf("kcat -L lacks %q:\n%s", line, lout)
		}
	}
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// With leader.imbalance.check.interval.seconds=1, leadership goes back to
// the preferred replicas on its own once the broker is back in the ISRs.
func TestAutoLeaderRebalance(t *testing.T) {
	const partitions = 6
	c := startReplicatedCluster(t, "leader.imbalance.check.interval.seconds=1")
	adm := newAdmin(t, c.nodes[0].seed())
	if _, err := adm.CreateTopic(ctxTimeout(t, time.Minute), partitions, 3, nil, "balance"); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, "balance", partitions, 3)
	c.stop(1)
	adm = newAdmin(t, strings.Join(c.seeds(), ","))
	eventually(t, 30*time.Second, func() error {
		for p, l := range partitionLeaders(t, adm, "balance") {
			if l.leader == c.nodes[1].id || l.leader < 0 {
				return fmt.Errorf("balance-%d: leader %d", p, l.leader)
			}
		}
		return nil
	})
	moved := map[int32]partitionLeader{}
	for p, l := range partitionLeaders(t, adm, "balance") {
		if l.preferred == c.nodes[1].id {
			moved[p] = l
		}
	}
	c.restart(1)
	adm = newAdmin(t, strings.Join(c.seeds(), ","))
	waitPreferred(t, adm, "balance", moved)
	for p, l := range partitionLeaders(t, adm, "balance") {
		if l.leader != l.preferred {
			t.Fatalf("balance-%d: leader %d, preferred %d", p, l.leader, l.preferred)
		}
	}
}

// A partition whose only in-sync replica is gone is leaderless; an
// UNCLEAN ElectLeaders makes the live replica outside the ISR its leader
// (the topic does not allow unclean election: asking is the consent).
func TestElectLeadersUnclean(t *testing.T) {
	c := startReplicatedCluster(t, "auto.leader.rebalance.enable=false")
	ctx := ctxTimeout(t, 3*time.Minute)
	cl := newClient(t, c.nodes[0].seed())
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "unclean", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{c.nodes[0].id, c.nodes[1].id}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	create.Topics = append(create.Topics, ct)
	cresp, err := create.RequestWith(ctx, cl)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %+v %v", cresp, err)
	}
	adm := newAdmin(t, c.nodes[0].seed())
	waitISR(t, adm, "unclean", 1, 2)

	// Node 2 stops: the ISR is node 1 alone. Node 1 stops: no leader
	// (the ISR keeps its last member, or with eligible leader replicas
	// empties into the ELR). Node 2 comes back (with node 3 a quorum
	// again), neither in the ISR nor eligible: still no leader.
	c.stop(1)
	adm = newAdmin(t, strings.Join(c.seeds(), ","))
	eventually(t, 30*time.Second, func() error {
		if l, isr := partitionState(t, adm, "unclean", 0); l != c.nodes[0].id || !slices.Equal(isr, []int32{c.nodes[0].id}) {
			return fmt.Errorf("leader %d ISR %v", l, isr)
		}
		return nil
	})
	c.stop(0)
	c.restart(1)
	adm = newAdmin(t, strings.Join(c.seeds(), ","))
	if l, isr := partitionState(t, adm, "unclean", 0); l != -1 || slices.Contains(isr, c.nodes[1].id) {
		t.Fatalf("before the election: leader %d ISR %v", l, isr)
	}

	// A PREFERRED election cannot help; an UNCLEAN one elects node 2.
	set := kadm.TopicsSet{}
	set.Add("unclean", 0)
	rs, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil || !errors.Is(rs["unclean"][0].Err, kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("preferred: %+v %v", rs, err)
	}
	rs, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, set)
	if err != nil || rs["unclean"][0].Err != nil {
		t.Fatalf("unclean: %+v %v", rs, err)
	}
	// The broker that forwarded the election answered once its own
	// metadata had it; the others follow.
	eventually(t, 10*time.Second, func() error {
		if l, isr := partitionState(t, adm, "unclean", 0); l != c.nodes[1].id || !slices.Equal(isr, []int32{c.nodes[1].id}) {
			return fmt.Errorf("after the unclean election: leader %d ISR %v", l, isr)
		}
		return nil
	})
	rs, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, set)
	if err != nil || !errors.Is(rs["unclean"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("unclean again: %+v %v", rs, err)
	}
	// The new leader serves.
	pcl := newClient(t, strings.Join(c.seeds(), ","), kgo.DefaultProduceTopic("unclean"))
	if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the unclean election: %v", err)
	}
}

// DescribeTopicPartitions with a small partition limit, page by page with
// the cursor, over many topics and partitions: every partition exactly
// once, in order, each page within the limit.
func TestDescribeTopicPartitionsPagingOverTCP(t *testing.T) {
	b := startBroker(t, "")
	adm := newAdmin(t, b.Seed())
	ctx := ctxTimeout(t, time.Minute)
	var want []string
	for i, n := range []int32{5, 1, 3, 8, 2, 1, 4} {
		name := fmt.Sprintf("page-%02d", i)
		if _, err := adm.CreateTopic(ctx, n, 1, nil, name); err != nil {
			t.Fatal(err)
		}
		for p := range n {
			want = append(want, fmt.Sprintf("%s-%d", name, p))
		}
	}
	cl := newClient(t, b.Seed())
	for _, limit := range []int32{1, 3, 7, 24} {
		var got []string
		var cursor *kmsg.DescribeTopicPartitionsRequestCursor
		for page := 0; page < 100; page++ {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			req.ResponsePartitionLimit, req.Cursor = limit, cursor
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, st := range resp.Topics {
				for _, sp := range st.Partitions {
					if strings.HasPrefix(*st.Topic, "page-") {
						got = append(got, fmt.Sprintf("%s-%d", *st.Topic, sp.Partition))
					}
					n++
				}
			}
			if n > int(limit) {
				t.Fatalf("limit %d: a page of %d", limit, n)
			}
			if resp.NextCursor == nil {
				break
			}
			cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("limit %d:\n got %v\nwant %v", limit, got, want)
		}
	}
}

// UpdateFeatures through kadm and kmsg: validate-only changes nothing, a
// safe downgrade and an upgrade of transaction.version show in
// ApiVersions at once, errors are INVALID_UPDATE_VERSION with Kafka's
// messages; ListConfigResources lists topics, the broker, and groups
// with configs.
func TestUpdateFeaturesAndListConfigResources(t *testing.T) {
	b := startBroker(t, "")
	cl := newClient(t, b.Seed())
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, time.Minute)
	finalized := func() map[string]int16 {
		t.Helper()
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int16{}
		for _, f := range resp.FinalizedFeatures {
			if f.MinVersionLevel != f.MaxVersionLevel {
				t.Fatalf("%s finalized at %d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
			}
			out[f.Name] = f.MaxVersionLevel
		}
		return out
	}
	if f := finalized(); f["transaction.version"] != 2 || f["metadata.version"] != 25 {
		t.Fatalf("finalized features: %v", f)
	}
	tv := func(level int16, typ int8) kadm.FeatureUpdate {
		return kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: level, UpgradeType: typ}
	}
	if res, err := adm.UpdateFeatures(ctx, true, tv(1, 2)); err != nil || res.Error() != nil {
		t.Fatalf("validate only: %v %v", res, err)
	}
	if f := finalized(); f["transaction.version"] != 2 {
		t.Fatalf("validate only changed: %v", f)
	}
	if res, err := adm.UpdateFeatures(ctx, false, tv(1, 2)); err != nil || res.Error() != nil {
		t.Fatalf("safe downgrade: %v %v", res, err)
	}
	if f := finalized(); f["transaction.version"] != 1 {
		t.Fatalf("after the downgrade: %v", f)
	}
	for _, c := range []struct {
		update kadm.FeatureUpdate
		msg    string
	}{
		{tv(0, 1), "Can't downgrade the version of this feature without setting the upgrade type"},
		{tv(3, 1), "Local controller 1 only supports versions 0-2"},
		{kadm.FeatureUpdate{Feature: "streams.version", MaxVersionLevel: 1, UpgradeType: 1}, "does not support this feature"},
		{kadm.FeatureUpdate{Feature: "metadata.version", MaxVersionLevel: 20, UpgradeType: 2}, "Refusing to perform the requested downgrade"},
	} {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = c.update.Feature, c.update.MaxVersionLevel, c.update.UpgradeType
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, c.msg) {
			t.Fatalf("%+v: %+v %v", c.update, resp, err)
		}
	}
	if res, err := adm.UpdateFeatures(ctx, false, tv(2, 1)); err != nil || res.Error() != nil {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	if f := finalized(); f["transaction.version"] != 2 {
		t.Fatalf("after the upgrade: %v", f)
	}

	// ListConfigResources: a topic, a group with a config, the broker.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "listed"); err != nil {
		t.Fatal(err)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "configured-group"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "consumer.session.timeout.ms", kmsg.StringPtr("50000")
	r.Configs = append(r.Configs, cfg)
	alter.Resources = append(alter.Resources, r)
	if aresp, err := alter.RequestWith(ctx, cl); err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("group config: %+v %v", aresp, err)
	}
	eventually(t, 10*time.Second, func() error {
		listed, err := adm.ListConfigResources(ctx)
		if err != nil || listed.Err != nil {
			return fmt.Errorf("%v %v", listed.Err, err)
		}
		var got []string
		for _, r := range listed.Resources {
			got = append(got, fmt.Sprintf("%d:%s", r.Type, r.Name))
		}
		for _, w := range []string{"32:configured-group", "8:1", "4:1", "2:listed"} {
			if !slices.Contains(got, w) {
				return fmt.Errorf("%s not in %v", w, got)
			}
		}
		return nil
	})
	listed, err := adm.ListConfigResources(ctx, kadm.ConfigResourceType(64))
	if err != nil || !errors.Is(listed.Err, kerr.UnsupportedVersion) {
		t.Fatalf("an unknown type: %+v %v", listed, err)
	}
}
