package kapi

// DescribeProducers, version 0 (flexible): the active producers of
// partitions, from each partition's producer state
// (KafkaApis.handleDescribeProducersRequest, KIP-664).
//
// Per topic: an invalid name is INVALID_TOPIC_EXCEPTION and an unknown
// one UNKNOWN_TOPIC_OR_PARTITION, for each of its partitions, with the
// error message for an invalid name. A partition this broker does not host is
// NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION if the topic has no
// such partition); a follower answers from its own log, as in Kafka. Each
// producer has its epoch, last sequence (-1 if no batch is remembered),
// last timestamp, the epoch of the coordinator of its last marker (-1 if
// none) and the first offset of its open transaction (-1 if none).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/replica"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func (h *Handler) handleDescribeProducers(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	img := h.image()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var topicErr error
		var topicMsg *string // Kafka sends a message only for an invalid name
		if !h.authorize(rc, az.Read, az.Topic, rt.Topic) {
			topicErr = errTopicAuthorization
		} else if err := controller.ValidateTopicName(rt.Topic); err != nil {
			topicErr, topicMsg = err, ErrorMessage(err)
		} else if _, ok := img.Topic(rt.Topic); !ok {
			topicErr = kerr.UnknownTopicOrPartition
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			err := topicErr
			var producers []kmsg.DescribeProducersResponseTopicPartitionActiveProducer
			if err == nil {
				var ps []log.ProducerState
				ps, err = h.cfg.Replicas.ActiveProducers(replica.TopicPartition{Topic: rt.Topic, Partition: p})
				for _, s := range ps {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = s.ProducerID, int32(s.ProducerEpoch), s.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = s.LastTimestamp, s.CoordinatorEpoch, s.CurrentTxnStartOffset
					producers = append(producers, ap)
				}
			}
			if err != nil {
				sp.ErrorCode = ErrorCode(err)
				sp.ErrorMessage = topicMsg
			}
			sp.ActiveProducers = producers
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
