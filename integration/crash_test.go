package integration

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A franz-go producer writes up to 1,000,000 records to 8 partitions; the
// broker is killed with SIGKILL mid-stream and restarted. Every record
// acknowledged before the kill reads back, in order, and offsets have no
// gaps or duplicates. The files on disk are laid out as Kafka lays them.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	const partitions = 8
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port, "num.partitions=8")

	prod, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("crash"),
		kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.RecordRetries(3), kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// acked[partition] holds the sequence numbers acknowledged there, in
	// offset order.
	var mu sync.Mutex
	acked := make(map[int32]map[int64]uint64) // partition -> offset -> seq
	var nacked atomic.Int64
	var wg sync.WaitGroup
	// Producing stops at the kill; the deadline only turns a broker that
	// stopped answering into a failure instead of a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	killAt := int64(total / 2)
	killed := make(chan struct{})
	go func() {
		for nacked.Load() < killAt && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		p.kill(t)
		// Unblock a Produce waiting for buffer space: nothing more
		// will be acknowledged.
		cancel()
		close(killed)
	}()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		select {
		case <-killed:
			i = total
			continue
		default:
		}
		wg.Add(1)
		v := make([]byte, 100)
		binary.BigEndian.PutUint64(v, uint64(i))
		prod.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				return
			}
			mu.Lock()
			if acked[r.Partition] == nil {
				acked[r.Partition] = make(map[int64]uint64)
			}
			acked[r.Partition][r.Offset] = binary.BigEndian.Uint64(r.Value)
			mu.Unlock()
			nacked.Add(1)
		})
	}
	<-killed
	cancel()
	prod.Close() // fails what is still buffered
	wg.Wait()
	t.Logf("acknowledged before the kill: %d records", nacked.Load())
	if nacked.Load() < killAt {
		t.Fatalf("only %d acknowledged", nacked.Load())
	}

	// Restart on the same data: recovery runs (no clean shutdown).
	p2 := startProcess(t, dir, port)
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(p2.Out.String(), "recover") {
			return errString("restart after kill does not log recovery")
		}
		return nil
	})
	cons := newClient(t, p2.Addr, kgo.ConsumeTopics("crash"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	next := make(map[int32]int64)
	seen := make(map[uint64]bool)
	need := int(nacked.Load())
	found := 0
	cctx := ctxTimeout(t, 120*time.Second)
	for found < need {
		fs := cons.PollFetches(cctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming after restart: %v (found %d of %d acknowledged)", err, found, need)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d: a gap", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition]++
			seq := binary.BigEndian.Uint64(r.Value)
			if seen[seq] {
				t.Fatalf("record %d appears twice (partition %d offset %d)", seq, r.Partition, r.Offset)
			}
			seen[seq] = true
			if want, ok := acked[r.Partition][r.Offset]; ok {
				if want != seq {
					t.Fatalf("partition %d offset %d holds record %d, but %d was acknowledged there", r.Partition, r.Offset, seq, want)
				}
				found++
			}
		})
	}
	for part, offs := range acked {
		for off := range offs {
			if off >= next[part] {
				t.Fatalf("acknowledged record at partition %d offset %d was lost (log ends at %d)", part, off, next[part])
			}
		}
	}

	// Kafka's layout on disk.
	segName := regexp.MustCompile(`^\d{20}\.(log|index|timeindex)$`)
	var logs int
	for part := 0; part < partitions; part++ {
		pdir := filepath.Join(dir, "crash-"+strconv.Itoa(part))
		ents, err := os.ReadDir(pdir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if segName.MatchString(e.Name()) && strings.HasSuffix(e.Name(), ".log") {
				logs++
			}
		}
	}
	if logs < partitions {
		t.Fatalf("found %d segment .log files for %d partitions", logs, partitions)
	}
	for _, f := range []string{"meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s missing: %v", f, err)
		}
	}

	// A clean stop, then a restart that skips recovery.
	p2.stop(t)
	if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("no clean shutdown marker after SIGINT: %v", err)
	}
	p3 := startProcess(t, dir, port)
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(strings.ToLower(p3.Out.String()), "clean shutdown") {
			return errString("restart after a clean stop does not say it skipped recovery")
		}
		return nil
	})
}
