package group

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/coordinator/runtime"
)

// The Service's share-group offset APIs (KIP-932, Kafka 4.2's
// GroupCoordinatorService describeShareGroupOffsets,
// describeShareGroupAllOffsets, alterShareGroupOffsets and
// deleteShareGroupOffsets): the shard decides which share-partitions, the
// persister (Options.ShareState) reads, initializes or deletes their
// state off the shard's goroutine, and the shard records the outcome in
// ShareGroupStatePartitionMetadata.

// ShareStateSummary is a share-partition's state without its batches
// (ReadShareGroupStateSummary): StartOffset -1 for a share-partition never
// initialized, DeliveryCompleteCount -1 when not known.
type ShareStateSummary struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
}

// DescribeShareGroupOffsets describes one group's share-partition start
// offsets: Topics nil is every initialized partition of the group. A
// partition whose state the persister could not read answers start offset
// -1 and leader epoch 0, as Kafka's (absence of data, not an error); Lag
// is the partition's high watermark (Options.LogEnd) less the start offset
// and the delivery-complete count, -1 when any is unknown.
func (s *Service) DescribeShareGroupOffsets(rc RequestContext, req kmsg.DescribeShareGroupOffsetsRequestGroup, done func(kmsg.DescribeShareGroupOffsetsResponseGroup)) {
	fail := func(code *kerr.Error, msg *string) {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID, g.ErrorCode, g.ErrorMessage = req.GroupID, code.Code, msg
		done(g)
	}
	if req.GroupID == "" {
		fail(kerr.InvalidGroupID, nil)
		return
	}
	runtime.Read(s.rt, "share-group-initialized-partitions", s.PartitionFor(req.GroupID), func(sh *Shard) (describeShareOffsetsPlan, error) {
		return sh.describeShareGroupOffsets(req.GroupID, req.Topics), nil
	}, func(plan describeShareOffsetsPlan, err error) {
		if err != nil {
			fail(operationError(err))
			return
		}
		out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		out.GroupID = req.GroupID
		out.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
		if len(plan.read) == 0 {
			out.Topics = append(out.Topics, plan.unknown...)
			done(out)
			return
		}
		if !s.routines.Go(func(stop <-chan struct{}) {
			ctx, cancel := routine.Context(stop)
			defer cancel()
			for _, t := range plan.read {
				out.Topics = append(out.Topics, s.readShareOffsets(ctx, req.GroupID, t))
			}
			out.Topics = append(out.Topics, plan.unknown...)
			done(out)
		}) {
			fail(kerr.CoordinatorNotAvailable, nil)
		}
	})
}

// readShareOffsets reads one topic's share-partition summaries.
func (s *Service) readShareOffsets(ctx context.Context, groupID string, t shareOffsetsTopic) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	rt.Topic, rt.TopicID = t.name, t.id
	for _, p := range t.partitions {
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.StartOffset = p, -1
		if s.opts.ShareState != nil {
			sum, err := s.opts.ShareState.ReadStateSummary(ctx, groupID, t.id, p)
			if err != nil {
				s.log.Warn("reading share group state summary failed", "group", groupID, "topic", t.name, "partition", p, "err", err)
			} else {
				rp.StartOffset, rp.LeaderEpoch = sum.StartOffset, sum.LeaderEpoch
				rp.Lag = s.shareLag(t.name, p, sum)
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// shareLag is KIP-1226's share-partition lag: the records at or above the
// start offset below the high watermark whose delivery is not complete.
func (s *Service) shareLag(topic string, p int32, sum ShareStateSummary) int64 {
	if s.opts.LogEnd == nil || sum.StartOffset < 0 || sum.DeliveryCompleteCount < 0 {
		return -1
	}
	hw, ok := s.opts.LogEnd(topic, p)
	if !ok {
		return -1
	}
	return max(hw-sum.StartOffset-int64(sum.DeliveryCompleteCount), 0)
}

// AlterShareGroupOffsets sets the share-partition start offsets of an
// empty (or new) share group: the shard writes the partitions as
// initializing, the persister initializes their state at the group's
// epoch with the new start offsets, and the shard writes those it
// initialized as initialized (and forgets the others) before the answer.
// A partition the persister failed answers its error.
func (s *Service) AlterShareGroupOffsets(rc RequestContext, req *kmsg.AlterShareGroupOffsetsRequest, done func(*kmsg.AlterShareGroupOffsetsResponse)) {
	fail := func(code *kerr.Error, msg *string) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = code.Code, msg
		done(resp)
	}
	if req.GroupID == "" {
		fail(kerr.InvalidGroupID, nil)
		return
	}
	p := s.PartitionFor(req.GroupID)
	runtime.Write(s.rt, "share-group-offsets-alter", p, func(sh *Shard) (runtime.Result[alterShareOffsetsOutcome], error) {
		return sh.alterShareGroupOffsets(req.GroupID, req)
	}, func(out alterShareOffsetsOutcome, err error) {
		if err != nil {
			fail(operationError(err))
			return
		}
		if len(out.offsets) == 0 {
			done(out.resp)
			return
		}
		if !s.routines.Go(func(stop <-chan struct{}) {
			s.initializeAlteredOffsets(stop, req.GroupID, out, done)
		}) {
			fail(kerr.CoordinatorNotAvailable, nil)
		}
	})
}

// initializeAlteredOffsets runs on a Service goroutine: the persister
// initializes every altered partition, then the shard records the result.
func (s *Service) initializeAlteredOffsets(stop <-chan struct{}, groupID string, out alterShareOffsetsOutcome, done func(*kmsg.AlterShareGroupOffsetsResponse)) {
	ctx, cancel := routine.Context(stop)
	defer cancel()
	ok, failed := map[[16]byte][]int32{}, map[[16]byte][]int32{}
	errs := map[[16]byte]map[int32]error{}
	for _, t := range sortedIDs(out.offsets) {
		parts := out.offsets[t]
		for _, part := range slices.Sorted(maps.Keys(parts)) {
			var err error
			if s.opts.ShareState != nil {
				err = s.opts.ShareState.InitializeState(ctx, groupID, t, part, out.groupEpoch, parts[part])
			}
			if err != nil {
				s.log.Warn("initializing share group state failed while altering share group offsets", "group", groupID, "partition", part, "err", err)
				failed[t] = append(failed[t], part)
				if errs[t] == nil {
					errs[t] = map[int32]error{}
				}
				errs[t][part] = err
				continue
			}
			ok[t] = append(ok[t], part)
		}
	}
	for i := range out.resp.Topics {
		rt := &out.resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if err := errs[rt.TopicID][rp.Partition]; err != nil && rp.ErrorCode == 0 {
				code, msg := operationError(err)
				rp.ErrorCode, rp.ErrorMessage = code.Code, msg
				if msg == nil {
					rp.ErrorMessage = kmsg.StringPtr(code.Description)
				}
			}
		}
	}
	runtime.Write(s.rt, "initialize-share-group-state", s.PartitionFor(groupID), func(sh *Shard) (voidResult, error) {
		return voidResult{Records: sh.completeAlterShareGroupOffsets(groupID, ok, failed)}, nil
	}, func(_ runtime.Void, err error) {
		if err != nil {
			s.log.Warn("writing share group state metadata failed", "group", groupID, "err", err)
			code, msg := operationError(err)
			out.resp.ErrorCode, out.resp.ErrorMessage = code.Code, msg
		}
		done(out.resp)
	})
}

// DeleteShareGroupOffsets deletes the share-partition state of topics of
// an empty share group: the shard moves them to deleting, the persister
// deletes every partition's state, and the shard drops the topics it
// deleted from deleting. A topic the persister failed answers its error
// and stays deleting (a later delete tries it again).
func (s *Service) DeleteShareGroupOffsets(rc RequestContext, req *kmsg.DeleteShareGroupOffsetsRequest, done func(*kmsg.DeleteShareGroupOffsetsResponse)) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	fail := func(code *kerr.Error, msg *string) {
		resp.ErrorCode, resp.ErrorMessage, resp.Topics = code.Code, msg, nil
		done(resp)
	}
	if req.GroupID == "" {
		fail(kerr.InvalidGroupID, nil)
		return
	}
	p := s.PartitionFor(req.GroupID)
	runtime.Write(s.rt, "initiate-delete-share-group-offsets", p, func(sh *Shard) (runtime.Result[deleteShareOffsetsOutcome], error) {
		return sh.initiateDeleteShareGroupOffsets(req.GroupID, req)
	}, func(out deleteShareOffsetsOutcome, err error) {
		if err != nil {
			fail(operationError(err))
			return
		}
		resp.Topics = append(resp.Topics, out.errors...)
		if len(out.del) == 0 {
			done(resp)
			return
		}
		if !s.routines.Go(func(stop <-chan struct{}) {
			s.deleteShareOffsetsState(stop, req.GroupID, out.del, resp, done)
		}) {
			fail(kerr.CoordinatorNotAvailable, nil)
		}
	})
}

// deleteShareOffsetsState runs on a Service goroutine: the persister
// deletes each topic's partitions, then the shard records the topics
// deleted.
func (s *Service) deleteShareOffsetsState(stop <-chan struct{}, groupID string, topics []shareOffsetsTopic, resp *kmsg.DeleteShareGroupOffsetsResponse, done func(*kmsg.DeleteShareGroupOffsetsResponse)) {
	ctx, cancel := routine.Context(stop)
	defer cancel()
	var deleted [][16]byte
	var ok []kmsg.DeleteShareGroupOffsetsResponseTopic
	for _, t := range topics {
		var err error
		for _, part := range t.partitions {
			if s.opts.ShareState == nil {
				break
			}
			if err = s.opts.ShareState.DeleteState(ctx, groupID, t.id, part); err != nil {
				s.log.Warn("deleting share group state failed", "group", groupID, "topic", t.name, "partition", part, "err", err)
				break
			}
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		if err != nil {
			code, msg := operationError(err)
			rt.ErrorCode, rt.ErrorMessage = code.Code, msg
			if msg == nil {
				rt.ErrorMessage = kmsg.StringPtr(code.Description)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		deleted = append(deleted, t.id)
		ok = append(ok, rt)
	}
	if len(deleted) == 0 {
		done(resp)
		return
	}
	runtime.Write(s.rt, "complete-delete-share-group-offsets", s.PartitionFor(groupID), func(sh *Shard) (voidResult, error) {
		return voidResult{Records: sh.completeDeleteShareGroupOffsets(groupID, deleted)}, nil
	}, func(_ runtime.Void, err error) {
		if err != nil {
			code, msg := operationError(err)
			resp.ErrorCode, resp.ErrorMessage, resp.Topics = code.Code, msg, nil
			done(resp)
			return
		}
		resp.Topics = append(ok, resp.Topics...)
		done(resp)
	})
}
