package kapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func offsetForLeaderEpochReq(topic string, partition, current, epoch int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// OffsetForLeaderEpoch over every version: the end of the epoch being
// written is the log end, an epoch past it is unknown, the current leader
// epoch is checked from v2, and a partition not led here or missing gets
// its error.
func TestOffsetForLeaderEpoch(t *testing.T) {
	h := newAdminHandler(t)
	registerOtherBroker(t, h, 2, 9093, "rack-2")
	if _, err := h.createTopic("oe", -1, -1, [][]int32{{1}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.createTopic("oe-elsewhere", -1, -1, [][]int32{{2}}, nil, false); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		resp := call(t, h, produceReq("oe", [16]byte{}, oneBatch(t)), 11).(*kmsg.ProduceResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("produce: %d", c)
		}
	}
	type want struct {
		code  int16
		epoch int32
		end   int64
	}
	type oeCase struct {
		name                string
		topic               string
		partition, cur, req int32
		want                want
	}
	for v := int16(0); v <= 4; v++ {
		ask := func(topic string, partition, current, epoch int32) want {
			t.Helper()
			resp := call(t, h, offsetForLeaderEpochReq(topic, partition, current, epoch), v).(*kmsg.OffsetForLeaderEpochResponse)
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != topic || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != partition {
				t.Fatalf("v%d: %+v", v, resp)
			}
			sp := resp.Topics[0].Partitions[0]
			return want{sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset}
		}
		epoch0 := int32(0)
		if v == 0 {
			epoch0 = -1 // leader_epoch is not on the wire: the default
		}
		cases := []oeCase{
			{"current epoch", "oe", 0, -1, 0, want{0, epoch0, 3}},
			{"epoch past the latest", "oe", 0, -1, 1, want{0, -1, -1}},
			{"undefined epoch", "oe", 0, -1, -1, want{0, -1, -1}},
			{"not led here", "oe-elsewhere", 0, -1, 0, want{kerr.NotLeaderForPartition.Code, -1, -1}},
			{"no such partition", "oe", 1, -1, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
			{"no such topic", "nope", 0, -1, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
		}
		if v >= 2 {
			cases = append(cases,
				oeCase{"newer current epoch", "oe", 0, 1, 0, want{kerr.UnknownLeaderEpoch.Code, -1, -1}},
				oeCase{"matching current epoch", "oe", 0, 0, 0, want{0, 0, 3}})
		} else {
			// No current_leader_epoch before v2: never fenced.
			cases = append(cases, oeCase{"current epoch not sent", "oe", 0, 1, 0, want{0, epoch0, 3}})
		}
		for _, tc := range cases {
			if got := ask(tc.topic, tc.partition, tc.cur, tc.req); got != tc.want {
				t.Errorf("v%d %s: %+v, want %+v", v, tc.name, got, tc.want)
			}
		}
	}
}
