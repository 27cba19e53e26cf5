package integration

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// countValues reads every partition of topic from its start to its high
// watermark as it is now and counts each record by the big-endian uint64
// its value starts with (the sequence numbers the replication tests
// produce).
func countValues(t *testing.T, ctx context.Context, seeds, topic string) map[uint64]int {
	t.Helper()
	adm := newAdmin(t, seeds)
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	var want int64
	end.Each(func(o kadm.ListedOffset) {
		offsets[topic][o.Partition] = kgo.NewOffset().AtStart()
		want += o.Offset
	})
	cl := newClient(t, seeds, kgo.ConsumePartitions(offsets))
	seen := map[uint64]int{}
	for read := int64(0); read < want; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s: %v", read, want, topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[binary.BigEndian.Uint64(r.Value)]++
			read++
		})
	}
	return seen
}
