package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/network"
)

// linkFaults cuts nodes off from each other: every connection a node opens
// to another (the quorum's, the controller channel's, replica fetchers',
// markers') goes through its dialer, which refuses a cut link and closes
// the connections of a link when it is cut. Clients are not affected.
type linkFaults struct {
	mu       sync.Mutex
	nodeOf   map[string]int32 // listener address -> node
	isolated map[int32]bool
	conns    []faultConn
}

type faultConn struct {
	from, to int32
	c        net.Conn
}

var errLinkCut = errors.New("link cut by the test")

func (f *linkFaults) cutLocked(from, to int32) bool { return f.isolated[from] || f.isolated[to] }

func (f *linkFaults) dialer(from int32) network.DialFunc {
	return func(ctx context.Context, nw, addr string) (net.Conn, error) {
		f.mu.Lock()
		to, known := f.nodeOf[addr]
		cut := known && f.cutLocked(from, to)
		f.mu.Unlock()
		if cut {
			return nil, errLinkCut
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, nw, addr)
		if err != nil || !known {
			return c, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.cutLocked(from, to) {
			c.Close()
			return nil, errLinkCut
		}
		f.conns = append(f.conns, faultConn{from, to, c})
		return c, nil
	}
}

// isolate cuts node off from every other node.
func (f *linkFaults) isolate(node int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.isolated[node] = true
	kept := f.conns[:0]
	for _, fc := range f.conns {
		if fc.from == node || fc.to == node {
			fc.c.Close()
			continue
		}
		kept = append(kept, fc)
	}
	f.conns = kept
}

func (f *linkFaults) heal(node int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.isolated, node)
}

// A leader cut off from the controller and its followers (by the
// brokers' dialers; clients still reach it) is fenced and replaced by an
// in-sync follower; it acknowledges no acks=all write while cut off (its
// followers no longer fetch, so its high watermark cannot pass them, and
// its ISR shrink cannot reach the controller). acks=1 writes it takes
// meanwhile are lost, as in Kafka, and counted. When the link heals it
// rejoins as a follower, its unreplicated tail is truncated, and every
// acks=all record acknowledged by anyone is present once.
func TestPartitionedLeaderLosesNoAcksAllWrite(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	faults := &linkFaults{nodeOf: map[string]int32{}, isolated: map[int32]bool{}}
	for _, n := range nodes {
		faults.nodeOf[n.seed()] = n.id
		faults.nodeOf[fmt.Sprintf("127.0.0.1:%d", n.ctrl)] = n.id
	}
	bs := make([]*broker.Broker, 3)
	for i, n := range nodes {
		overrides := append(kraftOverrides(n, nodes), "moldau.metrics.listener=", "broker.session.timeout.ms=4000",
			"broker.heartbeat.interval.ms=500", "replica.lag.time.max.ms=3000")
		cfg, _, err := config.Load("", overrides)
		if err != nil {
			t.Fatal(err)
		}
		logger := slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}), &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", n.id)
		if bs[i], err = broker.New(cfg, broker.Options{Logger: logger, Dial: faults.dialer(n.id)}); err != nil {
			t.Fatal(err)
		}
		bs[i].Start()
		b := bs[i]
		t.Cleanup(func() { b.Close() })
	}
	waitReady(t, bs...)
	seeds := []string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()}
	adm := newAdmin(t, joinSeeds(seeds))
	ctx := ctxTimeout(t, 3*time.Minute)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "cut"); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, "cut", 1, 3)

	var mu sync.Mutex
	ackedAll := map[uint64]bool{} // acks=all records acknowledged, by sequence
	ackedOne := map[uint64]bool{} // acks=1 records acknowledged
	record := func(seq uint64) *kgo.Record {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, seq)
		return &kgo.Record{Topic: "cut", Value: v}
	}
	produce := func(cl *kgo.Client, from, n uint64, into map[uint64]bool) {
		for s := from; s < from+n; s++ {
			cl.Produce(ctx, record(s), func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					into[binary.BigEndian.Uint64(r.Value)] = true
					mu.Unlock()
				}
			})
		}
	}
	all := newClient(t, joinSeeds(seeds), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(90*time.Second))
	produce(all, 0, 1000, ackedAll)
	if err := all.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	oldLeader, _ := partitionStateRetry(t, adm, "cut", 0)
	old := nodes[oldLeader-1]
	faults.isolate(oldLeader)
	cutAt := time.Now()
	// Clients that know only the old leader keep writing to it.
	toOldAll := newClient(t, old.seed(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(6*time.Second),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	toOldOne := newClient(t, old.seed(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordDeliveryTimeout(6*time.Second))
	produce(toOldAll, 100_000, 200, ackedAll)
	produce(toOldOne, 200_000, 200, ackedOne)
	// The others elect a new leader among themselves.
	var others []string
	for _, n := range nodes {
		if n.id != oldLeader {
			others = append(others, n.seed())
		}
	}
	// Asked directly (a client would also hear the cut-off node's stale
	// answer), one of the others names a new leader.
	other := newRawConn(t, others[0])
	eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("cut")
		req.Topics = append(req.Topics, rt)
		md := other.do(req, 12).(*kmsg.MetadataResponse)
		if l := md.Topics[0].Partitions[0].Leader; l < 0 || l == oldLeader {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	t.Logf("new leader elected within %v of the cut", time.Since(cutAt).Round(10*time.Millisecond))
	_ = toOldAll.Flush(ctx)
	_ = toOldOne.Flush(ctx)
	mu.Lock()
	var allByOld int
	for s := range ackedAll {
		if s >= 100_000 {
			allByOld++
		}
	}
	oneByOld := len(ackedOne)
	mu.Unlock()
	if allByOld > 0 {
		t.Errorf("the cut-off leader acknowledged %d acks=all records", allByOld)
	}
	// The majority keeps taking acks=all writes.
	produce(newClient(t, joinSeeds(others), kgo.RequiredAcks(kgo.AllISRAcks())), 300_000, 1000, ackedAll)

	faults.heal(oldLeader)
	waitISR(t, adm, "cut", 1, 3)
	produce(all, 400_000, 1000, ackedAll)
	if err := all.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Everything acknowledged with acks=all is there once; acks=1
	// records taken by the cut-off leader are gone.
	seen := countValues(t, ctx, joinSeeds(seeds), "cut")
	mu.Lock()
	defer mu.Unlock()
	for s := range ackedAll {
		if seen[s] != 1 {
			t.Fatalf("acks=all record %d read %d times", s, seen[s])
		}
	}
	lostOne := 0
	for s := range ackedOne {
		if seen[s] == 0 {
			lostOne++
		}
	}
	t.Logf("%d acks=all records acknowledged, all present once; the cut-off leader acknowledged %d acks=1 records, %d of them lost (Kafka's acks=1 semantics)",
		len(ackedAll), oneByOld, lostOne)

	// The replicas converge: every log holds the same bytes.
	eventually(t, 30*time.Second, func() error {
		first := segmentBytes(nodes[0], "cut", 0)
		for _, n := range nodes[1:] {
			if other := segmentBytes(n, "cut", 0); !bytes.Equal(first, other) {
				return fmt.Errorf("node 1 has %d bytes, node %d %d", len(first), n.id, len(other))
			}
		}
		return nil
	})
}

func joinSeeds(s []string) string {
	out := s[0]
	for _, x := range s[1:] {
		out += "," + x
	}
	return out
}
