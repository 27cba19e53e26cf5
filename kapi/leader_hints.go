package kapi

// Leader hints (KIP-951): a Produce (v10+) or Fetch (v16+) partition that
// fails with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the
// partition's current leader and leader epoch, and the response lists that
// leader's endpoint on the listener the request came in on, so the client
// goes to the new leader without a metadata round trip. As Kafka's
// KafkaApis.getCurrentLeader: the leader and epoch of the metadata image
// (-1 and -1 for a partition it does not have), and an endpoint only for
// a registered, unfenced leader with one on the listener
// (getAliveBrokerNode). Produce never answers FENCED_LEADER_EPOCH (its
// request carries no leader epoch), so for it this is Kafka's
// NOT_LEADER_OR_FOLLOWER case.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// leaderHints gathers the hints of one response.
type leaderHints struct {
	im       *metadata.Image
	listener string
	nodes    map[int32]hintNode
}

// hintNode is a leader's endpoint as NodeEndpoints carries it.
type hintNode struct {
	id   int32
	host string
	port int32
	rack *string
}

func (h *Handler) leaderHints(listener string) *leaderHints {
	return &leaderHints{im: h.image(), listener: listener}
}

// wantsLeaderHint reports whether a partition's error code calls for a hint.
func wantsLeaderHint(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// leader returns the current leader and leader epoch of a partition named
// by topic name (or, if empty, topic ID), and notes the leader's endpoint.
func (lh *leaderHints) leader(topic string, id [16]byte, partition int32) (leaderID, leaderEpoch int32) {
	t, ok := lh.im.Topic(topic)
	if !ok && topic == "" {
		t, ok = lh.im.TopicByID(uuid.UUID(id))
	}
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, -1
	}
	p := t.Partitions[partition]
	if b := lh.im.Brokers[p.Leader]; b != nil && !b.Fenced {
		if ep, ok := b.Endpoint(lh.listener); ok {
			if lh.nodes == nil {
				lh.nodes = make(map[int32]hintNode)
			}
			lh.nodes[b.ID] = hintNode{id: b.ID, host: ep.Host, port: int32(ep.Port), rack: b.Rack}
		}
	}
	return p.Leader, p.LeaderEpoch
}

// endpoints returns the leaders' endpoints noted, by node id.
func (lh *leaderHints) endpoints() []hintNode {
	out := make([]hintNode, 0, len(lh.nodes))
	for _, n := range lh.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b hintNode) int { return int(a.id) - int(b.id) })
	return out
}
