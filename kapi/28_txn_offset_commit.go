package kapi

// TxnOffsetCommit, versions 0 to 6.
//
//   - v0: offsets committed as part of a producer's transaction (KIP-98),
//     pending until the transaction's marker.
//   - v1: no change on the wire; v2: committed_leader_epoch (KIP-320),
//     and COORDINATOR_LOAD_IN_PROGRESS may be answered (older versions get
//     COORDINATOR_NOT_AVAILABLE, as Kafka answers them, KAFKA-7296).
//   - v3: flexible versions; generation_id, member_id and group_instance_id,
//     so that a zombie member is fenced by the group (KIP-447).
//   - v4: no change on the wire (KIP-890 part 1: the coordinator verifies
//     with the transaction coordinator that the group's partition is in
//     the transaction).
//   - v5: no change on the wire (KIP-890 part 2: the group's partition is
//     added to the transaction here, without AddOffsetsToTxn).
//   - v6: topics named by topic id.
//
// The group coordinator (coordinator/group) validates and writes the
// offsets in the producer's transaction; topics or partitions that do not
// exist get UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for an id).

import "github.com/twmb/franz-go/pkg/kmsg"

func (h *Handler) handleTxnOffsetCommit(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	denied := h.authorizeTxnOffsetCommit(rc, req)
	if len(denied) > 0 && len(req.Topics) == 0 {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		resp.Topics = denied
		rc.finish(resp)
		return
	}
	h.cfg.Groups.TxnOffsetCommit(groupContext(rc), req, func(resp *kmsg.TxnOffsetCommitResponse) {
		resp.Topics = append(resp.Topics, denied...)
		rc.finish(resp)
	})
}
