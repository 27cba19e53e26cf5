package console

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// Flows: who talks to whom, and how fast. The poller turns counters it
// already reads (high watermarks, committed offsets) and the producers'
// sequence numbers (DescribeProducers) into rates over a short window,
// and aggregates them into wires: one per producer and leader broker, per
// leader and follower broker, per group member and leader broker, per
// group and its coordinator, per transactional producer and its
// coordinator. Never one per partition: a cluster of 1,000 partitions on
// three brokers has a handful of wires.

const (
	// rateWindow is the time a rate is measured over: long enough that a
	// producer sending a burst every half second reads as steady, short
	// enough that an idle wire is still within a few seconds.
	rateWindow = 3 * time.Second
	// producerIdle: a producer id DescribeProducers lists but that wrote
	// nothing for this long (its last timestamp, by the broker's clock)
	// is left out; Kafka keeps producer state for a day.
	producerIdle = 30 * time.Second
	// maxProducers bounds Snapshot.Producers (the fastest first); the
	// rest are counted in Truncated["producers"].
	maxProducers = 50
	// maxWiredGroups and maxWiredMembers bound the consumer wires: the
	// first groups with members (in listed order), then the others, and
	// the first members of each. The page draws a box for each.
	maxWiredGroups  = 12
	maxWiredMembers = 8
)

// Wire kinds. From and To are the direction records travel (a fetch is
// sent the other way); the coordinator wires carry no records.
const (
	WireProduce          = "produce"           // producer:ID -> broker:LEADER
	WireReplicate        = "replicate"         // broker:LEADER -> broker:FOLLOWER
	WireConsume          = "consume"           // broker:LEADER -> member:GROUP/MEMBER
	WireGroupCoordinator = "group_coordinator" // group:GROUP -> broker:COORDINATOR
	WireTxnCoordinator   = "txn_coordinator"   // producer:ID -> broker:COORDINATOR
)

// NamedProducer is a producer the program embedding the console knows by
// name (`moldau dev`'s built-in producers, through Config.Producers).
type NamedProducer struct {
	Name     string
	ClientID string
	Topic    string
	// Partitions it has written (none: any of Topic's).
	Partitions []int32
	// ProducerID is its idempotent producer id (-1: none, or not yet
	// known); DescribeProducers' entries of that id are this producer's.
	ProducerID      int64
	TransactionalID string
	// Records is how many records it has sent so far (a counter).
	Records int64
}

// Producer is a client writing records: a named producer, or a producer
// id DescribeProducers lists on the leaders as having written within
// producerIdle (named by its transactional id when Transactions has it).
type Producer struct {
	ID              string            `json:"id"` // the wires' endpoint: "producer:" + ID
	Name            string            `json:"name"`
	ClientID        string            `json:"client_id,omitempty"`
	ProducerID      int64             `json:"producer_id"` // -1 unknown
	TransactionalID string            `json:"transactional_id,omitempty"`
	Partitions      []TopicPartitions `json:"partitions"`
	Rate            float64           `json:"rate"` // records per second over rateWindow
}

// Wire is who talks to whom. Rate is records per second over rateWindow
// (produced, replicated: the leader's high watermark, or consumed: the
// group's committed offsets); 0 idle. Down: an end is a broker that is
// not alive; such a wire has no rate, and a wire that reached a broker
// before it went down is kept, down, until the broker is back.
type Wire struct {
	Kind       string  `json:"kind"`
	From       string  `json:"from"`
	To         string  `json:"to"`
	Partitions int     `json:"partitions"`
	Rate       float64 `json:"rate"`
	// Bytes is bytes per second, estimated from the broker's metrics
	// (flows_bytes.go); 0 unknown.
	Bytes float64 `json:"bytes,omitempty"`
	Down  bool    `json:"down,omitempty"`
}

// counterKey names one counter the flow meter follows.
type counterKey struct {
	kind      byte // 'h' high watermark, 'c' committed offset, 's' producer sequence, 'n' named producer's records
	id        string
	topic     string
	partition int32
}

type flowSample struct {
	at time.Time
	v  map[counterKey]int64
}

// flowMeter keeps the counters of the last rateWindow of polls. Owned by
// the polling goroutine.
type flowMeter struct {
	samples []flowSample
}

// observe records the counters at time at and returns their rates: the
// increase per second since the oldest sample within the window that had
// the counter (0 for a counter seen first now, or one that went down: a
// new producer epoch, a deleted and re-created topic).
func (m *flowMeter) observe(at time.Time, v map[counterKey]int64) func(counterKey) float64 {
	m.samples = append(m.samples, flowSample{at: at, v: v})
	for len(m.samples) > 1 && !m.samples[1].at.After(at.Add(-rateWindow)) {
		m.samples = m.samples[1:]
	}
	samples := m.samples[:len(m.samples)-1]
	return func(k counterKey) float64 {
		cur, ok := v[k]
		if !ok {
			return 0
		}
		for _, s := range samples {
			base, ok := s.v[k]
			if !ok {
				continue
			}
			dt := at.Sub(s.at).Seconds()
			if dt <= 0 || cur < base {
				return 0
			}
			return round1(float64(cur-base) / dt)
		}
		return 0
	}
}

// round1 rounds to a tenth, so a steady flow does not read as a change
// every poll.
func round1(r float64) float64 { return float64(int64(r*10+0.5)) / 10 }

// activeProducer is one DescribeProducers entry.
type activeProducer struct {
	id       int64
	lastSeq  int32
	lastTime int64 // Unix ms, the broker's clock
}

// flowCounters lists the counters of s, the producers described and the
// named producers.
func flowCounters(s *Snapshot, described map[tp][]activeProducer, named []NamedProducer) map[counterKey]int64 {
	v := map[counterKey]int64{}
	for _, t := range s.Topics {
		for _, p := range t.Partitions {
			if p.HighWatermark >= 0 {
				v[counterKey{'h', "", t.Name, p.Partition}] = p.HighWatermark
			}
		}
	}
	for _, g := range s.Groups {
		for _, o := range g.Offsets {
			v[counterKey{'c', g.ID, o.Topic, o.Partition}] = o.Committed
		}
	}
	for k, aps := range described {
		for _, ap := range aps {
			v[counterKey{'s', strconv.FormatInt(ap.id, 10), k.topic, k.partition}] = int64(ap.lastSeq)
		}
	}
	for _, n := range named {
		v[counterKey{'n', n.Name, "", 0}] = n.Records
	}
	return v
}

// partFlow is one producer's rate into one partition.
type partFlow struct {
	tp   tp
	rate float64
}

// producerFlows is a producer with where it writes, for the wires.
type producerFlows struct {
	Producer
	flows []partFlow
}

// producersFrom names the producers: the named ones (with their producer
// id's partitions, if described), then every other producer id that
// wrote within producerIdle of now, the fastest first, at most
// maxProducers; it returns how many more there were.
func producersFrom(s *Snapshot, described map[tp][]activeProducer, named []NamedProducer, rate func(counterKey) float64, now time.Time) ([]producerFlows, int) {
	byPID := map[int64][]tp{}
	for k, aps := range described {
		for _, ap := range aps {
			if ap.lastTime >= now.Add(-producerIdle).UnixMilli() || rate(seqKey(ap.id, k)) > 0 {
				byPID[ap.id] = append(byPID[ap.id], k)
			}
		}
	}
	txnByPID := map[int64]string{}
	for _, tx := range s.Transactions {
		if tx.ProducerID >= 0 {
			txnByPID[tx.ProducerID] = tx.ID
		}
	}
	var out []producerFlows
	for _, n := range named {
		pf := producerFlows{Producer: Producer{ID: n.Name, Name: n.Name, ClientID: n.ClientID, ProducerID: n.ProducerID, TransactionalID: n.TransactionalID}}
		if tps, ok := byPID[n.ProducerID]; ok && n.ProducerID >= 0 {
			delete(byPID, n.ProducerID)
			for _, k := range tps {
				pf.flows = append(pf.flows, partFlow{k, rate(seqKey(n.ProducerID, k))})
			}
		} else {
			// No sequence numbers: its records, spread evenly over the
			// partitions it wrote (or its topic's).
			parts := n.Partitions
			if len(parts) == 0 {
				for _, t := range s.Topics {
					if t.Name == n.Topic {
						for _, p := range t.Partitions {
							parts = append(parts, p.Partition)
						}
					}
				}
			}
			r := rate(counterKey{'n', n.Name, "", 0})
			for _, p := range parts {
				pf.flows = append(pf.flows, partFlow{tp{n.Topic, p}, r / float64(len(parts))})
			}
		}
		out = append(out, pf)
	}
	var others []producerFlows
	for id, tps := range byPID {
		pf := producerFlows{Producer: Producer{ID: "pid-" + strconv.FormatInt(id, 10), Name: "producer id " + strconv.FormatInt(id, 10), ProducerID: id}}
		if txn, ok := txnByPID[id]; ok {
			pf.Name, pf.TransactionalID = txn, txn
		}
		for _, k := range tps {
			pf.flows = append(pf.flows, partFlow{k, rate(seqKey(id, k))})
		}
		others = append(others, pf)
	}
	for i := range others {
		others[i].finish()
	}
	slices.SortFunc(others, func(a, b producerFlows) int {
		return cmp.Or(cmp.Compare(b.Rate, a.Rate), cmp.Compare(a.ProducerID, b.ProducerID))
	})
	for i := range out {
		out[i].finish()
	}
	out = append(out, others...)
	if len(out) > maxProducers {
		return out[:maxProducers], len(out) - maxProducers
	}
	return out, 0
}

func seqKey(id int64, k tp) counterKey {
	return counterKey{'s', strconv.FormatInt(id, 10), k.topic, k.partition}
}

// finish sorts the flows and sets Partitions and Rate from them.
func (pf *producerFlows) finish() {
	slices.SortFunc(pf.flows, func(a, b partFlow) int {
		return cmp.Or(cmp.Compare(a.tp.topic, b.tp.topic), cmp.Compare(a.tp.partition, b.tp.partition))
	})
	pf.Partitions = []TopicPartitions{}
	var sum float64
	for _, f := range pf.flows {
		sum += f.rate
		if n := len(pf.Partitions); n == 0 || pf.Partitions[n-1].Topic != f.tp.topic {
			pf.Partitions = append(pf.Partitions, TopicPartitions{Topic: f.tp.topic})
		}
		last := &pf.Partitions[len(pf.Partitions)-1]
		last.Partitions = append(last.Partitions, f.tp.partition)
	}
	pf.Rate = round1(sum)
}

// wiredGroups is the groups that get boxes and wires: those with
// members first, in listed order, at most maxWiredGroups.
func wiredGroups(groups []Group) []Group {
	var out []Group
	for pass := 0; pass < 2; pass++ {
		for _, g := range groups {
			if (len(g.Members) > 0) == (pass == 0) && len(out) < maxWiredGroups {
				out = append(out, g)
			}
		}
	}
	return out
}

// MemberEnd is the wire endpoint of a group member.
func MemberEnd(group, member string) string { return "member:" + group + "/" + member }

func brokerEnd(id int32) string { return "broker:" + strconv.Itoa(int(id)) }

// wiresFrom aggregates the flows of s into wires, sorted by kind, from
// and to. prev's wires that reached a broker that is now down are kept,
// down, until it is back.
func wiresFrom(s, prev *Snapshot, producers []producerFlows, rate func(counterKey) float64) []Wire {
	alive := map[int32]bool{}
	for _, b := range s.Brokers {
		alive[b.ID] = b.Alive
	}
	type key struct{ kind, from, to string }
	acc := map[key]*Wire{}
	add := func(kind, from, to string, r float64, down bool) {
		k := key{kind, from, to}
		w := acc[k]
		if w == nil {
			w = &Wire{Kind: kind, From: from, To: to}
			acc[k] = w
		}
		w.Partitions++
		w.Rate += r
		w.Down = w.Down || down
	}
	leader := map[tp]int32{}
	for _, t := range s.Topics {
		for _, p := range t.Partitions {
			leader[tp{t.Name, p.Partition}] = p.Leader
			if p.Leader < 0 {
				continue
			}
			r := rate(counterKey{'h', "", t.Name, p.Partition})
			for _, f := range p.Replicas {
				if f != p.Leader {
					add(WireReplicate, brokerEnd(p.Leader), brokerEnd(f), r, !alive[p.Leader] || !alive[f])
				}
			}
		}
	}
	txnCoord := map[string]int32{}
	for _, tx := range s.Transactions {
		txnCoord[tx.ID] = tx.Coordinator
	}
	for _, pf := range producers {
		from := "producer:" + pf.ID
		for _, f := range pf.flows {
			if l, ok := leader[f.tp]; ok && l >= 0 {
				add(WireProduce, from, brokerEnd(l), f.rate, !alive[l])
			}
		}
		if c, ok := txnCoord[pf.TransactionalID]; ok && pf.TransactionalID != "" && c >= 0 {
			add(WireTxnCoordinator, from, brokerEnd(c), 0, !alive[c])
		}
	}
	for _, g := range wiredGroups(s.Groups) {
		if g.Coordinator >= 0 {
			add(WireGroupCoordinator, "group:"+g.ID, brokerEnd(g.Coordinator), 0, !alive[g.Coordinator])
		}
		for _, m := range g.Members[:min(len(g.Members), maxWiredMembers)] {
			for _, a := range m.Assigned {
				for _, pn := range a.Partitions {
					if l, ok := leader[tp{a.Topic, pn}]; ok && l >= 0 {
						add(WireConsume, brokerEnd(l), MemberEnd(g.ID, m.ID), rate(counterKey{'c', g.ID, a.Topic, pn}), !alive[l])
					}
				}
			}
		}
	}
	if prev != nil {
		for _, w := range prev.Wires {
			k := key{w.Kind, w.From, w.To}
			if _, ok := acc[k]; ok || !touchesDown(w, alive) {
				continue
			}
			w.Down, w.Rate = true, 0
			acc[k] = &w
		}
	}
	out := make([]Wire, 0, len(acc))
	for _, w := range acc {
		if w.Down {
			w.Rate = 0
		}
		w.Rate = round1(w.Rate)
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Wire) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return out
}

// touchesDown reports whether one of w's ends is a broker that is not
// alive (or no longer known at all).
func touchesDown(w Wire, alive map[int32]bool) bool {
	for _, end := range []string{w.From, w.To} {
		if id, ok := brokerID(end); ok && !alive[id] {
			return true
		}
	}
	return false
}

func brokerID(end string) (int32, bool) {
	const p = "broker:"
	if len(end) <= len(p) || end[:len(p)] != p {
		return 0, false
	}
	n, err := strconv.ParseInt(end[len(p):], 10, 32)
	return int32(n), err == nil
}
