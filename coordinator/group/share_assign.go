package group

import (
	"bytes"
	"math"
	"slices"
	"sort"
)

// The share groups' server-side assignor, Kafka's SimpleAssignor
// ("simple", group.share.assignors): every partition goes to at least one
// member, a partition may go to several when members outnumber partitions,
// and assignments differ in size by at most one. Balance comes first,
// then stickiness (a member keeps what it had where balance allows).
//
// With every member subscribed to the same topics the assignor balances
// over all their partitions together (SimpleHomogeneousAssignmentBuilder);
// otherwise topic by topic among the members subscribed to it
// (SimpleHeterogeneousAssignmentBuilder). Either way, for a set of P
// partitions and M members:
//
//   - desired sharing S = ceil(M / P): how many members each partition
//     should have;
//   - desired count of the k-th member = ceil(x(k+1)) - ceil(xk) with
//     x = S·P / M, so the counts sum to S·P and differ by at most one;
//   - each member keeps its current partitions of the set, then members
//     above their count give up partitions, then partitions shared by more
//     than S members lose members, then partitions below S members go, in
//     turn, to the members below their count that do not have them yet.
//
// Only assignable partitions are handed out: those whose share-group
// state is initialized (GroupSpec.isPartitionAssignable). Kafka walks hash
// sets; Moldau walks members by id and partitions by topic id and index,
// so the same inputs always give the same assignment.

type shareAssignMember struct {
	id         string
	subscribed map[[16]byte]bool // existing topics it subscribes to
	current    assignment        // its current target assignment
}

type shareAssignSpec struct {
	members    []shareAssignMember // sorted by id
	partitions map[[16]byte]int32  // subscribed topics' partition counts
	assignable func(topic [16]byte, p int32) bool
}

type sharePartition struct {
	topic [16]byte
	p     int32
}

func lessSharePartition(a, b sharePartition) int {
	if c := bytes.Compare(a.topic[:], b.topic[:]); c != 0 {
		return c
	}
	return int(a.p) - int(b.p)
}

// simpleAssign is SimpleAssignor.assign.
func simpleAssign(spec shareAssignSpec) map[string]assignment {
	out := map[string]assignment{}
	if len(spec.members) == 0 {
		return out
	}
	b := newSimpleBuilder(spec)
	union := map[[16]byte]bool{}
	for _, m := range spec.members {
		for t := range m.subscribed {
			union[t] = true
		}
	}
	if len(union) == 0 {
		for _, m := range spec.members {
			out[m.id] = assignment{}
		}
		return out
	}
	all := make([]int, len(spec.members))
	for i := range all {
		all[i] = i
	}
	if b.homogeneous() {
		b.assignScope(sortedIDs(union), all)
	} else {
		for _, t := range sortedIDs(union) {
			var subs []int
			for i, m := range spec.members {
				if m.subscribed[t] {
					subs = append(subs, i)
				}
			}
			b.assignScope([][16]byte{t}, subs)
		}
	}
	for i, m := range spec.members {
		out[m.id] = b.result(i)
	}
	return out
}

// simpleBuilder holds every member's assignment as it is being built.
type simpleBuilder struct {
	spec shareAssignSpec
	cur  []map[sharePartition]bool
}

func newSimpleBuilder(spec shareAssignSpec) *simpleBuilder {
	b := &simpleBuilder{spec: spec, cur: make([]map[sharePartition]bool, len(spec.members))}
	for i, m := range spec.members {
		set := map[sharePartition]bool{}
		for t, ps := range m.current {
			if _, ok := spec.partitions[t]; !ok || !anySubscribes(spec.members, t) {
				continue // nobody subscribes to it any more
			}
			for _, p := range ps {
				set[sharePartition{t, p}] = true
			}
		}
		b.cur[i] = set
	}
	return b
}

func anySubscribes(ms []shareAssignMember, t [16]byte) bool {
	for _, m := range ms {
		if m.subscribed[t] {
			return true
		}
	}
	return false
}

func (b *simpleBuilder) homogeneous() bool {
	first := b.spec.members[0].subscribed
	for _, m := range b.spec.members[1:] {
		if len(m.subscribed) != len(first) {
			return false
		}
		for t := range m.subscribed {
			if !first[t] {
				return false
			}
		}
	}
	return true
}

func (b *simpleBuilder) result(i int) assignment {
	a := assignment{}
	for tp := range b.cur[i] {
		a[tp.topic] = append(a[tp.topic], tp.p)
	}
	for t := range a {
		slices.Sort(a[t])
	}
	return a
}

// assignScope balances the partitions of topics over members (indices,
// in order), as one of Kafka's builders does for its set.
func (b *simpleBuilder) assignScope(topics [][16]byte, members []int) {
	inScope := map[[16]byte]bool{}
	var targets []sharePartition
	for _, t := range topics {
		inScope[t] = true
		for p := int32(0); p < b.spec.partitions[t]; p++ {
			if b.spec.assignable == nil || b.spec.assignable(t, p) {
				targets = append(targets, sharePartition{t, p})
			}
		}
	}
	sharing, desired := desiredCounts(len(targets), members, len(b.spec.members))

	// Current partitions of the scope, by partition and by member.
	byPartition := map[sharePartition]map[int]bool{}
	byMember := map[int]map[sharePartition]bool{}
	for i := range b.spec.members {
		for tp := range b.cur[i] {
			if !inScope[tp.topic] {
				continue
			}
			addTo(byPartition, tp, i)
			addTo(byMember, i, tp)
		}
	}
	// Members above their count give up partitions.
	for i := range b.spec.members {
		have := sortedSharePartitions(byMember[i])
		for _, tp := range have {
			if len(byMember[i]) <= desired[i] {
				break
			}
			b.revoke(i, tp, byPartition, byMember)
		}
	}
	// Partitions shared more than desired lose members.
	for _, tp := range sortedSharePartitions(keysOf(byPartition)) {
		for _, i := range sortedInts(byPartition[tp]) {
			if len(byPartition[tp]) <= sharing {
				break
			}
			b.revoke(i, tp, byPartition, byMember)
		}
	}
	for _, tp := range targets {
		if byPartition[tp] == nil {
			byPartition[tp] = map[int]bool{}
		}
	}
	b.assignRemaining(members, sharing, desired, byPartition, byMember)
}

// desiredCounts is the desired sharing of each of n partitions and the
// desired count of each member (indexed by member index, zero for members
// outside the scope).
func desiredCounts(n int, members []int, numMembers int) (int, []int) {
	desired := make([]int, numMembers)
	if n == 0 || len(members) == 0 {
		return 0, desired
	}
	sharing := (len(members) + n - 1) / n
	precise := float64(sharing*n) / float64(len(members))
	for k, i := range members {
		desired[i] = int(math.Ceil(precise*float64(k+1))) - int(math.Ceil(precise*float64(k)))
	}
	return sharing, desired
}

func (b *simpleBuilder) revoke(i int, tp sharePartition, byPartition map[sharePartition]map[int]bool, byMember map[int]map[sharePartition]bool) {
	delete(b.cur[i], tp)
	delete(byPartition[tp], i)
	delete(byMember[i], tp)
}

// assignRemaining hands partitions below the desired sharing to the
// members below their count, round robin, skipping a member that already
// has the partition; a partition no member can take stays short.
func (b *simpleBuilder) assignRemaining(members []int, sharing int, desired []int, byPartition map[sharePartition]map[int]bool, byMember map[int]map[sharePartition]bool) {
	var unfilled []int
	for _, i := range members {
		if len(byMember[i]) < desired[i] {
			unfilled = append(unfilled, i)
		}
	}
	pos, assignedThisRound := 0, false
	for _, tp := range sortedSharePartitions(keysOf(byPartition)) {
		if len(unfilled) == 0 {
			return
		}
		for toMake := sharing - len(byPartition[tp]); toMake > 0 && len(unfilled) > 0; {
			if pos >= len(unfilled) {
				if !assignedThisRound {
					break
				}
				pos, assignedThisRound = 0, false
			}
			i := unfilled[pos]
			pos++
			if byPartition[tp][i] {
				continue
			}
			b.cur[i][tp] = true
			addTo(byPartition, tp, i)
			addTo(byMember, i, tp)
			toMake--
			assignedThisRound = true
			if len(byMember[i]) >= desired[i] {
				pos--
				unfilled = slices.Delete(unfilled, pos, pos+1)
			}
		}
	}
}

func addTo[K comparable, V comparable](m map[K]map[V]bool, k K, v V) {
	s := m[k]
	if s == nil {
		s = map[V]bool{}
		m[k] = s
	}
	s[v] = true
}

func keysOf[V any](m map[sharePartition]V) map[sharePartition]bool {
	out := make(map[sharePartition]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func sortedSharePartitions(s map[sharePartition]bool) []sharePartition {
	out := make([]sharePartition, 0, len(s))
	for tp := range s {
		out = append(out, tp)
	}
	slices.SortFunc(out, lessSharePartition)
	return out
}

func sortedInts(s map[int]bool) []int {
	out := make([]int, 0, len(s))
	for i := range s {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}
