package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator's benchmarks (issue 8):
//
//	go test -run '^$' -bench 'GroupSettle' -benchtime 5x ./integration/
//	go test -run '^$' -bench 'OffsetCommits10kGroups' -benchtime 10x ./integration/
//
// GroupSettle: a 100-member group (classic, or KIP-848) is stable; each
// iteration adds a member and measures how long until the group is stable
// again with every member holding partitions; the member then leaves
// (untimed). Members heartbeat every 500 ms (kgo's HeartbeatInterval for
// classic members, group.consumer.heartbeat.interval.ms for KIP-848
// ones): a rebalance cannot settle before the others learn of it.
//
// OffsetCommits10kGroups: 10,000 groups each commit once a second (simple
// commits from 32 connections); each iteration is one second. Reported:
// the broker process's CPU in cores (from /proc), the commits per second
// achieved, and the commit latency.

const settleMembers = 100

func benchSettle(b *testing.B, consumerProtocol bool) {
	overrides := []string{"group.initial.rebalance.delay.ms=0"}
	if consumerProtocol {
		overrides = append(overrides, "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
	}
	br := startBroker(b, "", overrides...)
	br.Logs = nil
	adm := newAdmin(b, br.Seed())
	createTopic(b, adm, 2*settleMembers+20, "settle")
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	var assigned sync.Map // client id -> partitions held
	member := func(id string) *kgo.Client {
		opts := []kgo.Opt{
			kgo.ClientID(id), kgo.ConsumerGroup("settle-g"), kgo.ConsumeTopics("settle"),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				v, _ := assigned.LoadOrStore(id, new(atomic.Int64))
				v.(*atomic.Int64).Add(int64(len(m["settle"])))
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				if v, ok := assigned.Load(id); ok {
					v.(*atomic.Int64).Add(-int64(len(m["settle"])))
				}
			}),
		}
		if consumerProtocol {
			opts = append(opts, kgo.ServerSideBalancer())
		} else {
			opts = append(opts, kgo.HeartbeatInterval(500*time.Millisecond), kgo.SessionTimeout(30*time.Second))
		}
		c, err := kgo.NewClient(append(opts, kgo.SeedBrokers(br.Seed()))...)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for ctx.Err() == nil {
				if fs := c.PollFetches(ctx); errors.Is(fs.Err0(), kgo.ErrClientClosed) {
					return
				}
			}
		}()
		return c
	}
	var members []*kgo.Client
	b.Cleanup(func() {
		for _, c := range members {
			c.Close()
		}
	})
	for i := range settleMembers {
		members = append(members, member(fmt.Sprintf("m%03d", i)))
	}
	settled := func(n int, newcomer string) error {
		if newcomer != "" {
			if v, ok := assigned.Load(newcomer); !ok || v.(*atomic.Int64).Load() == 0 {
				return errors.New("the new member holds nothing yet")
			}
		}
		return groupSettled(ctx, adm, "settle-g", n, consumerProtocol)
	}
	waitSettled(b, 120*time.Second, func() error { return settled(settleMembers, "") })

	var times []time.Duration
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("new-%d", i)
		start := time.Now()
		c := member(id)
		waitSettled(b, 60*time.Second, func() error { return settled(settleMembers+1, id) })
		times = append(times, time.Since(start))
		b.StopTimer()
		c.Close()
		waitSettled(b, 120*time.Second, func() error { return settled(settleMembers, "") })
		b.StartTimer()
	}
	b.StopTimer()
	reportDurations(b, times, "settle")
}

// groupSettled: Stable with n members, each holding partitions.
func groupSettled(ctx context.Context, adm *kadm.Client, group string, n int, consumerProtocol bool) error {
	if consumerProtocol {
		d, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return err
		}
		g := d[group]
		if g.State != "Stable" || len(g.Members) != n {
			return fmt.Errorf("%s with %d members", g.State, len(g.Members))
		}
		for _, m := range g.Members {
			if len(m.Assignment) == 0 {
				return fmt.Errorf("member %s holds nothing", m.MemberID)
			}
		}
		return nil
	}
	d, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	g := d[group]
	if g.State != "Stable" || len(g.Members) != n {
		return fmt.Errorf("%s with %d members", g.State, len(g.Members))
	}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok || len(a.Topics) == 0 || len(a.Topics[0].Partitions) == 0 {
			return fmt.Errorf("member %s holds nothing", m.MemberID)
		}
	}
	return nil
}

func waitSettled(b *testing.B, timeout time.Duration, cond func() error) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("not settled after %v: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func reportDurations(b *testing.B, ds []time.Duration, name string) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(len(ds)), name+"-mean-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Milliseconds()), name+"-max-ms")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkClassicGroupSettle(b *testing.B)  { benchSettle(b, false) }
func BenchmarkConsumerGroupSettle(b *testing.B) { benchSettle(b, true) }

// procCPU returns the CPU time (user + system) a process has used.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100), nil // USER_HZ is 100 on Linux
}

func BenchmarkOffsetCommits10kGroups(b *testing.B) {
	const groups, conns = 10000, 32
	p := startProcess(b, b.TempDir(), freePort(b))
	adm := newAdmin(b, p.Addr)
	createTopic(b, adm, 1, "committed")
	md, err := adm.Metadata(context.Background(), "committed")
	if err != nil {
		b.Fatal(err)
	}
	topicID := md.Topics["committed"].ID
	clients := make([]*kgo.Client, conns)
	for i := range clients {
		clients[i] = newClient(b, p.Addr)
	}
	ctx := context.Background()
	var latMu sync.Mutex
	var lats []time.Duration
	var failed atomic.Int64
	var firstErr atomic.Value
	round := func(offset int64, record bool) {
		var wg sync.WaitGroup
		for w := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for g := w; g < groups; g += conns {
					req := kmsg.NewPtrOffsetCommitRequest()
					req.Group = "bench-group-" + strconv.Itoa(g)
					t := kmsg.NewOffsetCommitRequestTopic()
					t.Topic, t.TopicID = "committed", topicID // kgo sends the newest version: v10 names topics by id
					part := kmsg.NewOffsetCommitRequestTopicPartition()
					part.Offset = offset
					t.Partitions = append(t.Partitions, part)
					req.Topics = append(req.Topics, t)
					start := time.Now()
					resp, err := req.RequestWith(ctx, clients[w])
					if err == nil {
						err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
					}
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					mine = append(mine, time.Since(start))
				}
				if record {
					latMu.Lock()
					lats = append(lats, mine...)
					latMu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	round(0, false) // coordinators found, groups and shards warm
	cpu0, err := procCPU(p.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	b.ResetTimer()
	for i := range b.N {
		tick := start.Add(time.Duration(i+1) * time.Second)
		round(int64(i+1), true)
		if d := time.Until(tick); d > 0 {
			time.Sleep(d) // once a second
		}
	}
	b.StopTimer()
	wall := time.Since(start)
	cpu1, _ := procCPU(p.cmd.Process.Pid)
	b.ReportMetric((cpu1-cpu0).Seconds()/wall.Seconds(), "broker-cores")
	b.ReportMetric(float64(groups*b.N)/wall.Seconds(), "commits/s")
	if failed.Load() > 0 {
		b.Fatalf("%d commits failed; first: %v", failed.Load(), firstErr.Load())
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if len(lats) > 0 {
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}
