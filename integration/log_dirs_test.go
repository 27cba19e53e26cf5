package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// Directory assignments (KIP-858): a three-node cluster whose node 3 has
// two log dirs, the second on a fault-injecting file system. Node 3 leads
// four partitions, spread over its two dirs, and tells the controller
// which dir holds each (AssignReplicasToDirs). The second dir's disk
// fails under an acks=all idempotent producer: within a few seconds the
// controller moves the leadership of node 3's replicas there to the other
// nodes and takes node 3 out of their ISR, while node 3 keeps leading the
// partitions in its first dir; every acknowledged record is read back
// once. Once the disk is replaced and node 3 restarts, its replicas there
// rejoin the ISR.
func TestFailedLogDirMovesLeadership(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	good, bad := nodes[2].dir, t.TempDir()
	ffs := log.NewFaultFS(nil)
	bs := make([]*broker.Broker, 3)
	for i, n := range nodes {
		if i < 2 {
			bs[i] = startInProcessNode(t, n, nodes)
			continue
		}
		cfg, _, err := config.Load("", append(kraftOverrides(n, nodes), "moldau.metrics.listener=",
			"log.dirs="+good+","+bad))
		if err != nil {
			t.Fatal(err)
		}
		logger := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}), nil)).With("node", n.id)
		if bs[i], err = broker.New(cfg, broker.Options{Logger: logger, LogFS: ffs}); err != nil {
			t.Fatal(err)
		}
		bs[i].Start()
	}
	t.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	waitReady(t, bs...)
	ctx := ctxTimeout(t, 90*time.Second)

	// Four partitions led by node 3, flush.messages=1 so that every
	// append fsyncs (and meets the failed disk at once).
	const topic = "jbod"
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := int32(0); p < 4; p++ {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{3, 1, 2}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "flush.messages", kmsg.StringPtr("1")
	rt.Configs = append(rt.Configs, c)
	req.Topics = append(req.Topics, rt)
	adminCl := newClient(t, nodes[0].seed())
	resp, err := req.RequestWith(ctx, adminCl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}
	var inGood, inBad []int32
	eventually(t, 10*time.Second, func() error {
		inGood, inBad = nil, nil
		for p := int32(0); p < 4; p++ {
			name := fmt.Sprintf("%s-%d", topic, p)
			if _, err := os.Stat(filepath.Join(bad, name)); err == nil {
				inBad = append(inBad, p)
			} else if _, err := os.Stat(filepath.Join(good, name)); err == nil {
				inGood = append(inGood, p)
			} else {
				return fmt.Errorf("node 3 has no log of %s yet", name)
			}
		}
		return nil
	})
	if len(inBad) == 0 || len(inGood) == 0 {
		t.Fatalf("node 3's dirs hold partitions %v and %v: want both used", inGood, inBad)
	}
	// The controller learns where each replica of node 3 is, and so
	// does every node's image.
	eventually(t, 10*time.Second, func() error {
		im := bs[0].Metadata()
		tp, ok := im.Topic(topic)
		if !ok {
			return fmt.Errorf("no topic")
		}
		for _, p := range tp.Partitions {
			if p.Directory(3) == (uuid.UUID{}) {
				return fmt.Errorf("partition %d: node 3's directory unassigned", p.Index)
			}
		}
		return nil
	})

	// An acks=all idempotent producer, round-robin over the partitions.
	prod := newClient(t, nodes[0].seed(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1000))
	var mu sync.Mutex
	acked := map[string]bool{}
	var produceErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprint(i)
			err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
			mu.Lock()
			if err != nil {
				produceErr = err
				mu.Unlock()
				return
			}
			acked[v] = true
			mu.Unlock()
		}
	}()
	ackedN := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	eventually(t, 20*time.Second, func() error {
		if n := ackedN(); n < 40 {
			return fmt.Errorf("%d acked", n)
		}
		return nil
	})

	// The disk of the second dir fails.
	failedAt := time.Now()
	ffs.Inject(log.Fault{Op: log.OpSync, PathContains: bad, Sticky: true})
	ffs.Inject(log.Fault{Op: log.OpWrite, PathContains: bad, Sticky: true})
	var moved time.Duration
	eventually(t, 15*time.Second, func() error {
		for i, b := range bs {
			tp, _ := b.Metadata().Topic(topic)
			for _, p := range tp.Partitions {
				bad := slices.Contains(inBad, p.Index)
				switch {
				case bad && (p.Leader == 3 || p.Leader < 0 || slices.Contains(p.ISR, 3)):
					return fmt.Errorf("node %d sees partition %d in the failed dir led by %d, ISR %v", i+1, p.Index, p.Leader, p.ISR)
				case !bad && p.Leader != 3:
					return fmt.Errorf("node %d sees partition %d in the good dir led by %d", i+1, p.Index, p.Leader)
				}
			}
		}
		return nil
	})
	moved = time.Since(failedAt)
	t.Logf("leadership of %v moved off node 3 %v after its dir failed; %v stay led by it", inBad, moved.Round(time.Millisecond), inGood)
	if moved > 10*time.Second {
		t.Errorf("moving the leadership took %v", moved)
	}
	// The producer goes on; node 3 keeps serving its good dir.
	n0 := ackedN()
	eventually(t, 20*time.Second, func() error {
		mu.Lock()
		err := produceErr
		mu.Unlock()
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		if n := ackedN(); n < n0+40 {
			return fmt.Errorf("%d acked since the failure", n-n0)
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}
	for _, p := range inGood {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("direct")}
		direct := newClient(t, nodes[2].seed(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := direct.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d in node 3's good dir: %v", p, err)
		}
	}

	// Every acknowledged record is there once.
	cons := newClient(t, nodes[1].seed(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for missing := len(acked); missing > 0; {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("%d acknowledged records not read back", missing)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			seen[v]++
			if seen[v] == 1 && acked[v] {
				missing--
			}
		})
	}
	for v, n := range seen {
		if n > 1 && v != "direct" {
			t.Errorf("record %s read %d times", v, n)
		}
	}
	// The controller's view: the failed dir is no longer among node 3's
	// online dirs.
	if b := bs[0].Metadata().Brokers[3]; len(b.LogDirs) != 1 {
		t.Errorf("node 3's online log dirs in the image: %v", b.LogDirs)
	}

	// The disk is replaced and node 3 restarts: it registers both dirs
	// again and its replicas there catch up and rejoin the ISR.
	bs[2].Close()
	ffs.Reset()
	cfg, _, err := config.Load("", append(kraftOverrides(nodes[2], nodes), "moldau.metrics.listener=", "log.dirs="+good+","+bad))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}), nil)).With("node", 3, "incarnation", 2)
	if bs[2], err = broker.New(cfg, broker.Options{Logger: logger, LogFS: ffs}); err != nil {
		t.Fatal(err)
	}
	bs[2].Start()
	eventually(t, 30*time.Second, func() error {
		im := bs[0].Metadata()
		if b := im.Brokers[3]; b == nil || len(b.LogDirs) != 2 {
			return fmt.Errorf("node 3's online log dirs: %v", b)
		}
		tp, _ := im.Topic(topic)
		for _, p := range tp.Partitions {
			if !slices.Contains(p.ISR, 3) {
				return fmt.Errorf("partition %d: ISR %v", p.Index, p.ISR)
			}
		}
		return nil
	})
}
