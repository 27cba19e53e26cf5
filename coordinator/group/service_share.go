package group

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/coordinator/runtime"
)

// The Service's share group operations (KIP-932): ShareGroupHeartbeat,
// ShareGroupDescribe, and the calls to the persister that initialize and
// delete share-group state (Kafka's GroupCoordinatorService).

// ShareStateInitializer is what the group coordinator needs of the share
// coordinator's persister (Kafka's Persister.initializeState,
// deleteState and readSummary, one partition at a time): InitializeState creates or
// resets the state of a share-partition at stateEpoch (the group epoch)
// with startOffset (-1: the share-partition leader applies
// share.auto.offset.reset); DeleteState drops it. Both must be
// idempotent: the coordinator retries after failures and restarts. An
// error wrapping a kerr error is reported with that code.
type ShareStateInitializer interface {
	InitializeState(ctx context.Context, groupID string, topicID [16]byte, partition int32, stateEpoch int32, startOffset int64) error
	DeleteState(ctx context.Context, groupID string, topicID [16]byte, partition int32) error
	// ReadStateSummary reads a share-partition's start offset, epochs and
	// delivery-complete count (Persister.readSummary), for
	// DescribeShareGroupOffsets; a share-partition never initialized is
	// start offset -1 without error.
	ReadStateSummary(ctx context.Context, groupID string, topicID [16]byte, partition int32) (ShareStateSummary, error)
}

func errNotShareGroup(id string) error { return fmt.Errorf("group %s is not a share group", id) }

// ShareGroupsEnabled is Kafka's KafkaApis.isShareGroupProtocolEnabled.
func (s *Service) ShareGroupsEnabled() bool {
	return s.opts.ShareGroupsEnabled != nil && s.opts.ShareGroupsEnabled()
}

// ShareGroupHeartbeat handles a ShareGroupHeartbeat (join, heartbeat,
// leave). With share groups not enabled (the share.version feature) it is
// UNSUPPORTED_VERSION, as Kafka answers.
func (s *Service) ShareGroupHeartbeat(rc RequestContext, req *kmsg.ShareGroupHeartbeatRequest, done func(*kmsg.ShareGroupHeartbeatResponse)) {
	if !s.ShareGroupsEnabled() {
		done(shareError(kerr.UnsupportedVersion, "Share groups are not enabled (the share.version feature)."))
		return
	}
	if err := validateShareGroupHeartbeat(req); err != nil {
		code, msg := operationError(err)
		done(shareError(code, strOr(msg, "")))
		return
	}
	runtime.Write(s.rt, "share-group-heartbeat", s.PartitionFor(req.GroupID), func(sh *Shard) (shareHeartbeatResult, error) {
		return sh.shareGroupHeartbeat(rc, req)
	}, func(out shareHeartbeatOutcome, err error) {
		if err != nil {
			code, msg := operationError(err)
			done(shareError(code, strOr(msg, "")))
			return
		}
		if out.init != nil {
			s.initializeShareState(out.init)
		}
		done(out.resp)
	})
}

// initializeShareState asks the persister to initialize the partitions'
// state, off the shard's goroutine, then writes them as initialized (or,
// on failure, as not initializing any more). With no persister they are
// initialized at once.
func (s *Service) initializeShareState(init *shareStateInit) {
	p := s.PartitionFor(init.groupID)
	finish := func(err error) {
		name := "initialize-share-group-state"
		op := func(sh *Shard) (voidResult, error) {
			return voidResult{Records: sh.initializeShareGroupState(init.groupID, init.topics)}, nil
		}
		if err != nil {
			s.log.Warn("initializing share group state failed", "group", init.groupID, "err", err)
			name = "uninitialize-share-group-state"
			op = func(sh *Shard) (voidResult, error) {
				return voidResult{Records: sh.uninitializeShareGroupState(init.groupID, init.topics)}, nil
			}
		}
		runtime.Write(s.rt, name, p, op, func(_ runtime.Void, err error) {
			if err != nil {
				s.log.Warn("writing share group state metadata failed", "group", init.groupID, "err", err)
			}
		})
	}
	if s.opts.ShareState == nil {
		finish(nil)
		return
	}
	s.routines.Go(func(stop <-chan struct{}) {
		ctx, cancel := routine.Context(stop)
		defer cancel()
		for _, t := range sortedIDs(init.topics) {
			for _, part := range init.topics[t] {
				if err := s.opts.ShareState.InitializeState(ctx, init.groupID, t, part, init.groupEpoch, -1); err != nil {
					finish(err)
					return
				}
			}
		}
		finish(nil)
	})
}

// deleteShareState deletes the state of deleted share groups' partitions
// through the persister, then calls done with each group's error (nil:
// deleted or nothing to delete).
func (s *Service) deleteShareState(dels []*shareStateDelete, done func(map[string]error)) {
	errs := map[string]error{}
	if s.opts.ShareState == nil || len(dels) == 0 {
		done(errs)
		return
	}
	if !s.routines.Go(func(stop <-chan struct{}) {
		ctx, cancel := routine.Context(stop)
		defer cancel()
		for _, d := range dels {
			for _, t := range sortedIDs(d.topics) {
				for _, part := range d.topics[t] {
					if err := s.opts.ShareState.DeleteState(ctx, d.groupID, t, part); err != nil && errs[d.groupID] == nil {
						s.log.Warn("deleting share group state failed", "group", d.groupID, "err", err)
						errs[d.groupID] = err
					}
				}
			}
		}
		done(errs)
	}) {
		for _, d := range dels {
			errs[d.groupID] = kerr.CoordinatorNotAvailable
		}
		done(errs)
	}
}

// ShareGroupDescribe describes share groups; an empty id is
// INVALID_GROUP_ID, a group that is not a share group GROUP_ID_NOT_FOUND.
func (s *Service) ShareGroupDescribe(rc RequestContext, ids []string, done func([]kmsg.ShareGroupDescribeResponseGroup)) {
	var valid []string
	for _, id := range ids {
		if id != "" {
			valid = append(valid, id)
		}
	}
	parts, order := s.byPartition(valid)
	results := map[string]kmsg.ShareGroupDescribeResponseGroup{}
	collect := gather(len(order), func() {
		out := make([]kmsg.ShareGroupDescribeResponseGroup, 0, len(ids))
		for _, id := range ids {
			if id == "" {
				d := kmsg.NewShareGroupDescribeResponseGroup()
				d.ErrorCode = kerr.InvalidGroupID.Code
				out = append(out, d)
				continue
			}
			out = append(out, results[id])
		}
		done(out)
	})
	for _, p := range order {
		groupIDs := parts[p]
		runtime.Read(s.rt, "share-group-describe", p, func(sh *Shard) ([]kmsg.ShareGroupDescribeResponseGroup, error) {
			return sh.shareGroupDescribe(groupIDs), nil
		}, func(gs []kmsg.ShareGroupDescribeResponseGroup, err error) {
			collect(func() {
				if err != nil {
					code, _ := operationError(err)
					for _, id := range groupIDs {
						d := kmsg.NewShareGroupDescribeResponseGroup()
						d.GroupID, d.ErrorCode = id, code.Code
						results[id] = d
					}
					return
				}
				for _, g := range gs {
					results[g.GroupID] = g
				}
			})
		})
	}
}

// shareGroupDescribe is GroupMetadataManager.shareGroupDescribe.
func (s *Shard) shareGroupDescribe(ids []string) []kmsg.ShareGroupDescribeResponseGroup {
	names := func(id [16]byte) (string, bool) {
		t, ok := s.topics.TopicByID(id)
		return t.Name, ok
	}
	out := make([]kmsg.ShareGroupDescribeResponseGroup, 0, len(ids))
	for _, id := range ids {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = id
		g, err := s.shareGroup(id)
		if err != nil {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := err.Error()
			d.ErrorMessage = &msg
			out = append(out, d)
			continue
		}
		d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Assignor = g.state.String(), g.groupEpoch, g.assignmentEpoch, shareAssignorName
		d.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
		for _, mid := range g.sortedMemberIDs() {
			d.Members = append(d.Members, g.members[mid].describe(names))
		}
		out = append(out, d)
	}
	return out
}

// shareAssignorName is group.share.assignors' only built-in assignor.
const shareAssignorName = "simple"
