package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The byte-rate quota tests use 1 MB/s and quota.window.num=2. With
// Kafka's 11 windows a new client may send 10 windows' worth of its quota
// at once and then wait about 10 s (the rate is averaged over 11 s), so
// throughput only settles at the quota over tens of seconds; 2 windows of
// 1 s give the same arithmetic a 2 s period, and a 6 s measurement sees at
// most the quota plus one window's burst (≤ 1.17×).
const (
	quotaRate    = 1_000_000
	quotaMeasure = 6 * time.Second
	quotaValue   = 10_000
)

// uncompressed producers put on the wire the bytes they count.
var uncompressed = kgo.ProducerBatchCompression(kgo.NoCompression())

func clientQuotaBroker(t *testing.T, extra ...string) *testBroker {
	return startBroker(t, "", append([]string{"quota.window.num=2"}, extra...)...)
}

// throttleHook counts the responses that carried a throttle time.
type throttleHook struct{ n atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// setQuota sets (value > 0) or removes a client quota and waits until the
// broker describes it so.
func setQuota(t *testing.T, adm *kadm.Client, entity kadm.ClientQuotaEntity, key string, value float64) {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	op := kadm.AlterClientQuotaOp{Key: key, Value: value, Remove: value <= 0}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{op}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter client quotas: %v %+v", err, res)
	}
	var comps []kadm.DescribeClientQuotaComponent
	for _, c := range entity {
		comps = append(comps, kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name})
	}
	eventually(t, 10*time.Second, func() error {
		got, err := adm.DescribeClientQuotas(ctx, true, comps)
		if err != nil {
			return err
		}
		var have float64
		for _, q := range got {
			for _, v := range q.Values {
				if v.Key == key {
					have = v.Value
				}
			}
		}
		if have != max(value, 0) {
			return fmt.Errorf("%s is %v, want %v", key, have, value)
		}
		return nil
	})
}

// produceFor produces to topic at full speed for d and returns the value
// bytes acknowledged per second.
func produceFor(t testing.TB, cl *kgo.Client, topic string, d time.Duration) float64 {
	t.Helper()
	var acked atomic.Int64
	value := randomValue()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
			if err == nil && time.Since(start) <= d {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	return float64(acked.Load()) / d.Seconds()
}

// consumeFor consumes topic from the start for d (or until want value
// bytes) and returns the value bytes per second and the time it took.
func consumeFor(t *testing.T, cl *kgo.Client, topic string, d time.Duration, want int64) (float64, time.Duration) {
	t.Helper()
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	var got int64
	for got < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
	}
	took := time.Since(start)
	return float64(got) / took.Seconds(), took
}

func checkRate(t *testing.T, what string, rate float64) {
	t.Helper()
	t.Logf("%s: %.0f B/s with a quota of %d B/s", what, rate, quotaRate)
	if rate > 1.3*quotaRate || rate < 0.5*quotaRate {
		t.Fatalf("%s: %.0f B/s, want within [0.5, 1.3] × %d", what, rate, quotaRate)
	}
}

func scrapeValue(t *testing.T, b *testBroker, series string) (float64, bool) {
	t.Helper()
	v, ok := scrape(t, b.MetricsAddr().String())[series]
	return v, ok
}

// producer_byte_rate for a client id holds a producer at full speed near
// the quota, its responses carry throttle_time_ms (kgo's throttle hook),
// the sensor's metrics appear; removed, the producer is no longer held.
func TestProducerByteRateQuota(t *testing.T) {
	b := clientQuotaBroker(t)
	adm := newAdmin(t, b.Seed())
	if _, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), 1, -1, nil, "pq"); err != nil {
		t.Fatal(err)
	}
	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: kgoStr("pq-producer")}}
	setQuota(t, adm, entity, "producer_byte_rate", quotaRate)

	hook := &throttleHook{}
	cl := newClient(t, b.Seed(), kgo.ClientID("pq-producer"), kgo.WithHooks(hook), uncompressed)
	checkRate(t, "produce", produceFor(t, cl, "pq", quotaMeasure))
	if hook.n.Load() == 0 {
		t.Fatal("no produce response carried a throttle time")
	}
	series := `{client_id="pq-producer",user=""}`
	if v, ok := scrapeValue(t, b, "kafka_server_produce_byte_rate"+series); !ok || v <= 0 {
		t.Fatalf("kafka_server_produce_byte_rate%s = %v %v", series, v, ok)
	}
	if v, ok := scrapeValue(t, b, "kafka_server_produce_throttle_time"+series); !ok || v <= 0 {
		t.Fatalf("kafka_server_produce_throttle_time%s = %v %v", series, v, ok)
	}
	// Another client id is not limited and has no series.
	if _, ok := scrapeValue(t, b, `kafka_server_produce_byte_rate{client_id="other",user=""}`); ok {
		t.Fatal("a series for a client without a quota")
	}

	setQuota(t, adm, entity, "producer_byte_rate", 0)
	free := &throttleHook{}
	cl2 := newClient(t, b.Seed(), kgo.ClientID("pq-producer"), kgo.WithHooks(free), uncompressed)
	if rate := produceFor(t, cl2, "pq", 3*time.Second); rate < 2*quotaRate {
		t.Fatalf("%.0f B/s after the quota was removed, want more than %d", rate, 2*quotaRate)
	}
	if n := free.n.Load(); n != 0 {
		t.Fatalf("%d responses throttled after the quota was removed", n)
	}
	eventually(t, 10*time.Second, func() error {
		if _, ok := scrapeValue(t, b, "kafka_server_produce_byte_rate"+series); ok {
			return fmt.Errorf("series %s still exported without a quota", series)
		}
		return nil
	})
}

// consumer_byte_rate for a client id holds a consumer near the quota with
// throttled fetch responses; removed, it reads at full speed.
func TestConsumerByteRateQuota(t *testing.T) {
	b := clientQuotaBroker(t)
	adm := newAdmin(t, b.Seed())
	if _, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), 1, -1, nil, "fq"); err != nil {
		t.Fatal(err)
	}
	const total = 1000 * quotaValue // 10 MB: more than 6 s at the quota
	loader := newClient(t, b.Seed(), kgo.ClientID("loader"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := ctxTimeout(t, 60*time.Second)
	value := randomValue()
	for range total / quotaValue {
		loader.Produce(ctx, &kgo.Record{Topic: "fq", Value: value}, nil)
	}
	if err := loader.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: kgoStr("fq-consumer")}}
	setQuota(t, adm, entity, "consumer_byte_rate", quotaRate)
	hook := &throttleHook{}
	cl := newClient(t, b.Seed(), kgo.ClientID("fq-consumer"), kgo.WithHooks(hook))
	rate, _ := consumeFor(t, cl, "fq", quotaMeasure, total)
	checkRate(t, "fetch", rate)
	if hook.n.Load() == 0 {
		t.Fatal("no fetch response carried a throttle time")
	}
	series := `{client_id="fq-consumer",user=""}`
	if v, ok := scrapeValue(t, b, "kafka_server_fetch_throttle_time"+series); !ok || v <= 0 {
		t.Fatalf("kafka_server_fetch_throttle_time%s = %v %v", series, v, ok)
	}
	// The loader's fetch-free produce made no fetch series.
	if _, ok := scrapeValue(t, b, `kafka_server_fetch_byte_rate{client_id="loader",user=""}`); ok {
		t.Fatal("a fetch series for a client without a quota")
	}

	setQuota(t, adm, entity, "consumer_byte_rate", 0)
	cl2 := newClient(t, b.Seed(), kgo.ClientID("fq-consumer"))
	rate, took := consumeFor(t, cl2, "fq", 30*time.Second, total)
	if rate < 2*quotaRate {
		t.Fatalf("read %d bytes in %v (%.0f B/s) after the quota was removed, want more than %d B/s", total, took, rate, 2*quotaRate)
	}
}

// A user quota applies to a SASL/PLAIN principal: alice's producer is held
// near it whatever its client id, and the metrics are labelled by user.
func TestUserByteRateQuotaSASL(t *testing.T) {
	b := clientQuotaBroker(t, saslListeners()...)
	adm := newAdmin(t, b.Seed())
	if _, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), 1, -1, nil, "uq"); err != nil {
		t.Fatal(err)
	}
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "user", Name: kgoStr("alice")}}, "producer_byte_rate", quotaRate)
	hook := &throttleHook{}
	alice := newClient(t, b.Addr("SASL").String(), kgo.ClientID("any"), kgo.WithHooks(hook),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), uncompressed)
	checkRate(t, "alice", produceFor(t, alice, "uq", quotaMeasure))
	if hook.n.Load() == 0 {
		t.Fatal("no produce response carried a throttle time")
	}
	if v, ok := scrapeValue(t, b, `kafka_server_produce_throttle_time{client_id="",user="alice"}`); !ok || v <= 0 {
		t.Fatalf("alice's throttle time %v %v", v, ok)
	}
	// An unauthenticated client (ANONYMOUS) is not alice.
	anon := newClient(t, b.Seed(), kgo.ClientID("any"), uncompressed)
	if rate := produceFor(t, anon, "uq", 2*time.Second); rate < 2*quotaRate {
		t.Fatalf("ANONYMOUS produced %.0f B/s under alice's quota", rate)
	}
}

func kgoStr(s string) *string { return &s }

// randomValue is a record value that does not compress.
func randomValue() []byte {
	v := make([]byte, quotaValue)
	for i := range v {
		v[i] = byte(rand.Uint32())
	}
	return v
}

// request_percentage throttles any request: a client over a tiny quota
// gets Metadata responses with throttle_time_ms, at most one window long
// (Kafka bounds the request quota's throttle by quota.window.size.seconds).
func TestRequestPercentageQuota(t *testing.T) {
	b := clientQuotaBroker(t)
	adm := newAdmin(t, b.Seed())
	setQuota(t, adm, kadm.ClientQuotaEntity{{Type: "client-id", Name: kgoStr("rq")}}, "request_percentage", 0.0001)
	cl := newClient(t, b.Seed(), kgo.ClientID("rq"))
	ctx := ctxTimeout(t, 30*time.Second)
	var throttle int32
	for i := 0; i < 100 && throttle == 0; i++ {
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		throttle = resp.ThrottleMillis
	}
	if throttle <= 0 || throttle > 1000 {
		t.Fatalf("throttle %d ms, want within (0, 1000]", throttle)
	}
	series := `{client_id="rq",user=""}`
	if v, ok := scrapeValue(t, b, "kafka_server_request_request_time"+series); !ok || v <= 0 {
		t.Fatalf("kafka_server_request_request_time%s = %v %v", series, v, ok)
	}
	if v, ok := scrapeValue(t, b, "kafka_server_request_throttle_time"+series); !ok || v <= 0 {
		t.Fatalf("kafka_server_request_throttle_time%s = %v %v", series, v, ok)
	}
}
