package integration

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/log"
)

// A tiered leader killed (kill -9) after local retention deleted segments
// and before log.flush.start.offset.checkpoint.interval.ms wrote the log
// start keeps, after its restart, the leader epochs that ended below its
// local start (OffsetForLeaderEpoch answers them), and gets its log start
// back from the store at once: ListOffsets EARLIEST answers it and a
// consumer from the beginning reads every record. The log-start checkpoint the
// restart finds holds the log start of the last clean shutdown (0), or,
// as for a topic created since the last checkpoint, nothing.
func TestTieredStorageKill9BeforeLogStartCheckpoint(t *testing.T) {
	for _, dropEntry := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpoint entry dropped=%v", dropEntry), func(t *testing.T) {
			testTieredKill9BeforeLogStartCheckpoint(t, dropEntry)
		})
	}
}

func testTieredKill9BeforeLogStartCheckpoint(t *testing.T, dropEntry bool) {
	storeDir, logDir := t.TempDir(), t.TempDir()
	port := freePort(t)
	// No log-start checkpoint but at a clean shutdown.
	props := append(tieredBrokerProps(storeDir), "log.flush.start.offset.checkpoint.interval.ms=3600000")
	p := startProcess(t, logDir, port, props...)
	createTieredTopic(t, newAdmin(t, p.Addr))
	opts := []kgo.Opt{kgo.ProducerBatchMaxBytes(1 << 20), kgo.RequiredAcks(kgo.AllISRAcks())}
	cl := newClient(t, p.Addr, opts...)
	// The first epoch: fewer records than local.retention.bytes.
	const early, total = 200, 1200
	produceTiered(t, cl, 0, early)
	firstEpoch := tieredLeaderEpoch(t, p.Addr)
	cl.Close()
	// A clean restart makes a new leader epoch (the only replica is
	// shut down, then elected again); local retention then deletes
	// every segment of the first one.
	p.stop(t)
	p = startProcess(t, logDir, port, props...)
	cl = newClient(t, p.Addr, opts...)
	produceTiered(t, cl, early, total)
	if e := tieredLeaderEpoch(t, p.Addr); e <= firstEpoch {
		t.Fatalf("leader epoch %d after a restart, %d before", e, firstEpoch)
	}
	eventually(t, time.Minute, func() error {
		if local, err := listOffset(t, cl, -4); err != nil || local <= early {
			return fmt.Errorf("local log start %d, %v; want above %d", local, err, early)
		}
		return nil
	})
	if e, end := offsetForLeaderEpoch(t, cl, firstEpoch); e != firstEpoch || end != early {
		t.Fatalf("before the kill: epoch %d ends at %d (epoch %d), want %d", firstEpoch, end, e, early)
	}
	cl.Close()
	p.kill(t)

	ckpt := filepath.Join(logDir, log.LogStartOffsetCheckpointFile)
	starts, err := log.ReadOffsetCheckpoint(log.OSFS{}, ckpt)
	tp := log.TopicPartition{Topic: tieredTopic, Partition: 0}
	if start, ok := starts[tp]; err != nil || !ok || start != 0 {
		t.Fatalf("log-start-offset-checkpoint %v, %v; want the clean shutdown's %s at 0", starts, err, tp)
	}
	if dropEntry {
		delete(starts, tp)
		if err := log.WriteOffsetCheckpoint(log.OSFS{}, ckpt, starts); err != nil {
			t.Fatal(err)
		}
	}
	// A task interval longer than the test: the log start must come
	// back from the store at once, as Kafka's new leader runs its copy
	// task with no initial delay.
	p = startProcess(t, logDir, port, append(props, "remote.log.manager.task.interval.ms=600000")...)
	cl = newClient(t, p.Addr, opts...)
	if local, err := listOffset(t, cl, -4); err != nil || local <= early {
		t.Fatalf("after the restart: local log start %d, %v; want above %d", local, err, early)
	}
	if e, end := offsetForLeaderEpoch(t, cl, firstEpoch); e != firstEpoch || end != early {
		t.Fatalf("after the restart: epoch %d ends at %d (epoch %d), want %d", firstEpoch, end, e, early)
	}
	eventually(t, 10*time.Second, func() error {
		if earliest, err := listOffset(t, cl, -2); err != nil || earliest != 0 {
			return fmt.Errorf("earliest offset %d, %v; want 0", earliest, err)
		}
		return nil
	})
	consumeTiered(t, p.Addr, total)
}

// tieredLeaderEpoch is the tiered partition's leader epoch in the metadata.
func tieredLeaderEpoch(t *testing.T, seed string) int32 {
	t.Helper()
	var epoch int32
	eventually(t, 30*time.Second, func() error {
		md, err := newAdmin(t, seed).Metadata(ctxTimeout(t, 10*time.Second), tieredTopic)
		if err != nil {
			return err
		}
		pd, ok := md.Topics[tieredTopic].Partitions[0]
		if !ok || pd.Err != nil || pd.Leader < 0 {
			return fmt.Errorf("partition 0: %+v", pd)
		}
		epoch = pd.LeaderEpoch
		return nil
	})
	return epoch
}
