package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// auxStateCounts are the BuildRemoteLogAuxState requests and errors
// counted for the topic.
func auxStateCounts(t *testing.T, m *Manager, topic string) (requests, errs float64) {
	t.Helper()
	mt := m.remoteLogManager().metrics
	var r, e dto.Metric
	if err := mt.auxStateRequests.WithLabelValues(topic).Write(&r); err != nil {
		t.Fatal(err)
	}
	if err := mt.auxStateErrors.WithLabelValues(topic).Write(&e); err != nil {
		t.Fatal(err)
	}
	return r.GetCounter().GetValue(), e.GetCounter().GetValue()
}

// leaderClient answers a fetcher's ListOffsets and OffsetForLeaderEpoch
// from a Manager, as the leader's kapi would.
type leaderClient struct{ m *Manager }

func (c leaderClient) Send(_ context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.ListOffsetsRequest:
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		rt, rp := r.Topics[0], r.Topics[0].Partitions[0]
		sp := kmsg.NewListOffsetsResponseTopicPartition()
		sp.Partition = rp.Partition
		to, err := c.m.ListOffset(TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.CurrentLeaderEpoch, rp.Timestamp, 0, r.ReplicaID)
		if err != nil {
			return nil, err
		}
		sp.Offset, sp.LeaderEpoch = to.Offset, to.LeaderEpoch
		resp.Topics = []kmsg.ListOffsetsResponseTopic{{Topic: rt.Topic, Partitions: []kmsg.ListOffsetsResponseTopicPartition{sp}}}
		return resp, nil
	case *kmsg.OffsetForLeaderEpochRequest:
		resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		rt, rp := r.Topics[0], r.Topics[0].Partitions[0]
		sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
		sp.Partition = rp.Partition
		e, end, err := c.m.LastOffsetForLeaderEpoch(TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.CurrentLeaderEpoch, rp.LeaderEpoch)
		if err != nil {
			return nil, err
		}
		sp.LeaderEpoch, sp.EndOffset = e, end
		resp.Topics = []kmsg.OffsetForLeaderEpochResponseTopic{{Topic: rt.Topic, Partitions: []kmsg.OffsetForLeaderEpochResponseTopicPartition{sp}}}
		return resp, nil
	}
	return nil, fmt.Errorf("unexpected %T", req)
}

func (leaderClient) Close() {}

// noAuxIndexes is a store that lost the segments' LEADER_EPOCH and
// PRODUCER_SNAPSHOT indexes.
type noAuxIndexes struct{ *remote.LocalTieredStorage }

func (s noAuxIndexes) FetchIndex(ctx context.Context, m *remote.RemoteLogSegmentMetadata, t remote.IndexType) (io.ReadCloser, error) {
	if t == remote.IndexLeaderEpoch || t == remote.IndexProducerSnapshot {
		return nil, fmt.Errorf("%s: %w", t, remote.ErrResourceNotFound)
	}
	return s.LocalTieredStorage.FetchIndex(ctx, m, t)
}

// tieredAuxLeader is a tiered partition led by m: a producer writes only
// in epoch 0, epoch 2 follows, epoch 3 has no records, and epoch 4
// starts the active segment, the only one local retention leaves; every
// other segment is in rsm.
func tieredAuxLeader(t *testing.T, rsm remote.RemoteStorageManager) (*Manager, *Partition, *rlmTestMetadata, int64) {
	t.Helper()
	m, tm := newTestManager(t)
	tm.CreateTopic("tiered", 1)
	p := m.Partition(TopicPartition{Topic: "tiered", Partition: 0})
	cfg := log.DefaultConfig()
	cfg.SegmentBytes, cfg.FileDeleteDelayMs = 4<<10, 0
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes, cfg.LocalRetentionBytes = -1, -1, 0
	p.Log.SetConfig(cfg)
	appendIdempotent := func(epoch int32, pid int64, seq int32) {
		b := log.NewBatchBuilder(0)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, 0, seq
		for j := 0; j < 4; j++ {
			b.Add(time.Now().UnixMilli(), nil, make([]byte, 100))
		}
		raw, err := b.Build(nil)
		if err == nil {
			_, err = p.Log.Append(raw, epoch)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range int32(20) {
		appendIdempotent(0, 7, 4*i)
	}
	for i := range int32(20) {
		appendIdempotent(2, 8, 4*i)
	}
	if err := p.Log.Roll(); err != nil {
		t.Fatal(err)
	}
	appendIdempotent(4, 8, 80)
	p.Log.UpdateHighWatermark(p.Log.LogEndOffset())
	md := &rlmTestMetadata{store: remote.NewRemoteLogMetadataStore()}
	rlm := NewRemoteLogManager(1, rsm, md, slogDiscard(), nil)
	m.StartRemoteLog(RemoteLogConfig{Manager: rlm, TaskInterval: time.Hour})
	if _, err := rlm.CopyLogSegments(context.Background(), remoteTopicIdPartition(p), p.Log, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Log.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	_, epoch4 := p.Log.EndOffsetForEpoch(3)
	if p.Log.LocalLogStartOffset() != epoch4 || p.Log.LogStartOffset() != 0 {
		t.Fatalf("leader's local log start %d, log start %d; want %d (epoch 4's start), 0", p.Log.LocalLogStartOffset(), p.Log.LogStartOffset(), epoch4)
	}
	return m, p, md, epoch4
}

// tieredAuxFollower is an empty follower replica of leader's partition,
// on its own disk, with a record of its own, and a fetcher thread on m.
func tieredAuxFollower(t *testing.T, m *Manager, leader *Partition) (*ReplicaFetcherThread, sentPartition) {
	t.Helper()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	fl, err := logs.GetOrCreateLog(leader.TopicPartition, leader.TopicID, leader.Log.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fl.Append(batch(1, 10), 0); err != nil {
		t.Fatal(err)
	}
	fp := &Partition{TopicPartition: leader.TopicPartition, TopicID: leader.TopicID, Log: fl}
	th := &ReplicaFetcherThread{m: m, key: fetcherKey{leader: 1}, client: leaderClient{m}}
	return th, sentPartition{st: &fetchState{p: fp, leaderEpoch: leader.LeaderEpoch()}, fetchOffset: fl.LogEndOffset()}
}

// A follower answered OFFSET_MOVED_TO_TIERED_STORAGE starts over at the
// leader's local log start with the leader epochs and producers below it
// from the remote segment that ends there, found by the epoch before the
// local start's (epoch 3 has no records: the leader says epoch 2).
func TestBuildRemoteLogAuxState(t *testing.T) {
	rsm, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, leader, _, localStart := tieredAuxLeader(t, rsm)
	th, s := tieredAuxFollower(t, m, leader)
	if err := th.handleMovedToTiered(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	fl := s.st.p.Log
	if fl.LogStartOffset() != 0 || fl.LocalLogStartOffset() != localStart || fl.LogEndOffset() != localStart {
		t.Fatalf("follower: log start %d, local %d, end %d; want 0, %d, %d", fl.LogStartOffset(), fl.LocalLogStartOffset(), fl.LogEndOffset(), localStart, localStart)
	}
	want := slices.DeleteFunc(leader.Log.LeaderEpochEntries(), func(e log.EpochEntry) bool { return e.StartOffset >= localStart })
	if got := fl.LeaderEpochEntries(); len(want) != 2 || !slices.Equal(got, want) {
		t.Fatalf("follower's epochs %v, want the leader's %v below %d", got, want, localStart)
	}
	for _, e := range []int32{0, 1, 2} {
		le, lo := leader.Log.EndOffsetForEpoch(e)
		if fe, fo := fl.EndOffsetForEpoch(e); fe != le || fo != lo {
			t.Fatalf("end of epoch %d: follower %d at %d, leader %d at %d", e, fe, fo, le, lo)
		}
	}
	ps := fl.ActiveProducers()
	if len(ps) != 2 || ps[0].ProducerID != 7 || ps[0].LastSequence != 79 || ps[1].ProducerID != 8 || ps[1].LastSequence != 79 {
		t.Fatalf("follower's producers %+v", ps)
	}
	if r, e := auxStateCounts(t, m, "tiered"); r != 1 || e != 0 {
		t.Fatalf("BuildRemoteLogAuxState requests %v, errors %v; want 1, 0", r, e)
	}
}

// Without the remote segment below the leader's local start the build
// fails before the log is touched, to be retried; a store without the
// segment's epoch and producer indexes still lets the follower start over
// there, knowing nothing below it.
func TestBuildRemoteLogAuxStateMissing(t *testing.T) {
	local, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, leader, md, localStart := tieredAuxLeader(t, noAuxIndexes{local})
	th, s := tieredAuxFollower(t, m, leader)
	fl := s.st.p.Log

	md.mu.Lock()
	saved := md.store
	md.store = remote.NewRemoteLogMetadataStore()
	md.mu.Unlock()
	if err := th.handleMovedToTiered(context.Background(), s); !errors.Is(err, errRemoteLogAuxState) || fl.LogEndOffset() != 1 {
		t.Fatalf("without remote metadata: %v, log end %d", err, fl.LogEndOffset())
	}
	md.mu.Lock()
	md.store = saved
	md.mu.Unlock()

	if err := th.handleMovedToTiered(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if fl.LogStartOffset() != 0 || fl.LocalLogStartOffset() != localStart || len(fl.LeaderEpochEntries()) != 0 || len(fl.ActiveProducers()) != 0 {
		t.Fatalf("without indexes: log start %d, local %d, epochs %v, producers %v",
			fl.LogStartOffset(), fl.LocalLogStartOffset(), fl.LeaderEpochEntries(), fl.ActiveProducers())
	}
	// A follower whose log is not tiered yet waits.
	cfg := fl.Config()
	cfg.RemoteStorageEnable = false
	fl.SetConfig(cfg)
	if _, err := fl.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if err := th.handleMovedToTiered(context.Background(), s); !errors.Is(err, errRemoteLogAuxState) {
		t.Fatalf("untiered follower: %v", err)
	}
	if r, e := auxStateCounts(t, m, "tiered"); r != 3 || e != 2 {
		t.Fatalf("BuildRemoteLogAuxState requests %v, errors %v; want 3, 2", r, e)
	}
}
