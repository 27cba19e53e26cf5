package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactional produce against idempotent produce (issue 10): 1 KiB
// incompressible records from kgo producers to a 3-partition topic of an
// in-process broker; each transactional producer commits every 100
// records. -producers sets how many producers run at once (each with its
// own transactional id). Compare the MB/s:
//
//	go test -run '^$' -bench 'Produce(Idempotent|Transactional)' -benchtime 200000x ./integration/
func BenchmarkProduceIdempotent(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("producers=%d", n), func(b *testing.B) { benchmarkProduce(b, n, false) })
	}
}

func BenchmarkProduceTransactional(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("producers=%d", n), func(b *testing.B) { benchmarkProduce(b, n, true) })
	}
}

func benchmarkProduce(b *testing.B, producers int, transactional bool) {
	const recordBytes, perTxn, partitions = 1024, 100, 3
	br := startBroker(b, "")
	ctx := context.Background()
	topic := fmt.Sprintf("bench-%v", transactional)
	if _, err := newAdmin(b, br.Seed()).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, recordBytes)
	rand.Read(value)
	fail := func(_ *kgo.Record, err error) {
		if err != nil {
			b.Error(err)
		}
	}
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression())}
		if transactional {
			opts = append(opts, kgo.TransactionalID(fmt.Sprintf("bench-%d", i)), kgo.TransactionTimeout(time.Minute))
		}
		clients[i] = newClient(b, br.Seed(), opts...)
	}
	var next atomic.Int64 // records handed out, in blocks of perTxn
	var wg sync.WaitGroup
	b.SetBytes(recordBytes)
	b.ResetTimer()
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				start := next.Add(perTxn) - perTxn
				if start >= int64(b.N) {
					break
				}
				n := min(perTxn, int64(b.N)-start)
				if transactional {
					if err := cl.BeginTransaction(); err != nil {
						b.Error(err)
						return
					}
				}
				for range n {
					cl.Produce(ctx, &kgo.Record{Value: value}, fail)
				}
				if !transactional {
					continue
				}
				if err := cl.Flush(ctx); err != nil {
					b.Error(err)
					return
				}
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Error(err)
					return
				}
			}
			if err := cl.Flush(ctx); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
}
