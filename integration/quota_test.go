package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A controller_mutation_rate client quota (KIP-599), set and read back
// with kadm, throttles a client creating topics quickly: the response that
// exhausts the burst carries a throttle time (which kgo waits out before
// its next request, KIP-219), and a request that comes anyway (here on a
// second connection with the same client id) gets strict CreateTopics v7's
// THROTTLING_QUOTA_EXCEEDED; once the quota is removed creations succeed.
func TestControllerMutationQuota(t *testing.T) {
	b := startBroker(t, "")
	cl := newClient(t, b.Seed(), kgo.ClientID("quota-test"))
	impatient := newClient(t, b.Seed(), kgo.ClientID("quota-test"))
	adm := kadm.NewClient(newClient(t, b.Seed()))
	ctx := ctxTimeout(t, 30*time.Second)

	// 1 partition a second for every client, bursting to 11 (Kafka's
	// 11 windows of 1 s).
	alter := []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id"}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}},
	}}
	if res, err := adm.AlterClientQuotas(ctx, alter); err != nil || res[0].Err != nil {
		t.Fatalf("alter client quotas: %v %v", err, res)
	}
	got, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: kmsg.QuotasMatchTypeDefault}})
	if err != nil || len(got) != 1 || len(got[0].Values) != 1 || got[0].Values[0].Value != 1 {
		t.Fatalf("describe client quotas: %+v %v", got, err)
	}

	create := func(cl *kgo.Client, name string, partitions int32) kmsg.CreateTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return *resp
	}
	// 11 partitions of burst: 10 are fine, the next 5 go into debt and
	// are answered with the time to wait.
	for i, n := range []int32{5, 5, 5} {
		resp := create(cl, fmt.Sprintf("quota-%d", i), n)
		if code := resp.Topics[0].ErrorCode; code != 0 {
			t.Fatalf("creation %d: %v", i, kerr.ErrorForCode(code))
		}
		if i < 2 && resp.ThrottleMillis != 0 {
			t.Fatalf("creation %d within the burst throttled %d ms", i, resp.ThrottleMillis)
		}
		if i == 2 && resp.ThrottleMillis < 3000 {
			t.Fatalf("creation into debt throttled %d ms, want about 4000", resp.ThrottleMillis)
		}
	}
	throttled := create(impatient, "quota-impatient", 1)
	if throttled.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || throttled.ThrottleMillis <= 0 || throttled.Topics[0].ErrorMessage == nil {
		t.Fatalf("request over the quota: %v, throttle %d ms", kerr.ErrorForCode(throttled.Topics[0].ErrorCode), throttled.ThrottleMillis)
	}

	remove := []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id"}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Remove: true}},
	}}
	if res, err := adm.AlterClientQuotas(ctx, remove); err != nil || res[0].Err != nil {
		t.Fatalf("remove client quota: %v %v", err, res)
	}
	if resp := create(impatient, "after-quota", 50); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creation after the quota was removed: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	// Quota requests are validated by the controller.
	bad := []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id"}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "no_such_quota", Value: 1}},
	}}
	if res, err := adm.AlterClientQuotas(ctx, bad); err != nil || len(res) != 1 || res[0].Err == nil {
		t.Fatalf("unknown quota key accepted: %v %+v", err, res)
	}
}
