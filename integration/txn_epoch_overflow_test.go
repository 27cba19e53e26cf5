package integration

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionalProducerAcrossEpochExhaustion: under transaction
// version 2 every EndTxn bumps the producer epoch, and a producer that has
// used all 32,767 moves to its next producer id (KIP-890 part 2). The
// producer is brought near exhaustion through the public protocol: an
// abort of an empty transaction is legal under transaction version 2 and
// bumps the epoch without markers, so a raw client runs those until the
// epoch is 32764. A stock kgo producer then takes over the transactional
// id (its InitProducerId bumps to 32765) and runs transactions across
// the exhaustion: the EndTxn at 32766 answers the next producer id at
// epoch 0, and the transactions after it commit under that id.
func TestTransactionalProducerAcrossEpochExhaustion(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 10*time.Minute)
	const topic, id = "txn-epoch-overflow", "tx-epoch-overflow"
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	raw := newRawConn(t, b.Seed())
	var pid int64
	var epoch int16
	eventually(t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest() // creates __transaction_state
		fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
		if c := raw.do(fc, 4).(*kmsg.FindCoordinatorResponse).Coordinators[0]; c.ErrorCode != 0 {
			return kerr.ErrorForCode(c.ErrorCode)
		}
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp := raw.do(req, 5).(*kmsg.InitProducerIDResponse)
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	start := time.Now()
	for epoch < math.MaxInt16-3 {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, false
		resp := raw.do(req, 5).(*kmsg.EndTxnResponse)
		switch err := kerr.ErrorForCode(resp.ErrorCode); {
		case err == kerr.ConcurrentTransactions:
			continue
		case err != nil:
			t.Fatalf("empty abort at epoch %d: %v", epoch, err)
		case resp.ProducerID != pid || resp.ProducerEpoch != epoch+1:
			t.Fatalf("empty abort at epoch %d answered producer %d epoch %d", epoch, resp.ProducerID, resp.ProducerEpoch)
		}
		epoch = resp.ProducerEpoch
	}
	t.Logf("%d empty aborts in %v", epoch, time.Since(start).Round(time.Millisecond))

	p := newClient(t, b.Seed(), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	const txns, perTxn = 5, 3
	for i := range txns {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range perTxn {
			if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "t%d-%d", i, j)}).FirstErr(); err != nil {
				t.Fatalf("transaction %d: produce: %v", i, err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("transaction %d: commit: %v", i, err)
		}
	}
	// 32765 and 32766 under the old id, then 0, 1, 2 under the next one,
	// whose last transaction's EndTxn left it at epoch 3.
	// EndTxn is answered once PrepareCommit is written; the markers, and
	// with them CompleteCommit, follow.
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{id}
	var st kmsg.DescribeTransactionsResponseTransactionState
	eventually(t, 10*time.Second, func() error {
		st = raw.do(dreq, 0).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		if st.ErrorCode == 0 && st.State == "PrepareCommit" {
			return fmt.Errorf("markers not written yet: %+v", st)
		}
		return nil
	})
	if st.ErrorCode != 0 || st.State != "CompleteCommit" || st.ProducerID == pid || st.ProducerID < 0 || st.ProducerEpoch != txns-2 {
		t.Fatalf("after the exhaustion: %+v, want CompleteCommit under a new producer id (not %d) at epoch %d", st, pid, txns-2)
	}
	if n := len(consumeValues(t, b.Seed(), topic, kgo.ReadCommitted(), txns*perTxn)); n != txns*perTxn {
		t.Fatalf("read_committed saw %d records, want %d", n, txns*perTxn)
	}
	// Both producer ids wrote to the partition.
	preq := kmsg.NewPtrDescribeProducersRequest()
	pt := kmsg.NewDescribeProducersRequestTopic()
	pt.Topic, pt.Partitions = topic, []int32{0}
	preq.Topics = append(preq.Topics, pt)
	pp := raw.do(preq, 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	epochs := map[int64]int32{}
	for _, s := range pp.ActiveProducers {
		epochs[s.ProducerID] = s.ProducerEpoch
	}
	if pp.ErrorCode != 0 || epochs[pid] != math.MaxInt16 || epochs[st.ProducerID] != txns-2 {
		t.Fatalf("DescribeProducers: %+v, want producer %d at epoch %d (its last marker) and %d at %d", pp, pid, math.MaxInt16, st.ProducerID, txns-2)
	}
}
