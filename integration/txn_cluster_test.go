package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
)

// TestTransactionsAcrossThreeNodes: on a three-node cluster the
// transaction coordinator of a transactional id, the leaders of the
// partitions it writes and the group coordinator of the group it commits
// for are spread over the brokers, so markers, AddPartitionsToTxn
// additions (Produce v12, KIP-890 part 2) and TxnOffsetCommit go between
// brokers over the inter-broker listener. Committed transactions are
// seen exactly once by a read_committed consumer, aborted ones never, and
// the committed offsets are the transaction's.
func TestTransactionsAcrossThreeNodes(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	bs := make([]*broker.Broker, 3)
	for i, n := range nodes {
		bs[i] = startInProcessNode(t, n, nodes)
	}
	t.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	waitReady(t, bs...)
	ctx := ctxTimeout(t, 90*time.Second)
	seed := nodes[0].seed()
	adm := newAdmin(t, seed)
	if _, err := adm.CreateTopics(ctx, 6, 1, nil, "xin", "xout"); err != nil {
		t.Fatal(err)
	}
	// Leaders on all three brokers.
	eventually(t, 10*time.Second, func() error {
		md, err := adm.Metadata(ctx, "xout")
		if err != nil {
			return err
		}
		leaders := map[int32]bool{}
		for _, p := range md.Topics["xout"].Partitions {
			leaders[p.Leader] = true
		}
		if len(leaders) != 3 {
			return fmt.Errorf("leaders %v", leaders)
		}
		return nil
	})
	produceN(t, seed, "xin", 60, "in")

	// Transactional ids whose coordinators are on different brokers.
	var ids []string
	coordinators := map[int32]bool{}
	for i := 0; len(coordinators) < 3 && i < 100; i++ {
		id := fmt.Sprintf("x-%d", i)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
		resp, err := req.RequestWith(ctx, newClient(t, seed))
		if err != nil || resp.Coordinators[0].ErrorCode != 0 {
			t.Fatalf("FindCoordinator: %v %+v", err, resp)
		}
		if n := resp.Coordinators[0].NodeID; !coordinators[n] {
			coordinators[n] = true
			ids = append(ids, id)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("transaction coordinators on %d brokers, want 3", len(coordinators))
	}

	for i, id := range ids {
		p := newClient(t, nodes[i].seed(), kgo.TransactionalID(id), kgo.DefaultProduceTopic("xout"),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		for txn, commit := range []bool{true, false} {
			if err := p.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for j := range 12 {
				if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d-%d-%v", id, txn, j, commit)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatalf("%s EndTransaction(%v): %v", id, commit, err)
			}
		}
	}

	// A consume-transform-produce session commits its offsets with the
	// transaction: its group coordinator and transaction coordinator
	// may be on different brokers.
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seed), kgo.TransactionalID(ids[1]+"-copier"),
		kgo.ConsumerGroup("xgroup"), kgo.ConsumeTopics("xin"), kgo.DefaultProduceTopic("xout"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	copied := 0
	for copied < 60 {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("copied %d of 60", copied)
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: []byte("copy-" + string(r.Value))}, nil)
			n++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !committed {
			t.Fatalf("End: %v, committed %v", err, committed)
		}
		copied += n
	}
	offs, err := adm.FetchOffsets(ctx, "xgroup")
	if err != nil {
		t.Fatal(err)
	}
	var at int64
	offs.Each(func(o kadm.OffsetResponse) { at += o.At })
	if at != 60 {
		t.Fatalf("group committed %d offsets in all, want 60", at)
	}

	writeEnds(t, seed, "xout", 6)
	seen := readCommittedUntilEnd(t, seed, "xout", 6, 60*time.Second)
	copies := 0
	for v, n := range seen {
		switch {
		case n != 1:
			t.Errorf("%q seen %d times", v, n)
		case strings.HasSuffix(v, "-false"):
			t.Errorf("aborted record %q seen", v)
		case strings.HasPrefix(v, "copy-"):
			copies++
		}
	}
	if want := 3*12 + 60; len(seen) != want || copies != 60 {
		t.Fatalf("read_committed saw %d records (%d copies), want %d (60 copies)", len(seen), copies, want)
	}
}
