package console

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pollGroups lists the groups, describes up to maxGroups of them (classic
// ones with DescribeGroups, consumer ones with ConsumerGroupDescribe) and
// fetches their committed offsets; lag is against s's log end offsets.
func (p *Poller) pollGroups(ctx context.Context, s *Snapshot) error {
	listed, err := p.adm.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return err
	}
	all := listed.Sorted()
	if len(all) > maxGroups {
		s.Truncated["groups"] = len(all) - maxGroups
		all = all[:maxGroups]
	}
	var classic, consumer, ids []string
	for _, g := range all {
		ids = append(ids, g.Group)
		if g.GroupType == "consumer" {
			consumer = append(consumer, g.Group)
		} else if g.GroupType == "" || g.GroupType == "classic" {
			classic = append(classic, g.Group)
		}
	}
	var described kadm.DescribedGroups
	if len(classic) > 0 {
		described, _ = p.adm.DescribeGroups(ctx, classic...) // per-group errors are in the map
	}
	var describedNew kadm.DescribedConsumerGroups
	if len(consumer) > 0 {
		if err := p.ask("consumer_groups", func() error {
			var err error
			describedNew, err = p.adm.DescribeConsumerGroups(ctx, consumer...)
			return err
		}); err != nil && len(describedNew) == 0 {
			s.Errors["consumer_groups"] = errorText(err)
		}
	}
	var offsets kadm.FetchOffsetsResponses
	if len(ids) > 0 {
		offsets = p.adm.FetchManyOffsets(ctx, ids...)
	}
	s.Groups = groupsFrom(all, described, describedNew, offsets, s.Topics)
	return nil
}

// groupsFrom assembles the groups in the order listed.
func groupsFrom(listed []kadm.ListedGroup, classic kadm.DescribedGroups, consumer kadm.DescribedConsumerGroups,
	offsets kadm.FetchOffsetsResponses, topics []Topic) []Group {
	ends := map[tp]int64{}
	for _, t := range topics {
		for _, pt := range t.Partitions {
			ends[tp{t.Name, pt.Partition}] = pt.LogEndOffset
		}
	}
	out := make([]Group, 0, len(listed))
	for _, l := range listed {
		g := Group{ID: l.Group, Protocol: "classic", ProtocolType: l.ProtocolType, State: l.State,
			Coordinator: l.Coordinator, Members: []Member{}, Offsets: []GroupOffset{}}
		if l.GroupType != "" {
			g.Protocol = l.GroupType
		}
		if d, ok := classic[l.Group]; ok {
			fillClassic(&g, d)
		}
		if d, ok := consumer[l.Group]; ok {
			fillConsumer(&g, d)
		}
		if f, ok := offsets[l.Group]; ok {
			if f.Err != nil && g.Error == "" {
				g.Error = errorText(f.Err)
			}
			fillOffsets(&g, f.Fetched, ends)
		}
		out = append(out, g)
	}
	return out
}

func fillClassic(g *Group, d kadm.DescribedGroup) {
	if d.Err != nil {
		g.Error = errorText(d.Err)
		return
	}
	g.State, g.ProtocolType, g.Assignor, g.Coordinator = d.State, d.ProtocolType, d.Protocol, d.Coordinator.NodeID
	for _, m := range d.Members {
		mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: []TopicPartitions{}}
		if m.InstanceID != nil {
			mm.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			mm.Assigned = consumerAssigned(a)
		}
		g.Members = append(g.Members, mm)
	}
	// DescribeGroups carries no generation; the epoch stays 0 for classic
	// groups (Kafka's tools do not show one either).
}

// consumerAssigned reads a classic consumer's assignment (the consumer
// protocol's MemberAssignment), sorted.
func consumerAssigned(a *kmsg.ConsumerMemberAssignment) []TopicPartitions {
	out := []TopicPartitions{}
	for _, t := range a.Topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		out = append(out, TopicPartitions{Topic: t.Topic, Partitions: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

func fillConsumer(g *Group, d kadm.DescribedConsumerGroup) {
	if d.Err != nil {
		g.Error = errorText(d.Err)
		return
	}
	g.State, g.Epoch, g.Assignor, g.Coordinator = d.State, d.Epoch, d.AssignorName, d.Coordinator.NodeID
	for _, m := range d.Members {
		mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: topicsSet(m.Assignment)}
		if m.InstanceID != nil {
			mm.InstanceID = *m.InstanceID
		}
		g.Members = append(g.Members, mm)
	}
}

func topicsSet(ts kadm.TopicsSet) []TopicPartitions {
	out := []TopicPartitions{}
	for _, t := range ts.Sorted() {
		out = append(out, TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
	}
	return out
}

// fillOffsets lists the committed offsets sorted by topic and partition
// with their lag behind the log end offset; Group.Lag sums the known lags.
func fillOffsets(g *Group, fetched kadm.OffsetResponses, ends map[tp]int64) {
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.At < 0 {
			return
		}
		gop := GroupOffset{Topic: o.Topic, Partition: o.Partition, Committed: o.At, LogEnd: -1, Lag: -1}
		if end, ok := ends[tp{o.Topic, o.Partition}]; ok && end >= 0 {
			gop.LogEnd, gop.Lag = end, max(0, end-o.At)
			g.Lag += gop.Lag
		}
		g.Offsets = append(g.Offsets, gop)
	})
	sort.Slice(g.Offsets, func(i, j int) bool {
		a, b := g.Offsets[i], g.Offsets[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
}

// pollTransactions lists the transactional ids and describes up to
// maxTransactions of them.
func (p *Poller) pollTransactions(ctx context.Context, s *Snapshot) error {
	listed, err := p.adm.ListTransactions(ctx, nil, nil)
	if err != nil && len(listed) == 0 {
		return err
	}
	ids := listed.TransactionalIDs()
	sort.Strings(ids)
	if len(ids) > maxTransactions {
		s.Truncated["transactions"] = len(ids) - maxTransactions
		ids = ids[:maxTransactions]
	}
	var described kadm.DescribedTransactions
	if len(ids) > 0 {
		described, err = p.adm.DescribeTransactions(ctx, ids...)
		if err != nil && len(described) == 0 {
			return err
		}
	}
	s.Transactions = transactionsFrom(ids, listed, described)
	return nil
}

// transactionsFrom assembles the transactions in ids' order.
func transactionsFrom(ids []string, listed kadm.ListedTransactions, described kadm.DescribedTransactions) []Transaction {
	out := make([]Transaction, 0, len(ids))
	for _, id := range ids {
		l := listed[id]
		tx := Transaction{ID: id, State: l.State, ProducerID: l.ProducerID, ProducerEpoch: -1,
			Coordinator: l.Coordinator, StartTime: -1, Partitions: []TopicPartitions{}}
		if d, ok := described[id]; ok {
			if d.Err != nil {
				tx.Error = errorText(d.Err)
			} else {
				tx.State, tx.ProducerID, tx.ProducerEpoch = d.State, d.ProducerID, d.ProducerEpoch
				tx.Coordinator, tx.TimeoutMs, tx.StartTime = d.Coordinator, d.TimeoutMillis, d.StartTimestamp
				tx.Partitions = topicsSet(d.Topics)
			}
		}
		out = append(out, tx)
	}
	return out
}
