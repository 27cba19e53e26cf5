package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// A data dir written by the JSON metadata store of earlier versions is
// upgraded at the first start: its topics keep their IDs, partitions,
// configs and records, producer ids are not reused, and the file is kept
// as cluster-metadata.json.migrated.
func TestUpgradeFromJSONStore(t *testing.T) {
	dir := t.TempDir()
	id := uuid.Random()
	// A partition log with three records, as the old broker left it.
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	tp := log.TopicPartition{Topic: "legacy", Partition: 1}
	l, err := logs.GetOrCreateLog(tp, id, log.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	bb := log.NewBatchBuilder(0)
	for _, v := range []string{"a", "b", "c"} {
		bb.Add(time.Now().UnixMilli(), nil, []byte(v))
	}
	raw, _ := bb.Build(nil)
	if _, err := l.Append(raw, 0); err != nil {
		t.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if _, err := logs.GetOrCreateLog(log.TopicPartition{Topic: "legacy", Partition: 0}, id, log.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	if err := logs.Close(); err != nil {
		t.Fatal(err)
	}
	old := map[string]any{
		"version": 1, "nodeId": 1, "nextProducerId": 5000,
		"topics": []any{map[string]any{
			"Name": "legacy", "ID": id.String(), "Configs": map[string]string{"retention.ms": "86400000"},
			"Partitions": []any{
				map[string]any{"Index": 0, "Leader": 1, "LeaderEpoch": 0, "Replicas": []int{1}, "ISR": []int{1}},
				map[string]any{"Index": 1, "Leader": 1, "LeaderEpoch": 0, "Replicas": []int{1}, "ISR": []int{1}},
			},
		}},
		"brokerConfigs": map[string]any{"": map[string]string{"log.retention.ms": "7200000"}},
	}
	b, _ := json.Marshal(old)
	if err := os.WriteFile(filepath.Join(dir, "cluster-metadata.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}

	br := startBroker(t, dir)
	adm := newAdmin(t, br.Seed())
	ctx := ctxTimeout(t, 20*time.Second)
	td := describeTopic(t, adm, "legacy")
	if uuid.UUID(td.ID) != id || len(td.Partitions) != 2 {
		t.Fatalf("upgraded topic: id %v (want %v), %d partitions", td.ID, id, len(td.Partitions))
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := rc.On("legacy", nil)
	var retention string
	for _, c := range cfg.Configs {
		if c.Key == "retention.ms" && c.Value != nil {
			retention = *c.Value
		}
	}
	if retention != "86400000" {
		t.Fatalf("retention.ms after upgrade: %q", retention)
	}
	cons := newClient(t, br.Seed(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"legacy": {1: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 3 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "a" || got[2] != "c" {
		t.Fatalf("records after upgrade: %v", got)
	}
	// Producer ids continue after the old counter.
	prod := newClient(t, br.Seed())
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "legacy", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if pid, _, _ := prod.ProducerID(ctx); pid < 5000 {
		t.Fatalf("producer id %d reuses the old range (< 5000)", pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster-metadata.json.migrated")); err != nil {
		t.Fatalf("the old file is not kept as .migrated: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster-metadata.json")); err == nil {
		t.Fatal("cluster-metadata.json is still there: the next start would upgrade again")
	}
}
