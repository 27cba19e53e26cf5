package integration

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker configs are described with their sources, a dynamic broker config
// set with kadm wins over the file and survives a restart, and
// DescribeCluster and DescribeLogDirs describe this node and its data.
func TestBrokerConfigsClusterAndLogDirs(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, "num.io.threads=4")
	adm := newAdmin(t, b.Seed())
	ctx := ctxTimeout(t, 30*time.Second)

	source := func(adm *kadm.Client, key string) (string, kmsg.ConfigSource) {
		t.Helper()
		rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rcs[0].Configs {
			if c.Key == key {
				return c.MaybeValue(), c.Source
			}
		}
		t.Fatalf("broker config %s not described", key)
		return "", 0
	}
	if v, src := source(adm, "num.io.threads"); v != "4" || src != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("num.io.threads = %s from %v, want 4 from the static config", v, src)
	}
	if v, src := source(adm, "num.partitions"); v != "1" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("num.partitions = %s from %v, want the default 1", v, src)
	}
	ret := "3600000"
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: &ret}}, 1)
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatalf("altering a dynamic broker config: %v", err)
	}
	threads := "2"
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.dirs", Value: &threads}}, 1)
	if err == nil && resps[0].Err == nil {
		t.Error("a read-only broker config was altered")
	}

	// DescribeCluster: this node, the cluster id, itself as controller.
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctx, newClient(t, b.Seed()))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ClusterID != b.ClusterID() || len(resp.Brokers) != 1 || resp.ControllerID != resp.Brokers[0].NodeID {
		t.Errorf("DescribeCluster: cluster %q brokers %+v controller %d", resp.ClusterID, resp.Brokers, resp.ControllerID)
	}

	// DescribeLogDirs: the dir, its volume, and a topic's partitions with sizes.
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "dirs"); err != nil {
		t.Fatal(err)
	}
	if err := newClient(t, b.Seed(), kgo.DefaultProduceTopic("dirs"), kgo.ProducerBatchCompression(kgo.NoCompression())).ProduceSync(ctx, &kgo.Record{Value: make([]byte, 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Errorf("log dir %s: err %v total %d usable %d", d.Dir, d.Err, d.TotalBytes, d.UsableBytes)
		}
		if d.Topics["dirs"] != nil && len(d.Topics["dirs"]) == 2 && d.Size() > 1000 {
			found = true
		}
	})
	if !found {
		t.Errorf("DescribeLogDirs does not show topic dirs with its data: %+v", dirs)
	}

	// The dynamic config survives a restart.
	b.Close()
	b2 := startBroker(t, dir, "num.io.threads=4")
	if v, src := source(newAdmin(t, b2.Seed()), "log.retention.ms"); v != "3600000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("log.retention.ms after restart = %s from %v, want 3600000 from the dynamic broker config", v, src)
	}
}

// ListOffsets finds offsets by timestamp and the record with the largest
// timestamp; DeleteRecords moves the log start, and reads below it are out
// of range.
func TestListOffsetsAndDeleteRecords(t *testing.T) {
	b := startBroker(t, "")
	adm := newAdmin(t, b.Seed())
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "lo"); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, b.Seed(), kgo.DefaultProduceTopic("lo"), kgo.ProducerLinger(0))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	// Offsets 0..9 with timestamps base+0s, +10s, ..., +90s, except offset
	// 7, which carries the largest timestamp.
	for i := 0; i < 10; i++ {
		ts := base.Add(time.Duration(i) * 10 * time.Second)
		if i == 7 {
			ts = base.Add(30 * time.Minute)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i)), Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs, err := adm.ListOffsetsAfterMilli(ctx, base.Add(25*time.Second).UnixMilli(), "lo")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("lo", 0); o.Err != nil || o.Offset != 3 {
		t.Errorf("offset after +25s = %d (%v), want 3", o.Offset, o.Err)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "lo"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -3 // max timestamp (KIP-734)
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.Offset != 7 || got.Timestamp != base.Add(30*time.Minute).UnixMilli() {
		t.Errorf("max timestamp: offset %d timestamp %d error %d, want offset 7", got.Offset, got.Timestamp, got.ErrorCode)
	}

	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "lo", Partition: 0, At: 4})
	dr, err := adm.DeleteRecords(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("lo", 0); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords: low watermark %d, err %v; want 4", r.LowWatermark, r.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("lo", 0); o.Offset != 4 {
		t.Errorf("log start after DeleteRecords = %d, want 4", o.Offset)
	}
	beyond := kadm.Offsets{}
	beyond.Add(kadm.Offset{Topic: "lo", Partition: 0, At: 100})
	dr, err = adm.DeleteRecords(ctx, beyond)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("lo", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Errorf("DeleteRecords past the high watermark: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
}

// A broker started and closed in-process leaves no goroutine behind.
func TestBrokerCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		b := startBroker(t, "")
		ctx := ctxTimeout(t, 30*time.Second)
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Seed()), kgo.DefaultProduceTopic("g"), kgo.AllowAutoTopicCreation(),
			kgo.ConsumeTopics("g"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		cl.PollFetches(ctx)
		// Close the broker while the client still has a long poll in
		// flight; then the client.
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}()
	eventually(t, 10*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}
