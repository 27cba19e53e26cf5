package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// A raw Produce of one batch of 100 records, 10 of them without a key, to
// a cleanup.policy=compact topic fails with INVALID_RECORD, and the
// response's record_errors name exactly those 10 records, with Kafka's
// error_message (issue 12, point 4; KIP-467).
func TestProduceRecordErrors(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, time.Minute)
	adm := newAdmin(t, b.Seed())
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "compacted"); err != nil {
		t.Fatal(err)
	}
	topicID := describeTopic(t, adm, "compacted").ID
	cl := newClient(t, b.Seed())

	keyless := []int32{3, 7, 11, 20, 33, 48, 50, 64, 81, 99}
	bb := log.NewBatchBuilder(0)
	now := time.Now().UnixMilli()
	for i := int32(0); i < 100; i++ {
		var key []byte
		if !slices.Contains(keyless, i) {
			key = []byte{byte(i)}
		}
		bb.Add(now, key, []byte("value"))
	}
	records, err := bb.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "compacted", topicID // kgo picks the version: name or ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 8 {
		t.Fatalf("kgo sent Produce v%d; record errors need v8+", resp.Version)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != kerr.InvalidRecord {
		t.Fatalf("error %v, want INVALID_RECORD", err)
	}
	var got []int32
	for _, e := range p.ErrorRecords {
		got = append(got, e.RelativeOffset)
		if e.ErrorMessage == nil || *e.ErrorMessage != "compacted topic cannot accept message without key" {
			t.Errorf("record %d: message %v", e.RelativeOffset, e.ErrorMessage)
		}
	}
	if !slices.Equal(got, keyless) {
		t.Fatalf("record_errors name records %v, want %v", got, keyless)
	}
	const wantMsg = "One or more records have been rejected due to 10 record errors in total, and only showing the first three errors at most: " +
		"[RecordError(batchIndex=3, message='compacted topic cannot accept message without key'), " +
		"RecordError(batchIndex=7, message='compacted topic cannot accept message without key'), " +
		"RecordError(batchIndex=11, message='compacted topic cannot accept message without key')]"
	if p.ErrorMessage == nil || *p.ErrorMessage != wantMsg {
		t.Fatalf("error_message %v, want %q", p.ErrorMessage, wantMsg)
	}
	// Nothing of the batch was stored.
	if p.BaseOffset != -1 || strings.Contains(b.Logs.String(), "level=ERROR") {
		t.Fatalf("base offset %d; broker log:\n%s", p.BaseOffset, b.Logs.String())
	}
}
