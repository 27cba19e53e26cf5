package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/log/remote"
)

// Partition sizes for `moldau topic describe`: on disk, from
// DescribeLogDirs (kafka-log-dirs.sh's figure), the leader's replica; in
// remote storage, for a tiered topic, from the segment metadata in
// __remote_log_metadata, as the leader's RemoteLogSizeBytes gauge counts
// it: the bytes of the segments whose copy finished and whose deletion
// did not start.

// remoteLogMetadataTopic is the topic-based RemoteLogMetadataManager's
// topic (Kafka's TopicBasedRemoteLogMetadataManager).
const remoteLogMetadataTopic = "__remote_log_metadata"

// localSizes maps topic and partition to the leader replica's size on
// disk, from DescribeLogDirs; nil when the brokers do not answer it.
func localSizes(ctx context.Context, adm *kadm.Client, tds kadm.TopicDetails, names []string) map[string]map[int32]int64 {
	set := kadm.TopicsSet{}
	for _, n := range names {
		if td, ok := tds[n]; ok {
			set[n] = map[int32]struct{}{}
			for p := range td.Partitions {
				set[n][p] = struct{}{}
			}
		}
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil
	}
	out := map[string]map[int32]int64{}
	for _, n := range names {
		td, ok := tds[n]
		if !ok {
			continue
		}
		out[n] = map[int32]int64{}
		for p, pd := range td.Partitions {
			if ds, ok := dirs[pd.Leader]; ok {
				for _, d := range ds {
					if d.Err != nil {
						continue
					}
					if lp, ok := d.Topics.Lookup(n, p); ok && !lp.IsFuture {
						out[n][p] = lp.Size
					}
				}
			}
		}
	}
	return out
}

// remoteSegment is one remote segment's state in the metadata.
type remoteSegment struct {
	tp    remote.TopicIdPartition
	size  int64
	state remote.RemoteLogSegmentState
}

// remoteSizes reads __remote_log_metadata to its end and returns, per
// topic id and partition, the bytes in remote storage.
func remoteSizes(ctx context.Context, e *env, adm *kadm.Client) (map[remote.TopicIdPartition]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, remoteLogMetadataTopic)
	if err != nil {
		return nil, firstShardError(err)
	}
	if o, ok := ends[remoteLogMetadataTopic]; !ok || len(o) == 0 {
		return map[remote.TopicIdPartition]int64{}, nil // nothing copied yet
	}
	starts, err := adm.ListStartOffsets(ctx, remoteLogMetadataTopic)
	if err != nil {
		return nil, firstShardError(err)
	}
	want := map[int32]int64{} // partition -> end offset still to reach
	from := map[int32]kgo.Offset{}
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return // created on the first copy
		}
		if o.Err != nil {
			lerr = o.Err
			return
		}
		s, _ := starts.Lookup(o.Topic, o.Partition)
		if o.Offset > s.Offset {
			want[o.Partition] = o.Offset
			from[o.Partition] = kgo.NewOffset().At(s.Offset)
		}
	})
	if lerr != nil {
		return nil, fmt.Errorf("%s: %w", remoteLogMetadataTopic, lerr)
	}
	segs := map[remote.RemoteLogSegmentId]*remoteSegment{}
	if len(want) > 0 {
		cl, err := e.newClient(ctx, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{remoteLogMetadataTopic: from}))
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		for len(want) > 0 {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("reading %s: %w", remoteLogMetadataTopic, err)
			}
			var ferr error
			fs.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				return nil, fmt.Errorf("reading %s: %w", remoteLogMetadataTopic, ferr)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if end, ok := want[r.Partition]; ok && r.Offset >= end-1 {
					delete(want, r.Partition)
				}
				applyRemoteEvent(segs, r.Value)
			})
		}
	}
	out := map[remote.TopicIdPartition]int64{}
	for _, s := range segs {
		if s.state == remote.CopySegmentFinished {
			out[s.tp] += s.size
		}
	}
	return out, nil
}

// applyRemoteEvent folds one metadata record into segs; records it cannot
// decode (a newer version) are skipped.
func applyRemoteEvent(segs map[remote.RemoteLogSegmentId]*remoteSegment, value []byte) {
	ev, err := remote.DecodeRemoteLogMetadata(value)
	if err != nil {
		return
	}
	switch ev := ev.(type) {
	case *remote.RemoteLogSegmentMetadata:
		segs[ev.ID] = &remoteSegment{tp: ev.ID.TopicIdPartition, size: int64(ev.SegmentSizeInBytes), state: ev.State}
	case *remote.RemoteLogSegmentMetadataUpdate:
		if s, ok := segs[ev.ID]; ok {
			s.state = ev.State
			if ev.State == remote.DeleteSegmentFinished {
				delete(segs, ev.ID)
			}
		}
	case *remote.RemotePartitionDeleteMetadata:
		if ev.State == remote.DeletePartitionFinished {
			for id, s := range segs {
				if s.tp == ev.TopicIdPartition {
					delete(segs, id)
				}
			}
		}
	}
}
