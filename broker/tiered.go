package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
	"github.com/moldau/moldau/replica"
)

// Tiered storage's wiring (KIP-405): with remote.log.storage.system.enable
// the broker builds the RemoteStorageManager named by
// remote.log.storage.manager.class.name, configured by the rsm.config.
// properties (remote.log.storage.manager.impl.prefix); the topic-based
// RemoteLogMetadataManager on __remote_log_metadata, configured by the
// rlmm.config. properties; and the RemoteLogManager, whose tasks the
// ReplicaManager runs.
//
// The storage managers, by remote.log.storage.manager.class.name:
//
//   - unset, LocalTieredStorage or Kafka's test class
//     org.apache.kafka.server.log.remote.storage.LocalTieredStorage: a
//     directory, rsm.config.dir (required; Kafka's LocalTieredStorage
//     takes the same key). Brokers of one cluster share it.
//   - S3Storage or Aiven's io.aiven.kafka.tieredstorage.RemoteStorageManager:
//     an S3 bucket, with the Aiven plugin's properties
//     (rsm.config.storage.s3.bucket.name, ...; see remote.S3ConfigFromProperties).

// The storage manager class names Moldau knows.
var (
	localStorageClasses = []string{"", "LocalTieredStorage", "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"}
	s3StorageClasses    = []string{"S3Storage", "io.aiven.kafka.tieredstorage.RemoteStorageManager"}
)

// newRemoteStorageManager builds the RemoteStorageManager the config names.
func newRemoteStorageManager(cfg *config.KafkaConfig) (remote.RemoteStorageManager, error) {
	class := cfg.GetString("remote.log.storage.manager.class.name")
	props := cfg.Originals(cfg.GetString("remote.log.storage.manager.impl.prefix"))
	for _, c := range localStorageClasses {
		if class == c {
			dir := props["dir"]
			if dir == "" {
				return nil, errors.New("remote.log.storage.system.enable: the local remote storage needs a directory, rsm.config.dir")
			}
			return remote.NewLocalTieredStorage(dir)
		}
	}
	for _, c := range s3StorageClasses {
		if class == c {
			s3cfg, err := remote.S3ConfigFromProperties(props)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return remote.NewS3Storage(ctx, s3cfg)
		}
	}
	return nil, fmt.Errorf("remote.log.storage.manager.class.name: %q is not a storage manager Moldau has (LocalTieredStorage or S3Storage)", class)
}

// newRemoteLog builds tiered storage when remote.log.storage.system.enable
// is set, and hands it to the ReplicaManager. The metadata topic is
// created on first use.
func (b *Broker) newRemoteLog() error {
	cfg := b.cfg
	if !cfg.GetBool("remote.log.storage.system.enable") {
		return nil
	}
	rsm, err := newRemoteStorageManager(cfg)
	if err != nil {
		return fmt.Errorf("tiered storage: %w", err)
	}
	b.remoteStorage = rsm
	b.remoteLogChannel = network.NewInterBrokerChannel(cfg.NodeID, cfg.InterBrokerListenerName,
		fmt.Sprintf("broker-%d-remote-log-metadata", cfg.NodeID), 1, b.log, b.loader.Image, func() network.RequestHandler { return nil })
	b.remoteLogChannel.SetDialer(b.interBrokerDial)
	rlmmProps := cfg.Originals(cfg.GetString("remote.log.metadata.manager.impl.prefix"))
	intProp := func(name string, def int) (int, error) {
		v, ok := rlmmProps[name]
		if !ok {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("tiered storage: %s: %q is not an integer", name, v)
		}
		return n, nil
	}
	// Kafka's TopicBasedRemoteLogMetadataManagerConfig defaults.
	partitions, err := intProp("remote.log.metadata.topic.num.partitions", 50)
	if err != nil {
		return err
	}
	rf, err := intProp("remote.log.metadata.topic.replication.factor", 3)
	if err != nil {
		return err
	}
	retentionMs, err := intProp("remote.log.metadata.topic.retention.ms", -1)
	if err != nil {
		return err
	}
	if partitions <= 0 || rf <= 0 {
		return fmt.Errorf("tiered storage: remote.log.metadata.topic.num.partitions and .replication.factor must be positive")
	}
	rlmm := replica.NewTopicBasedRemoteLogMetadataManager(replica.TopicBasedRemoteLogMetadataManagerConfig{
		BrokerID: cfg.NodeID, Replicas: b.replicas, Image: b.loader.Image, NumPartitions: partitions, Logger: b.log,
		CreateTopic: func(ctx context.Context) error {
			return b.createRemoteLogMetadataTopic(ctx, int32(partitions), rf, retentionMs)
		},
		Produce: b.produceRemoteLogMetadata,
		Fetch:   b.fetchRemoteLogMetadata,
	})
	rlm := replica.NewRemoteLogManager(cfg.NodeID, rsm, rlmm, b.log, nil)
	b.replicas.StartRemoteLog(replica.RemoteLogConfig{
		Manager: rlm, Metadata: rlmm,
		TaskInterval:           time.Duration(cfg.GetLong("remote.log.manager.task.interval.ms")) * time.Millisecond,
		TaskThreads:            int(cfg.GetInt("remote.log.manager.thread.pool.size")),
		ReaderThreads:          int(cfg.GetInt("remote.log.reader.threads")),
		MaxPendingReads:        int(cfg.GetInt("remote.log.reader.max.pending.tasks")),
		FetchMaxWait:           time.Duration(cfg.GetInt("remote.fetch.max.wait.ms")) * time.Millisecond,
		ListOffsetsTimeout:     time.Duration(cfg.GetLong("remote.list.offsets.request.timeout.ms")) * time.Millisecond,
		CopyMaxBytesPerSecond:  cfg.GetLong("remote.log.manager.copy.max.bytes.per.second"),
		FetchMaxBytesPerSecond: cfg.GetLong("remote.log.manager.fetch.max.bytes.per.second"),
		CopyQuotaWindows:       int(cfg.GetInt("remote.log.manager.copy.quota.window.num")),
		FetchQuotaWindows:      int(cfg.GetInt("remote.log.manager.fetch.quota.window.num")),
		CopyQuotaWindowSize:    time.Duration(cfg.GetInt("remote.log.manager.copy.quota.window.size.seconds")) * time.Second,
		FetchQuotaWindowSize:   time.Duration(cfg.GetInt("remote.log.manager.fetch.quota.window.size.seconds")) * time.Second,
	})
	// The quotas change at run time (Kafka's RLMQuotaManagers are
	// dynamic broker configs' listeners).
	quotas := []string{"remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second"}
	b.unregister = append(b.unregister, cfg.AddReconfigurable(config.ReconfigurableFunc{
		Keys: quotas,
		Apply: func(_, new map[string]any) {
			c, _ := new[quotas[0]].(int64)
			f, _ := new[quotas[1]].(int64)
			b.replicas.SetRemoteLogQuotas(c, f)
		},
	}))
	b.log.Info("tiered storage enabled", "remote.log.storage.manager.class.name", cfg.GetString("remote.log.storage.manager.class.name"),
		"metadata_partitions", partitions)
	return nil
}

// createRemoteLogMetadataTopic creates __remote_log_metadata as Kafka's
// TopicBasedRemoteLogMetadataManager does (cleanup.policy=delete,
// retention.ms remote.log.metadata.topic.retention.ms, not tiered
// itself), and waits until this broker's metadata has it. Unlike Kafka,
// the replication factor is capped to the brokers registered, so a
// cluster smaller than the default 3 tiers without configuring it.
func (b *Broker) createRemoteLogMetadataTopic(ctx context.Context, partitions int32, rf, retentionMs int) error {
	wanted := rf
	if n := len(b.loader.Image().Brokers); n > 0 && rf > n {
		rf = n
	}
	configs := map[string]string{
		"cleanup.policy":        "delete",
		"retention.ms":          strconv.Itoa(retentionMs),
		"remote.storage.enable": "false",
	}
	_, err := b.handler.CreateTopic(ctx, replica.RemoteLogMetadataTopic, partitions, int16(rf), configs)
	if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
		for {
			if _, ok := b.loader.Image().Topic(replica.RemoteLogMetadataTopic); ok {
				// Said once, by the broker that created it: every
				// task that publishes before the topic is seen calls
				// this.
				switch {
				case err == nil && rf < wanted:
					b.log.Warn("created the remote log metadata topic with the replication factor capped to the brokers registered",
						"topic", replica.RemoteLogMetadataTopic, "partitions", partitions, "replication_factor", rf,
						"remote.log.metadata.topic.replication.factor", wanted)
				case err == nil:
					b.log.Info("created the remote log metadata topic", "topic", replica.RemoteLogMetadataTopic, "partitions", partitions, "replication_factor", rf)
				}
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return err
}

// produceRemoteLogMetadata appends a batch of remote log metadata events
// to a partition of __remote_log_metadata led by another broker: a
// Produce with acks=all over the inter-broker listener, as Kafka's
// topic-based manager produces with its own client.
func (b *Broker) produceRemoteLogMetadata(ctx context.Context, leader int32, tp log.TopicPartition, batch []byte) (int64, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 30000
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMillis = int32(max(time.Until(dl).Milliseconds(), 1))
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = tp.Partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := b.remoteLogChannel.Send(ctx, leader, req)
	if err != nil {
		return -1, err
	}
	resp := r.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("%w: the leader answered a produce of one partition with %d topics", kerr.UnknownServerError, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, err
	}
	return p.BaseOffset, nil
}

// fetchRemoteLogMetadata reads a partition of __remote_log_metadata this
// broker hosts no replica of from its leader: a consumer's Fetch
// (read_uncommitted, so up to the high watermark) over the inter-broker
// listener, as Kafka's topic-based manager consumes with its own client.
func (b *Broker) fetchRemoteLogMetadata(ctx context.Context, leader int32, tp log.TopicPartition, offset int64) ([]byte, int64, int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = 8 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, offset, 4<<20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := b.remoteLogChannel.Send(ctx, leader, req)
	if err != nil {
		return nil, -1, -1, err
	}
	resp := r.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, -1, -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, -1, -1, fmt.Errorf("%w: the leader answered a fetch of one partition with %d topics", kerr.UnknownServerError, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	return p.RecordBatches, p.LogStartOffset, p.HighWatermark, kerr.ErrorForCode(p.ErrorCode)
}
