package kapi

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	az "github.com/moldau/moldau/broker/security/authorizer"
)

func describeTopicPartitions(t *testing.T, h *Handler, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	return roundTrip[*kmsg.DescribeTopicPartitionsResponse](t, h.handleDescribeTopicPartitions(testRC(), req))
}

// Paging with the cursor visits every partition exactly once, in topic
// and partition order, whatever the limit; the cursor's rules are
// Kafka's.
func TestDescribeTopicPartitionsPaging(t *testing.T) {
	h := newAdminHandler(t)
	counts := map[string]int32{"a": 3, "b": 1, "c": 4, "d": 2}
	for name, n := range counts {
		if _, err := h.createTopic(name, n, 1, nil, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for _, name := range []string{"a", "b", "c", "d"} {
		for p := range counts[name] {
			want = append(want, fmt.Sprintf("%s-%d", name, p))
		}
	}
	for _, limit := range []int32{-5, 1, 2, 3, 4, 10, 2000} {
		var got []string
		var cursor *kmsg.DescribeTopicPartitionsRequestCursor
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatalf("limit %d: no end", limit)
			}
			resp := describeTopicPartitions(t, h, limit, cursor)
			n := 0
			for _, st := range resp.Topics {
				if st.ErrorCode != 0 || st.AuthorizedOperations != az.AllOperations(az.Topic) || st.IsInternal {
					t.Fatalf("limit %d: topic %+v", limit, st)
				}
				for _, sp := range st.Partitions {
					got = append(got, fmt.Sprintf("%s-%d", *st.Topic, sp.Partition))
					if sp.LeaderID != 1 || sp.EligibleLeaderReplicas == nil || sp.LastKnownELR == nil || len(sp.OfflineReplicas) != 0 {
						t.Fatalf("partition %+v", sp)
					}
					n++
				}
			}
			if n > int(max(limit, 1)) {
				t.Fatalf("limit %d: %d partitions in one page", limit, n)
			}
			if resp.NextCursor == nil {
				break
			}
			cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}

	// The limit used up at a topic's end: the cursor names the next
	// topic at 0.
	resp := describeTopicPartitions(t, h, 3, nil)
	if len(resp.Topics) != 1 || resp.NextCursor == nil || resp.NextCursor.Topic != "b" || resp.NextCursor.Partition != 0 {
		t.Fatalf("exact end: %+v", resp.NextCursor)
	}
	// Named topics: missing ones answered, in name order, from the
	// cursor's topic on.
	resp = describeTopicPartitions(t, h, 100, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "c", Partition: 3}, "zz", "a", "c", "bad/name")
	var seen []string
	for _, st := range resp.Topics {
		seen = append(seen, fmt.Sprintf("%s:%d:%d", *st.Topic, st.ErrorCode, len(st.Partitions)))
	}
	if want := fmt.Sprint([]string{"c:0:1", fmt.Sprintf("zz:%d:0", kerr.UnknownTopicOrPartition.Code)}); fmt.Sprint(seen) != want {
		t.Fatalf("named topics: %v, want %v", seen, want)
	}
	resp = describeTopicPartitions(t, h, 100, nil, "bad/name")
	if resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid name: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	// A cursor outside the named topics, or a negative partition.
	for _, c := range []*kmsg.DescribeTopicPartitionsRequestCursor{{Topic: "b"}, {Topic: "a", Partition: -1}} {
		resp = describeTopicPartitions(t, h, 100, c, "a", "c")
		if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[1].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[0].AuthorizedOperations != authorizedOperationsOmitted {
			t.Fatalf("cursor %+v: %+v", c, resp.Topics)
		}
	}
}

func listConfigResources(t *testing.T, h *Handler, version int16, types ...int8) *kmsg.ListConfigResourcesResponse {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.Version, req.ResourceTypes = version, types
	return roundTrip[*kmsg.ListConfigResourcesResponse](t, h.handleListConfigResources(testRC(), req))
}

func TestListConfigResources(t *testing.T) {
	h := newAdminHandler(t)
	for _, name := range []string{"b", "a"} {
		if _, err := h.createTopic(name, 1, 1, nil, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	show := func(resp *kmsg.ListConfigResourcesResponse) string {
		out := fmt.Sprint(resp.ErrorCode)
		for _, r := range resp.ConfigResources {
			out += fmt.Sprintf(" %d:%s", r.Type, r.Name)
		}
		return out
	}
	for _, c := range []struct {
		version int16
		types   []int8
		want    string
	}{
		{0, nil, "0"},
		{1, nil, "0 8:1 4:1 2:a 2:b"},
		{1, []int8{configResourceTopic, configResourceTopic}, "0 2:a 2:b"},
		{1, []int8{configResourceTopic, configResourceBroker}, "0 4:1 2:a 2:b"},
		{1, []int8{configResourceClientMetrics, configResourceGroup}, "0"},
		{1, []int8{configResourceTopic, 1}, fmt.Sprint(kerr.UnsupportedVersion.Code)},
	} {
		if got := show(listConfigResources(t, h, c.version, c.types...)); got != c.want {
			t.Fatalf("v%d %v: %q, want %q", c.version, c.types, got, c.want)
		}
	}
}
