package integration

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker/uuid"
)

// lmDirs returns where partition 0 of topic is on the broker: the dirs
// holding its current replica and the dir of its future replica ("" if
// none), with the future's size.
func lmDirs(ctx context.Context, adm *kadm.Client, topic string) (current []string, future string, futureSize int64, err error) {
	s := kadm.TopicsSet{}
	s.Add(topic, 0)
	all, err := adm.DescribeAllLogDirs(ctx, s)
	if err != nil {
		return nil, "", 0, err
	}
	for _, dirs := range all {
		for dir, d := range dirs {
			if d.Err != nil {
				return nil, "", 0, d.Err
			}
			if p, ok := d.Topics[topic][0]; ok {
				if p.IsFuture {
					future, futureSize = dir, p.Size
				} else {
					current = append(current, dir)
				}
			}
		}
	}
	return current, future, futureSize, nil
}

// lmProducer produces sequence numbers to partition 0 of topic with an
// idempotent acks=all producer until stopped, recording what was
// acknowledged (offset -> sequence).
type lmProducer struct {
	mu     sync.Mutex
	acked  map[int64]uint64
	n      atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

func startLMProducer(t *testing.T, seed, topic string, burst int) *lmProducer {
	t.Helper()
	cl := newClient(t, seed, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond), kgo.RecordDeliveryTimeout(20*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	p := &lmProducer{acked: map[int64]uint64{}, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	produce := func(i int) {
		wg.Add(1)
		v := make([]byte, 100)
		rand.Read(v[8:]) // incompressible: the copy's size is known
		binary.BigEndian.PutUint64(v, uint64(i))
		cl.Produce(ctx, &kgo.Record{Value: v, Partition: 0}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.acked[r.Offset] = binary.BigEndian.Uint64(r.Value)
			p.mu.Unlock()
			p.n.Add(1)
		})
	}
	for i := 0; i < burst; i++ {
		produce(i)
	}
	if err := cl.Flush(ctxTimeout(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		for i := burst; ctx.Err() == nil; i++ {
			produce(i)
			if i%100 == 0 {
				// ~5,000 records/s: well under the copy's throttle, so
				// the future replica catches up.
				time.Sleep(20 * time.Millisecond)
			}
		}
		wg.Wait()
	}()
	return p
}

func (p *lmProducer) stop() map[int64]uint64 {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked
}

// lmCheckAll reads partition 0 of topic from the start and checks that
// every acknowledged record is at its offset, with no gap or duplicate.
func lmCheckAll(t *testing.T, seed, topic string, acked map[int64]uint64) int64 {
	t.Helper()
	var maxOff int64 = -1
	for off := range acked {
		maxOff = max(maxOff, off)
	}
	cons := newClient(t, seed, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx := ctxTimeout(t, 60*time.Second)
	seen := map[uint64]bool{}
	var next int64
	for next <= maxOff {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming: %v (at offset %d of %d)", err, next, maxOff)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next {
				t.Fatalf("offset %d after %d: a gap", r.Offset, next-1)
			}
			next++
			seq := binary.BigEndian.Uint64(r.Value)
			if seen[seq] {
				t.Fatalf("record %d twice (offset %d)", seq, r.Offset)
			}
			seen[seq] = true
			if want, ok := acked[r.Offset]; ok && want != seq {
				t.Fatalf("offset %d holds %d, but %d was acknowledged there", r.Offset, seq, want)
			}
		})
	}
	return next
}

// kcatCount counts the records kcat (librdkafka) reads from partition 0.
func kcatCount(t *testing.T, seed, topic string) int64 {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: install it (apt-get install -y kcat); ./test.sh does")
	}
	out, err := exec.Command(kcat, "-C", "-b", seed, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	return int64(strings.Count(string(out), "\n"))
}

func lmPartitionDirs(t *testing.T, dir, topic string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// lmDirectoryID reads the directory.id of a log dir's meta.properties.
func lmDirectoryID(t *testing.T, dir string) uuid.UUID {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "directory.id="); ok {
			id, err := uuid.Parse(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	t.Fatalf("%s/meta.properties has no directory.id", dir)
	return uuid.UUID{}
}

// A partition moves between the two log dirs of a broker (AlterReplicaLogDirs,
// driven by `moldau log move`) under an acks=all idempotent producer and a
// consumer: DescribeLogDirs shows the future replica while it is copied,
// then the partition only in the new dir; the old dir is emptied; every
// acknowledged record is read back once, at its offset, and kcat agrees.
func TestMoveReplicaBetweenLogDirs(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	b := startBroker(t, d1, "log.dirs="+d1+","+d2, "replica.alter.log.dirs.io.max.bytes.per.second=4000000")
	c := &cliCluster{brokers: b.Seed(), broker: b}
	const topic = "moves"
	c.ok(t, nil, "topic", "create", topic, "--partitions", "1", "--config", "segment.bytes=1048576", "--config", "file.delete.delay.ms=0")
	adm := newAdmin(t, b.Seed())
	ctx := ctxTimeout(t, 90*time.Second)

	prod := startLMProducer(t, b.Seed(), topic, 40_000) // ~5 MB: ~1.5 s to copy
	cur, _, _, err := lmDirs(ctx, adm, topic)
	if err != nil || len(cur) != 1 {
		t.Fatalf("before the move: %v %v", cur, err)
	}
	from, to := cur[0], d2
	if filepath.Clean(from) == filepath.Clean(d2) {
		to = d1
	}
	c.ok(t, nil, "log", "move", "--topic", topic, "--partition", "0", "--broker", "1", "--to", to, "--no-wait")
	eventually(t, 10*time.Second, func() error {
		_, fut, size, err := lmDirs(ctx, adm, topic)
		if err != nil {
			return err
		}
		if fut != to || size == 0 {
			return fmt.Errorf("no future replica with data in %s yet (%q, %d)", to, fut, size)
		}
		return nil
	})
	out := c.ok(t, nil, "log", "move", "--topic", topic, "--partition", "0", "--broker", "1", "--to", to)
	if !strings.Contains(out, "Moved "+topic+"-0 on broker 1 to "+to) {
		t.Fatalf("moldau log move said:\n%s", out)
	}
	time.Sleep(200 * time.Millisecond) // the producer keeps going on the moved log
	acked := prod.stop()
	if len(acked) < 40_000 {
		t.Fatalf("only %d acknowledged", len(acked))
	}
	cur, fut, _, err := lmDirs(ctx, adm, topic)
	if err != nil || len(cur) != 1 || cur[0] != to || fut != "" {
		t.Fatalf("after the move: current %v, future %q, %v", cur, fut, err)
	}
	n := lmCheckAll(t, b.Seed(), topic, acked)
	if k := kcatCount(t, b.Seed(), topic); k != n {
		t.Fatalf("kcat read %d records, kgo %d", k, n)
	}
	// The controller learns the new dir (AssignReplicasToDirs).
	wantID := lmDirectoryID(t, to)
	eventually(t, 10*time.Second, func() error {
		tp, ok := b.Metadata().Topic(topic)
		if !ok {
			return fmt.Errorf("no topic")
		}
		if got := tp.Partitions[0].Directory(1); got != wantID {
			return fmt.Errorf("metadata has directory %s, want %s", got, wantID)
		}
		return nil
	})
	eventually(t, 10*time.Second, func() error {
		if left := lmPartitionDirs(t, from, topic); len(left) != 0 {
			return fmt.Errorf("old dir still holds %v", left)
		}
		return nil
	})
	if got := lmPartitionDirs(t, to, topic); len(got) != 1 || got[0] != topic+"-0" {
		t.Fatalf("new dir holds %v", got)
	}

	// Back again with kafka-reassign-partitions.sh's plan format.
	plan := filepath.Join(t.TempDir(), "plan.json")
	body := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[1],"log_dirs":[%q]}]}`, topic, from)
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok(t, nil, "log", "move", "--plan", plan)
	if cur, fut, _, err := lmDirs(ctx, adm, topic); err != nil || len(cur) != 1 || cur[0] != from || fut != "" {
		t.Fatalf("after moving back: current %v, future %q, %v", cur, fut, err)
	}
	if k := kcatCount(t, b.Seed(), topic); k != n {
		t.Fatalf("after moving back kcat read %d records, want %d", k, n)
	}
}

// A broker process killed (SIGKILL) while it copies a partition to its
// other log dir restarts with one log serving, from the old dir: the
// move resumes from the "-future" dir it left; once it is done no
// "-future" dir is left and every acknowledged record reads back.
func TestKill9MidLogMove(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	port := freePort(t)
	p := startProcess(t, d1, port, "log.dirs="+d1+","+d2, "replica.alter.log.dirs.io.max.bytes.per.second=500000")
	c := &cliCluster{brokers: p.Addr}
	const topic = "moves"
	c.ok(t, nil, "topic", "create", topic, "--partitions", "1", "--config", "segment.bytes=1048576")
	adm := newAdmin(t, p.Addr)
	ctx := ctxTimeout(t, 90*time.Second)
	prod := startLMProducer(t, p.Addr, topic, 30_000) // ~4.5 MB: ~9 s to copy
	acked := prod.stop()
	cur, _, _, err := lmDirs(ctx, adm, topic)
	if err != nil || len(cur) != 1 {
		t.Fatalf("before the move: %v %v", cur, err)
	}
	to := d2
	if filepath.Clean(cur[0]) == filepath.Clean(d2) {
		to = d1
	}
	c.ok(t, nil, "log", "move", "--topic", topic, "--partition", "0", "--broker", "1", "--to", to, "--no-wait")
	eventually(t, 10*time.Second, func() error {
		_, fut, size, err := lmDirs(ctx, adm, topic)
		if err != nil {
			return err
		}
		if fut != to || size < 500_000 {
			return fmt.Errorf("future replica in %s not far along yet (%q, %d)", to, fut, size)
		}
		return nil
	})
	p.kill(t)
	var futures []string
	for _, n := range lmPartitionDirs(t, to, topic) {
		if strings.HasSuffix(n, "-future") {
			futures = append(futures, n)
		}
	}
	if len(futures) != 1 {
		t.Fatalf("after the kill %s holds %v, want one -future dir", to, lmPartitionDirs(t, to, topic))
	}

	t.Logf("killed with %s in %s; %d records acknowledged", futures[0], to, len(acked))

	// Restarted without the throttle: the move resumes from the future
	// log it left and finishes.
	p2 := startProcess(t, d1, port, "log.dirs="+d1+","+d2)
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(p2.Out.String(), "resuming a move between log dirs") {
			return fmt.Errorf("the restart did not resume the move")
		}
		return nil
	})
	adm2 := newAdmin(t, p2.Addr)
	eventually(t, 30*time.Second, func() error {
		cur, fut, _, err := lmDirs(ctx, adm2, topic)
		if err != nil {
			return err
		}
		if len(cur) != 1 || cur[0] != to || fut != "" {
			return fmt.Errorf("current %v, future %q", cur, fut)
		}
		return nil
	})
	if got := lmPartitionDirs(t, to, topic); len(got) != 1 || got[0] != topic+"-0" {
		t.Fatalf("new dir holds %v", got)
	}
	n := lmCheckAll(t, p2.Addr, topic, acked)
	if k := kcatCount(t, p2.Addr, topic); k != n {
		t.Fatalf("kcat read %d records, kgo %d", k, n)
	}
}

// kafka-reassign-partitions.sh's plans may name a log dir per replica:
// `moldau cluster reassign --execute` moves the partition between brokers
// and each replica into its dir (the new replica on broker 2 is created
// in the dir it was told before it existed), `--verify` reports the
// replicas' moves too and succeeds once both are done; a second plan
// moves the replica that stayed on broker 1 to its other dir. Every
// record produced before reads back afterwards.
func TestReassignWithLogDirs(t *testing.T) {
	nodes := newClusterNodes(t, 2)
	extra := []string{t.TempDir(), t.TempDir()}
	var seeds []string
	for i, n := range nodes {
		b := startInProcessNode(t, n, nodes, "log.dirs="+n.dir+","+extra[i])
		t.Cleanup(func() { b.Close() })
		seeds = append(seeds, n.seed())
	}
	const topic = "ld"
	createWithAssignment(t, seeds[0], topic, [][]int32{{1}}, nil)
	adm := newAdmin(t, joinSeeds(seeds))
	ctx := ctxTimeout(t, 2*time.Minute)
	prod := newClient(t, joinSeeds(seeds), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 2000
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Value: binary.BigEndian.AppendUint64(nil, uint64(i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// where reports the dirs holding the partition on broker b.
	where := func(b int32) (cur []string, future string) {
		s := kadm.TopicsSet{}
		s.Add(topic, 0)
		dirs, err := adm.DescribeBrokerLogDirs(ctx, b, s)
		if err != nil {
			t.Fatal(err)
		}
		for dir, d := range dirs {
			if p, ok := d.Topics[topic][0]; ok {
				if p.IsFuture {
					future = dir
				} else {
					cur = append(cur, dir)
				}
			}
		}
		return cur, future
	}
	cli := &cliCluster{brokers: joinSeeds(seeds)}
	run := func(body string) string {
		plan := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out := cli.ok(t, nil, "cluster", "reassign", "--execute", "--reassignment-json-file", plan)
		eventually(t, 60*time.Second, func() error {
			if r := cli.moldau(t, nil, "cluster", "reassign", "--verify", "--reassignment-json-file", plan); r.code != 0 {
				return fmt.Errorf("verify: %s%s", r.stdout, r.stderr)
			}
			return nil
		})
		return out
	}
	out := run(fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[1,2],"log_dirs":["any",%q]}]}`, topic, extra[1]))
	if !strings.Contains(out, "Successfully started log directory move for: "+topic+"-0-2") {
		t.Fatalf("execute said:\n%s", out)
	}
	if cur, fut := where(2); len(cur) != 1 || cur[0] != extra[1] || fut != "" {
		t.Fatalf("broker 2 holds %s-0 in %v (future %q), want %s", topic, cur, fut, extra[1])
	}
	// The old copy is renamed -delete and deleted in the background:
	// gone soon after the move, not at once.
	eventually(t, 10*time.Second, func() error {
		if got := lmPartitionDirs(t, nodes[1].dir, topic); len(got) != 0 {
			return fmt.Errorf("broker 2's first dir holds %v", got)
		}
		return nil
	})
	from, _ := where(1)
	to := extra[0]
	if len(from) == 1 && from[0] == extra[0] {
		to = nodes[0].dir
	}
	run(fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[1,2],"log_dirs":[%q,"any"]}]}`, topic, to))
	if cur, fut := where(1); len(cur) != 1 || cur[0] != to || fut != "" {
		t.Fatalf("broker 1 holds %s-0 in %v (future %q), want %s", topic, cur, fut, to)
	}
	cons := newClient(t, joinSeeds(seeds), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if v := binary.BigEndian.Uint64(r.Value); v != uint64(got) {
				t.Fatalf("record %d at offset %d, want %d", v, r.Offset, got)
			}
			got++
		})
	}
}
