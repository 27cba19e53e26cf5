package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// Directory assignments (KIP-858, Kafka's ReplicationControlManager
// handleAssignReplicasToDirs and handleDirectoriesOffline).
//
// A broker registers the directory ids of its online log dirs
// (BrokerRegistration LogDirs, kept in the image as Broker.LogDirs) and
// tells the controller which dir each of its replicas is in
// (AssignReplicasToDirs); the controller keeps that in the partition's
// Directories. When a heartbeat names registered dirs offline, the
// broker's replicas in them count as offline: the broker leaves their ISR
// and they get another leader (as when a broker is fenced, with the same
// min.insync.replicas and ELR rules), and a BrokerRegistrationChangeRecord
// leaves only the online dirs registered. A replica in a dir that is not
// online may not lead nor rejoin the ISR until the broker registers again
// (a restart with the dir repaired). A replica whose dir is unassigned (the
// broker has not said yet) counts as online, as in Kafka.

// replicaOnline is Kafka's isReplicaOnline without the liveness check:
// the replica of broker r in p is in a dir its broker has online.
func replicaOnline(im *metadata.Image, p metadata.Partition, r int32) bool {
	b := im.Brokers[r]
	return b == nil || b.HasOnlineDir(p.Directory(r))
}

// dirsOfflineRecords is Kafka's handleDirectoriesOffline: for the dirs a
// heartbeat names offline that the broker still has registered online,
// the broker's replicas there lose their ISR membership and leadership,
// and the registration keeps only the online dirs. None when nothing is
// newly offline. On the loop.
func (c *QuorumController) dirsOfflineRecords(im *metadata.Image, b *metadata.Broker, offline [][16]byte) []metadata.Record {
	var newly []uuid.UUID
	for _, d := range offline {
		if slices.Contains(b.LogDirs, uuid.UUID(d)) {
			newly = append(newly, uuid.UUID(d))
		}
	}
	if len(newly) == 0 {
		return nil
	}
	acceptable := func(r int32) bool { return r != b.ID && isActive(im, r) }
	var recs []metadata.Record
	moved := 0
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if !slices.Contains(newly, p.Directory(b.ID)) {
				continue
			}
			if !slices.Contains(p.ISR, b.ID) && p.Leader != b.ID {
				continue
			}
			ch := c.newChange(im, t, p, acceptable)
			ch.targetISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == b.ID })
			if r := c.buildChange(t, ch); r != nil {
				recs = append(recs, r)
				moved++
			}
		}
	}
	online := []uuid.UUID{}
	for _, d := range b.LogDirs {
		if !slices.Contains(newly, d) {
			online = append(online, d)
		}
	}
	recs = append(recs, &metadata.BrokerRegistrationChangeRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, LogDirs: online})
	names := make([]string, len(newly))
	for i, d := range newly {
		names[i] = d.String()
	}
	c.log.Warn("broker reports log dirs offline: its replicas there leave their ISR and leadership",
		"broker", b.ID, "offline_dirs", names, "partition_changes", moved)
	return recs
}

// AssignReplicasToDirs is Kafka's handleAssignReplicasToDirs (API 73): a
// broker says which of its log dirs holds each of its replicas. Each
// assignment becomes a PartitionChangeRecord of the partition's
// Directories; an assignment to a dir that is not online also takes the
// replica out of the ISR and leadership, as handleDirectoriesOffline
// does.
func (c *QuorumController) AssignReplicasToDirs(ctx context.Context, req *kmsg.AssignReplicasToDirsRequest) (*kmsg.AssignReplicasToDirsResponse, error) {
	resp, _, err := write(ctx, c, "assignReplicasToDirs", func(im *metadata.Image) (writeResult[*kmsg.AssignReplicasToDirsResponse], error) {
		return c.assignReplicasToDirs(im, req)
	})
	return resp, err
}

func (c *QuorumController) assignReplicasToDirs(im *metadata.Image, req *kmsg.AssignReplicasToDirsRequest) (writeResult[*kmsg.AssignReplicasToDirsResponse], error) {
	type res = writeResult[*kmsg.AssignReplicasToDirsResponse]
	resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	b := im.Brokers[req.BrokerID]
	switch {
	case b == nil:
		return res{}, apierr.Errorf(kerr.BrokerIDNotRegistered, "Broker %d is not registered.", req.BrokerID)
	case b.Epoch != req.BrokerEpoch:
		return res{}, apierr.Errorf(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d", b.Epoch, req.BrokerEpoch)
	}
	var recs []metadata.Record
	seen := map[[16]byte]map[int32]bool{}
	for _, d := range req.Directories {
		rd := kmsg.NewAssignReplicasToDirsResponseDirectory()
		rd.ID = d.ID
		dir := uuid.UUID(d.ID)
		for _, tp := range d.Topics {
			rt := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			rt.TopicID = tp.TopicID
			t, ok := im.TopicByID(uuid.UUID(tp.TopicID))
			for _, pp := range tp.Partitions {
				rp := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				rp.Partition = pp.Partition
				if seen[tp.TopicID] == nil {
					seen[tp.TopicID] = map[int32]bool{}
				}
				switch {
				case !ok:
					rp.ErrorCode = kerr.UnknownTopicID.Code
				case pp.Partition < 0 || int(pp.Partition) >= len(t.Partitions):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case !slices.Contains(t.Partitions[pp.Partition].Replicas, b.ID):
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
				case seen[tp.TopicID][pp.Partition]:
					rp.ErrorCode = kerr.InvalidRequest.Code // named twice in one request
				default:
					seen[tp.TopicID][pp.Partition] = true
					if r := c.assignOne(im, t, t.Partitions[pp.Partition], b, dir); r != nil {
						recs = append(recs, r)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Directories = append(resp.Directories, rd)
	}
	return res{records: recs, resp: resp}, nil
}

// assignOne is the change that puts broker b's replica of p in dir, or nil
// when it is there already.
func (c *QuorumController) assignOne(im *metadata.Image, t *metadata.Topic, p metadata.Partition, b *metadata.Broker, dir uuid.UUID) *metadata.PartitionChangeRecord {
	if p.Directory(b.ID) == dir {
		return nil
	}
	dirs := p.WithDirectory(b.ID, dir)
	var r *metadata.PartitionChangeRecord
	if !b.HasOnlineDir(dir) && (slices.Contains(p.ISR, b.ID) || p.Leader == b.ID) {
		ch := c.newChange(im, t, p, func(r int32) bool { return r != b.ID && isActive(im, r) })
		ch.targetISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == b.ID })
		r = c.buildChange(t, ch)
	}
	if r == nil {
		r = metadata.NewPartitionChangeRecord(t.ID, p.Index)
	}
	r.Directories = dirs
	return r
}
