package raft

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// With metadata segments smaller than what one Ready appends (a burst of
// proposals, as topics created at once), every node writes the batches in
// runs that fit a segment and the quorum goes on; a single proposal larger
// than a segment is refused with RECORD_LIST_TOO_LARGE, the quorum
// unharmed.
func TestSmallSegmentsBurst(t *testing.T) {
	const segment = 2048
	c := newCluster(t, 3, func(cfg *Config) { cfg.SegmentBytes = segment })
	lid, epoch := c.leader(10 * time.Second)
	n := c.nodes[lid]
	if _, err := n.ScheduleAppend(epoch, [][]byte{[]byte(strings.Repeat("x", segment))}); !errors.Is(err, kerr.RecordListTooLarge) {
		t.Fatalf("a batch larger than a segment: %v, want RECORD_LIST_TOO_LARGE", err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range 40 {
		wg.Go(func() {
			r := fmt.Sprintf("%03d-%s", i, strings.Repeat("y", 500))
			off, err := n.ScheduleAppend(epoch, [][]byte{[]byte(r)})
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = n.WaitForCommit(ctx, epoch, off)
				cancel()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of 40 proposals failed: %v", len(errs), errs[0])
	}
	appendAndCommit(t, n, epoch, "after")
	for id, sm := range c.sms {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to apply 41 records ending with \"after\"", id), func() bool {
			got, _ := sm.state()
			return len(got) == 41 && got[40] == "after"
		})
	}
}
