package integration

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction coordinator (issue 10) with stock clients over TCP.

// TestTransactionalProducerCommitsAndAborts: a kgo transactional producer
// commits one transaction, aborts one and commits another; a read_committed
// consumer sees exactly the committed records, a read_uncommitted one all.
func TestTransactionalProducerCommitsAndAborts(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 60*time.Second)
	topic := "txn-commit-abort"
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, b.Seed(), kgo.TransactionalID("tx-commit-abort"), kgo.DefaultProduceTopic(topic))
	for i, commit := range []bool{true, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 5 {
			if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "t%d-%d", i, j)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("EndTransaction(%v): %v", commit, err)
		}
	}
	for _, v := range consumeValues(t, b.Seed(), topic, kgo.ReadCommitted(), 10) {
		if strings.HasPrefix(v, "t1-") {
			t.Fatalf("read_committed saw an aborted record %q", v)
		}
	}
	if n := len(consumeValues(t, b.Seed(), topic, kgo.ReadUncommitted(), 15)); n != 15 {
		t.Fatalf("read_uncommitted saw %d records, want 15", n)
	}
	// The coordinator describes and lists the transactional id.
	raw := newRawConn(t, b.Seed())
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"tx-commit-abort"}
	d := raw.do(dreq, 0).(*kmsg.DescribeTransactionsResponse)
	if st := d.TransactionStates[0]; st.ErrorCode != 0 || st.State != "CompleteCommit" || st.ProducerID < 0 {
		t.Fatalf("DescribeTransactions: %+v", st)
	}
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.StateFilters = []string{"CompleteCommit"}
	l := raw.do(lreq, 1).(*kmsg.ListTransactionsResponse)
	if l.ErrorCode != 0 || len(l.TransactionStates) != 1 || l.TransactionStates[0].TransactionalID != "tx-commit-abort" {
		t.Fatalf("ListTransactions: %+v", l)
	}
	// The coordinator's metrics, by the names Kafka's exporter gives.
	m := scrape(t, b.MetricsAddr().String())
	for name, want := range map[string]float64{
		`kafka_server_transaction_coordinator_metrics_transactions_completed_total{result="commit"}`: 2,
		`kafka_server_transaction_coordinator_metrics_transactions_completed_total{result="abort"}`:  1,
		`kafka_server_transaction_coordinator_metrics_transactions{state="CompleteCommit"}`:          1,
		`kafka_server_transaction_coordinator_metrics_num_partitions{state="active"}`:                50,
		`kafka_coordinator_transaction_transactionmarkerchannelmanager_unknowndestinationqueuesize`:  0,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"kafka_server_transaction_coordinator_metrics_partition_load_time_max", "kafka_server_transaction_coordinator_metrics_partition_load_time_avg"} {
		if _, ok := m[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
}

// TestSecondProducerFencesTheFirst: a second producer with the same
// transactional.id fences the first: the first's open transaction is
// aborted, and it gets PRODUCER_FENCED when it tries to commit.
func TestSecondProducerFencesTheFirst(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 60*time.Second)
	topic := "txn-fence"
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	first := newClient(t, b.Seed(), kgo.TransactionalID("tx-fence"), kgo.DefaultProduceTopic(topic))
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := first.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The first producer's id and epoch, as it sends them.
	raw := newRawConn(t, b.Seed())
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"tx-fence"}
	before := raw.do(dreq, 0).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
	if before.State != "Ongoing" {
		t.Fatalf("first producer's transaction: %+v", before)
	}

	second := newClient(t, b.Seed(), kgo.TransactionalID("tx-fence"), kgo.DefaultProduceTopic(topic))
	if err := second.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := second.ProduceSync(ctx, &kgo.Record{Value: []byte("live")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	// The zombie's EndTxn, exactly as it would send it, is fenced. While
	// the second producer's markers are still being written the
	// coordinator answers CONCURRENT_TRANSACTIONS first (KAFKA-18464),
	// which clients retry; so does this.
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "tx-fence", before.ProducerID, before.ProducerEpoch, true
	endTxn := func(version int16) int16 {
		var code int16
		eventually(t, 10*time.Second, func() error {
			code = raw.do(end, version).(*kmsg.EndTxnResponse).ErrorCode
			if code == kerr.ConcurrentTransactions.Code {
				return kerr.ConcurrentTransactions
			}
			return nil
		})
		return code
	}
	if code := endTxn(3); code != kerr.ProducerFenced.Code {
		t.Fatalf("zombie EndTxn v3: %v", kerr.ErrorForCode(code))
	}
	if code := endTxn(1); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie EndTxn v1: %v", kerr.ErrorForCode(code))
	}
	// And so is the zombie client itself.
	err := first.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("first producer's commit: %v, want PRODUCER_FENCED", err)
	}
	// Its open transaction was aborted: read_committed sees only the
	// second producer's record.
	got := consumeValues(t, b.Seed(), topic, kgo.ReadCommitted(), 1)
	if len(got) != 1 || got[0] != "live" {
		t.Fatalf("read_committed: %q", got)
	}
}

// TestConfluentKafkaTransactions: confluent-kafka's transactional
// producer (librdkafka, Debian's python3) commits one transaction and
// aborts another; a read_committed consumer sees only the committed one.
func TestConfluentKafkaTransactions(t *testing.T) {
	b := startBroker(t, "")
	script := `
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
seed = sys.argv[1]
p = Producer({"bootstrap.servers": seed, "transactional.id": "py-txn", "transaction.timeout.ms": 60000})
p.init_transactions(30)
p.begin_transaction()
for i in range(20):
    p.produce("py-txn", value="commit-%d" % i)
p.commit_transaction(30)
p.begin_transaction()
for i in range(20):
    p.produce("py-txn", value="abort-%d" % i)
p.flush(30)
p.abort_transaction(30)
p.begin_transaction()
p.produce("py-txn", value="last")
p.commit_transaction(30)
c = Consumer({"bootstrap.servers": seed, "group.id": "py-txn-reader", "isolation.level": "read_committed",
              "auto.offset.reset": "earliest", "enable.auto.commit": False})
c.assign([TopicPartition("py-txn", 0, 0)])
got = []
while len(got) < 21:
    m = c.poll(10)
    assert m is not None, "no message within 10s after %s" % got
    assert m.error() is None, m.error()
    got.append(m.value().decode())
assert got == ["commit-%d" % i for i in range(20)] + ["last"], got
print("ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, b.Seed())
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("confluent-kafka timed out:\n%s", out)
	}
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("confluent-kafka: %v\n%s", err, out)
	}
}

// TestBackToBackTransactions: a producer begins each transaction the
// moment the previous one's EndTxn is answered, so its first produce
// usually meets the previous transaction's markers still being written
// (the coordinator holds the add back until they are). Those markers must
// not make the partition leader refuse the produce (its verification
// guard retired by them), and read_committed sees every record once.
func TestBackToBackTransactions(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 60*time.Second)
	const topic, txns = "txn-b2b", 300
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, b.Seed(), kgo.TransactionalID("tx-b2b"), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	for i := range txns {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("transaction %d: produce: %v", i, err)
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("transaction %d: commit: %v", i, err)
		}
	}
	got := consumeValues(t, b.Seed(), topic, kgo.ReadCommitted(), txns)
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
}
