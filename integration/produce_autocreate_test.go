package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/moldau/moldau/log"
)

// rawBatch encodes one uncompressed magic-v2 batch holding value, as a
// producer that skips Metadata would send it.
func rawBatch(value []byte) []byte {
	b := log.NewBatchBuilder(0)
	b.Add(time.Now().UnixMilli(), nil, value)
	raw, _ := b.Build(nil)
	return raw
}

// A Produce to a topic that does not exist creates it when
// auto.create.topics.enable is set, and is UNKNOWN_TOPIC_OR_PARTITION when
// it is not.
func TestProduceAutoCreatesTopic(t *testing.T) {
	for _, auto := range []bool{true, false} {
		b := startBroker(t, "", "auto.create.topics.enable="+map[bool]string{true: "true", false: "false"}[auto])
		// Named topics: Produce v12 (v13 names topics by ID).
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(0, 12)
		cl := newClient(t, b.Seed(), kgo.MaxVersions(versions))
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "made-by-produce"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch([]byte("hello"))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		got := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		tds, err := newAdmin(t, b.Seed()).ListTopics(ctxTimeout(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		exists := tds.Has("made-by-produce")
		switch {
		case auto && (got != nil || !exists || resp.Topics[0].Partitions[0].BaseOffset != 0):
			t.Errorf("with auto-creation: error %v, base offset %d, topic exists %v", got, resp.Topics[0].Partitions[0].BaseOffset, exists)
		case !auto && (got != kerr.UnknownTopicOrPartition || exists):
			t.Errorf("without auto-creation: error %v (want UNKNOWN_TOPIC_OR_PARTITION), topic exists %v", got, exists)
		}
	}
}
