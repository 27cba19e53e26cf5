package integration

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
)

// describeBroker returns a broker config's value and source.
func describeBroker(t *testing.T, adm *kadm.Client, key string) (string, kmsg.ConfigSource, bool) {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(ctxTimeout(t, 10*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == key {
			return c.MaybeValue(), c.Source, true
		}
	}
	return "", 0, false
}

func alterBroker(t *testing.T, adm *kadm.Client, key, value string, brokers ...int32) error {
	t.Helper()
	resps, err := adm.AlterBrokerConfigs(ctxTimeout(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &value}}, brokers...)
	if err != nil {
		return err
	}
	if resps[0].Err != nil {
		return fmt.Errorf("%w: %s", resps[0].Err, resps[0].ErrMessage)
	}
	return nil
}

// AlterConfigs and IncrementalAlterConfigs accept the broker keys Kafka
// defines (issue 12, point 5: sasl.kerberos.min.time.before.relogin was
// INVALID_REQUEST "Unknown broker configs"), refuse read-only ones with
// Kafka's error, and DescribeConfigs reports what was stored.
func TestAlterKafkaBrokerConfigs(t *testing.T) {
	b := startBroker(t, "")
	adm := newAdmin(t, b.Seed())

	if err := alterBroker(t, adm, "sasl.kerberos.min.time.before.relogin", "30000", 1); err != nil {
		t.Fatalf("IncrementalAlterConfigs of a per-broker Kafka config: %v", err)
	}
	if v, src, _ := describeBroker(t, adm, "sasl.kerberos.min.time.before.relogin"); v != "30000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("described as %s from %v", v, src)
	}
	// The legacy AlterConfigs replaces the resource's whole set.
	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	for k, v := range map[string]string{"sasl.login.refresh.buffer.seconds": "120", "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"} {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), newClient(t, b.Seed()))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("AlterConfigs: %v %v", err, resp.Resources[0].ErrorMessage)
	}
	if v, _, _ := describeBroker(t, adm, "sasl.login.refresh.buffer.seconds"); v != "120" {
		t.Fatalf("sasl.login.refresh.buffer.seconds = %q", v)
	}

	err = alterBroker(t, adm, "log.dirs", "/elsewhere", 1)
	if err == nil || !strings.Contains(err.Error(), "Cannot update these configs dynamically: Set(log.dirs)") {
		t.Fatalf("altering log.dirs: %v", err)
	}
	err = alterBroker(t, adm, "sasl.kerberos.min.time.before.relogin", "1") // cluster default
	if err == nil || !strings.Contains(err.Error(), "broker id must be specified") {
		t.Fatalf("a per-broker config at the cluster level: %v", err)
	}
}

// num.io.threads and num.network.threads changed with kadm resize the
// handler pool and the processors at run time, and clients keep working.
func TestDynamicThreadPools(t *testing.T) {
	b := startBroker(t, "")
	adm := newAdmin(t, b.Seed())
	if b.NumIOThreads() != 8 || b.NumNetworkThreads() != 3 {
		t.Fatalf("start: %d io threads, %d network threads", b.NumIOThreads(), b.NumNetworkThreads())
	}
	if err := alterBroker(t, adm, "num.io.threads", "16"); err != nil {
		t.Fatal(err)
	}
	if err := alterBroker(t, adm, "num.network.threads", "5"); err != nil {
		t.Fatal(err)
	}
	if b.NumIOThreads() != 16 || b.NumNetworkThreads() != 5 {
		t.Fatalf("after AlterConfigs: %d io threads, %d network threads", b.NumIOThreads(), b.NumNetworkThreads())
	}
	if v, src, _ := describeBroker(t, adm, "num.io.threads"); v != "16" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("num.io.threads described as %s from %v", v, src)
	}
	if err := alterBroker(t, adm, "num.io.threads", "64"); err == nil || !strings.Contains(err.Error(), "double the current value 16") {
		t.Fatalf("num.io.threads 16 -> 64: %v", err)
	}
	if err := alterBroker(t, adm, "num.network.threads", "3"); err != nil {
		t.Fatal(err)
	}
	if b.NumNetworkThreads() != 3 {
		t.Fatalf("after shrinking: %d network threads", b.NumNetworkThreads())
	}
	// Produce and consume through the resized pools; clients whose
	// connection was on a removed processor reconnect.
	ctx := ctxTimeout(t, 30*time.Second)
	cl := newClient(t, b.Seed(), kgo.DefaultProduceTopic("resized"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("resized"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if fs := cl.PollFetches(ctx); fs.NumRecords() != 1 {
		t.Fatalf("fetched %d records: %v", fs.NumRecords(), fs.Errors())
	}
}

// DescribeConfigs reports log.dirs as the broker uses it when only log.dir
// is set, with log.dir's source (it reported null while the data went to
// log.dir).
func TestDescribeEffectiveLogDirs(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.Load("", []string{"log.dir=" + dir, "listeners=PLAINTEXT://127.0.0.1:0", "moldau.metrics.listener="})
	if err != nil {
		t.Fatal(err)
	}
	br, err := broker.New(cfg, broker.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	br.Start()
	t.Cleanup(func() { br.Close() })
	adm := newAdmin(t, br.Addr("").String())
	if v, src, ok := describeBroker(t, adm, "log.dirs"); !ok || v != dir || src != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("log.dirs described as %q from %v, want %s from the static log.dir", v, src, dir)
	}
	if v, src, _ := describeBroker(t, adm, "log.retention.ms"); v != "604800000" || src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("log.retention.ms described as %q from %v, want the 168 hours of log.retention.hours", v, src)
	}
}
