package kapi

// Helpers shared by the group coordinator's APIs: the request context the
// coordinator sees, and the creation of __consumer_offsets on first use.

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/group"
)

// groupContext is what the group coordinator knows of the request.
func groupContext(rc *RequestContext) group.RequestContext {
	host := ""
	if a, ok := rc.ClientAddr.(*net.TCPAddr); ok && a != nil {
		host = "/" + a.IP.String() // Java's InetAddress.toString()
	} else if rc.ClientAddr != nil {
		if h, _, err := net.SplitHostPort(rc.ClientAddr.String()); err == nil {
			host = "/" + h
		}
	}
	return group.RequestContext{ClientID: rc.ClientID, ClientHost: host, APIVersion: rc.APIVersion}
}

// ensureOffsetsTopic creates __consumer_offsets if it does not exist, as
// Kafka's FindCoordinator does through its AutoTopicCreationManager:
// offsets.topic.num.partitions partitions, offsets.topic.replication.factor
// replicas (the controller caps an internal topic's to the size of the
// controller quorum, so that a single node needs no configuration, and
// refuses until that many brokers are registered), compacted,
// with offsets.topic.segment.bytes segments.
func (h *Handler) ensureOffsetsTopic(ctx context.Context) (*metadata.Topic, error) {
	if t, ok := h.image().Topic(metadata.ConsumerOffsetsTopic); ok {
		return t, nil
	}
	configs := map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.Itoa(int(h.cfg.Broker.GetInt("offsets.topic.segment.bytes"))),
	}
	t, err := h.CreateTopic(ctx, metadata.ConsumerOffsetsTopic, h.cfg.Broker.OffsetsTopicNumPartitions, h.cfg.Broker.OffsetsTopicReplicationFactor, configs)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		if t, ok := h.image().Topic(metadata.ConsumerOffsetsTopic); ok {
			return t, nil
		}
	}
	if err != nil {
		h.log.Error("creating the group coordinator's topic failed", "topic", metadata.ConsumerOffsetsTopic, "err", err)
		return nil, err
	}
	h.log.Info("created the group coordinator's topic", "topic", metadata.ConsumerOffsetsTopic, "partitions", len(t.Partitions))
	return t, nil
}
