package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConsumeLoad runs --consumers members of a consumer group
// (--group) or a share group (--share-group, each record accepted) over
// the topic until limit records are read or ctx ends: the same records
// through the two kinds of group, so that their throughput and the
// broker's CPU per record compare. A share group reads from the earliest
// offset (share.auto.offset.reset, set first); a consumer group from the
// start. Redeliveries (a share record whose lock ran out) count again.
func groupConsumeLoad(ctx context.Context, c *kafkaBenchConfig, stats *benchStats, limit int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(c.brokers...), kgo.ConsumeTopics(c.topic)}
	if c.shareGroup != "" {
		if err := setShareEarliest(ctx, c, c.shareGroup); err != nil {
			return err
		}
		opts = append(opts, kgo.ShareGroup(c.shareGroup))
	} else {
		opts = append(opts, kgo.ConsumerGroup(c.group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	var consumed atomic.Int64
	var wg sync.WaitGroup
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for range c.consumers {
		cl, err := kgo.NewClient(append(opts, c.tlsOpts...)...)
		if err != nil {
			return err
		}
		clients = append(clients, cl)
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				fetches := cl.PollFetches(ctx)
				waited := time.Since(t0)
				fetches.EachError(func(_ string, _ int32, err error) {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kgo.ErrClientClosed) {
						stats.failed(err)
					}
				})
				got := 0
				fetches.EachRecord(func(r *kgo.Record) {
					if c.shareGroup != "" {
						r.Ack(kgo.AckAccept)
					}
					stats.done(len(r.Value), -1)
					got++
					if consumed.Add(1) == limit {
						cancel()
					}
				})
				if got > 0 {
					stats.latency(waited)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// setShareEarliest sets share.auto.offset.reset=earliest on a share group
// (IncrementalAlterConfigs of its GROUP resource).
func setShareEarliest(ctx context.Context, c *kafkaBenchConfig, group string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.brokers...)}, c.tlsOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, cfg)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("setting share.auto.offset.reset on %s: %w", group, err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		return fmt.Errorf("setting share.auto.offset.reset on %s: %w", group, err)
	}
	return nil
}
