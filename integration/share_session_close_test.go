package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareFetchConn is one share group member's own TCP connection, speaking
// raw ShareFetch, so that the test can cut it as a crash would.
type shareFetchConn struct {
	c    net.Conn
	corr int32
}

func dialShareFetch(t *testing.T, addr string) *shareFetchConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &shareFetchConn{c: c}
}

// fetch sends a ShareFetch v1 and reads its response.
func (s *shareFetchConn) fetch(t *testing.T, req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
	t.Helper()
	req.SetVersion(1)
	s.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("crashing-member")).AppendRequest(nil, req, s.corr)
	_ = s.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := s.c.Write(frame); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(s.c, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(s.c, body); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != s.corr {
		t.Fatalf("correlation id %d, want %d", got, s.corr)
	}
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	// Response header v1: the correlation id, then an empty tag buffer.
	if err := resp.ReadFrom(body[5:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

// crash resets the connection, as a killed client's or a lost network's.
func (s *shareFetchConn) crash() {
	if tc, ok := s.c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = s.c.Close()
}

// A member acquires records under a one-minute acquisition lock, then its
// connection is cut without a word. Its share session ends with the
// connection (Kafka 4.1), so the records go back at once: another member
// receives every one of them, delivered a second time, well before the
// lock would have run out.
func TestShareSessionEndsWithItsConnection(t *testing.T) {
	const n, lock = 30, time.Minute
	b := startBroker(t, "", shareGroupBroker...)
	enableShareGroups(t, b.Seed())
	createTopic(t, newAdmin(t, b.Seed()), 1, "parcels")
	shareGroupConfigs(t, b.Seed(), "couriers", "share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", fmt.Sprint(lock.Milliseconds()))
	produceSeq(t, b.Seed(), "parcels", 0, n)

	// Member A joins the group and acquires every record on a
	// connection of its own.
	cl := newClient(t, b.Seed())
	a := &shareMember{group: "couriers", id: newMemberID()}
	eventually(t, 20*time.Second, func() error {
		if err := a.heartbeat(t, cl, "parcels"); err != nil {
			return err
		}
		if len(a.assigned) == 0 {
			return fmt.Errorf("member A has no partition yet")
		}
		return nil
	})
	id := topicID(t, cl, "parcels")
	conn := dialShareFetch(t, b.Seed())
	group, member := "couriers", a.id
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = &group, &member
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 5000, 1<<20, 1000, 1000
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	acquired := 0
	for epoch := int32(0); acquired < n; epoch++ {
		if epoch > 20 {
			t.Fatalf("member A acquired %d of %d records", acquired, n)
		}
		req.ShareSessionEpoch = epoch
		resp := conn.fetch(t, req)
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					t.Fatalf("member A's share fetch: %v", err)
				}
				for _, r := range p.AcquiredRecords {
					acquired += int(r.LastOffset - r.FirstOffset + 1)
				}
			}
		}
		req.Topics = nil // in the session now
	}

	conn.crash()
	crashed := time.Now()

	// Member B, a stock share consumer, gets them all, each on its
	// second delivery.
	tally := &shareTally{seen: map[uint64][]int32{}}
	ctx, cancel := context.WithCancel(ctxTimeout(t, 2*time.Minute))
	var wg sync.WaitGroup
	consumer := shareConsumer(ctx, t, b.Seed(), "couriers", "parcels", tally, kgo.AckAccept, &wg)
	eventually(t, lock/3, func() error {
		if d := tally.distinct(); d < n {
			return fmt.Errorf("member B received %d of %d records %v after member A's connection was cut", d, n, time.Since(crashed).Round(time.Millisecond))
		}
		return nil
	})
	took := time.Since(crashed)
	cancel()
	wg.Wait()
	consumer.Close()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for v, dcs := range tally.seen {
		if len(dcs) != 1 || dcs[0] != 2 {
			t.Errorf("record %d delivered to member B with counts %v, want once, its second delivery", v, dcs)
		}
	}
	t.Logf("member B had all %d records %v after member A's connection was cut (lock %v)", n, took.Round(time.Millisecond), lock)
	m := scrape(t, b.MetricsAddr().String())
	if v, _ := metric(m, "kafka_server_sharesessioncache_sharesessionevictions_total"); v < 1 {
		t.Errorf("share session evictions %v, want at least 1", v)
	}
}
