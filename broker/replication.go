package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/replica"
)

// The wiring of replication: the replica manager's followers fetch over
// connections of their own to the leaders' inter-broker listener, and its
// leaders send ISR changes to the active controller.

// replicationConfig is the replica manager's share of the broker's
// configuration (Kafka's replica.* keys).
func replicationConfig(cfg *config.KafkaConfig) replica.ReplicationConfig {
	ms := func(key string) time.Duration { return time.Duration(cfg.GetInt(key)) * time.Millisecond }
	return replica.ReplicationConfig{
		NumFetchers:           int(cfg.GetInt("num.replica.fetchers")),
		FetchMaxBytes:         cfg.GetInt("replica.fetch.max.bytes"),
		FetchMinBytes:         cfg.GetInt("replica.fetch.min.bytes"),
		FetchWaitMax:          ms("replica.fetch.wait.max.ms"),
		FetchBackoff:          ms("replica.fetch.backoff.ms"),
		FetchResponseMaxBytes: cfg.GetInt("replica.fetch.response.max.bytes"),
		LagTimeMax:            cfg.ReplicaLagTimeMax,
		SocketTimeout:         ms("replica.socket.timeout.ms"),
		SelectorClass:         strings.TrimSpace(cfg.GetString("replica.selector.class")),
		QuotaWindows:          int(cfg.GetInt("replication.quota.window.num")),
		QuotaWindowSize:       time.Duration(cfg.GetInt("replication.quota.window.size.seconds")) * time.Second,
	}
}

// brokerEpoch is this broker's epoch, -1 before it has registered.
func (b *Broker) brokerEpoch() int64 {
	if l := b.lifecycleRef.Load(); l != nil {
		return l.Epoch()
	}
	return -1
}

// newFetcherClient gives a fetcher thread connections of its own to the
// leaders, on the inter-broker listener.
func (b *Broker) newFetcherClient() replica.BrokerClient {
	clientID := fmt.Sprintf("broker-%d-replica-fetcher", b.cfg.NodeID)
	c := network.NewInterBrokerChannel(b.cfg.NodeID, b.cfg.InterBrokerListenerName, clientID, 1, b.log, b.loader.Image, func() network.RequestHandler { return nil })
	c.SetDialer(b.interBrokerDial)
	return c
}

// sendAlterPartition sends a leader's ISR change to the active controller
// (Kafka's AlterPartitionManager over the controller channel).
func (b *Broker) sendAlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	if b.channel == nil {
		return nil, fmt.Errorf("%w: no controller channel", kerr.NotController)
	}
	r, err := b.channel.Send(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.AlterPartitionResponse), nil
}
