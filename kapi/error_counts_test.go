package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every error code of a response counts, NONE too, as Kafka's
// errorCounts: the direct walks (Produce, Fetch, Metadata) and the
// reflective one (top-level, nested and per-entry codes).
func TestErrorCounts(t *testing.T) {
	counts := func(resp kmsg.Response) map[int16]int {
		var c errorCounts
		c.count(resp)
		got := map[int16]int{}
		c.each(func(code int16, n int) { got[code] += n })
		return got
	}
	same := func(name string, got, want map[int16]int) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
			return
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", name, got, want)
				return
			}
		}
	}
	nl := kerr.NotLeaderForPartition.Code
	produce := kmsg.NewPtrProduceResponse()
	produce.Topics = []kmsg.ProduceResponseTopic{{Partitions: []kmsg.ProduceResponseTopicPartition{{ErrorCode: 0}, {ErrorCode: nl}, {ErrorCode: nl}}}}
	same("produce", counts(produce), map[int16]int{0: 1, nl: 2})

	fetch := kmsg.NewPtrFetchResponse()
	fetch.Topics = []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{ErrorCode: 0}, {ErrorCode: kerr.OffsetOutOfRange.Code}}}}
	same("fetch", counts(fetch), map[int16]int{0: 2, kerr.OffsetOutOfRange.Code: 1})

	md := kmsg.NewPtrMetadataResponse()
	md.Topics = []kmsg.MetadataResponseTopic{{ErrorCode: kerr.UnknownTopicOrPartition.Code}, {Partitions: []kmsg.MetadataResponseTopicPartition{{}, {ErrorCode: kerr.LeaderNotAvailable.Code}}}}
	same("metadata", counts(md), map[int16]int{kerr.UnknownTopicOrPartition.Code: 1, 0: 2, kerr.LeaderNotAvailable.Code: 1})

	// Reflection: a top-level code only.
	hb := kmsg.NewPtrHeartbeatResponse()
	hb.ErrorCode = kerr.RebalanceInProgress.Code
	same("heartbeat", counts(hb), map[int16]int{kerr.RebalanceInProgress.Code: 1})
	// Per topic and partition, no top-level code.
	oc := kmsg.NewPtrOffsetCommitResponse()
	oc.Topics = []kmsg.OffsetCommitResponseTopic{{Partitions: []kmsg.OffsetCommitResponseTopicPartition{{}, {ErrorCode: kerr.UnknownMemberID.Code}}}}
	same("offset commit", counts(oc), map[int16]int{0: 1, kerr.UnknownMemberID.Code: 1})
	// Top-level, per group, per topic and per partition.
	of := kmsg.NewPtrOffsetFetchResponse()
	of.ErrorCode = 0
	of.Groups = []kmsg.OffsetFetchResponseGroup{{ErrorCode: kerr.GroupAuthorizationFailed.Code,
		Topics: []kmsg.OffsetFetchResponseGroupTopic{{Partitions: []kmsg.OffsetFetchResponseGroupTopicPartition{{}, {}}}}}}
	same("offset fetch", counts(of), map[int16]int{0: 3, kerr.GroupAuthorizationFailed.Code: 1})
	// More than eight distinct codes.
	dt := kmsg.NewPtrDeleteTopicsResponse()
	for code := range int16(12) {
		dt.Topics = append(dt.Topics, kmsg.DeleteTopicsResponseTopic{ErrorCode: code})
	}
	want := map[int16]int{}
	for code := range int16(12) {
		want[code] = 1
	}
	same("delete topics", counts(dt), want)
}

func BenchmarkErrorCountsReflect(b *testing.B) {
	of := kmsg.NewPtrOffsetCommitResponse()
	of.Topics = []kmsg.OffsetCommitResponseTopic{{Partitions: make([]kmsg.OffsetCommitResponseTopicPartition, 10)}}
	b.ReportAllocs()
	for b.Loop() {
		var c errorCounts
		c.count(of)
	}
}
