package kapi

// OffsetCommit, versions 0 to 10.
//
//   - v0: offsets only (Kafka kept v0 commits in ZooKeeper; Moldau, like
//     Kafka 4, stores every version in __consumer_offsets).
//   - v1: generation_id and member_id; a commit timestamp per partition.
//   - v2-v4: retention_time_ms (the per-partition timestamp is gone); an
//     offset so committed expires at commit time + retention (v3 adds
//     throttle_time_ms to the response).
//   - v5: retention_time_ms removed: offsets expire only once the group
//     is empty (KIP-211).
//   - v6: committed_leader_epoch (KIP-320).
//   - v7: group_instance_id (KIP-345).
//   - v8: flexible versions.
//   - v9: KIP-848 groups: generation_id carries the member epoch, and an
//     unknown group is GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION.
//   - v10: topics named by topic id (KIP-848); an unknown id is
//     UNKNOWN_TOPIC_ID.
//
// A commit with generation -1 and no member comes from outside any group
// (a "simple" commit) and is stored under the group id. Topics or
// partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleOffsetCommit(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	denied := h.authorizeOffsetCommit(rc, req)
	if len(denied) > 0 && len(req.Topics) == 0 {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = denied
		rc.finish(resp)
		return
	}
	h.cfg.Groups.OffsetCommit(groupContext(rc), req, func(resp *kmsg.OffsetCommitResponse) {
		resp.Topics = append(resp.Topics, denied...)
		rc.finish(resp)
	})
}
