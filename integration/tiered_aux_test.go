package integration

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// A new, empty follower of a tiered partition starts at its leader's
// local log start with the leader epochs and producer state below it
// rebuilt from the store (Kafka's buildRemoteLogAuxState): its
// leader-epoch-checkpoint holds the epochs from the store, and once it
// leads it answers OffsetForLeaderEpoch for an epoch that ended below
// its local start as the old leader did, lists the idempotent producer
// that wrote only below it, and that producer goes on in sequence.
func TestTieredFollowerRebuildsAuxState(t *testing.T) {
	props := append(tieredBrokerProps(t.TempDir()), "rlmm.config.remote.log.metadata.topic.num.partitions=1",
		"auto.leader.rebalance.enable=false")
	c := startReplicatedCluster(t, props...)
	t.Cleanup(c.closeAll)
	seeds := c.seeds()
	seed := strings.Join(seeds, ",")
	createWithAssignment(t, seeds[0], tieredTopic, [][]int32{{1, 2}}, map[string]string{
		"remote.storage.enable": "true",
		"segment.bytes":         fmt.Sprint(tieredSegmentBytes),
		"local.retention.bytes": fmt.Sprint(tieredSegmentBytes),
	})
	// Clients see a leader change at once, not after kgo's 5 s metadata
	// minimum age.
	fresh := kgo.MetadataMinAge(50 * time.Millisecond)
	adm := kadm.NewClient(newClient(t, seed, fresh))
	waitISR(t, adm, tieredTopic, 1, 2)

	// Producer A writes only in the first epoch, led by broker 1; then
	// broker 2 leads and another producer writes until the leader's local
	// log start is well past A's records.
	const early, total = 150, 500
	opts := []kgo.Opt{fresh, kgo.ProducerBatchMaxBytes(1 << 20), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	a := newClient(t, seed, opts...)
	produceTiered(t, a, 0, early)
	aID, _, err := a.ProducerID(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	moveTieredPartition(t, adm, []int32{2, 1})
	produceTiered(t, newClient(t, seed, opts...), early, total)
	eventually(t, time.Minute, func() error {
		if local, err := listOffset(t, a, -4); err != nil || local <= early+tieredSegmentBytes/tieredValueBytes {
			return fmt.Errorf("leader's local log start %d, %v", local, err)
		}
		return nil
	})
	firstEpoch, firstEnd := offsetForLeaderEpoch(t, a, 0)
	if firstEpoch != 0 || firstEnd != early {
		t.Fatalf("leader 2: epoch 0 ends at %d (epoch %d), want %d", firstEnd, firstEpoch, early)
	}
	leaderEpochs, err := log.ReadLeaderEpochCheckpoint(log.OSFS{}, filepath.Join(c.nodes[1].dir, tieredTopic+"-0"))
	if err != nil {
		t.Fatal(err)
	}

	// Broker 3 joins, empty: it starts past the leader's local start with
	// the epochs below from the store.
	moveTieredPartition(t, adm, []int32{2, 1, 3})
	dir3 := filepath.Join(c.nodes[2].dir, tieredTopic+"-0")
	localStart3 := firstSegment(t, dir3)
	if localStart3 <= early {
		t.Fatalf("broker 3's first segment is at %d, below the leader's local start", localStart3)
	}
	want := slices.DeleteFunc(slices.Clone(leaderEpochs), func(e log.EpochEntry) bool { return e.StartOffset >= localStart3 })
	got, err := log.ReadLeaderEpochCheckpoint(log.OSFS{}, dir3)
	if err != nil || len(got) < len(want) || !slices.Equal(got[:len(want)], want) || len(want) < 2 {
		t.Fatalf("broker 3's leader-epoch-checkpoint %v, %v; want it to start with the leader's %v below %d", got, err, want, localStart3)
	}

	// Checkpointed at once: a restart keeps the log start, and so the
	// epochs below the local start.
	starts, err := log.ReadOffsetCheckpoint(log.OSFS{}, filepath.Join(c.nodes[2].dir, log.LogStartOffsetCheckpointFile))
	if start, ok := starts[log.TopicPartition{Topic: tieredTopic, Partition: 0}]; err != nil || !ok || start != 0 {
		t.Fatalf("broker 3's log-start-offset-checkpoint %v, %v; want %s-0 at 0", starts, err, tieredTopic)
	}

	// Broker 3 leads.
	moveTieredPartition(t, adm, []int32{3, 2, 1})
	eventually(t, 30*time.Second, func() error {
		if e, end := offsetForLeaderEpoch(t, a, 0); e != firstEpoch || end != firstEnd {
			return fmt.Errorf("leader 3: epoch 0 ends at %d (epoch %d), want %d", end, e, firstEnd)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		ps, err := adm.DescribeProducers(ctxTimeout(t, 10*time.Second), kadm.TopicsSet{tieredTopic: {0: {}}})
		if err != nil {
			return err
		}
		for _, p := range ps.SortedProducers() {
			if p.ProducerID == aID {
				if p.Leader != 3 || p.LastSequence != early-1 {
					return fmt.Errorf("producer %d: leader %d, last sequence %d; want 3, %d", aID, p.Leader, p.LastSequence, early-1)
				}
				return nil
			}
		}
		return fmt.Errorf("leader 3 does not know producer %d: %+v", aID, ps.SortedProducers())
	})
	produceTiered(t, a, total, total+10)
	if end, err := listOffset(t, a, -1); err != nil || end != total+10 {
		t.Fatalf("log end %d, %v; want %d", end, err, total+10)
	}
}

// moveTieredPartition reassigns the tiered topic's partition 0 to
// replicas, waits until they are all in sync, and makes the first one
// the leader (PREFERRED ElectLeaders).
func moveTieredPartition(t *testing.T, adm *kadm.Client, replicas []int32) {
	t.Helper()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(tieredTopic, 0, replicas)
	resp, err := adm.AlterPartitionAssignments(ctxTimeout(t, 30*time.Second), req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), tieredTopic)
		if err != nil {
			return err
		}
		pd := md.Topics[tieredTopic].Partitions[0]
		if !slices.Equal(pd.Replicas, replicas) || len(pd.ISR) != len(replicas) {
			return fmt.Errorf("replicas %v, ISR %v; want %v all in sync", pd.Replicas, pd.ISR, replicas)
		}
		if pd.Leader == replicas[0] {
			return nil
		}
		rs, err := adm.ElectLeaders(ctxTimeout(t, 10*time.Second), kadm.ElectPreferredReplica, kadm.TopicsSet{tieredTopic: {0: {}}})
		if err != nil {
			return err
		}
		if r := rs[tieredTopic][0]; r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			return fmt.Errorf("electing %d: %w", replicas[0], r.Err)
		}
		return fmt.Errorf("leader %d, electing %d", pd.Leader, replicas[0])
	})
}

// offsetForLeaderEpoch asks the tiered partition's leader, as a consumer,
// for the end offset of epoch.
func offsetForLeaderEpoch(t *testing.T, cl *kgo.Client, epoch int32) (int32, int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = tieredTopic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, -1, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var p kmsg.OffsetForLeaderEpochResponseTopicPartition
	eventually(t, 30*time.Second, func() error {
		resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		p = resp.Topics[0].Partitions[0]
		return kerr.ErrorForCode(p.ErrorCode)
	})
	return p.LeaderEpoch, p.EndOffset
}
