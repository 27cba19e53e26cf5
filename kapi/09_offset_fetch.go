package kapi

// OffsetFetch, versions 0 to 10.
//
//   - v0: one group's offsets for the partitions listed (Kafka read v0
//     from ZooKeeper; Moldau, like Kafka 4, from __consumer_offsets).
//   - v1: no change on the wire.
//   - v2: topics may be null: every offset of the group; the response
//     adds a top-level error_code.
//   - v3: the response adds throttle_time_ms.
//   - v4: no change on the wire.
//   - v5: committed_leader_epoch in the response (KIP-320).
//   - v6: flexible versions.
//   - v7: require_stable: partitions with a pending transactional commit
//     are UNSTABLE_OFFSET_COMMIT (KIP-447).
//   - v8: batched: several groups, each with its own error (KIP-709).
//   - v9: member_id and member_epoch per group, checked for KIP-848
//     groups.
//   - v10: topics named by topic id; an unknown id is UNKNOWN_TOPIC_ID.
//
// Before v8 the request is one group, turned into the v8 form and back.
// Before v2 a group error goes on every partition, the response having no
// top-level error.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleOffsetFetch(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	groups := req.Groups
	if req.Version < 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = req.Group
		if req.Topics != nil || req.Version < 2 {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		groups = []kmsg.OffsetFetchRequestGroup{g}
	}
	h.cfg.Groups.OffsetFetch(groupContext(rc), groups, req.RequireStable, func(gs []kmsg.OffsetFetchResponseGroup) {
		h.filterOffsetFetch(rc, groups, gs)
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		if req.Version >= 8 {
			resp.Groups = gs
			rc.finish(resp)
			return
		}
		g := gs[0]
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if req.Version < 2 && g.ErrorCode != 0 {
			resp.Topics = nil
			for _, t := range req.Topics {
				rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, g.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		rc.finish(resp)
	})
}
