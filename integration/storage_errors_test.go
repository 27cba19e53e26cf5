//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// Issue 11's storage failures, reproduced with brokers as processes and
// stock clients over TCP: running out of file descriptors while creating
// partitions, restarting under a file limit too low for the logs, a log
// dir that starts failing, and bit rot in an old segment.

// launchLimited starts `moldau serve` with its open-file limit (soft and
// hard) at nofile, through the shell's ulimit, without waiting.
func launchLimited(t *testing.T, addr string, nofile int, flags ...string) *brokerProcess {
	t.Helper()
	script := fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile)
	args := append([]string{"-c", script, moldauBinary(t), "serve"}, flags...)
	p := &brokerProcess{cmd: exec.Command("/bin/sh", args...), Addr: addr, Out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.Out, p.Out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("broker process %s output:\n%s", p.Addr, lastLines(p.Out.String(), 60))
		}
	})
	return p
}

func serveFlags(dir string, port int, overrides ...string) []string {
	args := []string{
		"--override", "log.dirs=" + dir,
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port),
		"--override", "moldau.metrics.listener=",
	}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	return args
}

// warnings are the WARN and ERROR lines of a broker's output.
func warnings(out string) string {
	var w []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			w = append(w, l)
		}
	}
	return strings.Join(w, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[%d lines before]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// alive fails the test if the process exited.
func (p *brokerProcess) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("the broker exited (code %d):\n%s", p.cmd.ProcessState.ExitCode(), lastLines(p.Out.String(), 40))
	default:
	}
	if out := p.Out.String(); strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Fatalf("the broker panicked:\n%s", lastLines(out, 60))
	}
}

// waitOutput polls the process output until re matches count times.
func waitOutput(t *testing.T, p *brokerProcess, re string, count int, timeout time.Duration) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for {
		if m := rx.FindAllString(p.Out.String(), -1); len(m) >= count {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("output has not %d lines matching %q after %v:\n%s", count, re, timeout, lastLines(p.Out.String(), 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rawClient is a kgo client that keeps its connections (they cannot be
// reopened while the broker is out of file descriptors).
func rawClient(t *testing.T, addr string) *kgo.Client {
	return newClient(t, addr, kgo.ConnIdleTimeout(15*time.Minute), kgo.RequestRetries(0), kgo.RetryTimeout(5*time.Second))
}

func topicID(t *testing.T, cl *kgo.Client, topic string) uuid.UUID {
	t.Helper()
	tds, err := kadm.NewClient(cl).ListTopics(ctxTimeout(t, 10*time.Second), topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("list %s: %v %v", topic, err, tds[topic].Err)
	}
	return uuid.UUID(tds[topic].ID)
}

// produceRaw appends n records of size bytes to one partition with
// acks=all, by a Produce request on the broker's produce connection, and
// returns the partition's error.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, id uuid.UUID, partition int32, n, size int) error {
	t.Helper()
	req := produceRequestN(t, topic, id, partition, n, size)
	resp, err := req.RequestWith(ctxTimeout(t, 15*time.Second), cl.Broker(1))
	if err != nil {
		t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// produceRequestN is an acks=all Produce request of n records of size
// bytes to one partition.
func produceRequestN(t *testing.T, topic string, id uuid.UUID, partition int32, n, size int) *kmsg.ProduceRequest {
	t.Helper()
	bb := log.NewBatchBuilder(0)
	for i := 0; i < n; i++ {
		bb.Add(time.Now().UnixMilli(), nil, []byte(strings.Repeat("x", size)))
	}
	records, err := bb.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchRaw fetches one partition from offset and returns its error and
// the record bytes.
func fetchRaw(t *testing.T, cl *kgo.Client, topic string, id uuid.UUID, partition int32, offset int64) (error, []byte) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 50<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 50<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 15*time.Second), cl.Broker(1))
	if err != nil {
		t.Fatalf("fetch from %s-%d: %v", topic, partition, err)
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("fetch: error %v, no partition", kerr.ErrorForCode(resp.ErrorCode))
	}
	p := resp.Topics[0].Partitions[0]
	return kerr.ErrorForCode(p.ErrorCode), p.RecordBatches
}

// endOffsets lists the end offsets of a topic's partitions.
func endOffsets(t *testing.T, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctxTimeout(t, 15*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s-%d: %v", o.Topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// The first two failures. A broker's open-file limit is lowered
// to 160 (prlimit on the running process) and it is asked for 300
// partitions (max.broker.partitions is raised so that it does not refuse
// them first): the partitions whose logs cannot be created answer
// KAFKA_STORAGE_ERROR while the others serve, one line says so, nothing
// panics; once the limit is back (prlimit again) the retries bring every
// partition online. Restarted under a limit too low for its logs (ulimit
// -n 64) it exits with one line naming the cause and the numbers; with a
// sufficient limit it starts cleanly with everything.
func TestOutOfFileDescriptors(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port, "max.broker.partitions=100000")
	cl := rawClient(t, p.Addr)
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, 2*time.Minute)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "fd"); err != nil {
		t.Fatal(err)
	}
	id := topicID(t, cl, "fd")
	// Open the produce and fetch connections now: once the descriptors
	// are gone no connection can be accepted.
	if err := produceRaw(t, cl, "fd", id, 0, 1, 10); err != nil {
		t.Fatal(err)
	}
	if err, _ := fetchRaw(t, cl, "fd", id, 0, 0); err != nil {
		t.Fatal(err)
	}
	var rl syscall.Rlimit
	if err := prlimit(p.cmd.Process.Pid, nil, &rl); err != nil {
		t.Fatal(err)
	}
	setOpenFileLimit(t, p.cmd.Process.Pid, 160)

	resp, err := adm.CreatePartitions(ctx, 299, "fd")
	if err != nil || resp["fd"].Err != nil {
		t.Fatalf("CreatePartitions: %v %v", err, resp["fd"].Err)
	}
	waitOutput(t, p, `creating logs failed: the partitions are offline here`, 1, 30*time.Second)
	p.alive(t)
	if err := produceRaw(t, cl, "fd", id, 0, 1, 10); err != nil {
		t.Fatalf("produce to a partition with a log: %v", err)
	}
	if err := produceRaw(t, cl, "fd", id, 299, 1, 10); err != kerr.KafkaStorageError {
		t.Fatalf("produce to a partition without a log: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if err, _ := fetchRaw(t, cl, "fd", id, 299, 0); err != kerr.KafkaStorageError {
		t.Fatalf("fetch from a partition without a log: %v, want KAFKA_STORAGE_ERROR", err)
	}
	p.alive(t)

	// The cause passes: the limit is back.
	setOpenFileLimit(t, p.cmd.Process.Pid, rl.Cur)
	deadline := time.Now().Add(30 * time.Second)
	for produceRaw(t, cl, "fd", id, 299, 1, 10) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("partition 299 not online 30s after the limit was raised:\n%s", lastLines(p.Out.String(), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitOutput(t, p, `created logs that had failed: the partitions are online`, 1, 10*time.Second)
	if n := strings.Count(p.Out.String(), "creating logs failed"); n != 1 {
		t.Fatalf("the failure was logged %d times", n)
	}
	ends := endOffsets(t, cl, "fd")
	if len(ends) != 300 || ends[0] != 2 || ends[299] != 1 {
		t.Fatalf("end offsets: %d partitions, p0 %d, p299 %d", len(ends), ends[0], ends[299])
	}
	p.alive(t)
	p.stop(t)

	// Restart under a limit too low for the logs: one line, the numbers,
	// no stack.
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	r := launchLimited(t, addr, 64, serveFlags(dir, port, "max.broker.partitions=100000")...)
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the broker did not exit under a too-low file limit:\n%s", lastLines(r.Out.String(), 30))
	}
	out := r.Out.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if code := r.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit code %d:\n%s", code, lastLines(out, 30))
	}
	// 301: the 300 partitions and the metadata log.
	for _, want := range []string{"moldau: loading logs: too many open files: the logs have 301 segments", "ulimit -n) is 64", "raise it to at least"} {
		if !strings.Contains(last, want) {
			t.Fatalf("last line lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Fatalf("a stack trace:\n%s", out)
	}
	t.Logf("exit line: %s", last)

	// Restart with the limit it asked for: clean, with everything.
	q := startProcess(t, dir, port, "max.broker.partitions=100000")
	cl2 := newClient(t, q.Addr)
	if ends := endOffsets(t, cl2, "fd"); len(ends) != 300 || ends[0] != 2 || ends[299] != 1 {
		t.Fatalf("after restart: %d partitions, p0 %d, p299 %d", len(ends), ends[0], ends[299])
	}
	q.stop(t)
}

// The third failure, a disk that starts failing, simulated with
// real OS errors: with two log dirs, the partition dirs of one are
// replaced by plain files (the files already open stay readable, but every
// open of a path in them fails with ENOTDIR, as paths on a failing disk
// fail). The broker stays up; that dir goes offline and its partitions
// answer KAFKA_STORAGE_ERROR to produce and fetch while the other dir's
// serve; DescribeLogDirs, the metrics and the controller (told by the
// heartbeat) know it. Once the dir is repaired the broker restarts cleanly
// with every acknowledged record.
func TestFailingLogDir(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	port, mport := freePort(t), freePort(t)
	maddr := fmt.Sprintf("127.0.0.1:%d", mport)
	// dirA, which fails, is the second log dir: the first holds the
	// metadata log, whose dir failing stops the broker (see
	// TestMetadataLogDirFailedStopsTheBroker).
	p := startProcess(t, dirB+","+dirA, port, "moldau.metrics.listener="+maddr)
	cl := rawClient(t, p.Addr)
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, 2*time.Minute)
	// flush.messages=1: every append fsyncs its segment and indexes,
	// which opens the index files by path.
	if _, err := adm.CreateTopic(ctx, 4, 1, map[string]*string{"flush.messages": kadm.StringPtr("1")}, "disk"); err != nil {
		t.Fatal(err)
	}
	id := topicID(t, cl, "disk")
	acked := map[int32]int64{}
	for part := int32(0); part < 4; part++ {
		for i := 0; i < 5; i++ {
			if err := produceRaw(t, cl, "disk", id, part, 1, 100); err != nil {
				t.Fatal(err)
			}
			acked[part]++
		}
	}
	var inA, inB []int32
	for part := int32(0); part < 4; part++ {
		if _, err := os.Stat(filepath.Join(dirA, fmt.Sprintf("disk-%d", part))); err == nil {
			inA = append(inA, part)
		} else {
			inB = append(inB, part)
		}
	}
	if len(inA) != 2 || len(inB) != 2 {
		t.Fatalf("partitions in the dirs: %v and %v", inA, inB)
	}
	// The disk of dirA fails.
	for _, part := range inA {
		pd := filepath.Join(dirA, fmt.Sprintf("disk-%d", part))
		if err := os.Rename(pd, pd+".hidden"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pd, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The next append to a partition of dirA fails its fsync (or the
	// append itself once the dir is offline): the dir goes offline.
	failed := false
	for i := 0; i < 3 && !failed; i++ {
		switch err := produceRaw(t, cl, "disk", id, inA[0], 1, 100); err {
		case nil:
			acked[inA[0]]++ // appended to the open file before the flush failed
		case kerr.KafkaStorageError:
			failed = true
		default:
			t.Fatalf("produce on the failing dir: %v", err)
		}
	}
	if !failed {
		t.Fatalf("produce on the failing dir kept succeeding:\n%s", lastLines(p.Out.String(), 30))
	}
	waitOutput(t, p, `log dir failed: it is offline until the broker restarts`, 1, 10*time.Second)
	p.alive(t)
	for _, part := range inA {
		if err := produceRaw(t, cl, "disk", id, part, 1, 100); err != kerr.KafkaStorageError {
			t.Fatalf("produce to disk-%d in the failed dir: %v", part, err)
		}
		if err, _ := fetchRaw(t, cl, "disk", id, part, 0); err != kerr.KafkaStorageError {
			t.Fatalf("fetch from disk-%d in the failed dir: %v", part, err)
		}
	}
	for _, part := range inB {
		if err := produceRaw(t, cl, "disk", id, part, 1, 100); err != nil {
			t.Fatalf("produce to disk-%d in the good dir: %v", part, err)
		}
		acked[part]++
		if err, recs := fetchRaw(t, cl, "disk", id, part, 0); err != nil || len(recs) == 0 {
			t.Fatalf("fetch from disk-%d in the good dir: %v", part, err)
		}
	}
	// Metadata lists the broker in the offline_replicas of the partitions
	// in the failed dir. As in Kafka, once the heartbeat has named the dir
	// the controller takes their leadership away (KIP-858), and with no
	// other replica they are LEADER_NOT_AVAILABLE; produce and fetch on
	// this broker say KAFKA_STORAGE_ERROR all the same.
	mdc := kadm.NewClient(newClient(t, p.Addr))
	eventually(t, 10*time.Second, func() error {
		md, err := mdc.Metadata(ctx, "disk")
		if err != nil {
			return err
		}
		for _, pd := range md.Topics["disk"].Partitions.Sorted() {
			wantOffline := slices.Contains(inA, pd.Partition)
			leader, perr := int32(1), error(nil)
			if wantOffline {
				leader, perr = -1, kerr.LeaderNotAvailable
			}
			if pd.Err != perr || pd.Leader != leader || slices.Equal(pd.OfflineReplicas, []int32{1}) != wantOffline ||
				!wantOffline && len(pd.OfflineReplicas) != 0 {
				return fmt.Errorf("Metadata disk-%d: err %v leader %d offline_replicas %v, want offline %v",
					pd.Partition, pd.Err, pd.Leader, pd.OfflineReplicas, wantOffline)
			}
		}
		return nil
	})
	for _, part := range inA {
		if err := produceRaw(t, cl, "disk", id, part, 1, 100); err != kerr.KafkaStorageError {
			t.Fatalf("produce to disk-%d in the failed dir, leaderless: %v", part, err)
		}
	}
	// DescribeLogDirs, the metrics, the controller.
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		switch d.Dir {
		case dirA:
			if d.Err != kerr.KafkaStorageError {
				t.Errorf("DescribeLogDirs %s: %v, want KAFKA_STORAGE_ERROR", d.Dir, d.Err)
			}
		case dirB:
			if d.Err != nil || len(d.Topics["disk"]) != 2 {
				t.Errorf("DescribeLogDirs %s: %v, %d partitions", d.Dir, d.Err, len(d.Topics["disk"]))
			}
		default:
			t.Errorf("DescribeLogDirs: unknown dir %s", d.Dir)
		}
	})
	m := scrape(t, maddr)
	if v, _ := metric(m, "kafka_log_logmanager_offlinelogdirectorycount"); v != 1 {
		t.Errorf("offlinelogdirectorycount = %v", v)
	}
	if v, _ := metric(m, "kafka_server_replicamanager_offlinereplicacount"); v != 2 {
		t.Errorf("offlinereplicacount = %v", v)
	}
	props, err := os.ReadFile(filepath.Join(dirA, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	dirID := regexp.MustCompile(`directory\.id=(\S+)`).FindSubmatch(props)
	waitOutput(t, p, `broker reports offline log dirs.*offline_dirs=\[`+regexp.QuoteMeta(string(dirID[1]))+`\]`, 1, 10*time.Second)
	p.alive(t)
	p.stop(t)
	t.Logf("what the broker said of the failure:\n%s", warnings(p.Out.String()))

	// The disk is repaired: everything acknowledged is there.
	for _, part := range inA {
		pd := filepath.Join(dirA, fmt.Sprintf("disk-%d", part))
		if err := os.Remove(pd); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(pd+".hidden", pd); err != nil {
			t.Fatal(err)
		}
	}
	q := startProcess(t, dirB+","+dirA, port)
	ends := endOffsets(t, newClient(t, q.Addr), "disk")
	for part, n := range acked {
		if ends[part] != n {
			t.Errorf("disk-%d after repair: end offset %d, %d acknowledged", part, ends[part], n)
		}
	}
	q.stop(t)
}

// Bit rot: three bytes flipped in three batches of an old segment of a
// running broker. The scrubber reports each, with partition, segment file
// and offset, within its interval, and counts them; a fetch of the first
// answers CORRUPT_MESSAGE while the batches before it are served; and
// after the broker stops, moldau log check exits 1 naming the partition
// and the three offsets.
func TestBitRotIsFound(t *testing.T) {
	const interval = time.Second
	dir := t.TempDir()
	port, mport := freePort(t), freePort(t)
	maddr := fmt.Sprintf("127.0.0.1:%d", mport)
	p := startProcess(t, dir, port, "moldau.metrics.listener="+maddr,
		fmt.Sprintf("moldau.log.scrub.interval.ms=%d", interval.Milliseconds()), "moldau.log.scrub.bytes.per.second=104857600")
	cl := rawClient(t, p.Addr)
	ctx := ctxTimeout(t, 2*time.Minute)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")}, "rot"); err != nil {
		t.Fatal(err)
	}
	id := topicID(t, cl, "rot")
	for i := 0; i < 70; i++ { // 3.5 MB: three segments and a bit
		if err := produceRaw(t, cl, "rot", id, 0, 10, 5000); err != nil {
			t.Fatal(err)
		}
	}
	seg := filepath.Join(dir, "rot-0", log.FilenamePrefixFromOffset(0)+log.LogFileSuffix)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	var pos, offsets []int64
	for q := 0; q+log.BatchHeaderSize <= len(b); {
		h, err := log.ParseBatchHeader(b[q:])
		if err != nil {
			t.Fatal(err)
		}
		pos, offsets = append(pos, int64(q)), append(offsets, h.BaseOffset)
		q += h.TotalSize()
	}
	if len(pos) < 10 {
		t.Fatalf("%d batches in the first segment", len(pos))
	}
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, i := range []int{2, len(pos) / 2, len(pos) - 2} {
		at := pos[i] + log.BatchHeaderSize + 1000
		one := []byte{0}
		f.ReadAt(one, at)
		one[0] ^= 0x10
		f.WriteAt(one, at)
		want = append(want, offsets[i])
	}
	f.Close()
	flipped := time.Now()
	lines := waitOutput(t, p, `corrupt batch found by the log scrubber[^\n]*`, 3, 30*time.Second)
	took := time.Since(flipped)
	for i, off := range want {
		w := fmt.Sprintf("partition=rot-0 segment=%s offset=%d ", seg, off)
		if !strings.Contains(lines[i], w) {
			t.Fatalf("line %d lacks %q: %s", i, w, lines[i])
		}
	}
	// Found within the interval (plus the pass itself, 1 MB at 100 MB/s,
	// and the wait for it to start): twice the interval is generous.
	if took > 2*interval+3*time.Second {
		t.Errorf("the scrubber took %v to find the damage with a %v interval", took, interval)
	}
	t.Logf("the scrubber found the three corrupt batches %v after the flips", took.Round(time.Millisecond))
	if v, _ := metric(scrape(t, maddr), "moldau_log_scrubber_corrupt_batches_total"); v != 3 {
		t.Errorf("moldau_log_scrubber_corrupt_batches_total = %v", v)
	}
	if err, _ := fetchRaw(t, cl, "rot", id, 0, want[0]); err != kerr.CorruptMessage {
		t.Fatalf("fetch of the corrupt batch: %v, want CORRUPT_MESSAGE", err)
	}
	if err, recs := fetchRaw(t, cl, "rot", id, 0, 0); err != nil || int64(len(recs)) != pos[2] {
		t.Fatalf("fetch from 0: %v, %d bytes (want the %d before the corrupt batch)", err, len(recs), pos[2])
	}
	p.alive(t)
	p.stop(t)

	check := exec.Command(moldauBinary(t), "log", "check", dir)
	var stdout, stderr strings.Builder
	check.Stdout, check.Stderr = &stdout, &stderr
	err = check.Run()
	if code := check.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("log check: exit %d (%v)\n%s%s", code, err, stdout.String(), stderr.String())
	}
	last := fmt.Sprintf("moldau: problems in 1 partition(s): rot-0 at offsets %d, %d, %d\n", want[0], want[1], want[2])
	if !strings.HasSuffix(stderr.String(), last) {
		t.Fatalf("log check's last line is not %q:\n%s", last, stderr.String())
	}
	t.Logf("log check:\n%s%s", stdout.String(), stderr.String())
}

// setOpenFileLimit sets a running process's soft open-file limit
// (prlimit(2)), below its hard limit: no privilege is needed.
func setOpenFileLimit(t *testing.T, pid int, soft uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := prlimit(pid, nil, &rl); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	if soft > rl.Max {
		t.Fatalf("soft limit %d over the hard limit %d", soft, rl.Max)
	}
	rl.Cur = soft
	if err := prlimit(pid, &rl, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
}
