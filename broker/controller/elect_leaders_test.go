package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
)

func electReq(typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 2, typ
	if topics != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
	}
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = name, topics[name]
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// electCodes runs an election and returns each partition's answer, in
// the response's order, as "topic-partition:ERROR" ("topic-partition" for
// none).
func electCodes(t *testing.T, c *QuorumController, req *kmsg.ElectLeadersRequest) []string {
	t.Helper()
	resp, err := c.ElectLeaders(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if (sp.ErrorCode == 0) != (sp.ErrorMessage == nil) {
				t.Fatalf("%s-%d: code %d with message %v", st.Topic, sp.Partition, sp.ErrorCode, sp.ErrorMessage)
			}
			out = append(out, answer(st.Topic, sp.Partition, sp.ErrorCode))
		}
	}
	return out
}

func answer(topic string, p int32, code int16) string {
	s := fmt.Sprintf("%s-%d", topic, p)
	if code != 0 {
		s += ":" + kerr.ErrorForCode(code).Error()
	}
	return s
}

// Kafka's electLeader rules, one case at a time against one cluster whose
// state the cases build up in order.
func TestElectLeaders(t *testing.T) {
	c, f, _ := newReplicatedController(t)
	e := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		e[id] = register(t, c, id, nil)
	}
	createAssigned(t, c, "t", [][]int32{{1, 2, 3}, {2, 3, 1}}, nil)
	createAssigned(t, c, "u", [][]int32{{1, 2}}, nil)
	// u's ISR is just 1; fencing 1 leaves it leaderless.
	if got, err := alterPartition(t, c, alterReq{version: 3, broker: 1, brokerEpoch: e[1], topic: "u", isr: []int32{1}}); err != nil || got.ErrorCode != 0 {
		t.Fatalf("shrink: %+v %v", got, err)
	}
	fence := func(id int32) {
		heartbeat(t, c, id, e[id], func(hb *kmsg.BrokerHeartbeatRequest) { hb.WantFence = true })
	}
	unfence := func(id int32) { heartbeat(t, c, id, e[id], nil) }

	type step struct {
		name    string
		before  func()
		typ     int8
		topics  map[string][]int32 // nil: all partitions
		want    []string
		check   func(im *metadata.Image) string
		written bool
	}
	pref, uncl := electionPreferred, electionUnclean
	steps := []step{
		{name: "preferred already leads", typ: pref, topics: map[string][]int32{"t": {0, 1}},
			want: []string{answer("t", 0, kerr.ElectionNotNeeded.Code), answer("t", 1, kerr.ElectionNotNeeded.Code)}},
		{name: "unknown topic and partition", typ: pref, topics: map[string][]int32{"nope": {0}, "t": {7, -1}},
			want: []string{answer("nope", 0, kerr.UnknownTopicOrPartition.Code), answer("t", 7, kerr.UnknownTopicOrPartition.Code), answer("t", -1, kerr.UnknownTopicOrPartition.Code)}},
		{name: "preferred fenced and out of the ISR", before: func() { fence(1) }, typ: pref, topics: map[string][]int32{"t": {0}},
			want: []string{answer("t", 0, kerr.PreferredLeaderNotAvailable.Code)},
			check: func(im *metadata.Image) string {
				if p := partOf(im, "t", 0); p.Leader != 2 || slices.Contains(p.ISR, 1) {
					return "fencing 1 did not move t-0 to 2"
				}
				return ""
			}},
		{name: "preferred unfenced but still out of the ISR", before: func() { unfence(1) }, typ: pref, topics: map[string][]int32{"t": {0}},
			want: []string{answer("t", 0, kerr.PreferredLeaderNotAvailable.Code)}},
		{name: "preferred back in the ISR", before: func() {
			p := partition(t, c, "t", 0)
			if got, err := alterPartition(t, c, alterReq{version: 3, broker: 2, brokerEpoch: e[2], topic: "t", leaderEpoch: p.LeaderEpoch, partEpoch: p.PartitionEpoch, isr: []int32{2, 3, 1}}); err != nil || got.ErrorCode != 0 {
				t.Fatalf("expand: %+v %v", got, err)
			}
		}, typ: pref, topics: map[string][]int32{"t": {0, 0}}, written: true,
			// Named twice: the second is judged as the first left it.
			want: []string{answer("t", 0, 0), answer("t", 0, kerr.ElectionNotNeeded.Code)},
			check: func(im *metadata.Image) string {
				if p := partOf(im, "t", 0); p.Leader != 1 || p.LeaderEpoch != 2 || !slices.Equal(p.ISR, []int32{2, 3, 1}) {
					return "t-0 is not led by 1 at leader epoch 2"
				}
				return ""
			}},
		{name: "unclean with a leader", typ: uncl, topics: map[string][]int32{"t": {1}},
			want: []string{answer("t", 1, kerr.ElectionNotNeeded.Code)}},
		{name: "unclean, no live replica", before: func() { fence(1); fence(2) }, typ: uncl, topics: map[string][]int32{"u": {0}},
			want: []string{answer("u", 0, kerr.EligibleLeadersNotAvailable.Code)}},
		{name: "unclean elects a replica outside the ISR", before: func() { unfence(2) }, typ: uncl, topics: map[string][]int32{"u": {0}}, written: true,
			want: []string{answer("u", 0, 0)},
			check: func(im *metadata.Image) string {
				if p := partOf(im, "u", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderRecoveryState != leaderRecovering {
					return "u-0 is not led by 2 alone, recovering"
				}
				return ""
			}},
		// All partitions: fencing 1 and 2 left 3 alone in t's ISRs, and
		// u is led by 2 alone: no preferred replica may lead.
		{name: "all partitions, none eligible", before: func() { unfence(1) }, typ: pref,
			want: []string{answer("t", 0, kerr.PreferredLeaderNotAvailable.Code), answer("t", 1, kerr.PreferredLeaderNotAvailable.Code),
				answer("u", 0, kerr.PreferredLeaderNotAvailable.Code)}},
		// Back in the ISRs, the partitions not led by their preferred
		// replica are elected and answered; those that are, are not.
		{name: "all partitions, preferred", before: func() {
			p := partition(t, c, "t", 0)
			if got, err := alterPartition(t, c, alterReq{version: 3, broker: 3, brokerEpoch: e[3], topic: "t", leaderEpoch: p.LeaderEpoch, partEpoch: p.PartitionEpoch, isr: []int32{3, 1}}); err != nil || got.ErrorCode != 0 {
				t.Fatalf("expand: %+v %v", got, err)
			}
		}, typ: pref, written: true,
			want: []string{answer("t", 0, 0), answer("t", 1, kerr.PreferredLeaderNotAvailable.Code), answer("u", 0, kerr.PreferredLeaderNotAvailable.Code)}},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		n := logLength(f)
		req := electReq(s.typ, s.topics)
		if got := electCodes(t, c, req); !slices.Equal(got, s.want) {
			t.Fatalf("%s: answered %v, want %v", s.name, got, s.want)
		}
		if wrote := logLength(f) > n; wrote != s.written {
			t.Fatalf("%s: wrote %v", s.name, wrote)
		}
		if s.check != nil {
			if msg := s.check(image(t, c)); msg != "" {
				t.Fatalf("%s: %s", s.name, msg)
			}
		}
	}
}

func partOf(im *metadata.Image, topic string, p int32) metadata.Partition {
	t, _ := im.Topic(topic)
	return t.Partitions[p]
}

// The request-wide rules: an empty list does nothing, an unknown type and
// an expired deadline fail it all.
func TestElectLeadersRequestErrors(t *testing.T) {
	c, f, _ := newReplicatedController(t)
	register(t, c, 1, nil)
	createAssigned(t, c, "t", [][]int32{{1}}, nil)
	n := logLength(f)
	resp, err := c.ElectLeaders(ctx(t), electReq(electionPreferred, map[string][]int32{}))
	if err != nil || len(resp.Topics) != 0 || logLength(f) != n {
		t.Fatalf("empty list: %+v %v", resp, err)
	}
	if _, err := c.ElectLeaders(ctx(t), electReq(2, map[string][]int32{"t": {0}})); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("election type 2: %v", err)
	}
	req := electReq(electionPreferred, map[string][]int32{"t": {0}})
	req.TimeoutMillis = 0
	if _, err := c.ElectLeaders(ctx(t), req); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("timeout 0: %v", err)
	}
	// v0 has no election type: always preferred.
	req = electReq(electionUnclean, map[string][]int32{"t": {0}})
	req.Version = 0
	if got := electCodes(t, c, req); !slices.Equal(got, []string{answer("t", 0, kerr.ElectionNotNeeded.Code)}) {
		t.Fatalf("v0: %v", got)
	}
}
