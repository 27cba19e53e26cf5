package kapi

// AlterReplicaLogDirs, versions 0 to 2 (v1: no change on the wire; v2:
// flexible).
//
// Moves replicas of this broker between its log dirs (KIP-113), as Kafka's
// KafkaApis.handleAlterReplicaLogDirsRequest and
// ReplicaManager.alterReplicaLogDirs: ALTER on CLUSTER, else every
// partition CLUSTER_AUTHORIZATION_FAILED. Per partition: a dir that is not
// in log.dirs is LOG_DIR_NOT_FOUND, an offline one KAFKA_STORAGE_ERROR; a
// partition this broker does not host has the dir remembered for when its
// log is created and answers REPLICA_NOT_AVAILABLE, or
// UNKNOWN_TOPIC_OR_PARTITION if the metadata does not know it; a replica
// already in the dir is NONE; otherwise the copy to a "-future" log in the
// dir starts and the answer is NONE at once: DescribeLogDirs shows the
// future replica and its lag until the swap (see log/future.go).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/replica"
)

func (h *Handler) handleAlterReplicaLogDirs(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	byTopic := map[string]int{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			i, ok := byTopic[t.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[t.Topic] = i
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode = h.alterReplicaLogDir(replica.TopicPartition{Topic: t.Topic, Partition: p}, d.Dir)
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			}
		}
	}
	return resp
}

func (h *Handler) alterReplicaLogDir(tp replica.TopicPartition, dir string) int16 {
	err := h.cfg.Replicas.AlterReplicaLogDir(tp, dir)
	if errors.Is(err, kerr.ReplicaNotAvailable) {
		t, ok := h.image().Topic(tp.Topic)
		if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			return kerr.UnknownTopicOrPartition.Code
		}
	}
	return ErrorCode(err)
}
