package console

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
)

// pollFlows fills s.Producers and s.Wires: DescribeProducers on the
// leaders of every partition outside the internal topics (one request per
// leader, as ListOffsets), the named producers, and the rates of the
// counters s already holds.
func (p *Poller) pollFlows(ctx context.Context, s, prev *Snapshot) {
	var described map[tp][]activeProducer
	err := p.ask("producers", func() error {
		var err error
		described, err = p.describeProducers(ctx, s)
		return err
	})
	if err != nil && err != errNotServed {
		s.Errors["producers"] = errorText(err)
	}
	var named []NamedProducer
	if p.named != nil {
		named = p.named()
	}
	now := p.now()
	rate := p.flows.observe(now, flowCounters(s, described, named))
	producers, more := producersFrom(s, described, named, rate, now)
	if more > 0 {
		s.Truncated["producers"] = more
	}
	s.Producers = make([]Producer, 0, len(producers))
	for _, pf := range producers {
		s.Producers = append(s.Producers, pf.Producer)
	}
	s.Wires = wiresFrom(s, prev, producers, rate)
	applyBytes(s.Wires, s.Metrics, s.Brokers)
}

// describeProducers asks the leaders for the active producers of s's
// partitions. A leader that fails leaves its partitions out; the first
// error is returned with what the others answered.
func (p *Poller) describeProducers(ctx context.Context, s *Snapshot) (map[tp][]activeProducer, error) {
	set := kadm.TopicsSet{}
	for _, t := range s.Topics {
		if t.Internal || t.Error != "" {
			continue
		}
		for _, pt := range t.Partitions {
			if pt.Leader >= 0 {
				set.Add(t.Name, pt.Partition)
			}
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	ds, err := p.adm.DescribeProducers(ctx, set)
	return activeProducers(ds), err
}

// activeProducers reads DescribeProducers' answer; a partition's error
// leaves it out.
func activeProducers(ds kadm.DescribedProducersTopics) map[tp][]activeProducer {
	out := map[tp][]activeProducer{}
	ds.EachPartition(func(d kadm.DescribedProducersPartition) {
		if d.Err != nil {
			return
		}
		for _, ap := range d.ActiveProducers {
			out[tp{d.Topic, d.Partition}] = append(out[tp{d.Topic, d.Partition}],
				activeProducer{id: ap.ProducerID, lastSeq: ap.LastSequence, lastTime: ap.LastTimestamp})
		}
	})
	return out
}
