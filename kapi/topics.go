package kapi

// Topic helpers shared by Metadata and Produce: auto-creation through the
// controller.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

const (
	// authorizedOperationsOmitted is the schema default, -2147483648.
	authorizedOperationsOmitted int32 = -1 << 31

	// autoCreateTimeout bounds an auto-creation (Kafka's
	// AutoTopicCreationManager uses the controller channel's timeout).
	autoCreateTimeout = 10 * time.Second
)

// CreateTopic asks the controller to create a topic with the given
// partitions and replication factor (-1: the broker defaults) and configs,
// and waits until this broker's metadata has it. An existing topic is
// TOPIC_ALREADY_EXISTS. Auto-creation and the coordinators' internal topics
// use it (Kafka's AutoTopicCreationManager).
func (h *Handler) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) (*metadata.Topic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = int32(autoCreateTimeout / time.Millisecond)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	r, err := h.forward(ctx, req, autoCreateTimeout)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		return nil, apierr.Errorf(kerr.UnknownServerError, "the controller answered %d topics for one", len(resp.Topics))
	}
	if st := resp.Topics[0]; st.ErrorCode != 0 {
		msg := kerr.ErrorForCode(st.ErrorCode).Error()
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		return nil, apierr.New(kerr.ErrorForCode(st.ErrorCode).(*kerr.Error), msg)
	}
	var t *metadata.Topic
	h.waitForMetadata(ctx, autoCreateTimeout, func(im *metadata.Image) bool {
		t, _ = im.Topic(name)
		return t != nil
	})
	if t == nil {
		return nil, apierr.Errorf(kerr.LeaderNotAvailable, "topic %s was created but this broker has not seen it yet", name)
	}
	return t, nil
}

// autoCreateTopic creates a topic a client asked for that does not exist,
// with num.partitions and default.replication.factor. A concurrent
// creation by someone else is success.
func (h *Handler) autoCreateTopic(ctx context.Context, name string) (*metadata.Topic, error) {
	t, err := h.CreateTopic(ctx, name, -1, -1, nil)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		if t, ok := h.image().Topic(name); ok {
			return t, nil
		}
	}
	if err == nil {
		h.log.Info("auto-created topic", "topic", name, "partitions", len(t.Partitions))
	}
	return t, err
}
