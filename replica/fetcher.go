package replica

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
)

// The follower side of replication (Kafka's ReplicaFetcherManager and
// ReplicaFetcherThread on AbstractFetcherThread): a partition this broker
// follows is fetched from its leader by one of num.replica.fetchers
// threads per leader, each with a connection of its own. A thread sends
// one Fetch at a time for all its partitions, as replica id and broker
// epoch (replica_state, KIP-903), appends what comes back as the leader
// wrote it, and truncates where its log diverged (KIP-320).

// fetchRequestVersion is the Fetch version followers send: topic ids
// (v13), replica_state (v15).
const fetchRequestVersion = 17

// ReplicaFetcherManager owns the fetcher threads.
type ReplicaFetcherManager struct {
	m *Manager

	mu      sync.Mutex
	threads map[fetcherKey]*ReplicaFetcherThread
	where   map[TopicPartition]fetcherKey
	closed  bool
}

type fetcherKey struct {
	leader int32
	id     int
}

func newReplicaFetcherManager(m *Manager) *ReplicaFetcherManager {
	return &ReplicaFetcherManager{m: m, threads: map[fetcherKey]*ReplicaFetcherThread{}, where: map[TopicPartition]fetcherKey{}}
}

// fetcherID is the thread of a partition, as Kafka's
// AbstractFetcherManager.getFetcherId.
func (fm *ReplicaFetcherManager) fetcherID(tp TopicPartition) int {
	h := int32(0)
	for _, r := range tp.Topic {
		h = 31*h + int32(r)
	}
	h = 31*h + tp.Partition
	if h < 0 {
		h = -h
	}
	return int(h) % fm.m.cfg.Replication.NumFetchers
}

// follow makes p fetched from leader at leaderEpoch, moving it from any
// thread fetching it before.
func (fm *ReplicaFetcherManager) follow(p *Partition, leader, leaderEpoch int32) {
	if fm.m.cfg.NewFetcherClient == nil {
		return
	}
	key := fetcherKey{leader: leader, id: fm.fetcherID(p.TopicPartition)}
	fm.mu.Lock()
	if fm.closed {
		fm.mu.Unlock()
		return
	}
	if old, ok := fm.where[p.TopicPartition]; ok && old != key {
		fm.threads[old].remove(p.TopicPartition)
	}
	t := fm.threads[key]
	if t == nil {
		t = newReplicaFetcherThread(fm, key)
		fm.threads[key] = t
	}
	fm.where[p.TopicPartition] = key
	fm.mu.Unlock()
	t.add(p, leaderEpoch)
}

// stop removes tp from its thread; once it returns, the thread touches
// tp's log no more.
func (fm *ReplicaFetcherManager) stop(tp TopicPartition) {
	fm.mu.Lock()
	key, ok := fm.where[tp]
	delete(fm.where, tp)
	t := fm.threads[key]
	fm.mu.Unlock()
	if ok && t != nil {
		t.remove(tp)
	}
}

// close stops every thread and waits for them.
func (fm *ReplicaFetcherManager) close() {
	fm.mu.Lock()
	fm.closed = true
	threads := fm.threads
	fm.threads = map[fetcherKey]*ReplicaFetcherThread{}
	fm.mu.Unlock()
	for _, t := range threads {
		t.g.StopAndWait()
		t.client.Close()
	}
}

// ReplicaFetcherThread fetches the partitions that one leader leads.
type ReplicaFetcherThread struct {
	fm     *ReplicaFetcherManager
	m      *Manager
	key    fetcherKey
	client BrokerClient
	g      routine.Group
	wake   chan struct{}

	// mu guards parts; held while a response is applied, so that remove
	// waits for an append in progress.
	mu    sync.Mutex
	parts map[TopicPartition]*fetchState
}

// fetchState is a partition of a fetcher thread (Kafka's
// PartitionFetchState).
type fetchState struct {
	p           *Partition
	leaderEpoch int32
	delayUntil  time.Time
}

func newReplicaFetcherThread(fm *ReplicaFetcherManager, key fetcherKey) *ReplicaFetcherThread {
	t := &ReplicaFetcherThread{fm: fm, m: fm.m, key: key, client: fm.m.cfg.NewFetcherClient(),
		wake: make(chan struct{}, 1), parts: map[TopicPartition]*fetchState{}}
	t.g.Go(t.run)
	return t
}

// add fetches p at leaderEpoch. Already fetched at that epoch (a metadata
// update that changed only the ISR), it keeps its state, so a response in
// flight is not thrown away.
func (t *ReplicaFetcherThread) add(p *Partition, leaderEpoch int32) {
	t.mu.Lock()
	if st := t.parts[p.TopicPartition]; st != nil && st.p == p && st.leaderEpoch == leaderEpoch {
		t.mu.Unlock()
		return
	}
	t.parts[p.TopicPartition] = &fetchState{p: p, leaderEpoch: leaderEpoch}
	t.mu.Unlock()
	t.poke()
}

func (t *ReplicaFetcherThread) remove(tp TopicPartition) {
	t.mu.Lock()
	delete(t.parts, tp)
	t.mu.Unlock()
}

func (t *ReplicaFetcherThread) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *ReplicaFetcherThread) run(done <-chan struct{}) {
	ctx, cancel := routine.Context(done)
	defer cancel()
	var lastErr time.Time
	for ctx.Err() == nil {
		if t.m.cfg.BrokerEpoch != nil && t.m.cfg.BrokerEpoch() < 0 {
			// Not registered yet: a leader would refuse the fetch.
			t.sleep(ctx, 50*time.Millisecond)
			continue
		}
		req, sent, wait := t.buildRequest(time.Now())
		if req == nil {
			t.sleep(ctx, wait)
			continue
		}
		rctx, rcancel := context.WithTimeout(ctx, t.m.cfg.Replication.SocketTimeout+t.m.cfg.Replication.FetchWaitMax)
		resp, err := t.client.Send(rctx, t.key.leader, req)
		rcancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if time.Since(lastErr) > time.Minute {
				t.m.log.Warn("replica fetch failed; backing off", "leader", t.key.leader, "fetcher", t.key.id,
					"backoff", t.m.cfg.Replication.FetchBackoff, "err", err)
				lastErr = time.Now()
			}
			t.delay(sent, t.m.cfg.Replication.FetchBackoff)
			continue
		}
		t.processResponse(ctx, resp.(*kmsg.FetchResponse), sent)
	}
}

func (t *ReplicaFetcherThread) sleep(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-t.wake:
	case <-timer.C:
	}
}

// sentPartition is what a request asked for a partition: the state it was
// asked for (a partition followed anew gets a new one) and the offset.
type sentPartition struct {
	st          *fetchState
	fetchOffset int64
}

// topicIDPartition names a partition as a Fetch response does.
type topicIDPartition struct {
	id        [16]byte
	partition int32
}

// buildRequest is the next Fetch for the partitions not backing off; nil
// and how long to wait if there are none.
func (t *ReplicaFetcherThread) buildRequest(now time.Time) (*kmsg.FetchRequest, map[TopicPartition]sentPartition, time.Duration) {
	rc := t.m.cfg.Replication
	t.mu.Lock()
	defer t.mu.Unlock()
	wait := time.Second
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchRequestVersion
	req.ReplicaID = t.m.cfg.NodeID
	req.ReplicaState.ID = t.m.cfg.NodeID
	if t.m.cfg.BrokerEpoch != nil {
		req.ReplicaState.Epoch = t.m.cfg.BrokerEpoch()
	}
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(rc.FetchWaitMax.Milliseconds()), rc.FetchMinBytes, rc.FetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1 // no fetch session
	sent := map[TopicPartition]sentPartition{}
	byTopic := map[[16]byte]int{}
	for tp, st := range t.parts {
		if now.Before(st.delayUntil) {
			wait = min(wait, st.delayUntil.Sub(now))
			continue
		}
		if t.m.followerThrottled(st.p) && t.m.followerQuota.Exceeded() {
			// The follower's throttle: ask again shortly.
			wait = min(wait, 100*time.Millisecond)
			continue
		}
		l := st.p.Log
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = tp.Partition, st.leaderEpoch
		rp.FetchOffset, rp.LastFetchedEpoch, rp.LogStartOffset = l.LogEndOffset(), l.LatestEpoch(), l.LogStartOffset()
		rp.PartitionMaxBytes = rc.FetchMaxBytes
		i, ok := byTopic[st.p.TopicID]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = tp.Topic, st.p.TopicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[st.p.TopicID] = i
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[tp] = sentPartition{st: st, fetchOffset: rp.FetchOffset}
	}
	if len(sent) == 0 {
		return nil, nil, wait
	}
	return req, sent, 0
}

// delay backs the partitions of a failed request off.
func (t *ReplicaFetcherThread) delay(sent map[TopicPartition]sentPartition, d time.Duration) {
	until := time.Now().Add(d)
	t.mu.Lock()
	defer t.mu.Unlock()
	for tp, s := range sent {
		if st := t.parts[tp]; st == s.st {
			st.delayUntil = until
		}
	}
}

// processResponse applies a Fetch response partition by partition
// (Kafka's processFetchRequest), for the partitions still fetched at the
// epoch they were asked at.
func (t *ReplicaFetcherThread) processResponse(ctx context.Context, resp *kmsg.FetchResponse, sent map[TopicPartition]sentPartition) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.delay(sent, t.m.cfg.Replication.FetchBackoff)
		return
	}
	byID := make(map[topicIDPartition]TopicPartition, len(sent))
	for tp, s := range sent {
		byID[topicIDPartition{s.st.p.TopicID, tp.Partition}] = tp
	}
	var moved []TopicPartition
	defer func() {
		// Consumers reading from this follower (KIP-392) wait for its
		// high watermark; never under the thread's lock.
		for _, tp := range moved {
			t.m.fetchP.CheckAndComplete(tp)
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			tp, ok := byID[topicIDPartition{rt.TopicID, rp.Partition}]
			s := sent[tp]
			if !ok || t.parts[tp] != s.st {
				continue // removed, or followed anew (another epoch) meanwhile
			}
			hw := s.st.p.Log.HighWatermark()
			err := t.processPartition(ctx, s, rp)
			if s.st.p.Log.HighWatermark() > hw {
				moved = append(moved, tp)
			}
			if err != nil {
				s.st.delayUntil = time.Now().Add(t.m.cfg.Replication.FetchBackoff)
				if !isExpectedFetchError(err) {
					t.m.log.Warn("replicating a partition failed; backing off", "partition", tp.String(), "leader", t.key.leader, "err", err)
				}
			}
		}
	}
}

// isExpectedFetchError: errors that a change of leadership explains and
// the metadata resolves.
func isExpectedFetchError(err error) bool {
	return errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.FencedLeaderEpoch) ||
		errors.Is(err, kerr.UnknownLeaderEpoch) || errors.Is(err, kerr.UnknownTopicOrPartition) ||
		errors.Is(err, kerr.UnknownTopicID)
}

// processPartition applies one partition of a response. t.mu held.
func (t *ReplicaFetcherThread) processPartition(ctx context.Context, s sentPartition, rp *kmsg.FetchResponseTopicPartition) error {
	l := s.st.p.Log
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case errors.Is(err, kerr.OffsetOutOfRange):
		return t.handleOutOfRange(ctx, s)
	case errors.Is(err, kerr.OffsetMovedToTieredStorage):
		return t.handleMovedToTiered(ctx, s)
	case err != nil:
		return err
	}
	if l.LogEndOffset() != s.fetchOffset {
		return nil // truncated meanwhile: ask again
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		return t.truncateOnDivergence(s, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
	}
	if batches := wholeBatches(rp.RecordBatches); len(batches) > 0 {
		info, err := l.AppendAsFollower(batches)
		if err != nil {
			return err
		}
		s.st.p.stats.replicationBytesIn(info.ValidBytes)
		if t.m.followerThrottled(s.st.p) {
			t.m.followerQuota.Record(int64(info.ValidBytes))
		}
	}
	s.st.p.followerLag.Store(max(rp.HighWatermark-l.LogEndOffset(), 0))
	hw := min(rp.HighWatermark, l.LogEndOffset())
	if hw > l.HighWatermark() {
		l.UpdateHighWatermark(hw)
	}
	if rp.LogStartOffset > l.LogStartOffset() && rp.LogStartOffset <= l.HighWatermark() {
		if _, err := l.DeleteRecordsBefore(rp.LogStartOffset); err != nil {
			return err
		}
	}
	if len(rp.RecordBatches) > 0 {
		t.poke() // more may be waiting: fetch again at once
	}
	return nil
}

// truncateOnDivergence truncates the log where it diverged from the
// leader's (Kafka's getOffsetTruncationState): to the leader's end of the
// epoch if this log has that epoch, else to this log's end of its own
// largest epoch below it (and fetching again finds the next divergence,
// if any).
func (t *ReplicaFetcherThread) truncateOnDivergence(s sentPartition, epoch int32, endOffset int64) error {
	l := s.st.p.Log
	leo := l.LogEndOffset()
	target := min(endOffset, leo)
	if fe, fend := l.EndOffsetForEpoch(epoch); fe >= 0 {
		if fe == epoch {
			target = min(target, fend)
		} else {
			target = min(fend, leo)
		}
	}
	if target >= leo {
		return nil
	}
	t.m.log.Info("truncating a follower's log where it diverged from the leader's", "partition", s.st.p.TopicPartition.String(),
		"leader", t.key.leader, "diverging_epoch", epoch, "leader_end_offset", endOffset, "from", leo, "to", target)
	_, err := l.TruncateTo(target)
	return err
}

// handleOutOfRange resets a follower whose fetch offset the leader does
// not have (Kafka's handleOutOfRangeError): a log longer than the leader's
// (an unclean election chose a shorter one) is truncated to the leader's
// end; one that ends before the leader's log start starts over there.
func (t *ReplicaFetcherThread) handleOutOfRange(ctx context.Context, s sentPartition) error {
	tp := s.st.p.TopicPartition
	latest, _, err := t.leaderOffset(ctx, tp, s.st.leaderEpoch, -1)
	if err != nil {
		return err
	}
	l := s.st.p.Log
	leo := l.LogEndOffset()
	if latest < leo {
		t.m.log.Warn("truncating a follower's log to the leader's end: the leader has less (an unclean election?)", "partition", tp.String(), "from", leo, "to", latest)
		_, err := l.TruncateTo(latest)
		return err
	}
	earliest, _, err := t.leaderOffset(ctx, tp, s.st.leaderEpoch, -2)
	if err != nil {
		return err
	}
	if earliest > leo {
		t.m.log.Info("a follower's log ends before the leader's log start: starting over there", "partition", tp.String(), "log_end", leo, "leader_log_start", earliest)
		return l.TruncateFullyAndStartAt(earliest)
	}
	return nil
}

// leaderOffset asks the leader for its latest (-1), earliest (-2) or
// earliest local (-4) offset as a replica sees them, and the leader epoch
// of the offset.
func (t *ReplicaFetcherThread) leaderOffset(ctx context.Context, tp TopicPartition, leaderEpoch int32, ts int64) (int64, int32, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	if ts == -4 {
		req.Version = 8 // EARLIEST_LOCAL_TIMESTAMP (KIP-405)
	}
	req.ReplicaID = t.m.cfg.NodeID
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = tp.Partition, leaderEpoch, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := t.sendToLeader(ctx, req)
	if err != nil {
		return -1, -1, err
	}
	resp := r.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1, kerr.UnknownServerError
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, -1, err
	}
	return p.Offset, p.LeaderEpoch, nil
}

// sendToLeader sends req to the leader, within replica.socket.timeout.ms.
func (t *ReplicaFetcherThread) sendToLeader(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	rctx, cancel := context.WithTimeout(ctx, t.m.cfg.Replication.SocketTimeout)
	defer cancel()
	return t.client.Send(rctx, t.key.leader, req)
}

// wholeBatches is records without a partial batch at its end.
func wholeBatches(records []byte) []byte {
	n := 0
	for n < len(records) {
		h, err := log.ParseBatchHeader(records[n:])
		if err != nil || h.TotalSize() > len(records)-n {
			break
		}
		n += h.TotalSize()
	}
	return records[:n]
}
