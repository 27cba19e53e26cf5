package console

import (
	"errors"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
)

// The pure half of a poll: answers in, snapshot parts out. No I/O here,
// so the unit tests build snapshots from hand-made answers.

// topicsFromMetadata lists the topics sorted by name, partitions by
// number, offsets unknown until applyOffsets.
func topicsFromMetadata(md kadm.Metadata) []Topic {
	out := make([]Topic, 0, len(md.Topics))
	for _, td := range md.Topics.Sorted() {
		t := Topic{Name: td.Topic, ID: topicID(td.ID), Internal: td.IsInternal, Partitions: []Partition{}}
		if td.Err != nil {
			t.Error = errorText(td.Err)
		}
		for _, pd := range td.Partitions.Sorted() {
			pt := Partition{Partition: pd.Partition, Leader: pd.Leader, LeaderEpoch: pd.LeaderEpoch,
				Replicas: nonNil(pd.Replicas), ISR: nonNil(pd.ISR), OfflineReplicas: nonNil(pd.OfflineReplicas),
				LogStartOffset: -1, LogEndOffset: -1, HighWatermark: -1, LastStable: -1}
			if pd.Err != nil {
				pt.Error = errorText(pd.Err)
			}
			t.Partitions = append(t.Partitions, pt)
		}
		out = append(out, t)
	}
	return out
}

func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return uuid.UUID(id).String() // Kafka's form: URL-safe base64, unpadded
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}

// brokersFrom lists the brokers by id: the live ones from Metadata, the
// fenced ones DescribeCluster named, and every other id some partition
// names as a replica (dead or absent: Alive false, no address).
func brokersFrom(live kadm.BrokerDetails, fenced map[int32]kmsg.DescribeClusterResponseBroker, topics []Topic) []Broker {
	byID := map[int32]Broker{}
	for _, b := range live {
		br := Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Alive: true, Size: -1}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		byID[b.NodeID] = br
	}
	for id, b := range fenced {
		br := Broker{ID: id, Host: b.Host, Port: b.Port, Fenced: true, Size: -1}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		byID[id] = br
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				if _, ok := byID[r]; !ok {
					byID[r] = Broker{ID: r, Size: -1}
				}
			}
		}
	}
	out := make([]Broker, 0, len(byID))
	for _, b := range byID {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// applyLogDirs sets broker and replica sizes from DescribeLogDirs. A
// broker with no answer (or a failed one) keeps its sizes from prev.
func applyLogDirs(s, prev *Snapshot, dirs kadm.DescribedAllLogDirs) {
	prevBroker := map[int32]Broker{}
	for _, b := range prev.Brokers {
		prevBroker[b.ID] = b
	}
	prevPart := partitionIndex(prev)
	answered := map[int32]bool{}
	sizes := map[tp]map[int32]int64{}
	for i := range s.Brokers {
		b := &s.Brokers[i]
		ds, ok := dirs[b.ID]
		if !ok || ds.Error() != nil && len(ds) == 0 {
			if pb, ok := prevBroker[b.ID]; ok {
				b.LogDirs, b.Size = pb.LogDirs, pb.Size
			}
			continue
		}
		answered[b.ID] = true
		b.Size = 0
		for _, d := range ds.Sorted() {
			ld := LogDir{Dir: d.Dir, Size: 0}
			if d.Err != nil {
				ld.Error = errorText(d.Err)
			}
			for topic, ps := range d.Topics {
				for pn, dp := range ps {
					if dp.IsFuture {
						continue
					}
					ld.Size += dp.Size
					k := tp{topic, pn}
					if sizes[k] == nil {
						sizes[k] = map[int32]int64{}
					}
					sizes[k][b.ID] = dp.Size
				}
			}
			b.Size += ld.Size
			b.LogDirs = append(b.LogDirs, ld)
		}
	}
	for ti := range s.Topics {
		t := &s.Topics[ti]
		for pi := range t.Partitions {
			pt := &t.Partitions[pi]
			k := tp{t.Name, pt.Partition}
			old := prevPart[k]
			for _, r := range pt.Replicas {
				size, ok := sizes[k][r]
				if !answered[r] && old != nil {
					size, ok = old.ReplicaSizes[r]
				}
				if ok {
					if pt.ReplicaSizes == nil {
						pt.ReplicaSizes = map[int32]int64{}
					}
					pt.ReplicaSizes[r] = size
				}
			}
		}
	}
}

// partitionIndex maps each partition of s to its entry.
func partitionIndex(s *Snapshot) map[tp]*Partition {
	idx := map[tp]*Partition{}
	for ti := range s.Topics {
		t := &s.Topics[ti]
		for pi := range t.Partitions {
			idx[tp{t.Name, t.Partitions[pi].Partition}] = &t.Partitions[pi]
		}
	}
	return idx
}

// applyOffsets sets each partition's offsets from the three ListOffsets
// answers. A partition whose answer failed keeps prev's offsets and gets
// the error; the first such error is returned.
func applyOffsets(s, prev *Snapshot, start, end, stable map[tp]listed) error {
	prevPart := partitionIndex(prev)
	var first error
	for ti := range s.Topics {
		t := &s.Topics[ti]
		for pi := range t.Partitions {
			pt := &t.Partitions[pi]
			k := tp{t.Name, pt.Partition}
			st, sok := start[k]
			en, eok := end[k]
			ls, lok := stable[k]
			err := errors.Join(st.err, en.err, ls.err)
			if !sok || !eok || !lok {
				err = errors.Join(err, errors.New("no ListOffsets answer"))
			}
			if err != nil {
				if first == nil {
					first = err
				}
				if pt.Error == "" {
					pt.Error = errorText(err)
				}
				if old := prevPart[k]; old != nil {
					pt.LogStartOffset, pt.LogEndOffset, pt.HighWatermark, pt.LastStable =
						old.LogStartOffset, old.LogEndOffset, old.HighWatermark, old.LastStable
				}
				continue
			}
			pt.LogStartOffset, pt.LogEndOffset, pt.HighWatermark, pt.LastStable = st.offset, en.offset, en.offset, ls.offset
		}
	}
	return first
}
