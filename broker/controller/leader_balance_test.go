package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
)

func newBalancingController(t *testing.T, overrides ...string) (*QuorumController, *fakeRaft, *clock) {
	t.Helper()
	return newTestControllerWith(t, func(cfg *Config) {
		cfg.MaxReplicationFactor = 3
		b, _, err := config.Load("", overrides)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Broker = b
	})
}

// With a one-second interval, leadership goes back to the preferred
// replica once it is in the ISR again, without a request; a partition
// whose preferred replica may not lead keeps its leader.
func TestLeaderBalance(t *testing.T) {
	c, _, _ := newBalancingController(t, "leader.imbalance.check.interval.seconds=1")
	e := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		e[id] = register(t, c, id, nil)
	}
	createAssigned(t, c, "t", [][]int32{{1, 2, 3}, {2, 3, 1}}, nil)
	createAssigned(t, c, "s", [][]int32{{1, 3}}, nil)
	heartbeat(t, c, 1, e[1], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })
	if p := partition(t, c, "t", 0); p.Leader != 2 {
		t.Fatalf("fencing did not move t-0: %+v", p)
	}
	heartbeat(t, c, 1, e[1], nil)
	// Only t-0 gets 1 back in its ISR; s-0 stays led by 3.
	p := partition(t, c, "t", 0)
	if got, err := alterPartition(t, c, alterReq{version: 3, broker: 2, brokerEpoch: e[2], topic: "t", leaderEpoch: p.LeaderEpoch, partEpoch: p.PartitionEpoch, isr: []int32{2, 3, 1}}); err != nil || got.ErrorCode != 0 {
		t.Fatalf("expand: %+v %v", got, err)
	}
	waitFor(t, c, "t-0 led by its preferred replica", func(im *metadata.Image) bool {
		p := partOf(im, "t", 0)
		return p.Leader == 1 && p.LeaderEpoch == 2
	})
	if p := partition(t, c, "s", 0); p.Leader != 3 {
		t.Fatalf("s-0 moved though its preferred replica is out of the ISR: %+v", p)
	}
	if v := c.metrics.imbalanced.Load(); v != 1 {
		t.Fatalf("imbalance after balancing: %d", v)
	}
}

// auto.leader.rebalance.enable=false: nothing moves; an explicit
// ElectLeaders still does.
func TestLeaderBalanceDisabled(t *testing.T) {
	c, f, _ := newBalancingController(t, "auto.leader.rebalance.enable=false", "leader.imbalance.check.interval.seconds=1")
	if c.balance.interval != 0 {
		t.Fatal("balance scheduled though disabled")
	}
	e := map[int32]int64{}
	for id := int32(1); id <= 2; id++ {
		e[id] = register(t, c, id, nil)
	}
	createAssigned(t, c, "t", [][]int32{{1, 2}}, nil)
	heartbeat(t, c, 1, e[1], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })
	heartbeat(t, c, 1, e[1], nil)
	p := partition(t, c, "t", 0)
	if got, err := alterPartition(t, c, alterReq{version: 3, broker: 2, brokerEpoch: e[2], topic: "t", leaderEpoch: p.LeaderEpoch, partEpoch: p.PartitionEpoch, isr: []int32{2, 1}}); err != nil || got.ErrorCode != 0 {
		t.Fatalf("expand: %+v %v", got, err)
	}
	n := logLength(f)
	// The balance would have run within a second; run the event it
	// would have scheduled instead and see that it does nothing.
	c.queue.push(event{"maybeBalancePartitionLeaders", c.maybeBalancePartitionLeaders})
	if p := partition(t, c, "t", 0); p.Leader != 2 || logLength(f) != n {
		t.Fatalf("balanced though disabled: %+v", p)
	}
	if got := electCodes(t, c, electReq(electionPreferred, map[string][]int32{"t": {0}})); len(got) != 1 || got[0] != answer("t", 0, 0) {
		t.Fatalf("elect: %v", got)
	}
	if got := electCodes(t, c, electReq(electionPreferred, map[string][]int32{"t": {0}})); got[0] != answer("t", 0, kerr.ElectionNotNeeded.Code) {
		t.Fatalf("elect again: %v", got)
	}
}
