package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/share"
)

// The share coordinator over the wire: the five share-group state APIs
// sent with kgo to the coordinator that FindCoordinator (key type 2)
// names, the state merged as Kafka merges it, kept across restarts, a
// kill -9 and the loss of the coordinator's node.

// shareStateOverrides keep __share_group_state small and its snapshots
// frequent, so the writes below cross several snapshots.
var shareStateOverrides = []string{
	"share.coordinator.state.topic.num.partitions=3",
	"share.coordinator.snapshot.update.records.per.snapshot=4",
}

// shareClient sends share-group state requests for one key to its
// coordinator, retrying while it moves or loads.
type shareClient struct {
	t   *testing.T
	cl  *kgo.Client
	key share.Key
}

func shareTopicID(t *testing.T, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	var id [16]byte
	eventually(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		d, ok := md.Topics[topic]
		if !ok || d.Err != nil {
			return fmt.Errorf("topic %s: %v", topic, d.Err)
		}
		id = d.ID
		return nil
	})
	return id
}

// coordinator asks FindCoordinator v6 for the key's share coordinator.
func (s *shareClient) coordinator(ctx context.Context) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 2
	req.CoordinatorKeys = []string{s.key.CoordinatorKey()}
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return -1, err
	}
	c := resp.Coordinators[0]
	if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
		return -1, err
	}
	return c.NodeID, nil
}

func retriableShare(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.RequestTimedOut) ||
		(err != nil && !errors.As(err, new(*kerr.Error)))
}

// send sends req to the key's coordinator and returns the partition's
// answer through get, retrying retriable errors for up to 60 s.
func (s *shareClient) send(req kmsg.Request, get func(kmsg.Response) error) error {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		node, err := s.coordinator(ctx)
		if err == nil {
			var resp kmsg.Response
			if resp, err = s.cl.Broker(int(node)).Request(ctx, req); err == nil {
				err = get(resp)
			}
		}
		cancel()
		if !retriableShare(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *shareClient) initialize(stateEpoch int32, start int64) error {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = s.key.GroupID
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = s.key.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = s.key.Partition, stateEpoch, start
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return s.send(req, func(r kmsg.Response) error {
		return kerr.ErrorForCode(r.(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode)
	})
}

func (s *shareClient) write(st share.PartitionState) error {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = s.key.GroupID
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = s.key.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = s.key.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset, st.DeliveryCompleteCount
	for _, b := range st.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return s.send(req, func(r kmsg.Response) error {
		return kerr.ErrorForCode(r.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode)
	})
}

func (s *shareClient) read(leaderEpoch int32) (share.PartitionState, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = s.key.GroupID
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = s.key.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = s.key.Partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	var st share.PartitionState
	err := s.send(req, func(r kmsg.Response) error {
		rp := r.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
		st = share.PartitionState{StateEpoch: rp.StateEpoch, StartOffset: rp.StartOffset}
		for _, b := range rp.StateBatches {
			st.Batches = append(st.Batches, share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
		}
		return kerr.ErrorForCode(rp.ErrorCode)
	})
	return st, err
}

func (s *shareClient) summary() (share.PartitionState, error) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version = 1
	req.GroupID = s.key.GroupID
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = s.key.TopicID
	p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	p.Partition = s.key.Partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	var st share.PartitionState
	err := s.send(req, func(r kmsg.Response) error {
		rp := r.(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
		st = share.PartitionState{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset, DeliveryCompleteCount: rp.DeliveryCompleteCount}
		return kerr.ErrorForCode(rp.ErrorCode)
	})
	return st, err
}

func (s *shareClient) remove() error {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = s.key.GroupID
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = s.key.TopicID
	p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	p.Partition = s.key.Partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return s.send(req, func(r kmsg.Response) error {
		return kerr.ErrorForCode(r.(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode)
	})
}

// writeShareHistory initializes the key and writes 12 times: each write
// w makes offsets 10w to 10w+9 available (delivery count 1) and
// acknowledges 10w to 10w+4 in the same request (overlapping batches the
// coordinator merges); write 8 moves the start offset to 20. It returns
// the state that must be read back.
func writeShareHistory(t *testing.T, s *shareClient) share.PartitionState {
	t.Helper()
	if err := s.initialize(1, 0); err != nil {
		t.Fatalf("InitializeShareGroupState: %v", err)
	}
	if _, err := s.read(1); err != nil { // the leader takes over at epoch 1
		t.Fatalf("ReadShareGroupState: %v", err)
	}
	want := share.PartitionState{StateEpoch: 1, LeaderEpoch: 1, StartOffset: 20, DeliveryCompleteCount: 60}
	for w := range int64(12) {
		start := int64(-1)
		if w == 8 {
			start = 20
		}
		st := share.PartitionState{StateEpoch: 1, LeaderEpoch: 1, StartOffset: start, DeliveryCompleteCount: int32(w * 5),
			Batches: []share.StateBatch{
				{FirstOffset: w * 10, LastOffset: w*10 + 9, DeliveryState: share.DeliveryAvailable, DeliveryCount: 1},
				{FirstOffset: w * 10, LastOffset: w*10 + 4, DeliveryState: share.DeliveryAcknowledged, DeliveryCount: 1},
			}}
		if err := s.write(st); err != nil {
			t.Fatalf("WriteShareGroupState %d: %v", w, err)
		}
		if w >= 2 {
			want.Batches = append(want.Batches,
				share.StateBatch{FirstOffset: w * 10, LastOffset: w*10 + 4, DeliveryState: share.DeliveryAcknowledged, DeliveryCount: 1},
				share.StateBatch{FirstOffset: w*10 + 5, LastOffset: w*10 + 9, DeliveryState: share.DeliveryAvailable, DeliveryCount: 1})
		}
	}
	want.DeliveryCompleteCount = 55
	return want
}

// checkShareState reads the key's state and summary and compares them
// with want.
func checkShareState(t *testing.T, s *shareClient, want share.PartitionState) {
	t.Helper()
	got, err := s.read(want.LeaderEpoch)
	if err != nil {
		t.Fatalf("ReadShareGroupState: %v", err)
	}
	if got.StateEpoch != want.StateEpoch || got.StartOffset != want.StartOffset || !slices.Equal(got.Batches, want.Batches) {
		t.Fatalf("read state epoch %d start %d batches %v\nwant state epoch %d start %d batches %v",
			got.StateEpoch, got.StartOffset, got.Batches, want.StateEpoch, want.StartOffset, want.Batches)
	}
	sum, err := s.summary()
	if err != nil {
		t.Fatalf("ReadShareGroupStateSummary: %v", err)
	}
	if sum.StateEpoch != want.StateEpoch || sum.LeaderEpoch != want.LeaderEpoch || sum.StartOffset != want.StartOffset || sum.DeliveryCompleteCount != want.DeliveryCompleteCount {
		t.Fatalf("summary %+v, want state epoch %d leader epoch %d start %d count %d", sum,
			want.StateEpoch, want.LeaderEpoch, want.StartOffset, want.DeliveryCompleteCount)
	}
}

func newShareClient(t *testing.T, seeds string, group, topic string) *shareClient {
	t.Helper()
	cl := newClient(t, seeds)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 2, -1, nil, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
	return &shareClient{t: t, cl: cl, key: share.Key{GroupID: group, TopicID: shareTopicID(t, adm, topic), Partition: 1}}
}

// One broker: FindCoordinator creates __share_group_state as Kafka's
// coordinator does; the merged state is read back, fenced requests are
// refused, and the state survives a clean restart; delete forgets it.
func TestShareStateSingleNode(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, shareStateOverrides...)
	s := newShareClient(t, b.Seed(), "sg", "orders")

	// FindCoordinator: v5 does not know key type 2; a malformed key is
	// refused; a good one creates the topic and names this broker.
	v5 := kversion.Stable()
	v5.SetMaxKeyVersion(10, 5)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKeys = 2, []string{s.key.CoordinatorKey()}
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), newClient(t, b.Seed(), kgo.MaxVersions(v5)))
	if err != nil || resp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator v5 key type 2: %v, %+v; want INVALID_REQUEST", err, resp)
	}
	req = kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKeys = 2, []string{"sg:not-a-uuid:1", "sg:" + strings.Repeat("A", 22)}
	resp, err = req.RequestWith(ctxTimeout(t, 10*time.Second), s.cl)
	if err != nil || resp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code || resp.Coordinators[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("FindCoordinator with malformed keys: %v %+v", err, resp)
	}
	node, err := s.coordinator(ctxTimeout(t, 30*time.Second))
	if err != nil || node != 1 {
		t.Fatalf("FindCoordinator key type 2: node %d, %v", node, err)
	}
	st, ok := b.Metadata().Topic(metadata.ShareGroupStateTopic)
	if !ok || len(st.Partitions) != 3 {
		t.Fatalf("%s not created with 3 partitions: %v", metadata.ShareGroupStateTopic, ok)
	}
	if policy := st.Configs["cleanup.policy"]; policy != "delete" {
		t.Fatalf("%s cleanup.policy %q, want delete (as Kafka)", metadata.ShareGroupStateTopic, policy)
	}

	if _, err := s.read(0); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("read before initialize: %v, want INVALID_REQUEST", err)
	}
	want := writeShareHistory(t, s)
	checkShareState(t, s, want)
	if err := s.write(share.PartitionState{StateEpoch: 0, LeaderEpoch: 1, StartOffset: -1, DeliveryCompleteCount: -1}); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("write at an old state epoch: %v, want FENCED_STATE_EPOCH", err)
	}
	if _, err := s.read(0); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("read at an old leader epoch: %v, want FENCED_LEADER_EPOCH", err)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, dir, shareStateOverrides...)
	s.cl = newClient(t, b.Seed())
	checkShareState(t, s, want)

	if err := s.remove(); err != nil {
		t.Fatalf("DeleteShareGroupState: %v", err)
	}
	sum, err := s.summary()
	if err != nil || sum.StartOffset != -1 {
		t.Fatalf("summary after delete: %+v, %v; want start offset -1", sum, err)
	}
}

// The state survives a kill -9 of the broker process: what was
// acknowledged was committed to the log.
func TestShareStateSurvivesKill9(t *testing.T) {
	dir, port := t.TempDir(), freePort(t)
	p := startProcess(t, dir, port, shareStateOverrides...)
	s := newShareClient(t, p.Addr, "sg", "orders")
	want := writeShareHistory(t, s)
	checkShareState(t, s, want)
	p.kill(t)
	p = startProcess(t, dir, port, shareStateOverrides...)
	s.cl = newClient(t, p.Addr)
	checkShareState(t, s, want)
	// And it takes writes again.
	if err := s.write(share.PartitionState{StateEpoch: 1, LeaderEpoch: 1, StartOffset: 120, DeliveryCompleteCount: 0}); err != nil {
		t.Fatal(err)
	}
	want.StartOffset, want.Batches, want.DeliveryCompleteCount = 120, nil, 0
	checkShareState(t, s, want)
}

// Three nodes, __share_group_state replicated three times: the state
// survives a kill -9 of the node that leads the key's partition, whose
// successor loads it from its replica.
func TestShareStateSurvivesCoordinatorKill(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	procs, start := startClusterProcesses(t, nodes, shareStateOverrides...)
	seeds := strings.Join([]string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()}, ",")
	s := newShareClient(t, seeds, "sg", "orders")
	want := writeShareHistory(t, s)
	checkShareState(t, s, want)
	adm := kadm.NewClient(s.cl)
	waitISR(t, adm, metadata.ShareGroupStateTopic, 3, 3)

	node, err := s.coordinator(ctxTimeout(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	victim := int(node - 1)
	procs[victim].kill(t)
	checkShareState(t, s, want)
	if now, err := s.coordinator(ctxTimeout(t, 30*time.Second)); err != nil || now == node {
		t.Fatalf("coordinator after the kill: %d, %v; want another than %d", now, err, node)
	}
	// The new coordinator takes writes; the killed node comes back.
	if err := s.write(share.PartitionState{StateEpoch: 1, LeaderEpoch: 1, StartOffset: 100, DeliveryCompleteCount: 10}); err != nil {
		t.Fatal(err)
	}
	want.StartOffset, want.DeliveryCompleteCount = 100, 10
	want.Batches = want.Batches[len(want.Batches)-4:]
	start(victim)
	procs[victim].waitStarted(t)
	checkShareState(t, s, want)
}

// The broker's Persister, on three in-process nodes: from the broker that
// leads the key's partition of __share_group_state it calls the share
// coordinator in-process, from the others it sends the requests over the
// inter-broker listener; it creates the topic on first use, and rides out
// the loss of the coordinator's node.
func TestShareStatePersister(t *testing.T) {
	c := startReplicatedCluster(t, shareStateOverrides...)
	seeds := strings.Join([]string{c.nodes[0].seed(), c.nodes[1].seed(), c.nodes[2].seed()}, ",")
	adm := newAdmin(t, seeds)
	if _, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 2, -1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	k := share.Key{GroupID: "sg", TopicID: shareTopicID(t, adm, "orders"), Partition: 0}
	ctx := ctxTimeout(t, 2*time.Minute)

	// The first call creates __share_group_state.
	if err := c.bs[0].SharePersister().InitializeState(ctx, k, 3, 10); err != nil {
		t.Fatalf("InitializeState: %v", err)
	}
	leader := func(im *metadata.Image) int32 {
		st, _ := im.Topic(metadata.ShareGroupStateTopic)
		return st.Partitions[share.PartitionFor(k.CoordinatorKey(), int32(len(st.Partitions)))].Leader
	}
	coord := int(leader(c.bs[0].Metadata()) - 1)
	local, remote := c.bs[coord].SharePersister(), c.bs[(coord+1)%3].SharePersister()

	if _, err := remote.ReadState(ctx, k, 2); err != nil {
		t.Fatalf("remote ReadState: %v", err)
	}
	batches := []share.StateBatch{{FirstOffset: 10, LastOffset: 19, DeliveryState: share.DeliveryAcknowledged, DeliveryCount: 1}}
	if err := remote.WriteState(ctx, k, share.PartitionState{StateEpoch: 3, LeaderEpoch: 2, StartOffset: -1, DeliveryCompleteCount: 10, Batches: batches}); err != nil {
		t.Fatalf("remote WriteState: %v", err)
	}
	more := []share.StateBatch{{FirstOffset: 15, LastOffset: 24, DeliveryState: share.DeliveryArchived, DeliveryCount: 2}}
	if err := local.WriteState(ctx, k, share.PartitionState{StateEpoch: 3, LeaderEpoch: 2, StartOffset: -1, DeliveryCompleteCount: 15, Batches: more}); err != nil {
		t.Fatalf("local WriteState: %v", err)
	}
	want := []share.StateBatch{
		{FirstOffset: 10, LastOffset: 14, DeliveryState: share.DeliveryAcknowledged, DeliveryCount: 1},
		{FirstOffset: 15, LastOffset: 24, DeliveryState: share.DeliveryArchived, DeliveryCount: 2},
	}
	for name, p := range map[string]share.Persister{"local": local, "remote": remote} {
		st, err := p.ReadState(ctx, k, 2)
		if err != nil || st.StartOffset != 10 || st.StateEpoch != 3 || !slices.Equal(st.Batches, want) {
			t.Fatalf("%s ReadState: %+v, %v; want start 10, state epoch 3, batches %v", name, st, err, want)
		}
		sum, err := p.ReadStateSummary(ctx, k, 2)
		if err != nil || sum.StartOffset != 10 || sum.LeaderEpoch != 2 || sum.DeliveryCompleteCount != 15 || len(sum.Batches) != 0 {
			t.Fatalf("%s ReadStateSummary: %+v, %v", name, sum, err)
		}
	}
	if _, err := remote.ReadState(ctx, k, 1); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("ReadState at an old leader epoch: %v, want FENCED_LEADER_EPOCH", err)
	}
	if err := local.InitializeState(ctx, k, 2, 0); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("InitializeState at an old state epoch: %v, want FENCED_STATE_EPOCH", err)
	}

	// The coordinator's node goes; a survivor's persister finds the new
	// coordinator and reads the same state.
	c.stop(coord)
	st, err := remote.ReadState(ctx, k, 2)
	if err != nil || !slices.Equal(st.Batches, want) {
		t.Fatalf("ReadState after the coordinator stopped: %+v, %v", st, err)
	}
	if err := remote.DeleteState(ctx, k); err != nil {
		t.Fatalf("DeleteState: %v", err)
	}
	if sum, err := remote.ReadStateSummary(ctx, k, 2); err != nil || sum.StartOffset != -1 {
		t.Fatalf("ReadStateSummary after delete: %+v, %v", sum, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := remote.WriteState(short, share.Key{GroupID: "sg", TopicID: k.TopicID, Partition: 1}, share.PartitionState{StateEpoch: 0, LeaderEpoch: 0, StartOffset: -1}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("WriteState on a key never initialized: %v, want INVALID_REQUEST", err)
	}
}

// The prune job deletes the records of __share_group_state below the
// oldest latest snapshot (the topic is not compacted): the log start
// moves up, and a broker restarted on what is left loads the same state.
func TestShareStatePruned(t *testing.T) {
	dir := t.TempDir()
	overrides := append(slices.Clone(shareStateOverrides), "share.coordinator.state.topic.prune.interval.ms=50")
	b := startBroker(t, dir, overrides...)
	s := newShareClient(t, b.Seed(), "sg", "orders")
	want := writeShareHistory(t, s)
	part := share.PartitionFor(s.key.CoordinatorKey(), 3)
	adm := kadm.NewClient(s.cl)
	var start int64
	eventually(t, 30*time.Second, func() error {
		offs, err := adm.ListStartOffsets(ctxTimeout(t, 10*time.Second), metadata.ShareGroupStateTopic)
		if err != nil {
			return err
		}
		o, _ := offs.Lookup(metadata.ShareGroupStateTopic, part)
		if o.Err != nil || o.Offset <= 0 {
			return fmt.Errorf("log start offset of %s-%d: %d, %v", metadata.ShareGroupStateTopic, part, o.Offset, o.Err)
		}
		start = o.Offset
		return nil
	})
	t.Logf("%s-%d pruned to %d", metadata.ShareGroupStateTopic, part, start)
	checkShareState(t, s, want)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, dir, overrides...)
	s.cl = newClient(t, b.Seed())
	checkShareState(t, s, want)
}

// A deleted topic's share-partition states are deleted with it: the share
// coordinator writes the ShareSnapshot tombstone of each of its keys. The
// topic re-created (a new topic id, so new keys) starts afresh, and its
// state survives a restart.
func TestShareStateTopicDeleted(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, shareStateOverrides...)
	s := newShareClient(t, b.Seed(), "sg", "doomed")
	if err := s.initialize(1, 0); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(s.cl)
	if _, err := adm.DeleteTopics(ctxTimeout(t, 30*time.Second), "doomed"); err != nil {
		t.Fatal(err)
	}
	// ShareSnapshotKey: type 0, group id, topic id, partition.
	key := kbin.AppendInt32(kbin.AppendUuid(kbin.AppendString(kbin.AppendInt16(nil, 0), s.key.GroupID), s.key.TopicID), s.key.Partition)
	part := share.PartitionFor(s.key.CoordinatorKey(), 3)
	cons := newClient(t, b.Seed(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		metadata.ShareGroupStateTopic: {part: kgo.NewOffset().AtStart()}}))
	ctx := ctxTimeout(t, 30*time.Second)
	for found := false; !found; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no tombstone of %s: %v", s.key, err)
		}
		fs.EachRecord(func(r *kgo.Record) { found = found || (bytes.Equal(r.Key, key) && r.Value == nil) })
	}

	again := newShareClient(t, b.Seed(), "sg", "doomed")
	if again.key.TopicID == s.key.TopicID {
		t.Fatal("the re-created topic has the old topic id")
	}
	want := writeShareHistory(t, again)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, dir, shareStateOverrides...)
	again.cl = newClient(t, b.Seed())
	checkShareState(t, again, want)
	s.cl = again.cl
	if _, err := s.summary(); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("summary of the deleted topic's key: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
