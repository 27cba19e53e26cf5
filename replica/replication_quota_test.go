package replica

import (
	"testing"
	"time"
)

func TestThrottledReplicaList(t *testing.T) {
	for _, c := range []struct {
		list      string
		partition int32
		broker    int32
		want      bool
	}{
		{"", 0, 1, false},
		{"*", 3, 7, true},
		{"0:1,1:2", 0, 1, true},
		{"0:1, 1:2", 1, 2, true},
		{"0:1,1:2", 1, 1, false},
		{"10:1", 1, 1, false},
	} {
		if got := throttledReplica(c.list, c.partition, c.broker); got != c.want {
			t.Errorf("%q %d:%d = %v, want %v", c.list, c.partition, c.broker, got, c.want)
		}
	}
}

// The rate is Kafka's sampled Rate: bytes over the windows kept, counted as
// at least windows-1 of them, so a bound lets a burst of (windows-1) seconds
// through before it holds; old windows expire.
func TestReplicationQuotaRate(t *testing.T) {
	now := time.Unix(1000, 0)
	q := NewReplicationQuota(3, time.Second, func() time.Time { return now })
	q.Record(1 << 20)
	if q.Bounded() || q.Exceeded() || q.Rate() != 0 {
		t.Fatal("an unbounded quota measures nothing")
	}
	q.SetBound(1 << 20) // 1 MiB/s
	q.Record(1 << 20)
	if got := q.Rate(); got != float64(1<<20)/2 {
		t.Fatalf("rate %v after 1 MiB, want it over the 2 s minimum", got)
	}
	if q.Exceeded() {
		t.Fatal("exceeded at half the bound")
	}
	q.Record(2 << 20)
	if !q.Exceeded() {
		t.Fatalf("3 MiB in the first second not over 1 MiB/s: rate %v", q.Rate())
	}
	now = now.Add(5 * time.Second) // every window expired
	if q.Exceeded() || q.Rate() != 0 {
		t.Fatalf("rate %v after the windows expired", q.Rate())
	}
	q.SetBound(0)
	if q.Bounded() {
		t.Fatal("bound 0 is no bound")
	}
}
