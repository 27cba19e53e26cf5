package group

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The Service's offset and admin operations: OffsetCommit, OffsetFetch,
// OffsetDelete, ListGroups, DescribeGroups, DeleteGroups.

// OffsetCommit commits offsets (v0-v10; v10 names topics by id). Topics
// and partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION (or
// UNKNOWN_TOPIC_ID), as KafkaApis does before asking the coordinator.
func (s *Service) OffsetCommit(rc RequestContext, req *kmsg.OffsetCommitRequest, done func(*kmsg.OffsetCommitResponse)) {
	resp := &kmsg.OffsetCommitResponse{Version: req.Version}
	// Per-partition error codes known before the coordinator runs.
	pre := make([][]int16, len(req.Topics))
	var valid []offsetCommitTopic
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		var vt offsetCommitTopic
		vt, pre[i] = resolveCommitTopic(s.opts.Metadata, req.Version >= 10, t.TopicID, t.Topic, t.Partitions,
			func(p kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })
		names[i] = vt.name
		if len(vt.partitions) > 0 {
			valid = append(valid, vt)
		}
	}
	finish := func(codes map[string]map[int32]int16, err error) {
		var errc int16
		if err != nil {
			code, _ := operationError(err)
			errc = code.Code
		}
		for i, t := range req.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
			for j, p := range t.Partitions {
				c := pre[i][j]
				if c == -1 {
					c = errc
					if err == nil {
						c = codes[names[i]][p.Partition]
					}
				}
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: c})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		done(resp)
	}
	if len(valid) == 0 {
		finish(nil, nil)
		return
	}
	runtime.Write(s.rt, "commit-offset", s.PartitionFor(req.Group), func(sh *Shard) (runtime.Result[map[string]map[int32]int16], error) {
		return sh.commitOffset(rc, req, valid)
	}, finish)
}

// OffsetFetch fetches the committed offsets of several groups (the v8+
// form; a nil Topics means every topic). Topics named by id (v10) are
// resolved first. With requireStable the fetch waits for pending writes,
// as Kafka does by running it as a write.
func (s *Service) OffsetFetch(rc RequestContext, groups []kmsg.OffsetFetchRequestGroup, requireStable bool, done func([]kmsg.OffsetFetchResponseGroup)) {
	out := make([]kmsg.OffsetFetchResponseGroup, len(groups))
	collect := gather(len(groups), func() { done(out) })
	finishOne := func(i int, g kmsg.OffsetFetchResponseGroup) {
		collect(func() { out[i] = g })
	}
	for i := range groups {
		req := groups[i]
		unknownIDs := s.resolveFetchTopicIDs(rc, &req)
		fetch := func(sh *Shard) (*kmsg.OffsetFetchResponseGroup, error) {
			if req.Topics == nil {
				return sh.fetchAllOffsets(&req, requireStable)
			}
			return sh.fetchOffsets(&req, requireStable)
		}
		cb := func(g *kmsg.OffsetFetchResponseGroup, err error) {
			if err != nil {
				code, _ := operationError(err)
				if code == kerr.CoordinatorNotAvailable {
					// Kafka remaps the log's timeouts to NOT_COORDINATOR
					// for OffsetFetch: older consumers retry only that.
					code = kerr.NotCoordinator
				}
				finishOne(i, kmsg.OffsetFetchResponseGroup{Group: req.Group, ErrorCode: code.Code})
				return
			}
			g.Topics = append(g.Topics, unknownIDs...)
			finishOne(i, *g)
		}
		p := s.PartitionFor(req.Group)
		if requireStable {
			runtime.Write(s.rt, "fetch-offsets", p, func(sh *Shard) (runtime.Result[*kmsg.OffsetFetchResponseGroup], error) {
				g, err := fetch(sh)
				return runtime.Result[*kmsg.OffsetFetchResponseGroup]{Response: g}, err
			}, cb)
		} else {
			runtime.Read(s.rt, "fetch-offsets", p, fetch, cb)
		}
	}
}

// resolveFetchTopicIDs names the topics of a v10 fetch by their id; the
// ids that name no topic are answered UNKNOWN_TOPIC_ID.
func (s *Service) resolveFetchTopicIDs(rc RequestContext, req *kmsg.OffsetFetchRequestGroup) []kmsg.OffsetFetchResponseGroupTopic {
	if rc.APIVersion < 10 || req.Topics == nil {
		return nil
	}
	var known []kmsg.OffsetFetchRequestGroupTopic
	var unknown []kmsg.OffsetFetchResponseGroupTopic
	for _, t := range req.Topics {
		info, ok := s.opts.Metadata.TopicByID(t.TopicID)
		if !ok {
			rt := kmsg.OffsetFetchResponseGroupTopic{TopicID: t.TopicID}
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			unknown = append(unknown, rt)
			continue
		}
		t.Topic = info.Name
		known = append(known, t)
	}
	if known == nil {
		known = []kmsg.OffsetFetchRequestGroupTopic{}
	}
	req.Topics = known
	return unknown
}

// OffsetDelete deletes a group's offsets of the given partitions.
func (s *Service) OffsetDelete(rc RequestContext, req *kmsg.OffsetDeleteRequest, done func(*kmsg.OffsetDeleteResponse)) {
	if req.Group == "" {
		done(&kmsg.OffsetDeleteResponse{ErrorCode: kerr.InvalidGroupID.Code})
		return
	}
	// Unknown topics and partitions are answered here, as KafkaApis does.
	var pre []kmsg.OffsetDeleteResponseTopic
	filtered := *req
	filtered.Topics = nil
	for _, t := range req.Topics {
		info, ok := s.opts.Metadata.TopicByName(t.Topic)
		vt := kmsg.OffsetDeleteRequestTopic{Topic: t.Topic}
		bad := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			if !ok || p.Partition < 0 || p.Partition >= info.Partitions {
				bad.Partitions = append(bad.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: kerr.UnknownTopicOrPartition.Code})
				continue
			}
			vt.Partitions = append(vt.Partitions, p)
		}
		if len(bad.Partitions) > 0 {
			pre = append(pre, bad)
		}
		if len(vt.Partitions) > 0 {
			filtered.Topics = append(filtered.Topics, vt)
		}
	}
	runtime.Write(s.rt, "delete-offsets", s.PartitionFor(req.Group), func(sh *Shard) (runtime.Result[*kmsg.OffsetDeleteResponse], error) {
		return sh.deleteOffsets(&filtered)
	}, func(resp *kmsg.OffsetDeleteResponse, err error) {
		if err != nil {
			code, _ := operationError(err)
			done(&kmsg.OffsetDeleteResponse{ErrorCode: code.Code})
			return
		}
		resp.Topics = mergeOffsetDeleteTopics(resp.Topics, pre)
		done(resp)
	})
}

func mergeOffsetDeleteTopics(a, b []kmsg.OffsetDeleteResponseTopic) []kmsg.OffsetDeleteResponseTopic {
	for _, t := range b {
		merged := false
		for i := range a {
			if a[i].Topic == t.Topic {
				a[i].Partitions = append(a[i].Partitions, t.Partitions...)
				merged = true
				break
			}
		}
		if !merged {
			a = append(a, t)
		}
	}
	return a
}

// ListGroups lists the groups of every shard here, filtered by state and
// type (v4, v5).
func (s *Service) ListGroups(rc RequestContext, req *kmsg.ListGroupsRequest, done func(*kmsg.ListGroupsResponse)) {
	runtime.ReadAll(s.rt, "list-groups", func(sh *Shard) ([]kmsg.ListGroupsResponseGroup, error) {
		return sh.listGroups(req.StatesFilter, req.TypesFilter), nil
	}, func(rs []runtime.PartitionResult[[]kmsg.ListGroupsResponseGroup]) {
		resp := &kmsg.ListGroupsResponse{Groups: []kmsg.ListGroupsResponseGroup{}}
		for _, r := range rs {
			if r.Err != nil {
				code, _ := operationError(r.Err)
				if code == kerr.NotCoordinator {
					continue // moved away meanwhile
				}
				done(&kmsg.ListGroupsResponse{ErrorCode: code.Code, Groups: []kmsg.ListGroupsResponseGroup{}})
				return
			}
			resp.Groups = append(resp.Groups, r.Response...)
		}
		done(resp)
	})
}

// byPartition groups ids by their shard, keeping the first position of
// each id.
func (s *Service) byPartition(ids []string) (map[int32][]string, []int32) {
	m := map[int32][]string{}
	var order []int32
	for _, id := range ids {
		p := s.PartitionFor(id)
		if _, ok := m[p]; !ok {
			order = append(order, p)
		}
		m[p] = append(m[p], id)
	}
	return m, order
}

// DescribeGroups describes classic groups.
func (s *Service) DescribeGroups(rc RequestContext, ids []string, done func([]kmsg.DescribeGroupsResponseGroup)) {
	parts, order := s.byPartition(ids)
	results := map[string]kmsg.DescribeGroupsResponseGroup{}
	collect := gather(len(order), func() {
		out := make([]kmsg.DescribeGroupsResponseGroup, 0, len(ids))
		for _, id := range ids {
			out = append(out, results[id])
		}
		done(out)
	})
	for _, p := range order {
		groupIDs := parts[p]
		runtime.Read(s.rt, "describe-groups", p, func(sh *Shard) ([]kmsg.DescribeGroupsResponseGroup, error) {
			return sh.describeGroups(groupIDs, rc.APIVersion), nil
		}, func(gs []kmsg.DescribeGroupsResponseGroup, err error) {
			collect(func() {
				if err != nil {
					code, _ := operationError(err)
					for _, id := range groupIDs {
						d := kmsg.NewDescribeGroupsResponseGroup()
						d.Group, d.ErrorCode = id, code.Code
						results[id] = d
					}
					return
				}
				for _, g := range gs {
					results[g.Group] = g
				}
			})
		})
	}
}

// DeleteGroups deletes empty groups and their offsets.
func (s *Service) DeleteGroups(rc RequestContext, ids []string, done func([]kmsg.DeleteGroupsResponseGroup)) {
	parts, order := s.byPartition(ids)
	results := map[string]kmsg.DeleteGroupsResponseGroup{}
	collect := gather(len(order), func() {
		out := make([]kmsg.DeleteGroupsResponseGroup, 0, len(ids))
		for _, id := range ids {
			out = append(out, results[id])
		}
		done(out)
	})
	for _, p := range order {
		groupIDs := parts[p]
		failAll := func(ids []string, err error) {
			code, _ := operationError(err)
			for _, id := range ids {
				r := kmsg.NewDeleteGroupsResponseGroup()
				r.Group, r.ErrorCode = id, code.Code
				results[id] = r
			}
		}
		// deleteGroups deletes ids, and answers refused as they are.
		deleteGroups := func(ids []string, refused []kmsg.DeleteGroupsResponseGroup) {
			keep := func() {
				for _, r := range refused {
					results[r.Group] = r
				}
			}
			if len(ids) == 0 {
				collect(keep)
				return
			}
			runtime.Write(s.rt, "delete-groups", p, func(sh *Shard) (runtime.Result[[]kmsg.DeleteGroupsResponseGroup], error) {
				return sh.deleteGroups(ids)
			}, func(gs []kmsg.DeleteGroupsResponseGroup, err error) {
				collect(func() {
					keep()
					if err != nil {
						failAll(ids, err)
						return
					}
					for _, g := range gs {
						results[g.Group] = g
					}
				})
			})
		}
		// Share groups first (Kafka's deleteShareGroups): their state is
		// marked deleting and deleted through the persister; a group
		// whose state could not be deleted is not deleted.
		runtime.Write(s.rt, "delete-share-groups", p, func(sh *Shard) (runtime.Result[map[string]shareDeleteOutcome], error) {
			return sh.sharePartitionDeleteRequests(groupIDs)
		}, func(outs map[string]shareDeleteOutcome, err error) {
			if err != nil {
				collect(func() { failAll(groupIDs, err) })
				return
			}
			var dels []*shareStateDelete
			for _, id := range groupIDs {
				if o, ok := outs[id]; ok && o.del != nil {
					dels = append(dels, o.del)
				}
			}
			s.deleteShareState(dels, func(errs map[string]error) {
				var rest []string
				var refused []kmsg.DeleteGroupsResponseGroup
				for _, id := range groupIDs {
					err := outs[id].err
					if err == nil {
						err = errs[id]
					}
					if err == nil {
						rest = append(rest, id)
						continue
					}
					r := kmsg.NewDeleteGroupsResponseGroup()
					r.Group = id
					code, _ := operationError(err)
					r.ErrorCode = code.Code
					refused = append(refused, r)
				}
				deleteGroups(rest, refused)
			})
		})
	}
}

// gather returns a function that runs its argument under a lock and, after
// the n-th call, calls final (at once if n is 0).
func gather(n int, final func()) func(func()) {
	if n == 0 {
		final()
		return func(func()) {}
	}
	var mu sync.Mutex
	return func(f func()) {
		mu.Lock()
		f()
		n--
		last := n == 0
		mu.Unlock()
		if last {
			final()
		}
	}
}
