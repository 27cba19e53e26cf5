package kapi

// DeleteRecords, versions 0 to 2 (v1: no change on the wire; v2: flexible).
//
// Moves each partition's log start offset up to the given offset (-1: the
// high watermark); whole segments below it are deleted in the background.
// An offset above the high watermark is OFFSET_OUT_OF_RANGE. The response's
// low watermark is the new log start offset.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/replica"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDeleteRecords(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	_ = time.Duration(req.TimeoutMillis) // one node: nothing to wait for
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		allowed := h.authorize(rc, az.Delete, az.Topic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			if !allowed {
				sp.LowWatermark, sp.ErrorCode = -1, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			low, err := h.cfg.Replicas.DeleteRecords(replica.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.Offset)
			sp.LowWatermark, sp.ErrorCode = low, ErrorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
