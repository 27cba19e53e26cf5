package kapi

// FindCoordinator, versions 0 to 6.
//
//   - v0: one group key.
//   - v1: key_type (0 group, 1 transaction); the response adds
//     throttle_time_ms and error_message.
//   - v2: no change on the wire.
//   - v3: flexible versions.
//   - v4: batched: coordinator_keys, and one coordinator (with its own
//     error) per key in the response (KIP-699).
//   - v5: no change on the wire (KIP-890, transactions).
//   - v6: key type 2, share groups (KIP-932).
//
// A key's coordinator is the leader of its partition of the internal
// topic, abs(javaHashCode(key)) % partitions, on this broker or another;
// no leader, or none reachable on the request's listener, is
// COORDINATOR_NOT_AVAILABLE. Groups live in __consumer_offsets and
// transactional ids (type 1) in __transaction_state, each created on first
// use through the controller (Kafka answers COORDINATOR_NOT_AVAILABLE
// while its controller creates the topic and the client retries; Moldau
// waits for the creation and answers at once). Share-partition keys (type
// 2, "groupId:topicId:partition", from v6 only: INVALID_REQUEST before)
// live in __share_group_state, created the same way
// (EnsureShareGroupStateTopic); they need CLUSTER_ACTION on the cluster
// (only brokers ask, as Kafka's persister does), and a key that does not
// parse is INVALID_REQUEST. Before v4 an error answers node -1, host "",
// port -1 with the error's default message, as Kafka does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/share"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

const (
	coordinatorTypeGroup       int8 = 0
	coordinatorTypeTransaction int8 = 1
	coordinatorTypeShare       int8 = 2
)

func (h *Handler) handleFindCoordinator(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		c := h.findCoordinator(rc, req.Version, req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if c.ErrorCode != 0 {
			msg := kerr.ErrorForCode(c.ErrorCode).(*kerr.Error).Description
			resp.ErrorMessage = &msg
		}
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, h.findCoordinator(rc, req.Version, req.CoordinatorType, key))
	}
	return resp
}

// findCoordinator is KafkaApis.getCoordinator for one key.
func (h *Handler) findCoordinator(rc *RequestContext, version int16, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Host, c.Port = key, -1, "", -1
	var t *metadata.Topic
	var err error
	var p int32
	switch {
	case keyType == coordinatorTypeGroup && !h.authorize(rc, az.Describe, az.Group, key):
		c.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return c
	case keyType == coordinatorTypeTransaction && !h.authorize(rc, az.Describe, az.TransactionalID, key):
		c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return c
	case keyType == coordinatorTypeShare && (version < 6 || h.cfg.Share == nil):
		c.ErrorCode = kerr.InvalidRequest.Code
		return c
	case keyType == coordinatorTypeShare && !h.authorize(rc, az.ClusterAction, az.Cluster, az.ClusterName):
		c.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return c
	}
	switch keyType {
	case coordinatorTypeGroup:
		if t, err = h.ensureOffsetsTopic(rc.Context()); err == nil {
			p = h.cfg.Groups.PartitionFor(key)
		}
	case coordinatorTypeTransaction:
		if t, err = h.ensureTransactionStateTopic(rc.Context()); err == nil {
			p = h.cfg.Txn.PartitionFor(key)
		}
	case coordinatorTypeShare:
		k, perr := share.ParseCoordinatorKey(key)
		if perr != nil {
			c.ErrorCode = kerr.InvalidRequest.Code
			return c
		}
		if t, err = h.EnsureShareGroupStateTopic(rc.Context()); err == nil {
			p = share.PartitionFor(k.CoordinatorKey(), int32(len(t.Partitions)))
		}
	default:
		c.ErrorCode = kerr.InvalidRequest.Code
		return c
	}
	if err != nil {
		c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return c
	}
	if int(p) >= len(t.Partitions) || t.Partitions[p].Leader < 0 {
		c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return c
	}
	// The coordinator is the partition's leader, here or on another
	// broker, at its endpoint on the request's listener.
	leader := t.Partitions[p].Leader
	ep, ok := h.aliveEndpoints(h.image(), rc.Listener)[leader]
	if !ok {
		c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return c
	}
	c.NodeID, c.Host, c.Port = leader, ep.Host, int32(ep.Port)
	return c
}
