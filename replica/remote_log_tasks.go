package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// RemoteLogConfig runs tiered storage on a Manager (Kafka's
// RemoteLogManager with its task schedulers and reader pool).
type RemoteLogConfig struct {
	Manager *RemoteLogManager
	// Metadata, when set, is caught up in the background every
	// TaskInterval (the topic-based manager's consumer).
	Metadata *TopicBasedRemoteLogMetadataManager
	// TaskInterval is remote.log.manager.task.interval.ms (30 s).
	TaskInterval time.Duration
	// TaskThreads is remote.log.manager.thread.pool.size (10): how many
	// partitions' copy and expiration tasks run at once.
	TaskThreads int
	// ReaderThreads is remote.log.reader.threads (10) and
	// MaxPendingReads remote.log.reader.max.pending.tasks (100): remote
	// reads run on at most ReaderThreads goroutines, and a fetch that
	// would make more than MaxPendingReads wait is answered with no
	// remote data.
	ReaderThreads   int
	MaxPendingReads int
	// FetchMaxWait is remote.fetch.max.wait.ms (500 ms): how long a
	// fetch waits for its remote read (Kafka's DelayedRemoteFetch); one
	// that takes longer is given up and the partition answers empty, the
	// consumer asking again. ListOffsetsTimeout bounds a search by
	// timestamp in the store (remote.list.offsets.request.timeout.ms,
	// 30 s).
	FetchMaxWait       time.Duration
	ListOffsetsTimeout time.Duration
	// CopyMaxBytesPerSecond is remote.log.manager.copy.max.bytes.per.second
	// and FetchMaxBytesPerSecond remote.log.manager.fetch.max.bytes.per.second
	// (Kafka's RLMQuotaManager; <= 0 or MaxInt64: none), measured over
	// the .quota.window.num windows of .quota.window.size.seconds; both
	// change at run time with SetRemoteLogQuotas. Over the copy quota the
	// next segment's copy waits; over the fetch quota a consumer fetch
	// gets nothing from remote storage (the local partitions are served
	// as usual) until the rate is under it again.
	CopyMaxBytesPerSecond, FetchMaxBytesPerSecond int64
	CopyQuotaWindows, FetchQuotaWindows           int
	CopyQuotaWindowSize, FetchQuotaWindowSize     time.Duration
}

// remoteLog is the Manager's tiered-storage state.
type remoteLog struct {
	cfg     RemoteLogConfig
	metrics *remoteLogMetrics
	readers chan struct{} // a token per running remote read
	// kick runs a round now, not at the next TaskInterval (kickRemoteLog).
	kick    chan struct{}
	pending atomic.Int64 // remote reads waiting or running
	// fetchQuota is remote.log.manager.fetch.max.bytes.per.second.
	fetchQuota *ReplicationQuota

	mu sync.Mutex
	// synced maps a partition led here to the leader epoch at which its
	// highest offset in remote storage was set from the remote
	// metadata (SyncCopiedOffset); a new epoch syncs again. mu.
	synced map[TopicPartition]int32
	// gaugeTopics are the topics whose gauges the last round set, and
	// orphanSince when each remote partition of a topic no longer there
	// was first seen by the sweep; only the task goroutine touches them.
	gaugeTopics map[string]bool
	orphanSince map[remote.TopicIdPartition]time.Time
	// deleting are the partitions being deleted from the store here.
	// mu.
	deleting map[remote.TopicIdPartition]bool
}

// StartRemoteLog runs tiered storage: every TaskInterval (and at once
// when this broker starts leading a tiered partition), each partition
// this broker leads whose log is tiered copies its closed segments and
// expires remote ones (Kafka's RLMCopyTask and RLMExpirationTask), and
// consumer fetches below a tiered log's local start are served from
// remote storage. Call it once, before the first metadata update.
func (m *Manager) StartRemoteLog(cfg RemoteLogConfig) {
	if cfg.TaskInterval <= 0 {
		cfg.TaskInterval = 30 * time.Second
	}
	cfg.TaskThreads = max(cfg.TaskThreads, 1)
	cfg.ReaderThreads = max(cfg.ReaderThreads, 1)
	cfg.MaxPendingReads = max(cfg.MaxPendingReads, cfg.ReaderThreads)
	if cfg.FetchMaxWait <= 0 {
		cfg.FetchMaxWait = 500 * time.Millisecond
	}
	if cfg.ListOffsetsTimeout <= 0 {
		cfg.ListOffsetsTimeout = 30 * time.Second
	}
	rl := &remoteLog{cfg: cfg, readers: make(chan struct{}, cfg.ReaderThreads), kick: make(chan struct{}, 1), synced: map[TopicPartition]int32{}, gaugeTopics: map[string]bool{},
		orphanSince: map[remote.TopicIdPartition]time.Time{}, deleting: map[remote.TopicIdPartition]bool{},
		fetchQuota: NewReplicationQuota(cfg.FetchQuotaWindows, cfg.FetchQuotaWindowSize, nil)}
	cfg.Manager.copyQuota = NewReplicationQuota(cfg.CopyQuotaWindows, cfg.CopyQuotaWindowSize, nil)
	cfg.Manager.copyQuota.SetBound(cfg.CopyMaxBytesPerSecond)
	rl.fetchQuota.SetBound(cfg.FetchMaxBytesPerSecond)
	if metrics, err := newRemoteLogMetrics(m.cfg.Registerer); err != nil {
		m.log.Warn("tiered storage runs without its metrics", "err", err)
	} else {
		cfg.Manager.metrics, rl.metrics = metrics, metrics
	}
	m.remote.Store(rl)
	m.bg.EveryOrWake(cfg.TaskInterval, rl.kick, func() { m.runRemoteLogTasks(rl) })
}

// kickRemoteLog runs a round of the remote log tasks now, as Kafka
// schedules a new leader's RLMCopyTask with no initial delay: a tiered
// log whose log start the restart did not find (no checkpoint entry)
// gets it back from the remote metadata at once, not a
// remote.log.manager.task.interval.ms later. Nothing when tiered storage
// does not run here; never blocks.
func (m *Manager) kickRemoteLog() {
	if rl := m.remote.Load(); rl != nil {
		select {
		case rl.kick <- struct{}{}:
		default: // a round is due already
		}
	}
}

// SetRemoteLogQuotas sets remote.log.manager.copy.max.bytes.per.second
// and remote.log.manager.fetch.max.bytes.per.second (bytes/s; <= 0 or
// MaxInt64: none); nothing when tiered storage does not run here.
func (m *Manager) SetRemoteLogQuotas(copyBytesPerSec, fetchBytesPerSec int64) {
	if rl := m.remote.Load(); rl != nil {
		rl.cfg.Manager.copyQuota.SetBound(copyBytesPerSec)
		rl.fetchQuota.SetBound(fetchBytesPerSec)
	}
}

// remoteFetchQuotaExceeded reports whether consumer reads from remote
// storage are over remote.log.manager.fetch.max.bytes.per.second (Kafka's
// isRemoteLogFetchQuotaExceeded).
func (m *Manager) remoteFetchQuotaExceeded() bool {
	rl := m.remote.Load()
	return rl != nil && rl.fetchQuota.Exceeded()
}

// remoteLogManager returns the RemoteLogManager, nil when tiered storage
// does not run here.
func (m *Manager) remoteLogManager() *RemoteLogManager {
	if rl := m.remote.Load(); rl != nil {
		return rl.cfg.Manager
	}
	return nil
}

// remoteTopicIdPartition names p for the remote metadata.
func remoteTopicIdPartition(p *Partition) remote.TopicIdPartition {
	return remote.TopicIdPartition{TopicID: p.TopicID, Topic: p.Topic, Partition: p.Partition}
}

// runRemoteLogTasks runs one round: the background metadata catch-up,
// then the tasks of every tiered partition led here, TaskThreads at a
// time. A partition's task stops as soon as its leadership (at the epoch
// it started with) goes.
func (m *Manager) runRemoteLogTasks(rl *remoteLog) {
	if rl.cfg.Metadata != nil {
		rl.cfg.Metadata.CatchUpAll()
		if m.caughtUp.Load() {
			m.sweepRemoteOrphans(rl)
		}
	}
	var parts []*Partition
	m.partitions.Range(func(_, v any) bool {
		p := v.(*Partition)
		switch {
		case !p.Log.Tiered():
		case p.IsLeader():
			parts = append(parts, p)
		default:
			// A follower learns what its leader copied, so its local
			// retention deletes it too (Kafka's RLMFollowerTask).
			if err := rl.cfg.Manager.SyncCopiedOffset(remoteTopicIdPartition(p), p.Log); err != nil {
				m.log.Debug("reading the remote segments of a follower failed", "partition", p.TopicPartition.String(), "err", err)
			}
		}
		return true
	})
	rl.forget(m)
	ctx, cancel := routine.Context(m.bg.Stopping())
	defer cancel()
	sem := make(chan struct{}, rl.cfg.TaskThreads)
	var wg sync.WaitGroup
	var statsMu sync.Mutex
	stats := make(map[TopicPartition]remotePartitionStats, len(parts))
	for _, p := range parts {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := m.remoteLogTask(ctx, rl, p); err != nil && ctx.Err() == nil {
				m.log.Warn("remote log task failed; retried at the next interval", "partition", p.TopicPartition.String(), "err", err)
			}
			s := rl.partitionStats(p)
			statsMu.Lock()
			stats[p.TopicPartition] = s
			statsMu.Unlock()
		}()
	}
	wg.Wait()
	rl.metrics.setGauges(stats, rl.gaugeTopics)
	rl.gaugeTopics = map[string]bool{}
	for tp := range stats {
		rl.gaugeTopics[tp.Topic] = true
	}
}

// partitionStats are p's figures for the gauges after its task: what is
// left to copy, from the log, and what is in remote storage, from the
// remote metadata (every entry counted, the finished copies sized).
func (rl *remoteLog) partitionStats(p *Partition) remotePartitionStats {
	var s remotePartitionStats
	segs, bytes := p.Log.RemoteCopyLag()
	s.copyLagSegments, s.copyLagBytes = int64(segs), bytes
	if list, err := rl.cfg.Manager.rlmm.ListRemoteLogSegments(remoteTopicIdPartition(p)); err == nil {
		s.metadataCount = int64(len(list))
		for _, m := range list {
			if m.State == remote.CopySegmentFinished {
				s.logSizeBytes += int64(m.SegmentSizeInBytes)
			}
		}
	}
	return s
}

// forget drops the sync state of partitions no longer hosted.
func (rl *remoteLog) forget(m *Manager) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	for tp := range rl.synced {
		if p := m.Partition(tp); p == nil || !p.IsLeader() {
			delete(rl.synced, tp)
		}
	}
}

// remoteLogTask copies p's closed segments, then expires its remote ones
// (Kafka's RLMCopyTask and RLMExpirationTask, one after the other).
func (m *Manager) remoteLogTask(ctx context.Context, rl *remoteLog, p *Partition) error {
	epoch := p.LeaderEpoch()
	leading := func() bool { return p.IsLeader() && p.LeaderEpoch() == epoch && p.Log.Tiered() && !m.closed.Load() }
	tp, l, rlm := remoteTopicIdPartition(p), p.Log, rl.cfg.Manager
	rl.mu.Lock()
	synced, ok := rl.synced[p.TopicPartition]
	rl.mu.Unlock()
	if !ok || synced != epoch {
		// A new leader learns what is copied already before it copies
		// (Kafka's findHighestRemoteOffset).
		if err := rlm.SyncCopiedOffset(tp, l); err != nil {
			return fmt.Errorf("reading the remote segments: %w", err)
		}
		rl.mu.Lock()
		rl.synced[p.TopicPartition] = epoch
		rl.mu.Unlock()
	}
	if _, err := rlm.CopyLogSegments(ctx, tp, l, leading); err != nil {
		return err
	}
	if !leading() {
		return nil
	}
	cfg := l.Config()
	_, err := rlm.ExpireRemoteSegments(ctx, tp, l, cfg.RetentionMs, cfg.RetentionBytes)
	return err
}

// remoteRead is a consumer fetch's partition to read from remote storage.
type remoteRead struct {
	tp            remote.TopicIdPartition
	offset        int64
	maxBytes      int32
	minOneMessage bool
}

// movedToRemote reports whether a consumer read failed only because its
// offset is in remote storage, and tiered storage runs here to serve it.
func (m *Manager) movedToRemote(params FetchParams, err error) bool {
	return params.ReplicaID < 0 && m.remote.Load() != nil && errors.Is(err, kerr.OffsetMovedToTieredStorage)
}

// readRemote serves a fetch with partitions in remote storage (Kafka's
// DelayedRemoteFetch, with a goroutine per read in place of its reader
// thread pool): the first such partition is read from the store on a
// reader goroutine, at most ReaderThreads at once, the others answer
// empty (the consumer asks again), and done gets every result, local
// ones as they were read. Over MaxPendingReads, the remote partitions
// answer empty at once.
func (m *Manager) readRemote(params FetchParams, results []FetchResult, done func([]FetchResult)) {
	rl := m.remote.Load()
	first := -1
	for i := range results {
		if results[i].remote != nil {
			if first < 0 {
				first = i
			}
			results[i].Records = log.FileSlice{}
		}
	}
	finish := func() {
		for i := range results {
			results[i].remote = nil
		}
		done(results)
	}
	if rl.pending.Add(1) > int64(rl.cfg.MaxPendingReads) {
		rl.pending.Add(-1)
		finish()
		return
	}
	started := m.bg.Go(func(stop <-chan struct{}) {
		ctx, cancel := routine.Context(stop)
		defer cancel()
		ctx, cancelRead := context.WithTimeout(ctx, rl.cfg.FetchMaxWait)
		defer cancelRead()
		m.serveRemoteRead(ctx, rl, params, &results[first])
		// Released before the answer, so that the client's next fetch
		// finds the slot free.
		rl.pending.Add(-1)
		finish()
	})
	if !started {
		rl.pending.Add(-1)
		finish()
	}
}

// acquireReader takes one of the ReaderThreads reader slots, waiting
// for one until ctx is done (false). releaseReader gives it back.
func (rl *remoteLog) acquireReader(ctx context.Context) bool {
	select {
	case rl.readers <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (rl *remoteLog) releaseReader() { <-rl.readers }

// serveRemoteRead reads r's remote partition into r, once a reader slot
// is free, within ctx.
func (m *Manager) serveRemoteRead(ctx context.Context, rl *remoteLog, params FetchParams, r *FetchResult) {
	if !rl.acquireReader(ctx) {
		return
	}
	defer rl.releaseReader()
	rr := r.remote
	data, err := rl.cfg.Manager.Read(ctx, rr.tp, rr.offset, rr.maxBytes, rr.minOneMessage, params.ReadCommitted)
	switch {
	case err != nil && ctx.Err() != nil:
		// remote.fetch.max.wait.ms passed (or shutdown): no data this
		// time, as Kafka's expired DelayedRemoteFetch.
		m.log.Debug("remote read gave up at remote.fetch.max.wait.ms", "partition", r.TopicPartition.String(), "offset", rr.offset, "err", err)
	case errors.Is(err, remote.ErrResourceNotFound):
		// Expired since the local read, or never there.
		r.Err = fmt.Errorf("%w: %v", kerr.OffsetOutOfRange, err)
	case err != nil:
		if ok, n := m.errLog.allow(time.Now()); ok {
			m.log.Error("remote read failed", "partition", r.TopicPartition.String(), "offset", rr.offset, "err", err, "failures_not_logged", n)
		}
		r.Err = err
	default:
		r.Records, r.AbortedTransactions = data.Records, data.AbortedTransactions
		rl.fetchQuota.Record(data.Records.Size)
		if p := m.Partition(r.TopicPartition); p != nil && data.Records.Size > 0 {
			p.stats.bytesOut.Add(float64(data.Records.Size))
		}
	}
}

// remoteListOffset is one partition's search by timestamp, which may
// have to look in remote storage first (below the local log start).
type remoteListOffset struct {
	m             *Manager
	p             *Partition
	ts            int64
	replicaID     int32
	lastFetchable int64
	rl            *remoteLog // nil: the local log only
}

// needsRemote reports whether the search looks in remote storage: a
// timestamp (ts >= 0) on a tiered log with records below its local start.
func (q *remoteListOffset) needsRemote() bool {
	l := q.p.Log
	return q.rl != nil && q.ts >= 0 && l.Tiered() && l.LogStartOffset() < l.LocalLogStartOffset()
}

// search finds the first offset at or after the timestamp (or the special
// timestamp's): in the remote segments below the local log start first,
// as Kafka's fetchOffsetByTimestamp does, then in the local log.
func (q *remoteListOffset) search(ctx context.Context) (log.TimestampOffset, error) {
	none := log.TimestampOffset{Timestamp: -1, Offset: -1, LeaderEpoch: -1}
	l := q.p.Log
	to, ok, err := q.searchRemote(ctx)
	if err == nil && !ok {
		to, ok, err = l.FetchOffsetByTimestamp(q.ts)
	}
	if err != nil {
		return log.TimestampOffset{}, err
	}
	// A consumer never sees an offset past what it may fetch.
	if !ok || (q.replicaID < 0 && q.ts >= 0 && to.Offset >= q.lastFetchable) {
		return none, nil
	}
	return to, nil
}

// searchRemote searches the remote segments once a reader slot is free
// (remote.log.reader.threads), within ctx.
func (q *remoteListOffset) searchRemote(ctx context.Context) (log.TimestampOffset, bool, error) {
	if !q.needsRemote() {
		return log.TimestampOffset{}, false, nil
	}
	if !q.rl.acquireReader(ctx) {
		return log.TimestampOffset{}, false, fmt.Errorf("%w: waiting for a remote reader: %v", kerr.RequestTimedOut, ctx.Err())
	}
	defer q.rl.releaseReader()
	l := q.p.Log
	to, ok, err := q.rl.cfg.Manager.FindOffsetByTimestamp(ctx, remoteTopicIdPartition(q.p), q.ts, l.LogStartOffset())
	switch {
	case err != nil && ctx.Err() != nil:
		return log.TimestampOffset{}, false, fmt.Errorf("%w: searching remote storage: %v", kerr.RequestTimedOut, err)
	case err != nil:
		return log.TimestampOffset{}, false, fmt.Errorf("%w: searching remote storage: %v", kerr.KafkaStorageError, err)
	}
	if !ok || to.Offset >= l.LocalLogStartOffset() {
		return log.TimestampOffset{}, false, nil
	}
	return to, true, nil
}

// sweepRemoteOrphans deletes from the store the partitions of topics no
// longer in the metadata whose remote metadata partition is led here:
// those whose deletion a broker stopped before finishing (the leader
// deletes a deleted topic's partitions at once, deleteRemotePartition,
// but a broker stopped or killed meanwhile leaves them). A partition is
// taken for an orphan only after ten task intervals (at least 2 s) of
// being one, so that the leader's own deletion goes first.
func (m *Manager) sweepRemoteOrphans(rl *remoteLog) {
	m.stateMu.Lock()
	im := m.applied
	m.stateMu.Unlock()
	if im == nil {
		return
	}
	now, grace := time.Now(), max(10*rl.cfg.TaskInterval, 2*time.Second)
	seen := map[remote.TopicIdPartition]bool{}
	for _, tp := range rl.cfg.Metadata.PartitionsLedHere() {
		if t, ok := im.Topic(tp.Topic); ok && t.ID == tp.TopicID {
			continue
		}
		seen[tp] = true
		since, ok := rl.orphanSince[tp]
		if !ok {
			rl.orphanSince[tp] = now
			continue
		}
		if now.Sub(since) >= grace {
			m.log.Info("deleting the remote segments of a deleted topic's partition", "partition", tp.String())
			m.deleteRemoteTopicIdPartition(rl, tp)
		}
	}
	for tp := range rl.orphanSince {
		if !seen[tp] {
			delete(rl.orphanSince, tp)
		}
	}
}

// deleteRemotePartition removes a partition led here from remote storage,
// in the background, when its topic is deleted or its tiering turned off
// with remote.log.delete.on.disable (Kafka's leader does it when the
// partition stops with deleteRemoteLog). A broker that stops first leaves
// the segments in the store, for the orphan sweep of the leader of their
// metadata partition (sweepRemoteOrphans).
func (m *Manager) deleteRemotePartition(p *Partition) {
	if rl := m.remote.Load(); rl != nil {
		m.deleteRemoteTopicIdPartition(rl, remoteTopicIdPartition(p))
	}
}

// deleteRemoteTopicIdPartition deletes tp from the store in the
// background, retrying every task interval; once at a time.
func (m *Manager) deleteRemoteTopicIdPartition(rl *remoteLog, tp remote.TopicIdPartition) {
	rl.mu.Lock()
	if rl.deleting[tp] {
		rl.mu.Unlock()
		return
	}
	rl.deleting[tp] = true
	rl.mu.Unlock()
	started := m.bg.Go(func(done <-chan struct{}) {
		defer func() {
			rl.mu.Lock()
			delete(rl.deleting, tp)
			rl.mu.Unlock()
		}()
		ctx, cancel := routine.Context(done)
		defer cancel()
		for {
			_, err := rl.cfg.Manager.DeletePartition(ctx, tp)
			if err == nil || ctx.Err() != nil {
				return
			}
			m.log.Warn("deleting a deleted partition from remote storage failed; retrying", "partition", tp.String(), "err", err)
			select {
			case <-done:
				return
			case <-time.After(rl.cfg.TaskInterval):
			}
		}
	})
	if !started {
		rl.mu.Lock()
		delete(rl.deleting, tp)
		rl.mu.Unlock()
	}
}
