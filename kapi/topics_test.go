package kapi

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testRC() *RequestContext {
	return &RequestContext{Request: &Request{Listener: "PLAINTEXT"}, ctx: context.Background()}
}

// roundTrip encodes a response at its version and decodes it again, so a
// test sees what a client would.
func roundTrip[T kmsg.Response](t *testing.T, resp kmsg.Response) T {
	t.Helper()
	b := resp.AppendTo(nil)
	back := resp.RequestKind().ResponseKind()
	back.SetVersion(resp.GetVersion())
	if err := back.ReadFrom(b); err != nil {
		t.Fatalf("decoding %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return back.(T)
}

func TestCreateTopicChecks(t *testing.T) {
	h := newAdminHandler(t)
	if _, err := h.createTopic("a.b", -1, -1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		assignment [][]int32
		configs    map[string]string
		want       *kerr.Error
	}{
		{"a_b", 1, 1, nil, nil, kerr.InvalidTopicException},
		{"a.b", 1, 1, nil, nil, kerr.TopicAlreadyExists},
		{"__cluster_metadata", 1, 1, nil, nil, kerr.InvalidRequest},
		{"t", 1, 3, nil, nil, kerr.InvalidReplicationFactor},
		{"t", 1, 0, nil, nil, kerr.InvalidReplicationFactor},
		{"t", 0, 1, nil, nil, kerr.InvalidPartitions},
		{"t", -2, 1, nil, nil, kerr.InvalidPartitions},
		{"t", 1, 1, nil, map[string]string{"nope": "1"}, kerr.InvalidConfig},
		{"t", 1, 1, nil, map[string]string{"retention.ms": "x"}, kerr.InvalidConfig},
		{"t", -1, -1, [][]int32{{2}}, nil, kerr.InvalidReplicaAssignment},
		{"t", -1, -1, [][]int32{{1, 1}}, nil, kerr.InvalidReplicaAssignment},
		{"t", -1, -1, [][]int32{{}}, nil, kerr.InvalidReplicaAssignment},
		{"t", 2, -1, [][]int32{{1}}, nil, kerr.InvalidRequest},
	} {
		_, err := h.createTopic(tc.name, tc.partitions, tc.rf, tc.assignment, tc.configs, false)
		if !errors.Is(err, tc.want) {
			t.Errorf("%+v: got %v, want %s", tc, err, tc.want.Message)
		}
	}
	top, err := h.createTopic("v", 3, 1, nil, nil, true)
	if err != nil || len(top.Partitions) != 3 {
		t.Fatal(top, err)
	}
	if _, ok := h.image().Topic("v"); ok {
		t.Fatal("validate_only created the topic")
	}
}
