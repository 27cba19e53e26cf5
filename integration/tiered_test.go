package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
)

// Tiered storage end to end on one broker (KIP-405), with stock clients
// over TCP: the broker copies closed segments to a LocalTieredStorage
// directory, local retention then keeps only about local.retention.bytes
// on disk, and a consumer from the beginning reads every record, most of
// them from the store, in order and byte for byte.

const (
	tieredTopic        = "tiered"
	tieredSegmentBytes = 1 << 20
	tieredLocalBytes   = 3 << 20
	tieredValueBytes   = 10 << 10
)

// tieredBrokerProps are the broker properties of the tests: the system
// enabled, the store in storeDir, short task and retention intervals.
func tieredBrokerProps(storeDir string) []string {
	return []string{
		"remote.log.storage.system.enable=true",
		"rsm.config.dir=" + storeDir,
		"remote.log.manager.task.interval.ms=200",
		"log.retention.check.interval.ms=200",
	}
}

func createTieredTopic(t *testing.T, adm *kadm.Client, extra ...string) {
	t.Helper()
	configs := map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr(fmt.Sprint(tieredSegmentBytes)),
		"local.retention.bytes": kadm.StringPtr(fmt.Sprint(tieredLocalBytes)),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		configs[extra[i]] = kadm.StringPtr(extra[i+1])
	}
	resp, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 1, 1, configs, tieredTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

// tieredValue is record i's value: its index, then bytes derived from it.
func tieredValue(i int) []byte {
	v := make([]byte, tieredValueBytes)
	binary.BigEndian.PutUint64(v, uint64(i))
	r := rand.New(rand.NewPCG(uint64(i), 42))
	for j := 8; j+8 <= len(v); j += 8 {
		binary.BigEndian.PutUint64(v[j:], r.Uint64())
	}
	return v
}

// tieredBase is the timestamp of record 0: record i is i ms later.
var tieredBase = time.Now().Add(-time.Hour).UnixMilli()

func tieredTimestamp(i int) time.Time { return time.UnixMilli(tieredBase + int64(i)) }

// produceTiered produces records [from, to) with acks=all.
func produceTiered(t *testing.T, cl *kgo.Client, from, to int) { produceTieredTo(t, cl, 0, from, to) }

// produceTieredTo produces records [from, to) to partition part.
func produceTieredTo(t *testing.T, cl *kgo.Client, part int32, from, to int) {
	t.Helper()
	ctx := ctxTimeout(t, 5*time.Minute)
	for i := from; i < to; i += 100 {
		var recs []*kgo.Record
		for j := i; j < min(i+100, to); j++ {
			recs = append(recs, &kgo.Record{Topic: tieredTopic, Partition: part, Value: tieredValue(j), Timestamp: tieredTimestamp(j)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing records %d..: %v", i, err)
		}
	}
}

// consumeTiered reads the partition from the beginning and checks that
// records 0..n-1 come in order, byte for byte.
func consumeTiered(t *testing.T, seed string, n int) { consumeTieredFrom(t, seed, 0, n) }

// consumeTieredFrom reads the partition from the beginning, which must be
// record from, and checks that records from..n-1 come in order.
func consumeTieredFrom(t *testing.T, seed string, from, n int) {
	consumeTieredPart(t, seed, 0, from, n)
}

// consumeTieredPart is consumeTieredFrom for partition part.
func consumeTieredPart(t *testing.T, seed string, part int32, from, n int) {
	t.Helper()
	consumeTieredShifted(t, seed, part, from, n, 0)
}

// consumeTieredShifted is consumeTieredPart where offset i holds record
// i+shift.
func consumeTieredShifted(t *testing.T, seed string, part int32, from, n, shift int) {
	t.Helper()
	consumeTieredAt(t, seed, part, kgo.NewOffset().AtStart(), from, n, shift)
}

// consumeTieredAt reads the partition from start, which must be offset
// from, up to offset n, where offset i holds record i+shift.
func consumeTieredAt(t *testing.T, seed string, part int32, start kgo.Offset, from, n, shift int) {
	t.Helper()
	cl := newClient(t, seed, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tieredTopic: {part: start}}),
		kgo.FetchMaxBytes(8<<20))
	ctx := ctxTimeout(t, 5*time.Minute)
	next := from
	for next < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", next, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d at record %d: %v", topic, p, next, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(next) {
				t.Fatalf("record at offset %d, want %d", r.Offset, next)
			}
			if !bytes.Equal(r.Value, tieredValue(next+shift)) {
				var idx uint64
				if len(r.Value) >= 8 {
					idx = binary.BigEndian.Uint64(r.Value)
				}
				t.Fatalf("partition %d, record %d: value differs (%d bytes, record %d's?)", r.Partition, next, len(r.Value), idx)
			}
			next++
		})
	}
}

// dirBytes sums the sizes of files under dir whose names end in suffix.
func dirBytes(t *testing.T, dir, suffix string) (n int64, files int) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, suffix) {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
			files++
		}
		return nil
	})
	return n, files
}

// listOffset answers ListOffsets for the special timestamp ts.
func listOffset(t *testing.T, cl *kgo.Client, ts int64) (int64, error) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = tieredTopic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		return -1, err
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, kerr.ErrorForCode(p.ErrorCode)
}

// waitTiered waits until everything below the last local.retention.bytes
// (plus the active segment and one closed one not yet copied) is in the
// store only, and checks the offsets ListOffsets answers.
func waitTiered(t *testing.T, cl *kgo.Client, logDir, storeDir string, total int64) {
	t.Helper()
	partDir := filepath.Join(logDir, tieredTopic+"-0")
	eventually(t, 3*time.Minute, func() error {
		local, _ := dirBytes(t, partDir, ".log")
		stored, _ := dirBytes(t, storeDir, ".log")
		if local > tieredLocalBytes+2*tieredSegmentBytes {
			return fmt.Errorf("local log holds %d bytes (local retention %d), store %d", local, tieredLocalBytes, stored)
		}
		if stored < total-tieredLocalBytes-3*tieredSegmentBytes {
			return fmt.Errorf("store holds %d bytes of %d", stored, total)
		}
		return nil
	})
	earliest, err := listOffset(t, cl, -2)
	if err != nil || earliest != 0 {
		t.Fatalf("earliest offset %d, %v", earliest, err)
	}
	local, err := listOffset(t, cl, -4)
	if err != nil || local <= 0 {
		t.Fatalf("earliest local offset %d, %v", local, err)
	}
	tiered, err := listOffset(t, cl, -5)
	if err != nil || tiered < local-1 {
		t.Fatalf("highest tiered offset %d (earliest local %d), %v", tiered, local, err)
	}
	pending, err := listOffset(t, cl, -6)
	if err != nil || pending < tiered+1 || pending < local {
		t.Fatalf("earliest pending upload %d (highest tiered %d, earliest local %d), %v", pending, tiered, local, err)
	}
	t.Logf("earliest 0, earliest local %d, highest tiered %d, earliest pending upload %d", local, tiered, pending)
}

// The total retention (retention.bytes) deletes remote segments and moves
// the log start; a consumer from the beginning starts there.
func TestTieredStorageRetention(t *testing.T) {
	storeDir, logDir := t.TempDir(), t.TempDir()
	b := startBroker(t, logDir, tieredBrokerProps(storeDir)...)
	const total = 12 << 20
	createTieredTopic(t, newAdmin(t, b.Seed()), "retention.bytes", fmt.Sprint(total))
	const n = 3000
	cl := newClient(t, b.Seed(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceTiered(t, cl, 0, n)
	var start int64
	// The log (remote segments below the local log start, and the local
	// log) keeps at most retention.bytes once the oldest segments went.
	eventually(t, 2*time.Minute, func() error {
		var err error
		if start, err = listOffset(t, cl, -2); err != nil {
			return err
		}
		if kept := (n - start) * tieredValueBytes; start == 0 || kept > total {
			return fmt.Errorf("log start %d: %d bytes kept (retention.bytes %d)", start, kept, total)
		}
		return nil
	})
	if stored, _ := dirBytes(t, storeDir, ".log"); stored > total {
		t.Fatalf("the store holds %d bytes (retention.bytes %d)", stored, total)
	}
	localStart, _ := listOffset(t, cl, -4)
	if start >= localStart {
		t.Fatalf("log start %d not below the local log start %d", start, localStart)
	}
	t.Logf("log start %d, local log start %d, log end %d", start, localStart, n)
	consumeTieredFrom(t, b.Seed(), int(start), n)

	// Deleting the topic deletes its remote segments too.
	if _, err := newAdmin(t, b.Seed()).DeleteTopics(ctxTimeout(t, 30*time.Second), tieredTopic); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		if stored, files := dirBytes(t, storeDir, ""); files > 0 {
			return fmt.Errorf("the store holds %d files (%d bytes) of the deleted topic", files, stored)
		}
		return nil
	})
}

// A topic may be tiered only where the broker runs tiered storage.
func TestTieredRefusedWithoutSystem(t *testing.T) {
	b := startBroker(t, "")
	adm := newAdmin(t, b.Seed())
	resp, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 1, 1, map[string]*string{"remote.storage.enable": kadm.StringPtr("true")}, tieredTopic)
	if err == nil {
		err = resp.Err
	}
	if err == nil || !strings.Contains(err.Error(), "INVALID_CONFIG") {
		t.Fatalf("creating a tiered topic without the system: %v", err)
	}
}

// The size produced is $MOLDAU_TIERED_E2E_BYTES (a size such as 1GiB or
// a number of bytes; 64 MiB by default, which CI runs): the 1 GiB
// is run by hand (see the README's tiered-storage section).
func TestTieredStorageEndToEnd(t *testing.T) {
	total := int64(64 << 20)
	if v := os.Getenv("MOLDAU_TIERED_E2E_BYTES"); v != "" {
		var err error
		if total, err = parseSize(v); err != nil || total < 16<<20 {
			t.Fatalf("MOLDAU_TIERED_E2E_BYTES=%q: at least 16MiB, as 1GiB, 512MiB or a number of bytes (%v)", v, err)
		}
	}
	storeDir, logDir := t.TempDir(), t.TempDir()
	b := startBroker(t, logDir, tieredBrokerProps(storeDir)...)
	adm := newAdmin(t, b.Seed())
	createTieredTopic(t, adm)
	n := int(total / tieredValueBytes)
	cl := newClient(t, b.Seed(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	start := time.Now()
	produceTiered(t, cl, 0, n)
	t.Logf("produced %d MiB in %v", n*tieredValueBytes>>20, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	waitTiered(t, cl, logDir, storeDir, int64(n*tieredValueBytes))
	t.Logf("tiered in %v more", time.Since(start).Round(time.Millisecond))
	localBytes, _ := dirBytes(t, filepath.Join(logDir, tieredTopic+"-0"), ".log")
	storedBytes, storedFiles := dirBytes(t, storeDir, ".log")
	t.Logf("on disk %d MiB of segments (local.retention.bytes %d MiB), in the store %d MiB in %d segments",
		localBytes>>20, tieredLocalBytes>>20, storedBytes>>20, storedFiles)
	start = time.Now()
	consumeTiered(t, b.Seed(), n)
	t.Logf("consumed %d MiB from the beginning in %v", n*tieredValueBytes>>20, time.Since(start).Round(time.Millisecond))
	// ListOffsets by timestamp finds records in the store and on disk.
	localStart, _ := listOffset(t, cl, -4)
	for _, want := range []int64{0, 1234, localStart - 1, localStart, int64(n) - 1} {
		got, err := listOffset(t, cl, tieredBase+want)
		if err != nil || got != want {
			t.Fatalf("offset for the timestamp of record %d: %d, %v", want, got, err)
		}
	}
	if got, err := listOffset(t, cl, tieredBase+int64(n)); err != nil || got != -1 {
		t.Fatalf("offset for a timestamp past the last record: %d, %v", got, err)
	}
	// Kafka's tiered-storage meters, per topic.
	metrics := scrape(t, b.MetricsAddr().String())
	for _, name := range []string{"remotecopybytes", "remotecopyrequests", "remotefetchbytes", "remotefetchrequests"} {
		if v := metrics["kafka_server_brokertopicmetrics_"+name+`_total{topic="tiered"}`]; v <= 0 {
			t.Errorf("%s: %v", name, v)
		}
	}
	if v := metrics[`kafka_server_brokertopicmetrics_remotecopybytes_total{topic="tiered"}`]; v < float64(n*tieredValueBytes)/2 {
		t.Errorf("remote copy bytes %v of %d produced", v, n*tieredValueBytes)
	}
	// Kafka's gauges: RemoteLogSizeBytes is what the store holds,
	// RemoteLogMetadataCount at least a segment each.
	eventually(t, time.Minute, func() error {
		stored, files := dirBytes(t, storeDir, ".log")
		size, _ := scrapeValue(t, b, `kafka_server_brokertopicmetrics_remotelogsizebytes{topic="tiered"}`)
		count, _ := scrapeValue(t, b, `kafka_server_brokertopicmetrics_remotelogmetadatacount{topic="tiered"}`)
		lag, ok := scrapeValue(t, b, `kafka_server_brokertopicmetrics_remotecopylagsegments{topic="tiered"}`)
		if int64(size) != stored || int(count) < files || !ok || lag > 1 {
			return fmt.Errorf("remote log size %v bytes and %v metadata entries, %d bytes in %d segments stored; copy lag %v segments", size, count, stored, files, lag)
		}
		return nil
	})
	// `moldau topic describe` shows each partition's size on disk and in
	// the store.
	c := &cliCluster{brokers: b.Seed(), broker: b}
	var desc []struct {
		Partitions []struct {
			LocalSizeBytes  int64  `json:"local_size_bytes"`
			RemoteSizeBytes *int64 `json:"remote_size_bytes"`
		} `json:"partitions"`
	}
	c.okJSON(t, &desc, nil, "topic", "describe", tieredTopic)
	stored, _ := dirBytes(t, storeDir, ".log")
	local, _ := dirBytes(t, filepath.Join(logDir, tieredTopic+"-0"), "")
	if len(desc) != 1 || len(desc[0].Partitions) != 1 {
		t.Fatalf("describe: %+v", desc)
	}
	if p := desc[0].Partitions[0]; p.RemoteSizeBytes == nil || *p.RemoteSizeBytes != stored || p.LocalSizeBytes <= 0 || p.LocalSizeBytes > local {
		t.Fatalf("describe: local size %d (%d bytes of files), remote size %v (%d stored)", p.LocalSizeBytes, local, p.RemoteSizeBytes, stored)
	}
	if text := c.ok(t, nil, "topic", "describe", tieredTopic, "-p"); !strings.Contains(text, "LOCAL-SIZE") || !strings.Contains(text, fmt.Sprint(stored)) {
		t.Fatalf("topic describe:\n%s", text)
	}
	if _, err := os.Stat(filepath.Join(logDir, "__remote_log_metadata-0")); err != nil {
		t.Fatalf("the metadata topic: %v", err)
	}
}

// storeSegments maps each start offset in the store to the number of
// stored copies of a segment starting there (complete .log files only).
func storeSegments(t *testing.T, storeDir string) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	filepath.WalkDir(storeDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".log") {
			return nil
		}
		var start int64
		if _, err := fmt.Sscanf(d.Name(), "%020d-", &start); err == nil {
			out[start]++
		}
		return nil
	})
	return out
}

// A `moldau serve` killed with SIGKILL while it copies segments to the
// store loses nothing acknowledged and registers nothing twice: after a
// restart, the copies it cut short are cleaned up, every offset range is
// stored once, and a consumer from the beginning reads every record.
func TestTieredStorageKill9(t *testing.T) {
	storeDir, logDir := t.TempDir(), t.TempDir()
	port := freePort(t)
	props := append(tieredBrokerProps(storeDir), "remote.log.manager.task.interval.ms=50")
	p := startProcess(t, logDir, port, props...)
	adm := newAdmin(t, p.Addr)
	createTieredTopic(t, adm)
	cl := newClient(t, p.Addr, kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceTiered(t, cl, 0, 2000)
	// Kill while the store grows: segments are being copied.
	eventually(t, time.Minute, func() error {
		if n := len(storeSegments(t, storeDir)); n < 5 {
			return fmt.Errorf("%d segments stored", n)
		}
		return nil
	})
	acked := 2000
	for range 3 {
		produceTiered(t, cl, acked, acked+300)
		acked += 300
	}
	p.kill(t)
	cl.Close()
	before := storeSegments(t, storeDir)
	t.Logf("killed with %d records acknowledged, %d segments in the store", acked, len(before))

	p = startProcess(t, logDir, port, props...)
	cl = newClient(t, p.Addr, kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceTiered(t, cl, acked, acked+1000)
	acked += 1000
	waitTiered(t, cl, logDir, storeDir, int64(acked*tieredValueBytes))
	eventually(t, time.Minute, func() error {
		for start, n := range storeSegments(t, storeDir) {
			if n != 1 {
				return fmt.Errorf("%d copies of the segment at offset %d in the store", n, start)
			}
		}
		return nil
	})
	consumeTiered(t, p.Addr, acked)
	for _, line := range strings.Split(p.Out.String(), "\n") {
		if strings.Contains(line, "restored from remote") || strings.Contains(line, "deleted remote segment") || strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Log(line)
		}
	}
}

// s3TieredBrokerProps are the broker properties of the tests over S3,
// with the properties of Aiven's tiered-storage plugin.
func s3TieredBrokerProps(endpoint, bucket, access, secret string) []string {
	return []string{
		"remote.log.storage.system.enable=true",
		"remote.log.storage.manager.class.name=io.aiven.kafka.tieredstorage.RemoteStorageManager",
		"rsm.config.storage.s3.bucket.name=" + bucket,
		"rsm.config.storage.s3.region=us-east-1",
		"rsm.config.storage.s3.endpoint.url=" + endpoint,
		"rsm.config.storage.s3.path.style.access.enabled=true",
		"rsm.config.storage.aws.access.key.id=" + access,
		"rsm.config.storage.aws.secret.access.key=" + secret,
		"rsm.config.key.prefix=cluster-1",
		"remote.log.manager.task.interval.ms=200",
		"log.retention.check.interval.ms=200",
	}
}

// createBucket creates an S3 bucket on endpoint.
func createBucket(t *testing.T, endpoint, bucket, access, secret string) {
	t.Helper()
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(access, secret, "")})
	if _, err := s3c.CreateBucket(ctxTimeout(t, 30*time.Second), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
}

// With the store down (its S3 server stopped) uploads wait: producers and
// a consumer at the tail go on as before, local retention deletes nothing
// not copied, so the disk holds everything above the last copied offset;
// once the server is back the uploads resume, local retention catches up,
// every offset range is stored once, and a consumer from the beginning
// reads every record.
func TestTieredStorageStoreUnavailable(t *testing.T) {
	const access, secret, bucket = "moldau-test", "moldau-test-secret", "tiered"
	root := t.TempDir()
	gw := runVersitygw(t, root, access, secret)
	createBucket(t, gw.endpoint, bucket, access, secret)
	storeDir, logDir := filepath.Join(root, bucket), t.TempDir()
	b := startBroker(t, logDir, s3TieredBrokerProps(gw.endpoint, bucket, access, secret)...)
	createTieredTopic(t, newAdmin(t, b.Seed()))
	cl := newClient(t, b.Seed(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	const first, second, third = 1000, 3000, 4000
	produceTiered(t, cl, 0, first)
	waitTiered(t, cl, logDir, storeDir, first*tieredValueBytes)

	gw.stop()
	copied, err := listOffset(t, cl, -5)
	if err != nil {
		t.Fatal(err)
	}
	errorsBefore, _ := scrapeValue(t, b, `kafka_server_brokertopicmetrics_remotecopyerrors_total{topic="tiered"}`)
	// Producers and a consumer at the tail do not notice.
	start := time.Now()
	produceTiered(t, cl, first, second)
	t.Logf("produced %d MiB with the store down in %v", (second-first)*tieredValueBytes>>20, time.Since(start).Round(time.Millisecond))
	consumeTieredAt(t, b.Seed(), 0, kgo.NewOffset().At(first), first, second, 0)
	// Uploads are tried and fail, and local retention keeps every segment
	// above the last offset copied, many times local.retention.bytes.
	eventually(t, time.Minute, func() error {
		if v, _ := scrapeValue(t, b, `kafka_server_brokertopicmetrics_remotecopyerrors_total{topic="tiered"}`); v < errorsBefore+2 {
			return fmt.Errorf("%v failed copies with the store down", v-errorsBefore)
		}
		return nil
	})
	// RemoteCopyLagBytes and RemoteCopyLagSegments grow with what
	// waits.
	eventually(t, time.Minute, func() error {
		bytes, _ := scrapeValue(t, b, `kafka_server_brokertopicmetrics_remotecopylagbytes{topic="tiered"}`)
		segs, _ := scrapeValue(t, b, `kafka_server_brokertopicmetrics_remotecopylagsegments{topic="tiered"}`)
		if want := (second - copied - 1) * tieredValueBytes; int64(bytes) < want-2*tieredSegmentBytes || segs < float64(want/tieredSegmentBytes-2) {
			return fmt.Errorf("copy lag %v bytes in %v segments, %d bytes not copied", bytes, segs, want)
		}
		return nil
	})
	if now, err := listOffset(t, cl, -5); err != nil || now != copied {
		t.Fatalf("highest tiered offset %d with the store down, was %d: %v", now, copied, err)
	}
	localStart, err := listOffset(t, cl, -4)
	if err != nil || localStart > copied+1 {
		t.Fatalf("local log start %d with the store down and offsets up to %d copied: %v", localStart, copied, err)
	}
	local, _ := dirBytes(t, filepath.Join(logDir, tieredTopic+"-0"), ".log")
	if want := (second - copied - 1) * tieredValueBytes; local < want {
		t.Fatalf("the local log holds %d bytes with the store down; %d are not copied", local, want)
	}
	t.Logf("store down: offsets up to %d copied, local log start %d, %d MiB on disk", copied, localStart, local>>20)

	gw.start(t)
	produceTiered(t, cl, second, third)
	waitTiered(t, cl, logDir, storeDir, third*tieredValueBytes)
	eventually(t, time.Minute, func() error {
		for start, n := range storeSegments(t, storeDir) {
			if n != 1 {
				return fmt.Errorf("%d copies of the segment at offset %d in the store", n, start)
			}
		}
		return nil
	})
	consumeTiered(t, b.Seed(), third)
}

// The same over S3: an S3-compatible server (versitygw on a folder, whose
// objects are files named as their keys) as the store, configured with
// the properties of Aiven's tiered-storage plugin.
func TestTieredStorageS3(t *testing.T) {
	const access, secret, bucket = "moldau-test", "moldau-test-secret", "tiered"
	root := t.TempDir()
	endpoint := startVersitygw(t, root, access, secret)
	createBucket(t, endpoint, bucket, access, secret)
	logDir := t.TempDir()
	b := startBroker(t, logDir, s3TieredBrokerProps(endpoint, bucket, access, secret)...)
	createTieredTopic(t, newAdmin(t, b.Seed()))
	const n = 3000
	cl := newClient(t, b.Seed(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceTiered(t, cl, 0, n)
	start := time.Now()
	waitTiered(t, cl, logDir, filepath.Join(root, bucket), int64(n*tieredValueBytes))
	t.Logf("tiered %d MiB to S3 in %v after the last produce", n*tieredValueBytes>>20, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	consumeTiered(t, b.Seed(), n)
	t.Logf("consumed %d MiB from the beginning in %v", n*tieredValueBytes>>20, time.Since(start).Round(time.Millisecond))
}

// startVersitygw runs versitygw ($MOLDAU_VERSITYGW, PATH or
// $(go env GOPATH)/bin; test.sh installs it) on the folder root and
// returns its endpoint; it is killed when the test ends.
func startVersitygw(t *testing.T, root, access, secret string) string {
	return runVersitygw(t, root, access, secret).endpoint
}

// versitygw is a running (or stopped) versitygw server.
type versitygw struct {
	bin, addr, endpoint string
	args                []string
	cmd                 *exec.Cmd
	out                 *syncBuffer
}

// runVersitygw starts versitygw on root; stop and start stop it and run
// it again on the same address and folder.
func runVersitygw(t *testing.T, root, access, secret string) *versitygw {
	t.Helper()
	bin := os.Getenv("MOLDAU_VERSITYGW")
	if bin == "" {
		bin, _ = exec.LookPath("versitygw")
	}
	if bin == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			bin = filepath.Join(strings.TrimSpace(string(out)), "bin", "versitygw")
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("versitygw not found (MOLDAU_VERSITYGW, PATH, $(go env GOPATH)/bin): %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	g := &versitygw{bin: bin, addr: addr, endpoint: "http://" + addr,
		args: []string{"--access", access, "--secret", secret, "--port", addr, "--quiet", "posix", root}}
	t.Cleanup(g.stop)
	g.start(t)
	return g
}

func (g *versitygw) start(t *testing.T) {
	t.Helper()
	g.cmd = exec.Command(g.bin, g.args...)
	g.out = &syncBuffer{}
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	if err := g.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", g.bin, err)
	}
	eventually(t, 30*time.Second, func() error {
		resp, err := http.Get(g.endpoint)
		if err != nil {
			return fmt.Errorf("%v\n%s", err, g.out.String())
		}
		resp.Body.Close()
		return nil
	})
}

func (g *versitygw) stop() {
	if g.cmd != nil {
		_ = g.cmd.Process.Kill()
		_ = g.cmd.Wait()
		g.cmd = nil
	}
}

// Three brokers share a store: the leaders of a tiered topic's three
// partitions (replication factor 3) copy their segments, the events of
// those not led with the one __remote_log_metadata partition go to its
// leader by Produce, every replica's local retention deletes what was
// copied, and once a leader is gone the new one serves the whole log from
// the store.
func TestTieredStorageThreeBrokers(t *testing.T) {
	storeDir := t.TempDir()
	nodes := newClusterNodes(t, 3)
	bs := make([]*broker.Broker, 3)
	props := append(tieredBrokerProps(storeDir), "rlmm.config.remote.log.metadata.topic.num.partitions=1")
	for i, n := range nodes {
		bs[i] = startInProcessNode(t, n, nodes, props...)
	}
	closed := make([]bool, 3)
	t.Cleanup(func() {
		for i, b := range bs {
			if !closed[i] {
				b.Close()
			}
		}
	})
	waitReady(t, bs...)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.seed())
	}
	seed := strings.Join(seeds, ",")
	adm := newAdmin(t, seed)
	resp, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 3, 3, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr(fmt.Sprint(tieredSegmentBytes)),
		"local.retention.bytes": kadm.StringPtr(fmt.Sprint(tieredLocalBytes)),
	}, tieredTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	cl := newClient(t, seed, kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	leaders := map[int32]bool{}
	for p := range int32(3) {
		produceTieredTo(t, cl, p, 0, n)
		l, _ := partitionStateRetry(t, adm, tieredTopic, p)
		leaders[l] = true
	}
	if len(leaders) < 2 {
		// Then one broker leads everything and no event goes by Produce.
		t.Fatalf("the partitions have %d leaders; the test needs two at least", len(leaders))
	}
	// Every replica keeps about local.retention.bytes of each partition.
	eventually(t, 2*time.Minute, func() error {
		for _, node := range nodes {
			for p := range 3 {
				if local, _ := dirBytes(t, filepath.Join(node.dir, fmt.Sprintf("%s-%d", tieredTopic, p)), ".log"); local > tieredLocalBytes+2*tieredSegmentBytes {
					return fmt.Errorf("node %d holds %d bytes of partition %d", node.id, local, p)
				}
			}
		}
		return nil
	})
	for p := range int32(3) {
		consumeTieredPart(t, seed, p, 0, n)
	}

	// A follower away while the leader's local retention passes its log
	// end starts over at the leader's local log start when it returns
	// (OFFSET_MOVED_TO_TIERED_STORAGE), and rejoins the ISR.
	leader, _ := partitionStateRetry(t, adm, tieredTopic, 0)
	f := leader%3 + 1
	bs[f-1].Close()
	closed[f-1] = true
	produceTieredTo(t, cl, 0, n, 2*n)
	eventually(t, time.Minute, func() error {
		if local, err := listOffset(t, cl, -4); err != nil || local <= n {
			return fmt.Errorf("leader's local log start %d, %v", local, err)
		}
		return nil
	})
	bs[f-1] = startInProcessNode(t, nodes[f-1], nodes, props...)
	closed[f-1] = false
	waitReady(t, bs[f-1])
	eventually(t, time.Minute, func() error {
		if first := firstSegment(t, filepath.Join(nodes[f-1].dir, tieredTopic+"-0")); first <= n {
			return fmt.Errorf("the returned follower's first segment is at %d, below the leader's local start", first)
		}
		if _, isr := partitionStateRetry(t, adm, tieredTopic, 0); !slices.Contains(isr, f) {
			return fmt.Errorf("ISR %v without the returned follower %d", isr, f)
		}
		return nil
	})

	leader, _ = partitionStateRetry(t, adm, tieredTopic, 0)
	bs[leader-1].Close()
	closed[leader-1] = true
	var rest []string
	for _, node := range nodes {
		if node.id != leader {
			rest = append(rest, node.seed())
		}
	}
	restAdm := newAdmin(t, strings.Join(rest, ","))
	eventually(t, time.Minute, func() error {
		if l, _ := partitionStateRetry(t, restAdm, tieredTopic, 0); l == leader {
			return fmt.Errorf("still led by %d", leader)
		}
		return nil
	})
	consumeTieredPart(t, strings.Join(rest, ","), 0, 0, 2*n)
}

// firstSegment is the base offset of the first segment in a partition
// dir.
func firstSegment(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	first := int64(-1)
	for _, e := range entries {
		var base int64
		if strings.HasSuffix(e.Name(), ".log") {
			if _, err := fmt.Sscanf(e.Name(), "%020d.log", &base); err == nil && (first < 0 || base < first) {
				first = base
			}
		}
	}
	return first
}

// A clean restart keeps a tiered topic whole, and a tiered topic deleted
// and created again under the same name starts empty: the old one's
// segments leave the store, the new one's are its own.
func TestTieredStorageCleanRestartAndRecreate(t *testing.T) {
	storeDir, logDir := t.TempDir(), t.TempDir()
	port := freePort(t)
	props := tieredBrokerProps(storeDir)
	p := startProcess(t, logDir, port, props...)
	createTieredTopic(t, newAdmin(t, p.Addr))
	cl := newClient(t, p.Addr, kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 1500
	produceTiered(t, cl, 0, n)
	waitTiered(t, cl, logDir, storeDir, int64(n*tieredValueBytes))
	cl.Close()
	p.stop(t)

	p = startProcess(t, logDir, port, props...)
	cl = newClient(t, p.Addr, kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	if earliest, err := listOffset(t, cl, -2); err != nil || earliest != 0 {
		t.Fatalf("after a clean restart: earliest offset %d, %v", earliest, err)
	}
	consumeTiered(t, p.Addr, n)

	adm := newAdmin(t, p.Addr)
	if _, err := adm.DeleteTopics(ctxTimeout(t, 30*time.Second), tieredTopic); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		if _, files := dirBytes(t, storeDir, ""); files > 0 {
			return fmt.Errorf("the store holds %d files of the deleted topic", files)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		resp, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 1, 1, map[string]*string{
			"remote.storage.enable": kadm.StringPtr("true"),
			"segment.bytes":         kadm.StringPtr(fmt.Sprint(tieredSegmentBytes)),
			"local.retention.bytes": kadm.StringPtr(fmt.Sprint(tieredLocalBytes)),
		}, tieredTopic)
		if err == nil {
			err = resp.Err
		}
		return err
	})
	// The new topic's records differ from the old one's at each offset.
	produceTiered(t, cl, n, n+n/2)
	waitTiered(t, cl, logDir, storeDir, int64(n/2*tieredValueBytes))
	cl.Close()
	p.stop(t)
	p = startProcess(t, logDir, port, props...)
	consumeTieredShifted(t, p.Addr, 0, 0, n/2, n)
}

// Turning tiering off on a topic (KIP-950) as Kafka 4 allows it:
// remote.storage.enable=false alone is refused with INVALID_CONFIG, and
// so is remote.log.copy.disable=true with a local retention other than
// the total; with remote.log.delete.on.disable=true the remote data is
// deleted and the log starts at its local start.
func TestTieredStorageDisable(t *testing.T) {
	storeDir, logDir := t.TempDir(), t.TempDir()
	b := startBroker(t, logDir, tieredBrokerProps(storeDir)...)
	adm := newAdmin(t, b.Seed())
	createTieredTopic(t, adm)
	cl := newClient(t, b.Seed(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 1000
	produceTiered(t, cl, 0, n)
	waitTiered(t, cl, logDir, storeDir, n*tieredValueBytes)
	alter := func(kv ...string) error {
		var cfgs []kadm.AlterConfig
		for i := 0; i+1 < len(kv); i += 2 {
			cfgs = append(cfgs, kadm.AlterConfig{Name: kv[i], Value: kadm.StringPtr(kv[i+1])})
		}
		resp, err := adm.AlterTopicConfigs(ctxTimeout(t, 30*time.Second), cfgs, tieredTopic)
		if err != nil {
			return err
		}
		for _, r := range resp {
			if r.Err != nil {
				return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
		return nil
	}
	for _, kv := range [][]string{
		{"remote.storage.enable", "false"},
		{"remote.log.copy.disable", "true"},
	} {
		if err := alter(kv...); !errors.Is(err, kerr.InvalidConfig) {
			t.Fatalf("altering %v: %v, want INVALID_CONFIG", kv, err)
		}
	}
	if err := alter("remote.log.copy.disable", "true", "local.retention.bytes", "-2"); err != nil {
		t.Fatalf("copying disabled with the local retention the total: %v", err)
	}
	if err := alter("remote.log.copy.disable", "false", "local.retention.bytes", fmt.Sprint(tieredLocalBytes)); err != nil {
		t.Fatal(err)
	}
	localStart, err := listOffset(t, cl, -4)
	if err != nil {
		t.Fatal(err)
	}
	if err := alter("remote.storage.enable", "false", "remote.log.delete.on.disable", "true"); err != nil {
		t.Fatalf("turning tiering off with remote.log.delete.on.disable: %v", err)
	}
	eventually(t, time.Minute, func() error {
		if stored, files := dirBytes(t, storeDir, ".log"); files > 0 {
			return fmt.Errorf("the store holds %d segments (%d bytes) of the untiered topic", files, stored)
		}
		if earliest, err := listOffset(t, cl, -2); err != nil || earliest < localStart {
			return fmt.Errorf("log start %d (local start was %d), %v", earliest, localStart, err)
		}
		return nil
	})
	earliest, _ := listOffset(t, cl, -2)
	produceTiered(t, cl, n, n+100)
	consumeTieredFrom(t, b.Seed(), int(earliest), n+100)
}

// The copy and fetch quotas (Kafka's RLMQuotaManager):
// remote.log.manager.copy.max.bytes.per.second makes copies wait, and a
// new value applies at once (a dynamic cluster-wide config);
// remote.log.manager.fetch.max.bytes.per.second slows a consumer reading
// from the store, which still reads every record.
func TestTieredStorageQuotas(t *testing.T) {
	storeDir, logDir := t.TempDir(), t.TempDir()
	const copyRate, fetchRate = 1 << 20, 2 << 20
	b := startBroker(t, logDir, append(tieredBrokerProps(storeDir),
		fmt.Sprintf("remote.log.manager.copy.max.bytes.per.second=%d", copyRate),
		"remote.log.manager.copy.quota.window.num=2",
		fmt.Sprintf("remote.log.manager.fetch.max.bytes.per.second=%d", fetchRate),
		"remote.log.manager.fetch.quota.window.num=2")...)
	adm := newAdmin(t, b.Seed())
	createTieredTopic(t, adm)
	cl := newClient(t, b.Seed(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 1000 // 10 MiB: 9 closed segments
	produceTiered(t, cl, 0, n)
	// Copies go at about a segment a second: the store never holds
	// more than the seconds since the first copy, plus the windows'
	// burst.
	var first time.Time
	for deadline := time.Now().Add(time.Minute); ; {
		_, files := dirBytes(t, storeDir, ".log")
		if files > 0 && first.IsZero() {
			first = time.Now()
		}
		if !first.IsZero() {
			elapsed := time.Since(first)
			if limit := int(elapsed.Seconds()) + 3; files > limit {
				t.Fatalf("%d segments copied %v after the first, over remote.log.manager.copy.max.bytes.per.second", files, elapsed)
			}
			if elapsed > 3*time.Second {
				t.Logf("%d segments copied in the %v after the first", files, elapsed.Round(time.Millisecond))
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no segment copied")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Lifted at run time, the copies catch up.
	resp, err := adm.AlterBrokerConfigs(ctxTimeout(t, 30*time.Second), []kadm.AlterConfig{
		{Name: "remote.log.manager.copy.max.bytes.per.second", Value: kadm.StringPtr("9223372036854775807")}})
	if err == nil {
		for _, r := range resp {
			err = firstErr(err, r.Err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	waitTiered(t, cl, logDir, storeDir, n*tieredValueBytes)
	// The remote part, about 6 MiB, read at most about 2 MiB/s (and
	// a window's burst).
	localStart, _ := listOffset(t, cl, -4)
	start := time.Now()
	consumeTiered(t, b.Seed(), n)
	elapsed := time.Since(start)
	remoteBytes := localStart * tieredValueBytes
	t.Logf("consumed %d MiB, %d MiB of them from the store, in %v", n*tieredValueBytes>>20, remoteBytes>>20, elapsed.Round(time.Millisecond))
	if min := time.Duration(float64(remoteBytes-2*fetchRate) / (3 * fetchRate) * float64(time.Second)); elapsed < min {
		t.Fatalf("read %d bytes from the store in %v, faster than remote.log.manager.fetch.max.bytes.per.second allows (%v)", remoteBytes, elapsed, min)
	}
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// A topic deleted while the store is down keeps its segments in the
// store; a broker killed then and started again (the store back) deletes
// them: the leader of their __remote_log_metadata partition sweeps the
// partitions of topics no longer there.
func TestTieredStorageDeletedTopicCleanedAfterRestart(t *testing.T) {
	const access, secret, bucket = "moldau-test", "moldau-test-secret", "tiered"
	root := t.TempDir()
	gw := runVersitygw(t, root, access, secret)
	createBucket(t, gw.endpoint, bucket, access, secret)
	storeDir, logDir := filepath.Join(root, bucket), t.TempDir()
	port := freePort(t)
	props := s3TieredBrokerProps(gw.endpoint, bucket, access, secret)
	p := startProcess(t, logDir, port, props...)
	adm := newAdmin(t, p.Addr)
	createTieredTopic(t, adm)
	cl := newClient(t, p.Addr, kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 800
	produceTiered(t, cl, 0, n)
	waitTiered(t, cl, logDir, storeDir, n*tieredValueBytes)
	cl.Close()

	gw.stop()
	if _, err := adm.DeleteTopics(ctxTimeout(t, 30*time.Second), tieredTopic); err != nil {
		t.Fatal(err)
	}
	// The deletion is tried and fails: it is under way when the broker
	// is killed.
	eventually(t, time.Minute, func() error {
		if !strings.Contains(p.Out.String(), "deleting a deleted partition from remote storage failed") {
			return fmt.Errorf("no failed remote deletion yet")
		}
		return nil
	})
	p.kill(t)
	if _, files := dirBytes(t, storeDir, ".log"); files == 0 {
		t.Fatal("the store is empty with the store down")
	}

	gw.start(t)
	p = startProcess(t, logDir, port, props...)
	eventually(t, time.Minute, func() error {
		if stored, files := dirBytes(t, storeDir, ""); files > 0 {
			return fmt.Errorf("the store holds %d files (%d bytes) of the deleted topic", files, stored)
		}
		return nil
	})
	if !strings.Contains(p.Out.String(), "deleting the remote segments of a deleted topic's partition") {
		t.Fatal("the store was emptied, but not by the sweep")
	}
}

// parseSize parses 1GiB, 512MiB, 64KiB or a number of bytes.
func parseSize(v string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
		return 0, err
	}
	return n * mult, nil
}

// Four brokers, one more than the replication factor of
// __remote_log_metadata: the broker with no replica of its partition
// reads the events from the partition's leader (a consumer's Fetch), so
// it copies the partitions it leads, its followers' local retention
// deletes what was copied, and every partition reads back whole.
func TestTieredStorageFourBrokers(t *testing.T) {
	storeDir := t.TempDir()
	nodes := newClusterNodes(t, 4)
	bs := make([]*broker.Broker, 4)
	props := append(tieredBrokerProps(storeDir), "rlmm.config.remote.log.metadata.topic.num.partitions=1")
	for i, n := range nodes {
		bs[i] = startInProcessNode(t, n, nodes, props...)
	}
	t.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	waitReady(t, bs...)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.seed())
	}
	seed := strings.Join(seeds, ",")
	adm := newAdmin(t, seed)
	resp, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 4, 2, map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"segment.bytes":         kadm.StringPtr(fmt.Sprint(tieredSegmentBytes)),
		"local.retention.bytes": kadm.StringPtr(fmt.Sprint(tieredLocalBytes)),
	}, tieredTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	cl := newClient(t, seed, kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	leaders := map[int32]bool{}
	for p := range int32(4) {
		produceTieredTo(t, cl, p, 0, n)
		l, _ := partitionStateRetry(t, adm, tieredTopic, p)
		leaders[l] = true
	}
	if len(leaders) < 4 {
		t.Fatalf("the partitions have %d leaders; the test needs every broker to lead one", len(leaders))
	}
	eventually(t, 2*time.Minute, func() error {
		for _, node := range nodes {
			for p := range 4 {
				if local, _ := dirBytes(t, filepath.Join(node.dir, fmt.Sprintf("%s-%d", tieredTopic, p)), ".log"); local > tieredLocalBytes+2*tieredSegmentBytes {
					return fmt.Errorf("node %d holds %d bytes of partition %d", node.id, local, p)
				}
			}
		}
		return nil
	})
	hosts := 0
	for _, node := range nodes {
		if _, err := os.Stat(filepath.Join(node.dir, "__remote_log_metadata-0")); err == nil {
			hosts++
		}
	}
	if hosts != 3 {
		t.Fatalf("%d brokers host the metadata partition, want 3 of the 4", hosts)
	}
	for p := range int32(4) {
		consumeTieredPart(t, seed, p, 0, n)
	}
}
