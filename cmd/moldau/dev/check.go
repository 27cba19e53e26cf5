package dev

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxAnomalies bounds each list of anomalies a check keeps.
const maxAnomalies = 1000

// checkResult is what the last check found.
type checkResult struct {
	at         time.Time
	err        string
	logRecords int64
	lost       map[string][]Anomaly // producer ->
	duplicates map[string][]Anomaly // producer ->
	twice      map[string][]Anomaly // group ->
	skipped    map[string][]Anomaly // group ->
}

// partLog is one partition's log as a check read it: the built-in
// producers' ids by offset, between the log start and the high watermark.
type partLog struct {
	start, hwm int64
	ids        map[int64]string
	offsets    map[string][]int64 // id -> offsets it is at
}

type tp struct {
	topic     string
	partition int32
}

// Check reads back, from each partition's current leader and from its log
// start to its high watermark, every topic the built-in producers wrote
// to, and compares the logs with the ledger:
//   - lost: acknowledged at an offset that is in the log (at or above the
//     log start, below the high watermark) and the record is nowhere in
//     its partition's log;
//   - duplicates: one record at more than one offset (a retry written
//     twice);
//   - processed twice: a record a group processed more than once;
//   - skipped: an acknowledged record in the log below the highest offset
//     a group processed in its partition that the group never processed.
//
// Records acknowledged above the high watermark (acks=1 not yet
// replicated) and below the log start (retention) are not judged.
func (l *Ledger) Check(ctx context.Context, cl *kgo.Client, events *EventLog) error {
	err := l.checkLogs(ctx, cl, events)
	if err != nil {
		l.mu.Lock()
		l.last.at, l.last.err = time.Now().UTC(), err.Error()
		l.mu.Unlock()
	}
	return err
}

func (l *Ledger) checkLogs(ctx context.Context, cl *kgo.Client, events *EventLog) error {
	l.mu.Lock()
	topics := map[string]bool{}
	for _, r := range l.recs {
		topics[r.topic] = true
	}
	l.mu.Unlock()
	if len(topics) == 0 {
		l.mu.Lock()
		l.last = checkResult{at: time.Now().UTC()}
		l.mu.Unlock()
		return nil
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	leaders, err := currentLeaders(ctx, cl, names)
	if err != nil {
		return err
	}
	logs := map[tp]*partLog{}
	var total int64
	for k, ld := range leaders {
		pl, err := readPartition(ctx, cl, k.topic, ld.topicID, k.partition, ld.leader)
		if err != nil {
			return fmt.Errorf("reading %s-%d from its leader %d: %w", k.topic, k.partition, ld.leader, err)
		}
		total += int64(len(pl.ids))
		logs[k] = pl
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.last
	res := checkResult{at: time.Now().UTC(), logRecords: total, lost: map[string][]Anomaly{}, duplicates: map[string][]Anomaly{},
		twice: map[string][]Anomaly{}, skipped: map[string][]Anomaly{}}
	ids := make([]string, 0, len(l.recs))
	for id := range l.recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := l.recs[id]
		if r.state != recAcked || r.offset < 0 {
			continue
		}
		pl := logs[tp{r.topic, r.partition}]
		if pl == nil || r.offset < pl.start || r.offset >= pl.hwm || len(pl.offsets[id]) > 0 {
			continue
		}
		now := "nothing"
		if other, ok := pl.ids[r.offset]; ok {
			now = other
		}
		add(res.lost, r.producer, Anomaly{ID: id, Topic: r.topic, Partition: r.partition, Offsets: []int64{r.offset},
			Detail: fmt.Sprintf("acknowledged at offset %d, which now holds %s", r.offset, now)})
	}
	for k, pl := range logs {
		for id, offs := range pl.offsets {
			if len(offs) > 1 {
				producer := "?"
				if r := l.recs[id]; r != nil {
					producer = r.producer
				}
				add(res.duplicates, producer, Anomaly{ID: id, Topic: k.topic, Partition: k.partition, Offsets: offs})
			}
		}
	}
	for group, byID := range l.processed {
		highest := map[tp]int64{}
		for _, ps := range byID {
			for _, p := range ps {
				k := tp{p.topic, p.partition}
				if h, ok := highest[k]; !ok || p.offset > h {
					highest[k] = p.offset
				}
			}
		}
		for id, ps := range byID {
			if len(ps) > 1 {
				a := Anomaly{ID: id, Topic: ps[0].topic, Partition: ps[0].partition}
				for _, p := range ps {
					a.Offsets = append(a.Offsets, p.offset)
					a.Consumers = append(a.Consumers, p.consumer)
				}
				add(res.twice, group, a)
			}
		}
		for _, id := range ids {
			r := l.recs[id]
			if r.state != recAcked || r.offset < 0 || len(byID[id]) > 0 {
				continue
			}
			h, ok := highest[tp{r.topic, r.partition}]
			pl := logs[tp{r.topic, r.partition}]
			if !ok || r.offset >= h || pl == nil || pl.ids[r.offset] != id {
				continue
			}
			add(res.skipped, group, Anomaly{ID: id, Topic: r.topic, Partition: r.partition, Offsets: []int64{r.offset},
				Detail: fmt.Sprintf("the group processed up to offset %d", h)})
		}
	}
	for _, m := range []map[string][]Anomaly{res.duplicates, res.twice} {
		for _, as := range m {
			sort.Slice(as, func(i, j int) bool { return as[i].ID < as[j].ID })
		}
	}
	l.last = res
	report := func(kind string, now, before map[string][]Anomaly) {
		for who, as := range now {
			if len(as) > len(before[who]) {
				events.Add("anomaly", fmt.Sprintf("%s: %d %s (first: %s at %s-%d offsets %v)", who, len(as), kind, as[0].ID, as[0].Topic, as[0].Partition, as[0].Offsets),
					map[string]any{"who": who, "kind": kind, "count": len(as), "first": as[0]})
			}
		}
	}
	report("acknowledged but lost", res.lost, prev.lost)
	report("duplicates", res.duplicates, prev.duplicates)
	report("processed twice", res.twice, prev.twice)
	report("skipped", res.skipped, prev.skipped)
	return nil
}

func add(m map[string][]Anomaly, key string, a Anomaly) {
	if len(m[key]) < maxAnomalies {
		m[key] = append(m[key], a)
	}
}

type leaderOf struct {
	leader, epoch int32
	topicID       [16]byte
}

// currentLeaders asks every node it can reach for the topics' metadata
// and keeps, per partition, the leader of the highest leader epoch: a node
// cut off from the controller still names itself, with an older epoch.
func currentLeaders(ctx context.Context, cl *kgo.Client, topics []string) (map[tp]leaderOf, error) {
	adm := kadm.NewClient(cl)
	brokers, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := map[tp]leaderOf{}
	var lastErr error
	for _, b := range brokers.Brokers {
		req := kmsg.NewPtrMetadataRequest()
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
		if err != nil {
			lastErr = err
			continue
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			for _, p := range t.Partitions {
				k := tp{*t.Topic, p.Partition}
				if cur, ok := out[k]; p.Leader >= 0 && (!ok || p.LeaderEpoch > cur.epoch) {
					out[k] = leaderOf{leader: p.Leader, epoch: p.LeaderEpoch, topicID: t.TopicID}
				}
			}
		}
	}
	for _, t := range topics {
		if _, ok := out[tp{t, 0}]; !ok {
			if lastErr == nil {
				lastErr = errors.New("no leader")
			}
			return nil, fmt.Errorf("topic %s: %w", t, lastErr)
		}
	}
	return out, nil
}

// readPartition fetches a partition from its leader, from its log start
// to the high watermark of the first answer, and indexes the built-in
// producers' records by offset and id. The log start and high watermark
// come from the leader's own Fetch answers.
func readPartition(ctx context.Context, cl *kgo.Client, topic string, id [16]byte, partition, leader int32) (*partLog, error) {
	pl := &partLog{start: -1, hwm: -1, ids: map[int64]string{}, offsets: map[string][]int64{}}
	var off int64
	for pl.hwm < 0 || off < pl.hwm {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = 8 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset, rp.CurrentLeaderEpoch = partition, off, 4<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			return nil, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, fmt.Errorf("fetch answered %d topics", len(resp.Topics))
		}
		part := &resp.Topics[0].Partitions[0]
		if part.ErrorCode == kerr.OffsetOutOfRange.Code && pl.start < 0 && part.LogStartOffset > off {
			off = part.LogStartOffset // below the log start: begin there
			continue
		}
		if pl.start < 0 {
			pl.start, pl.hwm = off, part.HighWatermark
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: off, Topic: topic, Partition: partition,
			IsolationLevel: kgo.ReadUncommitted()}, part, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return nil, fp.Err
		}
		for _, r := range fp.Records {
			if r.Offset >= pl.hwm {
				break
			}
			for _, h := range r.Headers {
				if h.Key == idHeader {
					id := string(h.Value)
					pl.ids[r.Offset] = id
					pl.offsets[id] = append(pl.offsets[id], r.Offset)
				}
			}
		}
		if off >= pl.hwm {
			break
		}
		if next <= off {
			return nil, fmt.Errorf("no progress at offset %d (high watermark %d)", off, pl.hwm)
		}
		off = next
	}
	return pl, nil
}
