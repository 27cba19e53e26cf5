package kapi

// ShareFetch, versions 1 and 2 (KIP-932; v0 was Kafka 4.0's early access
// and is gone since 4.1, as here).
//
//   - v1: a share session per member (epoch 0 opens it, -1 closes it and
//     only acknowledges, any other epoch must be the session's next);
//     acknowledgements ride along (not in a request that opens a session:
//     INVALID_REQUEST); max_records and batch_size; the response says
//     acquisition_lock_timeout_ms and, per partition, the acquired
//     ranges with their delivery counts and the acknowledgement's error.
//   - v2: share_acquire_mode (KIP-1206: 1 acquires at most max_records,
//     cutting a batch) and is_renew_ack (KIP-1222: acknowledge type 4
//     renews the lock; a renewing request fetches nothing).
//
// Served while the cluster finalizes share.version 1 (a new cluster's, as
// Kafka 4.2's); otherwise UNSUPPORTED_VERSION. READ on the group,
// READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions);
// an unknown topic id is UNKNOWN_TOPIC_ID. Records are spliced from the
// log without copying, as Fetch's.
//
// The request that opens a share session (epoch 0) ties it to its
// connection, as Kafka 4.1's: when that connection closes, the session
// ends and what its member acquired is given back (replica/share).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/replica/share"
)

func (h *Handler) handleShareFetch(rc *RequestContext, kreq kmsg.Request) {
	req := kreq.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member := deref(req.GroupID), deref(req.MemberID)
	if err := h.checkShareRequest(rc, group, member); err != nil {
		resp.ErrorCode = ErrorCode(err)
		rc.finish(resp)
		return
	}
	fr := share.FetchRequest{
		Group: group, Member: member, SessionEpoch: req.ShareSessionEpoch, ConnID: rc.ConnID,
		MaxWait:  time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond,
		MaxBytes: min(req.MaxBytes, h.cfg.Broker.FetchMaxBytes), MaxRecords: int(req.MaxRecords),
		RecordLimit: req.Version >= 2 && req.ShareAcquireMode == 1,
		Acks:        map[share.TopicIDPartition][]share.AcknowledgementBatch{},
		TopicName:   h.shareTopicName,
	}
	if fr.MaxBytes <= 0 {
		fr.MaxBytes = h.cfg.Broker.FetchMaxBytes
	}
	if fr.MaxRecords <= 0 {
		fr.MaxRecords = 500 // Kafka's default max.poll.records
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew {
		fr.MaxWait = 0 // a renewing request only acknowledges
	}
	refused := map[share.TopicIDPartition]error{}
	for _, t := range req.Topics {
		err := h.shareTopicAllowed(rc, t.TopicID)
		for _, p := range t.Partitions {
			tip := share.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition}
			if err != nil {
				refused[tip] = err
				continue
			}
			fr.Add = append(fr.Add, tip)
			if len(p.AcknowledgementBatches) > 0 {
				acks, aerr := shareAcks(fetchAckBatches(p.AcknowledgementBatches), renew)
				if aerr != nil {
					resp.ErrorCode = ErrorCode(aerr)
					rc.finish(resp)
					return
				}
				fr.Acks[tip] = acks
			}
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			fr.Forget = append(fr.Forget, share.TopicIDPartition{TopicID: f.TopicID, Partition: p})
		}
	}
	h.cfg.SharePartitions.Fetch(fr, func(res share.FetchResponse) {
		if res.Err != nil {
			resp.ErrorCode = ErrorCode(res.Err)
			rc.finish(resp)
			return
		}
		resp.AcquisitionLockTimeoutMillis = int32(res.LockTimeout.Milliseconds())
		records := map[share.TopicIDPartition]log.FileSlice{}
		lh := h.leaderHints(rc.Listener)
		add := func(r share.PartitionResult) {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = r.Partition, ErrorCode(r.Err)
			if r.HasAck {
				p.AcknowledgeErrorCode = ErrorCode(r.AckErr)
			}
			if wantsLeaderHint(p.ErrorCode) || wantsLeaderHint(p.AcknowledgeErrorCode) {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = lh.leader("", r.TopicID, r.Partition)
			} else {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
			}
			for _, a := range r.Acquired {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.FirstOffset, a.LastOffset, a.DeliveryCount
				p.AcquiredRecords = append(p.AcquiredRecords, ar)
			}
			t := shareFetchTopic(resp, r.TopicID)
			t.Partitions = append(t.Partitions, p)
			if r.Records.Size > 0 {
				records[r.TopicIDPartition] = r.Records
			}
		}
		for tip, err := range refused {
			add(share.PartitionResult{TopicIDPartition: tip, Err: err})
		}
		for _, r := range res.Partitions {
			add(r)
		}
		for _, n := range lh.endpoints() {
			ne := kmsg.NewShareFetchResponseNodeEndpoint()
			ne.NodeID, ne.Host, ne.Port, ne.Rack = n.id, n.host, n.port, n.rack
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
		// The records go in by marker, in the order they are encoded
		// (see encodeWithRegions), once every partition is in place.
		var slices []log.FileSlice
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				p := &resp.Topics[ti].Partitions[pi]
				if fs, ok := records[share.TopicIDPartition{TopicID: resp.Topics[ti].TopicID, Partition: p.Partition}]; ok {
					p.Records = regionMarker(len(slices))
					slices = append(slices, fs)
				}
			}
		}
		rc.respond(rc.encodeWithRegions(resp, slices))
	})
}

// shareFetchTopic is resp's topic of id, added if need be.
func shareFetchTopic(resp *kmsg.ShareFetchResponse, id [16]byte) *kmsg.ShareFetchResponseTopic {
	for i := range resp.Topics {
		if resp.Topics[i].TopicID == id {
			return &resp.Topics[i]
		}
	}
	t := kmsg.NewShareFetchResponseTopic()
	t.TopicID = id
	resp.Topics = append(resp.Topics, t)
	return &resp.Topics[len(resp.Topics)-1]
}

// checkShareRequest is what ShareFetch and ShareAcknowledge check first:
// share groups enabled, a group and a member, READ on the group.
func (h *Handler) checkShareRequest(rc *RequestContext, group, member string) error {
	switch {
	case h.cfg.SharePartitions == nil || !h.shareGroupsEnabled():
		return kerr.UnsupportedVersion
	case group == "" || member == "":
		return kerr.InvalidRequest
	case !h.authorize(rc, az.Read, az.Group, group):
		return kerr.GroupAuthorizationFailed
	}
	return nil
}

// shareTopicAllowed: the topic id is known and the principal may READ it.
func (h *Handler) shareTopicAllowed(rc *RequestContext, id [16]byte) error {
	name, ok := h.shareTopicName(id)
	switch {
	case !ok:
		return kerr.UnknownTopicID
	case !h.authorize(rc, az.Read, az.Topic, name):
		return kerr.TopicAuthorizationFailed
	}
	return nil
}

// shareTopicName names a topic id in the current image.
func (h *Handler) shareTopicName(id [16]byte) (string, bool) {
	t, ok := h.image().TopicByID(uuid.UUID(id))
	if !ok {
		return "", false
	}
	return t.Name, true
}

// ackBatch is an acknowledgement batch of either request.
type ackBatch struct {
	first, last int64
	types       []int8
}

func fetchAckBatches(bs []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []ackBatch {
	out := make([]ackBatch, len(bs))
	for i, b := range bs {
		out[i] = ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
	}
	return out
}

// shareAcks converts acknowledgement batches, checking what Kafka's
// ShareFetch and ShareAcknowledge validation checks: ordered batches, a
// type for the range or for each offset, known types, renewals only in a
// renewing request (INVALID_REQUEST otherwise).
func shareAcks(bs []ackBatch, renew bool) ([]share.AcknowledgementBatch, error) {
	out := make([]share.AcknowledgementBatch, 0, len(bs))
	prev := int64(-1)
	for _, b := range bs {
		n := b.last - b.first + 1
		if b.first < 0 || n <= 0 || b.first <= prev || (len(b.types) != 1 && int64(len(b.types)) != n) {
			return nil, kerr.InvalidRequest
		}
		ab := share.AcknowledgementBatch{FirstOffset: b.first, LastOffset: b.last, Types: make([]share.AcknowledgeType, len(b.types))}
		for i, t := range b.types {
			at := share.AcknowledgeType(t)
			if at < share.AckGap || at > share.AckRenew || (at == share.AckRenew && !renew) {
				return nil, kerr.InvalidRequest
			}
			ab.Types[i] = at
		}
		out = append(out, ab)
		prev = b.last
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shareGroupsEnabled: the cluster finalizes share.version 1.
func (h *Handler) shareGroupsEnabled() bool { return h.image().ShareGroupsEnabled() }
