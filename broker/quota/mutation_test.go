package quota

import (
	"testing"
	"time"

	"github.com/moldau/moldau/broker/metadata"
)

func TestMutationQuotaTokenBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	clientDefault := metadata.QuotaEntity{ClientID: metadata.QuotaName{Set: true, Default: true}}
	quotas := map[metadata.QuotaEntity]map[string]float64{clientDefault: {MutationRateKey: 10}}
	m := NewMutationQuotas(func() map[metadata.QuotaEntity]map[string]float64 { return quotas }, 2, time.Second, func() time.Time { return now })

	// A burst of 20 (10/s over 2 s) is allowed; the request that goes into
	// debt is still accepted, and the next strict one is refused with the
	// time the debt takes to clear.
	q := m.For(AnonymousUser, "a", true)
	if !q.Record(15) || !q.Record(10) {
		t.Fatal("refused within the burst")
	}
	if got := q.ThrottleTime(); got != 500*time.Millisecond {
		t.Fatalf("throttle %v, want 500ms (5 tokens of debt at 10/s)", got)
	}
	q = m.For(AnonymousUser, "a", true)
	if q.Record(1) || q.ThrottleTime() != 500*time.Millisecond {
		t.Fatalf("strict quota in debt accepted, throttle %v", q.ThrottleTime())
	}
	// Another client has its own bucket under a default quota.
	if !m.For(AnonymousUser, "b", true).Record(20) {
		t.Fatal("client b refused")
	}
	// Permissive: never refused, only throttled.
	p := m.For(AnonymousUser, "a", false)
	if !p.Record(10) || p.ThrottleTime() != 1500*time.Millisecond {
		t.Fatalf("permissive: throttle %v", p.ThrottleTime())
	}
	// Time refills the bucket.
	now = now.Add(3 * time.Second)
	if q := m.For(AnonymousUser, "a", true); !q.Record(10) {
		t.Fatal("refused after the debt cleared")
	}
	// No quota: nothing is limited.
	quotas = nil
	if q := m.For(AnonymousUser, "a", true); !q.Record(1e9) || q.ThrottleTime() != 0 {
		t.Fatal("limited without a quota")
	}
}

func TestMutationQuotaPrecedence(t *testing.T) {
	name := func(n string) metadata.QuotaName { return metadata.QuotaName{Set: true, Name: n} }
	quotas := map[metadata.QuotaEntity]map[string]float64{
		{ClientID: name("app")}:                            {MutationRateKey: 1},
		{User: name(AnonymousUser)}:                        {MutationRateKey: 2},
		{User: name(AnonymousUser), ClientID: name("app")}: {MutationRateKey: 3},
	}
	m := NewMutationQuotas(func() map[metadata.QuotaEntity]map[string]float64 { return quotas }, 11, time.Second, nil)
	if r, _ := m.lookup(AnonymousUser, "app"); r != 3 {
		t.Fatalf("user+client rate %v, want 3", r)
	}
	if r, _ := m.lookup(AnonymousUser, "other"); r != 2 {
		t.Fatalf("user rate %v, want 2", r)
	}
	if r, _ := m.lookup("bob", "app"); r != 1 {
		t.Fatalf("client rate %v, want 1", r)
	}
}
