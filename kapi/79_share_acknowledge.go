package kapi

// ShareAcknowledge, versions 1 and 2 (KIP-932; v0 was Kafka 4.0's early
// access).
//
//   - v1: acknowledgements of records a member acquired with ShareFetch,
//     in its share session (the session's next epoch; -1 also closes the
//     session and gives back what the member still holds; 0 is
//     INVALID_SHARE_SESSION_EPOCH: acknowledging needs a session). The
//     response waits until the share coordinator has the new state.
//   - v2: is_renew_ack (KIP-1222): acknowledge type 4 renews the locks.
//
// Gated and authorized as ShareFetch.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/replica/share"
)

func (h *Handler) handleShareAcknowledge(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := deref(req.GroupID), deref(req.MemberID)
	if err := h.checkShareRequest(rc, group, member); err != nil {
		resp.ErrorCode = ErrorCode(err)
		rc.finish(resp)
		return
	}
	renew := req.Version >= 2 && req.IsRenewAck
	ar := share.AckRequest{Group: group, Member: member, SessionEpoch: req.ShareSessionEpoch,
		Acks: map[share.TopicIDPartition][]share.AcknowledgementBatch{}, TopicName: h.shareTopicName}
	refused := map[share.TopicIDPartition]error{}
	for _, t := range req.Topics {
		err := h.shareTopicAllowed(rc, t.TopicID)
		for _, p := range t.Partitions {
			tip := share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition}
			if err != nil {
				refused[tip] = err
				continue
			}
			bs := make([]ackBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				bs[i] = ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
			}
			acks, aerr := shareAcks(bs, renew)
			if aerr != nil {
				resp.ErrorCode = ErrorCode(aerr)
				rc.finish(resp)
				return
			}
			ar.Acks[tip] = acks
		}
	}
	h.cfg.SharePartitions.Acknowledge(ar, func(res share.FetchResponse) {
		if res.Err != nil {
			resp.ErrorCode = ErrorCode(res.Err)
			rc.finish(resp)
			return
		}
		lh := h.leaderHints(rc.Listener)
		add := func(tip share.TopicIDPartition, err error) {
			p := kmsg.NewShareAcknowledgeResponseTopicPartition()
			p.Partition, p.ErrorCode = tip.Partition, ErrorCode(err)
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
			if wantsLeaderHint(p.ErrorCode) {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = lh.leader("", tip.TopicID, tip.Partition)
			}
			var t *kmsg.ShareAcknowledgeResponseTopic
			for i := range resp.Topics {
				if resp.Topics[i].TopicID == tip.TopicID {
					t = &resp.Topics[i]
				}
			}
			if t == nil {
				nt := kmsg.NewShareAcknowledgeResponseTopic()
				nt.TopicID = tip.TopicID
				resp.Topics = append(resp.Topics, nt)
				t = &resp.Topics[len(resp.Topics)-1]
			}
			t.Partitions = append(t.Partitions, p)
		}
		for tip, err := range refused {
			add(tip, err)
		}
		for _, r := range res.Partitions {
			add(r.TopicIDPartition, r.AckErr)
		}
		for _, n := range lh.endpoints() {
			ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
			ne.NodeID, ne.Host, ne.Port, ne.Rack = n.id, n.host, n.port, n.rack
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
		rc.finish(resp)
	})
}
