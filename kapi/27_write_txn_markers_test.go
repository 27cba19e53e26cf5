package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/replica"
)

// Markers of one producer are merged into one response entry, in request
// order, as Kafka's WriteTxnMarkersResponse groups them by producer id.
func TestWriteTxnMarkersResponseGroupsByProducer(t *testing.T) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for _, pid := range []int64{7, 8, 7} {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID = pid
		req.Markers = append(req.Markers, m)
	}
	tp := func(topic string, p int32) replica.TopicPartition {
		return replica.TopicPartition{Topic: topic, Partition: p}
	}
	outcomes := [][]markerOutcome{
		{{tp("a", 0), nil}, {tp("b", 1), kerr.NotLeaderForPartition}},
		{{tp("a", 0), kerr.InvalidProducerEpoch}},
		{{tp("a", 2), kerr.TransactionCoordinatorFenced}},
	}
	resp := buildWriteTxnMarkersResponse(req.ResponseKind().(*kmsg.WriteTxnMarkersResponse), req, outcomes)
	if len(resp.Markers) != 2 || resp.Markers[0].ProducerID != 7 || resp.Markers[1].ProducerID != 8 {
		t.Fatalf("markers %+v", resp.Markers)
	}
	m7 := resp.Markers[0]
	if len(m7.Topics) != 2 || m7.Topics[0].Topic != "a" || len(m7.Topics[0].Partitions) != 2 ||
		m7.Topics[0].Partitions[1].Partition != 2 || m7.Topics[0].Partitions[1].ErrorCode != kerr.TransactionCoordinatorFenced.Code ||
		m7.Topics[1].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("producer 7: %+v", m7.Topics)
	}
	if e := resp.Markers[1].Topics[0].Partitions[0].ErrorCode; e != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("producer 8: %v", kerr.ErrorForCode(e))
	}
}
