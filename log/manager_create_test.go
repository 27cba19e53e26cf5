package log

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// New logs spread over the dirs by count (kept per dir, not recounted),
// deleting a batch keeps the counts right, and a log whose
// partition.metadata was lost (written without fsync at creation) gets
// its topic ID back from the next GetOrCreateLog.
func TestCreateLogsBalanceAndTopicIDRepair(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m := ltManager(t, dirs, newLtClock(), nil, nil)
	defer m.Close()
	id := [16]byte{1, 2, 3}
	var tps []TopicPartition
	for i := range 10 {
		tp := TopicPartition{Topic: "spread", Partition: int32(i)}
		if _, err := m.GetOrCreateLog(tp, id, ltConfig()); err != nil {
			t.Fatal(err)
		}
		tps = append(tps, tp)
	}
	for _, d := range dirs {
		if n := len(m.logsIn(&logDir{path: d})); n != 5 {
			t.Fatalf("%s holds %d logs, want 5", d, n)
		}
	}
	// Delete the five in the first dir: the next five new logs go there.
	var first []TopicPartition
	for _, l := range m.logsIn(&logDir{path: dirs[0]}) {
		first = append(first, l.tp)
	}
	if err := m.DeleteLogs(first); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		l, err := m.GetOrCreateLog(TopicPartition{Topic: "more", Partition: int32(i)}, id, ltConfig())
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(l.Dir()) != dirs[0] {
			t.Fatalf("new log %d in %s, want %s", i, filepath.Dir(l.Dir()), dirs[0])
		}
	}

	// A log without partition.metadata (lost in a crash) takes the ID.
	l := m.GetLog(tps[1])
	if err := os.Remove(filepath.Join(l.Dir(), PartitionMetadataFile)); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.topicID = [16]byte{}
	l.mu.Unlock()
	if _, err := m.GetOrCreateLog(tps[1], id, ltConfig()); err != nil {
		t.Fatal(err)
	}
	got, ok, err := readPartitionMetadata(OSFS{}, l.Dir())
	if err != nil || !ok || got != id || l.TopicID() != id {
		t.Fatalf("partition.metadata after repair: %x %v %v, log has %x", got, ok, err, l.TopicID())
	}
}

// BenchmarkGetOrCreateLog creates logs in a manager that already holds
// b.N of them: the cost per log must not grow with their number.
func BenchmarkGetOrCreateLog(b *testing.B) {
	m, err := NewManager(ManagerConfig{Dirs: []string{b.TempDir()}, ConfigFor: func(string) Config { return DefaultConfig() }})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	id := [16]byte{9}
	b.ResetTimer()
	for i := range b.N {
		if _, err := m.GetOrCreateLog(TopicPartition{Topic: fmt.Sprintf("t%d", i%100), Partition: int32(i)}, id, DefaultConfig()); err != nil {
			b.Fatal(err)
		}
	}
}
