package dev

import (
	"context"
	"fmt"
	"slices"

	"github.com/moldau/moldau/cmd/moldau/console"
)

// watch follows the console's snapshots and logs what changed between
// two of them: the active controller, brokers registering, fenced or
// gone, every partition's leader and ISR, and group rebalances (a new
// generation or epoch, or a new state). Snapshots come about once per
// poll interval, so two changes within one interval show as one.
func watch(ctx context.Context, p *console.Poller, log *EventLog) {
	var prev *console.Snapshot
	for {
		s, changed := p.Current()
		if s != nil && s != prev {
			if prev != nil {
				diffEvents(prev, s, log)
			}
			prev = s
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

func diffEvents(a, b *console.Snapshot, log *EventLog) {
	if a.ControllerID != b.ControllerID {
		log.Add("controller", fmt.Sprintf("active controller %d -> %d", a.ControllerID, b.ControllerID), map[string]any{"from": a.ControllerID, "to": b.ControllerID})
	}
	brokers := map[int32]console.Broker{}
	for _, br := range a.Brokers {
		brokers[br.ID] = br
	}
	for _, br := range b.Brokers {
		old, ok := brokers[br.ID]
		delete(brokers, br.ID)
		state := func(x console.Broker) string {
			switch {
			case x.Fenced:
				return "fenced"
			case x.Alive:
				return "alive"
			}
			return "gone"
		}
		if !ok || state(old) != state(br) {
			from := "absent"
			if ok {
				from = state(old)
			}
			log.Add("broker", fmt.Sprintf("broker %d %s -> %s", br.ID, from, state(br)), map[string]any{"broker": br.ID, "from": from, "to": state(br)})
		}
	}
	for id := range brokers {
		log.Add("broker", fmt.Sprintf("broker %d gone from the cluster", id), map[string]any{"broker": id})
	}
	parts := map[string]console.Partition{}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			parts[fmt.Sprintf("%s-%d", t.Name, p.Partition)] = p
		}
	}
	for _, t := range b.Topics {
		if t.Internal {
			continue // __consumer_offsets' fifty partitions would drown the rest
		}
		for _, p := range t.Partitions {
			key := fmt.Sprintf("%s-%d", t.Name, p.Partition)
			old, ok := parts[key]
			if !ok {
				continue
			}
			data := map[string]any{"topic": t.Name, "partition": p.Partition, "leader": p.Leader, "leader_epoch": p.LeaderEpoch, "isr": p.ISR}
			if old.Leader != p.Leader {
				log.Add("leader", fmt.Sprintf("%s leader %d -> %d (epoch %d)", key, old.Leader, p.Leader, p.LeaderEpoch), data)
			}
			if !slices.Equal(old.ISR, p.ISR) {
				log.Add("isr", fmt.Sprintf("%s ISR %v -> %v", key, old.ISR, p.ISR), data)
			}
		}
	}
	groups := map[string]console.Group{}
	for _, g := range a.Groups {
		groups[g.ID] = g
	}
	for _, g := range b.Groups {
		old, ok := groups[g.ID]
		if ok && (old.Epoch != g.Epoch || old.State != g.State) {
			log.Add("rebalance", fmt.Sprintf("group %s %s gen %d -> %s gen %d, %d members", g.ID, old.State, old.Epoch, g.State, g.Epoch, len(g.Members)),
				map[string]any{"group": g.ID, "state": g.State, "epoch": g.Epoch, "members": len(g.Members)})
		}
	}
}
