package replica

import (
	"testing"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// TestRestartKeepsRecreatedTopic replays, as a restarted broker does, the
// metadata of a topic deleted and created again under the same name into a
// replica manager whose log dir holds the new topic's log: its records
// survive, the log is not taken for a stray of the old topic, and no
// delete is left pending (the defect: the old TopicRecord, replayed first,
// made the manager delete the new topic's log as a stray).
func TestRestartKeepsRecreatedTopic(t *testing.T) {
	dir := t.TempDir()
	oldID, newID := uuid.Random(), uuid.Random()
	tp := TopicPartition{Topic: "again", Partition: 0}
	partition := func(id uuid.UUID) metadata.Record {
		return &metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}
	}
	history := [][]metadata.Record{
		{&metadata.TopicRecord{Name: "again", TopicID: oldID}, partition(oldID)},
		{&metadata.RemoveTopicRecord{TopicID: oldID}},
		{&metadata.TopicRecord{Name: "again", TopicID: newID}, partition(newID)},
	}
	// Before the restart: the new topic's log with 100 records.
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := logs.GetOrCreateLog(tp, newID, log.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batch(100, 10), 0); err != nil {
		t.Fatal(err)
	}
	if err := logs.Close(); err != nil {
		t.Fatal(err)
	}

	// The restart: logs loaded from disk, the metadata log replayed.
	logs, err = log.NewManager(log.ManagerConfig{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	loader := metadata.NewLoader(nil)
	m, err := NewManager(Config{NodeID: 1, Logs: logs, Image: loader.Image, ConfigFor: func(*metadata.Topic) log.Config { return log.DefaultConfig() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if err := loader.InstallPublisher(m); err != nil {
		t.Fatal(err)
	}
	loader.HoldUntilCaughtUp()
	for i, recs := range history {
		raw := make([][]byte, len(recs))
		for j, r := range recs {
			raw[j] = metadata.Encode(r)
		}
		if err := loader.HandleCommit(int64(i), 1, raw); err != nil {
			t.Fatal(err)
		}
	}
	if !loader.CaughtUpTo(int64(len(history))) {
		t.Fatal("the loader did not catch up")
	}
	m.DeleteStrayLogs()

	p := m.Partition(tp)
	if p == nil || !p.IsLeader() {
		t.Fatal("the re-created topic's partition is not hosted")
	}
	if p.TopicID != newID || p.Log.TopicID() != newID {
		t.Fatalf("partition topic id %v, log topic id %v; want %v", p.TopicID, p.Log.TopicID(), uuid.UUID(newID))
	}
	if end := p.Log.LogEndOffset(); end != 100 {
		t.Fatalf("log end offset %d after the restart, want 100: the records are gone", end)
	}
}
