package kapi

// DescribeLogDirs, versions 0 to 5.
//
//   - v0: the partitions to describe (null: all); per log dir the error,
//     the path and per partition the size, offset lag and is_future.
//   - v1: throttle_time_ms semantics only.
//   - v2: flexible.
//   - v3: top-level error_code.
//   - v4: per dir total_bytes and usable_bytes (KIP-827).
//   - v5: per dir is_cordoned (KIP-1066; always false here).
//
// As Kafka's ReplicaManager.describeLogDirs: every log dir is listed, with
// its absolute path; an offline dir carries KAFKA_STORAGE_ERROR and no
// topics; topics without any requested partition in a dir are left out.
// A replica being moved here from another dir (AlterReplicaLogDirs) is
// listed with is_future, the size of its future log and its offset lag:
// how far the future log's end is behind the current log's; a current
// replica's lag is 0.

import (
	"path/filepath"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Handler) handleDescribeLogDirs(rc *RequestContext, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)

	var wanted map[string]map[int32]bool // nil: every partition
	if req.Topics != nil {
		wanted = map[string]map[int32]bool{}
		for _, t := range req.Topics {
			if wanted[t.Topic] == nil {
				wanted[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				wanted[t.Topic][p] = true
			}
		}
	}

	for _, d := range h.cfg.Replicas.DescribeLogDirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = d.Path
		if abs, err := filepath.Abs(d.Path); err == nil {
			rd.Dir = abs
		}
		if d.Err != nil {
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		rd.TotalBytes, rd.UsableBytes = d.TotalBytes, d.UsableBytes
		byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for _, p := range d.Partitions {
			if wanted != nil && !wanted[p.Topic][p.Partition] {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size = p.Partition, p.Size
			rp.IsFuture, rp.OffsetLag = p.IsFuture, p.OffsetLag
			byTopic[p.Topic] = append(byTopic[p.Topic], rp)
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = n
			rt.Partitions = byTopic[n]
			sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp
}
