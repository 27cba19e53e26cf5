package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker/brokertest"
)

// startBroker starts a one-node Moldau broker with small internal topics
// and no metrics listener (its default port, 9404, may be taken by
// another broker on this machine), and returns its address and log.dirs.
func startBroker(t *testing.T) (seed, logDirs string) {
	logDirs = t.TempDir()
	b := brokertest.Start(t, "log.dirs="+logDirs, "offsets.topic.num.partitions=2", "transaction.state.log.num.partitions=2",
		"moldau.metrics.listener=")
	return b.Addr("").String(), logDirs
}

// pollUntil polls p until its snapshot satisfies cond, or fails after
// ten seconds.
func pollUntil(t *testing.T, p *Poller, what string, cond func(*Snapshot) bool) *Snapshot {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.Poll(t.Context())
		if s, _ := p.Current(); s != nil && cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			s, _ := p.Current()
			t.Fatalf("%s: not within 10s; last snapshot: %+v", what, s)
		}
		select {
		case <-t.Context().Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func hasCommit(group string, offset int64) func(*Snapshot) bool {
	want := fmt.Sprintf("group %s: t-0 at %d", group, offset)
	return func(s *Snapshot) bool {
		return slices.ContainsFunc(s.Internal, func(e InternalEvent) bool { return e.Kind == kindOffsetCommit && e.Text == want })
	}
}

// A poller on a real broker reads the offset commits from
// __consumer_offsets, starts over on the client SetClient gives it, and
// answers a broker's configuration.
func TestPollerInternalTopicsAndConfigs(t *testing.T) {
	seed, logDirs := startBroker(t)
	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.MetadataMinAge(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	cl := newClient()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	commit := func(group string, at int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: at, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("committing %s at %d: %v", group, at, err)
		}
	}
	commit("g", 0)

	p := NewPoller(cl, 100*time.Millisecond, 5*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(p.internal.close)
	pollUntil(t, p, "the first offset commit", hasCommit("g", 0))
	commit("g", 1)
	s := pollUntil(t, p, "the second offset commit", hasCommit("g", 1))
	if s.Errors["internal"] != "" {
		t.Errorf("internal part: %s", s.Errors["internal"])
	}

	// A new client: a new consumer, which reads the backlog again.
	p.SetClient(newClient())
	commit("h", 2)
	pollUntil(t, p, "a commit after SetClient", hasCommit("h", 2))
	pollUntil(t, p, "the backlog after SetClient", hasCommit("g", 1))

	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := md.Brokers.NodeIDs()[0]
	got, err := p.BrokerConfigs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(got.Configs, func(c BrokerConfig) bool { return c.Name == "log.dirs" })
	if i < 0 || got.Configs[i].Value == nil || *got.Configs[i].Value != logDirs || got.Configs[i].Default {
		t.Fatalf("log.dirs of broker %d: %+v", id, got.Configs)
	}
	// Entries set anywhere but the defaults come first.
	if last := slices.IndexFunc(got.Configs, func(c BrokerConfig) bool { return c.Default }); last >= 0 && i > last {
		t.Errorf("log.dirs (set) at %d after the first default at %d", i, last)
	}
}

// A poller on a real broker sees an idempotent producer through
// DescribeProducers, with a produce wire to the leader that carries its
// rate, and a transactional producer by its transactional id with a
// wire to its coordinator.
func TestPollerProducersAndWires(t *testing.T) {
	seed, _ := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic("w"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "w"); err != nil {
		t.Fatal(err)
	}
	p := NewPoller(cl, 100*time.Millisecond, 5*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(p.internal.close)
	// Keep producing while polling, so the window sees a rate.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")})
			}
		}
	}()
	s := pollUntil(t, p, "a producer with a produce wire carrying records", func(s *Snapshot) bool {
		for _, w := range s.Wires {
			if w.Kind == WireProduce && w.To == "broker:1" && w.Rate > 0 && len(s.Producers) == 1 && "producer:"+s.Producers[0].ID == w.From {
				return true
			}
		}
		return false
	})
	close(stop)
	<-done
	if pr := s.Producers[0]; pr.ProducerID < 0 || pr.Rate <= 0 || len(pr.Partitions) != 1 || pr.Partitions[0].Topic != "w" {
		t.Errorf("producer: %+v", pr)
	}

	txn, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic("w"), kgo.TransactionalID("wires-txn"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.Close)
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("t")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, p, "the transactional producer by name with a wire to its coordinator", func(s *Snapshot) bool {
		for _, w := range s.Wires {
			if w.Kind == WireTxnCoordinator && w.From == "producer:pid-"+fmt.Sprint(txnPID(s, "wires-txn")) && w.To == "broker:1" {
				return true
			}
		}
		return false
	})
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// txnPID is the producer id the snapshot names after a transactional id.
func txnPID(s *Snapshot, id string) int64 {
	for _, pr := range s.Producers {
		if pr.TransactionalID == id {
			return pr.ProducerID
		}
	}
	return -2
}
