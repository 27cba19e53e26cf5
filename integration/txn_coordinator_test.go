package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionalProducerCommitsAndAborts: a kgo transactional producer
// commits one transaction and aborts another; a read_committed consumer
// sees exactly the committed records, a read_uncommitted one both.
func TestTransactionalProducerCommitsAndAborts(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 60*time.Second)
	topic := "txn-commit-abort"
	adm := newAdmin(t, b.Seed())
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, b.Seed(), kgo.TransactionalID("tx-commit-abort"), kgo.DefaultProduceTopic(topic))
	for i, commit := range []bool{true, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 5 {
			r := &kgo.Record{Value: []byte(fmt.Sprintf("t%d-%d", i, j))}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("EndTransaction(%v): %v", commit, err)
		}
	}
	got := consumeValues(t, b.Seed(), topic, kgo.ReadCommitted(), 10)
	for _, v := range got {
		if v[:2] == "t1" {
			t.Fatalf("read_committed saw an aborted record %q", v)
		}
	}
	if n := len(consumeValues(t, b.Seed(), topic, kgo.ReadUncommitted(), 15)); n != 15 {
		t.Fatalf("read_uncommitted saw %d records, want 15", n)
	}
	_ = context.Background
}
