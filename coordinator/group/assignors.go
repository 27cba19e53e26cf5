package group

import (
	"bytes"
	"slices"
	"sort"
)

// The server-side assignors of the consumer protocol (KIP-848): Kafka's
// UniformAssignor ("uniform") and RangeAssignor ("range"). Both are
// sticky: a member keeps what it has as far as the balance allows.

// assignorMember is one member as an assignor sees it (Kafka's
// MemberSubscriptionAndAssignment).
type assignorMember struct {
	id         string
	subscribed map[[16]byte]bool
	current    assignment // its current target assignment
}

// assignorSpec is the group as an assignor sees it (Kafka's GroupSpec and
// SubscribedTopicDescriber): members sorted by id, partitions per topic.
type assignorSpec struct {
	members []assignorMember
	topics  map[[16]byte]int32
}

type partitionAssignor interface {
	name() string
	assign(spec assignorSpec) map[string]assignment
}

var assignorsByName = map[string]partitionAssignor{
	"uniform": uniformAssignor{},
	"range":   rangeAssignor{},
	"org.apache.kafka.coordinator.group.assignor.UniformAssignor": uniformAssignor{},
	"org.apache.kafka.coordinator.group.assignor.RangeAssignor":   rangeAssignor{},
}

type tp struct {
	topic [16]byte
	part  int32
}

func sortedTopicIDs(m map[[16]byte]int32) [][16]byte {
	ts := make([][16]byte, 0, len(m))
	for t := range m {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i][:], ts[j][:]) < 0 })
	return ts
}

// uniformAssignor spreads partitions evenly over the members that may
// hold them: with the same subscriptions, counts differ by at most one.
type uniformAssignor struct{}

func (uniformAssignor) name() string { return "uniform" }

func (uniformAssignor) assign(spec assignorSpec) map[string]assignment {
	owner := map[tp]int{} // partition -> member index
	held := make([][]tp, len(spec.members))
	// Keep what members hold, if they still may.
	for i, m := range spec.members {
		for _, t := range m.current.sortedTopics() {
			n, ok := spec.topics[t]
			if !ok || !m.subscribed[t] {
				continue
			}
			for _, p := range m.current[t] {
				k := tp{t, p}
				if _, taken := owner[k]; taken || p >= n {
					continue
				}
				owner[k] = i
				held[i] = append(held[i], k)
			}
		}
	}
	eligible := func(i int, t [16]byte) bool { return spec.members[i].subscribed[t] }
	// Give out the free partitions, each to the least loaded member that
	// may take it.
	for _, t := range sortedTopicIDs(spec.topics) {
		for p := int32(0); p < spec.topics[t]; p++ {
			k := tp{t, p}
			if _, taken := owner[k]; taken {
				continue
			}
			best := -1
			for i := range spec.members {
				if eligible(i, t) && (best < 0 || len(held[i]) < len(held[best])) {
					best = i
				}
			}
			if best >= 0 {
				owner[k] = best
				held[best] = append(held[best], k)
			}
		}
	}
	// Balance: move partitions from the most loaded members to less
	// loaded ones that may hold them, until no move narrows the gap. Each
	// move lowers the sum of squared loads, so this ends.
	for moved := true; moved; {
		moved = false
		order := make([]int, len(spec.members))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return len(held[order[a]]) > len(held[order[b]]) })
		for _, a := range order {
			for j := len(held[a]) - 1; j >= 0 && !moved; j-- {
				k := held[a][j]
				best := -1
				for b := range spec.members {
					if b != a && eligible(b, k.topic) && len(held[b]) < len(held[a])-1 && (best < 0 || len(held[b]) < len(held[best])) {
						best = b
					}
				}
				if best >= 0 {
					held[a] = slices.Delete(held[a], j, j+1)
					held[best] = append(held[best], k)
					owner[k] = best
					moved = true
				}
			}
			if moved {
				break
			}
		}
	}
	return toAssignments(spec, held)
}

func toAssignments(spec assignorSpec, held [][]tp) map[string]assignment {
	out := make(map[string]assignment, len(spec.members))
	for i, m := range spec.members {
		a := assignment{}
		for _, k := range held[i] {
			a[k.topic] = append(a[k.topic], k.part)
		}
		for t := range a {
			slices.Sort(a[t])
		}
		out[m.id] = a
	}
	return out
}

// rangeAssignor gives each member of a topic a contiguous range of its
// partitions (members in id order, the first ones one more if the count
// does not divide), keeping what a member holds within its quota, so that
// members subscribed to co-partitioned topics get the same partition
// numbers.
type rangeAssignor struct{}

func (rangeAssignor) name() string { return "range" }

func (rangeAssignor) assign(spec assignorSpec) map[string]assignment {
	held := make([][]tp, len(spec.members))
	for _, t := range sortedTopicIDs(spec.topics) {
		n := spec.topics[t]
		var subs []int
		for i, m := range spec.members {
			if m.subscribed[t] {
				subs = append(subs, i)
			}
		}
		if len(subs) == 0 {
			continue
		}
		base, extra := int(n)/len(subs), int(n)%len(subs)
		quota := func(rank int) int {
			if rank < extra {
				return base + 1
			}
			return base
		}
		taken := make([]bool, n)
		got := make([]int, len(subs))
		// Sticky: keep current partitions up to the quota.
		for r, i := range subs {
			for _, p := range spec.members[i].current[t] {
				if p < n && !taken[p] && got[r] < quota(r) {
					taken[p] = true
					got[r]++
					held[i] = append(held[i], tp{t, p})
				}
			}
		}
		// The rest, in order, to the members below their quota.
		next := int32(0)
		for r, i := range subs {
			for got[r] < quota(r) {
				for next < n && taken[next] {
					next++
				}
				if next >= n {
					break
				}
				taken[next] = true
				got[r]++
				held[i] = append(held[i], tp{t, next})
			}
		}
	}
	return toAssignments(spec, held)
}
