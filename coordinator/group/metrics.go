package group

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/coordinator/runtime"
)

// Metrics are Kafka's GroupCoordinatorMetrics, named as the JMX
// Prometheus exporter names them: kafka.server:type=group-coordinator-metrics
// (group-count by protocol, consumer-group-count and share-group-count by
// state, the offset and
// rebalance sensors as counters) and the older
// kafka.coordinator.group:type=GroupMetadataManager gauges (NumGroups,
// NumGroups<State>, NumOffsets). The gauges are computed when scraped, by
// a read on every shard.
type Metrics struct {
	reg prometheus.Registerer

	offsetCommits, offsetExpired, offsetDeletions prometheus.Counter
	completedRebalances, classicRebalances        prometheus.Counter
	consumerRebalances, memberExpirations         prometheus.Counter
	shareRebalances                               prometheus.Counter

	collect func() snapshot // set by the service
	// logEnd returns a partition's high watermark, for the lag; nil: no
	// lag gauge.
	logEnd func(topic string, partition int32) (int64, bool)
}

// snapshot is what the gauges show.
type snapshot struct {
	classicByState  map[string]int
	consumerByState map[string]int
	shareByState    map[string]int
	offsets         int
	committed       []committedOffset
	members         map[string]int // group -> members
}

// committedOffset is one group's committed offset of one partition.
type committedOffset struct {
	group, topic string
	partition    int32
	offset       int64
}

var (
	descGroupCount = prometheus.NewDesc("kafka_server_group_coordinator_metrics_group_count",
		"The number of groups, by rebalance protocol (Kafka's group-count).", []string{"protocol"}, nil)
	descConsumerGroupCount = prometheus.NewDesc("kafka_server_group_coordinator_metrics_consumer_group_count",
		"The number of consumer-protocol groups, by state (Kafka's consumer-group-count).", []string{"state"}, nil)
	descShareGroupCount = prometheus.NewDesc("kafka_server_group_coordinator_metrics_share_group_count",
		"The number of share groups, by state (Kafka's share-group-count).", []string{"state"}, nil)
	descNumGroups = prometheus.NewDesc("kafka_coordinator_group_groupmetadatamanager_numgroups",
		"The number of classic groups (Kafka's GroupMetadataManager NumGroups).", nil, nil)
	descNumOffsets = prometheus.NewDesc("kafka_coordinator_group_groupmetadatamanager_numoffsets",
		"The number of committed offsets (Kafka's GroupMetadataManager NumOffsets).", nil, nil)
	// The names of the Prometheus kafka_exporter (danielqsj/kafka_exporter),
	// which dashboards for consumer lag use.
	descCurrentOffset = prometheus.NewDesc("kafka_consumergroup_current_offset",
		"The committed offset of a consumer group on a partition.", []string{"consumergroup", "topic", "partition"}, nil)
	descLag = prometheus.NewDesc("kafka_consumergroup_lag",
		"The high watermark of a partition minus the group's committed offset there.", []string{"consumergroup", "topic", "partition"}, nil)
	descMembers = prometheus.NewDesc("kafka_consumergroup_members",
		"The number of members of a consumer group.", []string{"consumergroup"}, nil)
	classicStateGauges = map[string]*prometheus.Desc{}
)

func init() {
	for _, st := range []classicState{stateEmpty, statePreparingRebalance, stateCompletingRebalance, stateStable, stateDead} {
		classicStateGauges[st.String()] = prometheus.NewDesc("kafka_coordinator_group_groupmetadatamanager_numgroups"+lower(st.String()),
			"The number of classic groups in state "+st.String()+" (Kafka's GroupMetadataManager NumGroups"+st.String()+").", nil, nil)
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// NewMetrics creates the metrics and registers them on reg (nil: none).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_group_coordinator_metrics_" + name, Help: help})
	}
	m := &Metrics{
		reg:                 reg,
		offsetCommits:       c("offset_commit_total", "Offsets committed (Kafka's offset-commit-count)."),
		offsetExpired:       c("offset_expiration_total", "Offsets expired (Kafka's offset-expiration-count)."),
		offsetDeletions:     c("offset_deletion_total", "Offsets deleted by OffsetDelete or DeleteGroups (Kafka's offset-deletion-count)."),
		completedRebalances: c("group_completed_rebalance_total", "Classic group rebalances completed (Kafka's group-completed-rebalance-count)."),
		classicRebalances:   c("rebalance_total", "Classic group rebalances started (Kafka's rebalance-count for the classic protocol)."),
		consumerRebalances:  c("consumer_group_rebalance_total", "Consumer-protocol group epoch bumps (Kafka's consumer-group-rebalance-count)."),
		memberExpirations:   c("member_session_expiration_total", "Members removed because their session timed out."),
		shareRebalances:     c("share_group_rebalance_total", "Share group epoch bumps (Kafka's share-group-rebalance-count)."),
	}
	if reg != nil {
		for _, col := range m.collectors() {
			reg.MustRegister(col)
		}
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.offsetCommits, m.offsetExpired, m.offsetDeletions, m.completedRebalances,
		m.classicRebalances, m.consumerRebalances, m.memberExpirations, m.shareRebalances, gauges{m}}
}

func (m *Metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors() {
		m.reg.Unregister(c)
	}
}

// gauges computes the group and offset gauges at scrape time.
type gauges struct{ m *Metrics }

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGroupCount
	ch <- descConsumerGroupCount
	ch <- descShareGroupCount
	ch <- descNumGroups
	ch <- descNumOffsets
	ch <- descCurrentOffset
	ch <- descLag
	ch <- descMembers
	for _, d := range classicStateGauges {
		ch <- d
	}
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	if g.m.collect == nil {
		return
	}
	s := g.m.collect()
	classic, consumer := 0, 0
	for _, n := range s.classicByState {
		classic += n
	}
	for _, n := range s.consumerByState {
		consumer += n
	}
	ch <- prometheus.MustNewConstMetric(descGroupCount, prometheus.GaugeValue, float64(classic), "classic")
	ch <- prometheus.MustNewConstMetric(descGroupCount, prometheus.GaugeValue, float64(consumer), "consumer")
	share := 0
	for _, n := range s.shareByState {
		share += n
	}
	ch <- prometheus.MustNewConstMetric(descGroupCount, prometheus.GaugeValue, float64(share), "share")
	// Kafka's state tags for share groups: ShareGroupState.toString().
	for _, st := range []string{"Empty", "Stable", "Dead"} {
		ch <- prometheus.MustNewConstMetric(descShareGroupCount, prometheus.GaugeValue, float64(s.shareByState[st]), st)
	}
	for _, st := range []string{"empty", "assigning", "reconciling", "stable", "dead"} {
		ch <- prometheus.MustNewConstMetric(descConsumerGroupCount, prometheus.GaugeValue, float64(s.consumerByState[st]), st)
	}
	ch <- prometheus.MustNewConstMetric(descNumGroups, prometheus.GaugeValue, float64(classic))
	for st, d := range classicStateGauges {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(s.classicByState[st]))
	}
	ch <- prometheus.MustNewConstMetric(descNumOffsets, prometheus.GaugeValue, float64(s.offsets))
	for _, c := range s.committed {
		p := strconv.Itoa(int(c.partition))
		ch <- prometheus.MustNewConstMetric(descCurrentOffset, prometheus.GaugeValue, float64(c.offset), c.group, c.topic, p)
		if g.m.logEnd != nil {
			if end, ok := g.m.logEnd(c.topic, c.partition); ok {
				ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(max(end-c.offset, 0)), c.group, c.topic, p)
			}
		}
	}
	for group, n := range s.members {
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(n), group)
	}
}

// snapshotOf counts one shard's groups and offsets.
func (s *Shard) snapshot() snapshot {
	out := snapshot{classicByState: map[string]int{}, consumerByState: map[string]int{}, shareByState: map[string]int{}, offsets: s.offsets.count, members: map[string]int{}}
	for id, g := range s.groups {
		switch g := g.(type) {
		case *ClassicGroup:
			out.classicByState[g.stateString()]++
			out.members[id] = g.numMembers()
		case *ConsumerGroup:
			out.consumerByState[lower(g.stateString())]++
			out.members[id] = g.numMembers()
		case *ShareGroup:
			out.shareByState[g.stateString()]++
		}
	}
	for group, topics := range s.offsets.committed {
		for topic, parts := range topics {
			for p, o := range parts {
				out.committed = append(out.committed, committedOffset{group, topic, p, o.Offset})
			}
		}
	}
	return out
}

// collectSnapshot reads every shard, waiting at most timeout.
func collectSnapshot(rt *runtime.Runtime[*Shard], timeout time.Duration) snapshot {
	total := snapshot{classicByState: map[string]int{}, consumerByState: map[string]int{}, shareByState: map[string]int{}, members: map[string]int{}}
	done := make(chan []runtime.PartitionResult[snapshot], 1)
	runtime.ReadAll(rt, "metrics", func(s *Shard) (snapshot, error) { return s.snapshot(), nil },
		func(r []runtime.PartitionResult[snapshot]) { done <- r })
	select {
	case rs := <-done:
		for _, r := range rs {
			if r.Err != nil {
				continue
			}
			for k, v := range r.Response.classicByState {
				total.classicByState[k] += v
			}
			for k, v := range r.Response.consumerByState {
				total.consumerByState[k] += v
			}
			for k, v := range r.Response.shareByState {
				total.shareByState[k] += v
			}
			total.offsets += r.Response.offsets
			total.committed = append(total.committed, r.Response.committed...)
			for k, v := range r.Response.members {
				total.members[k] = v
			}
		}
	case <-time.After(timeout):
	}
	return total
}

// shardMetrics is what a shard records; nil-safe.
type shardMetrics struct{ m *Metrics }

func (sm *shardMetrics) offsetCommits(n int) {
	if sm != nil && n > 0 {
		sm.m.offsetCommits.Add(float64(n))
	}
}

func (sm *shardMetrics) offsetsExpired(n int) {
	if sm != nil && n > 0 {
		sm.m.offsetExpired.Add(float64(n))
	}
}

func (sm *shardMetrics) offsetDeletions(n int) {
	if sm != nil && n > 0 {
		sm.m.offsetDeletions.Add(float64(n))
	}
}

func (sm *shardMetrics) classicRebalance() {
	if sm != nil {
		sm.m.classicRebalances.Inc()
	}
}

func (sm *shardMetrics) classicRebalanceCompleted() {
	if sm != nil {
		sm.m.completedRebalances.Inc()
	}
}

func (sm *shardMetrics) consumerRebalance() {
	if sm != nil {
		sm.m.consumerRebalances.Inc()
	}
}

func (sm *shardMetrics) shareRebalance() {
	if sm != nil {
		sm.m.shareRebalances.Inc()
	}
}

func (sm *shardMetrics) classicMemberExpired() {
	if sm != nil {
		sm.m.memberExpirations.Inc()
	}
}

func (sm *shardMetrics) consumerMemberExpired() {
	if sm != nil {
		sm.m.memberExpirations.Inc()
	}
}
