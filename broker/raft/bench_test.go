package raft

import (
	"context"
	"sync"
	"testing"
	"time"
)

// BenchmarkCommit measures appends of one 10-record batch (100-byte
// values) on the leader until committed: "latency" waits for each commit
// before the next append; "pipelined" keeps up to 64 in flight from 8
// goroutines (the controller appends from one, the broker side waits).
func BenchmarkCommit(b *testing.B) {
	for _, size := range []int{1, 3} {
		for _, mode := range []string{"latency", "pipelined"} {
			b.Run(map[int]string{1: "1node", 3: "3nodes"}[size]+"/"+mode, func(b *testing.B) {
				c := newCluster(b, size, func(cfg *Config) { cfg.MaxBytesBetweenSnapshots = 1 << 30 })
				lid, epoch := c.leader(10 * time.Second)
				n := c.nodes[lid]
				recs := make([][]byte, 10)
				for i := range recs {
					recs[i] = make([]byte, 100)
				}
				b.SetBytes(int64(10 * 100))
				b.ResetTimer()
				start := time.Now()
				if mode == "latency" {
					for range b.N {
						off, err := n.ScheduleAppend(epoch, recs)
						if err == nil {
							err = n.WaitForCommit(context.Background(), epoch, off)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				} else {
					var wg sync.WaitGroup
					work := make(chan struct{}, b.N)
					for range b.N {
						work <- struct{}{}
					}
					close(work)
					for range 8 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for range work {
								off, err := n.ScheduleAppend(epoch, recs)
								if err == nil {
									err = n.WaitForCommit(context.Background(), epoch, off)
								}
								if err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					wg.Wait()
				}
				el := time.Since(start)
				b.ReportMetric(float64(b.N)/el.Seconds(), "commits/s")
				b.ReportMetric(float64(el.Microseconds())/float64(b.N), "µs/commit")
			})
		}
	}
}
