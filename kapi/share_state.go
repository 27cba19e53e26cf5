package kapi

// The share coordinator's topic and what its five inter-broker APIs
// (InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
// DeleteShareGroupState, ReadShareGroupStateSummary) have in common: each
// is authorized as CLUSTER_ACTION on the cluster, as Kafka's KafkaApis
// does (a refusal answers CLUSTER_AUTHORIZATION_FAILED for every
// partition), an empty group id or no topics is answered with no results,
// as Kafka's ShareCoordinatorService does, and every partition is one
// operation on the share coordinator, answered with that partition's error
// (NOT_COORDINATOR when this broker does not lead the key's partition of
// __share_group_state). The answer comes once every partition has one.

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

// EnsureShareGroupStateTopic creates __share_group_state if it does not
// exist (the path FindCoordinator with key type 2 takes, and the broker's
// persister): share.coordinator.state.topic.num.partitions partitions,
// share.coordinator.state.topic.replication.factor replicas (capped by
// the controller to the quorum's size), and the configs Kafka's
// ShareCoordinatorService.shareGroupStateTopicConfigs gives it:
// cleanup.policy=delete with retention.ms=-1 (a key's state is its last
// snapshot and every update after it, which compaction would not keep),
// compression.type=producer, share.coordinator.state.topic.segment.bytes
// segments and min.insync.replicas share.coordinator.state.topic.min.isr,
// lowered to the replication factor where the controller caps that.
func (h *Handler) EnsureShareGroupStateTopic(ctx context.Context) (*metadata.Topic, error) {
	if t, ok := h.image().Topic(metadata.ShareGroupStateTopic); ok {
		return t, nil
	}
	b := h.cfg.Broker
	rf := int16(b.GetInt("share.coordinator.state.topic.replication.factor"))
	voters := int32(max(len(b.QuorumVoters), 1))
	minISR := min(b.GetInt("share.coordinator.state.topic.min.isr"), int32(rf), voters)
	configs := map[string]string{
		"cleanup.policy":      "delete",
		"retention.ms":        "-1",
		"compression.type":    "producer",
		"segment.bytes":       strconv.Itoa(int(b.GetInt("share.coordinator.state.topic.segment.bytes"))),
		"min.insync.replicas": strconv.Itoa(int(minISR)),
	}
	parts := b.GetInt("share.coordinator.state.topic.num.partitions")
	t, err := h.CreateTopic(ctx, metadata.ShareGroupStateTopic, parts, rf, configs)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		var t *metadata.Topic
		h.waitForMetadata(ctx, autoCreateTimeout, func(im *metadata.Image) bool {
			t, _ = im.Topic(metadata.ShareGroupStateTopic)
			return t != nil
		})
		if t != nil {
			return t, nil
		}
	}
	if err != nil {
		h.log.Error("creating the share coordinator's topic failed", "topic", metadata.ShareGroupStateTopic, "err", err)
		return nil, err
	}
	h.log.Info("created the share coordinator's topic", "topic", metadata.ShareGroupStateTopic, "partitions", len(t.Partitions))
	return t, nil
}

// errNoShareCoordinator answers when the broker has no share coordinator.
var errNoShareCoordinator = apierr.New(kerr.CoordinatorNotAvailable, "Share coordinator is not available.")

// shareStateOp wraps the handler of one of the share coordinator's APIs:
// CLUSTER_ACTION on the cluster first, then the handler, which answers
// through done.
func shareStateOp(fn func(h *Handler, rc *RequestContext, req kmsg.Request, done func(kmsg.Response))) func(*Handler, *RequestContext, kmsg.Request) {
	return func(h *Handler, rc *RequestContext, req kmsg.Request) {
		if err := h.authorizeCluster(rc, az.ClusterAction); err != nil {
			rc.finish(errorResponse(req, err))
			return
		}
		if h.cfg.Share == nil {
			rc.finish(errorResponse(req, errNoShareCoordinator))
			return
		}
		fn(h, rc, req, rc.finish)
	}
}

// fanOut runs n operations, each calling its finish once, and then
// answers done with respond(), on the goroutine of the last to answer (a
// shard's). A panic there is logged and answered by closing the
// connection, as forwarded does.
func fanOut(rc *RequestContext, n int, run func(i int, finish func()), respond func() kmsg.Response, done func(kmsg.Response)) {
	var left atomic.Int64
	left.Store(int64(n))
	complete := func() {
		defer func() {
			if v := recover(); v != nil {
				rc.h.log.Error("request handler panic", "request", kmsg.NameForKey(rc.APIKey), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				rc.respond(&Response{Close: true, CloseReason: fmt.Sprintf("request handler panic: %v", v)})
			}
		}()
		done(respond())
	}
	if n == 0 {
		complete()
		return
	}
	for i := range n {
		run(i, func() {
			if left.Add(-1) == 0 {
				complete()
			}
		})
	}
}

// shareRequestEmpty is Kafka's check before any share-state operation: a
// request with no group id or no partitions is answered with no results.
func shareRequestEmpty(group string, partitionCounts ...int) bool {
	if group == "" || len(partitionCounts) == 0 {
		return true
	}
	for _, n := range partitionCounts {
		if n == 0 {
			return true
		}
	}
	return false
}

// shareStateErrorResponse answers one of the share coordinator's requests
// with code in every partition (errorResponse's part for them); nil for
// any other request.
func shareStateErrorResponse(req kmsg.Request, code int16, msg *string) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ReadShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.WriteShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DeleteShareGroupStateRequest:
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ReadShareGroupStateSummaryRequest:
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return nil
}
