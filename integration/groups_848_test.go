package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// heldPartitions tracks what each kgo member holds, from its callbacks.
type heldPartitions struct {
	mu   sync.Mutex
	held map[string]map[int32]bool // client id -> partitions
}

func (h *heldPartitions) opts(id, topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.ClientID(id),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.held[id] == nil {
				h.held[id] = map[int32]bool{}
			}
			for _, p := range m[topic] {
				h.held[id][p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, p := range m[topic] {
				delete(h.held[id], p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			h.mu.Lock()
			defer h.mu.Unlock()
			for _, p := range m[topic] {
				delete(h.held[id], p)
			}
		}),
	}
}

func (h *heldPartitions) of(id string) map[int32]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int32]bool{}
	for p := range h.held[id] {
		out[p] = true
	}
	return out
}

// pollUntilClosed polls c in the background until it is closed; records
// counts what it consumed.
func pollUntilClosed(ctx context.Context, c *kgo.Client, records chan<- *kgo.Record) {
	go func() {
		for ctx.Err() == nil {
			fs := c.PollFetches(ctx)
			if errors.Is(fs.Err0(), kgo.ErrClientClosed) {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				select {
				case records <- r:
				default:
				}
			})
		}
	}()
}

// Two KIP-848 members share a topic with the server-side assignor;
// ConsumerGroupDescribe shows exactly what each holds.
func TestConsumerProtocolDescribeMatchesMembers(t *testing.T) {
	b := startBroker(t, "")
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 6, "cp")
	h := &heldPartitions{held: map[string]map[int32]bool{}}
	ctx := ctxTimeout(t, 90*time.Second)
	for _, id := range []string{"m1", "m2"} {
		c := newClient(t, b.Seed(), append(h.opts(id, "cp"), kgo.ConsumerGroup("cpg"), kgo.ConsumeTopics("cp"), kgo.ServerSideBalancer())...)
		pollUntilClosed(ctx, c, nil)
	}
	eventually(t, 60*time.Second, func() error {
		described, err := adm.DescribeConsumerGroups(ctx, "cpg")
		if err != nil {
			return err
		}
		g := described["cpg"]
		if g.Err != nil {
			return g.Err
		}
		if g.State != "Stable" || len(g.Members) != 2 || g.AssignorName != "uniform" {
			return fmt.Errorf("group %s with %d members, assignor %q", g.State, len(g.Members), g.AssignorName)
		}
		total := 0
		for _, m := range g.Members {
			got := m.Assignment["cp"]
			held := h.of(m.ClientID)
			if len(got) != len(held) {
				return fmt.Errorf("member %s: described %v, holds %v", m.ClientID, got, held)
			}
			for p := range got {
				if !held[p] {
					return fmt.Errorf("member %s: described %v, holds %v", m.ClientID, got, held)
				}
			}
			if m.MemberType != 1 || m.MemberEpoch != g.Epoch {
				return fmt.Errorf("member %s: type %d epoch %d, group epoch %d", m.ClientID, m.MemberType, m.MemberEpoch, g.Epoch)
			}
			total += len(got)
		}
		if total != 6 {
			return fmt.Errorf("%d partitions held", total)
		}
		return nil
	})
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil || listed["cpg"].GroupType != "consumer" || listed["cpg"].State != "Stable" {
		t.Fatalf("ListGroups(type consumer): %+v %v", listed, err)
	}
}

// A classic group upgrades online when a KIP-848 member joins, keeps its
// classic members, and downgrades back when the KIP-848 member leaves;
// every record is consumed throughout.
func TestConsumerProtocolOnlineMigration(t *testing.T) {
	b := startBroker(t, "", groupBrokerOverrides...)
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 4, "mig")
	ctx := ctxTimeout(t, 120*time.Second)
	records := make(chan *kgo.Record, 10000)
	groupType := func() (string, error) {
		listed, err := adm.ListGroupsByType(ctx, nil)
		if err != nil {
			return "", err
		}
		return listed["migg"].GroupType, nil
	}
	classic := newClient(t, b.Seed(), kgo.ConsumerGroup("migg"), kgo.ConsumeTopics("mig"), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	pollUntilClosed(ctx, classic, records)
	produceN(t, b.Seed(), "mig", 40, "a")
	consumed := map[string]bool{}
	drain := func(want int) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for len(consumed) < want {
			select {
			case r := <-records:
				consumed[string(r.Value)] = true
			case <-deadline:
				t.Fatalf("consumed %d of %d", len(consumed), want)
			}
		}
	}
	drain(40)
	eventually(t, 30*time.Second, func() error {
		if typ, err := groupType(); err != nil || typ != "classic" {
			return fmt.Errorf("group type %q (%v)", typ, err)
		}
		return nil
	})

	modern := newClient(t, b.Seed(), kgo.ConsumerGroup("migg"), kgo.ConsumeTopics("mig"), kgo.ServerSideBalancer(),
		kgo.FetchMaxWait(200*time.Millisecond))
	pollUntilClosed(ctx, modern, records)
	eventually(t, 60*time.Second, func() error {
		if typ, err := groupType(); err != nil || typ != "consumer" {
			return fmt.Errorf("group type %q (%v)", typ, err)
		}
		described, err := adm.DescribeConsumerGroups(ctx, "migg")
		if err != nil {
			return err
		}
		g := described["migg"]
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("upgraded group %s with %d members", g.State, len(g.Members))
		}
		types := map[int8]int{}
		for _, m := range g.Members {
			types[m.MemberType]++
			if len(m.Assignment["mig"]) == 0 {
				return fmt.Errorf("member %s (type %d) holds nothing", m.MemberID, m.MemberType)
			}
		}
		if types[0] != 1 || types[1] != 1 {
			return fmt.Errorf("member types %v, want one classic and one consumer", types)
		}
		return nil
	})
	produceN(t, b.Seed(), "mig", 40, "b")
	drain(80)

	modern.Close()
	eventually(t, 60*time.Second, func() error {
		if typ, err := groupType(); err != nil || typ != "classic" {
			return fmt.Errorf("group type %q after the consumer member left (%v)", typ, err)
		}
		described, err := adm.DescribeGroups(ctx, "migg")
		if err != nil {
			return err
		}
		if g := described["migg"]; g.State != "Stable" || len(g.Members) != 1 {
			return fmt.Errorf("downgraded group %s with %d members", g.State, len(g.Members))
		}
		return nil
	})
	produceN(t, b.Seed(), "mig", 40, "c")
	drain(120)
	var _ kadm.ListedGroups
}
