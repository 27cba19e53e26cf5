package metadata

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/uuid"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	a, err := s.CreateTopic("a", 3, nil, map[string]string{"retention.ms": "1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID.IsZero() || a.ID == uuid.MetadataTopicID || len(a.Partitions) != 3 || a.Partitions[2].Leader != 1 ||
		a.Partitions[2].Index != 2 || len(a.Partitions[0].ISR) != 1 {
		t.Fatalf("%+v", a)
	}
	if _, err := s.CreateTopic("a", 1, nil, nil, false); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("got %v", err)
	}
	if _, err := s.CreateTopic("__consumer_offsets", 2, nil, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic("gone", 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic("gone"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("got %v", err)
	}
	if _, err := s.CreatePartitions("a", 5, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePartitions("a", 5, nil); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("got %v", err)
	}
	if _, err := s.CreatePartitions("a", 7, [][]int32{{1}}); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("got %v", err)
	}
	if _, err := s.AlterTopicConfigs("a", map[string]string{"segment.ms": "5"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AlterBrokerConfigs("", map[string]string{"log.retention.ms": "9"}); err != nil {
		t.Fatal(err)
	}
	first, err := s.AllocateProducerIDs(1000)
	if err != nil || first != 0 {
		t.Fatal(first, err)
	}
	s.Close()

	s2 := open(t, dir)
	got, ok := s2.Topic("a")
	if !ok || got.ID != a.ID || len(got.Partitions) != 5 || got.Configs["segment.ms"] != "5" || got.Configs["retention.ms"] != "" {
		t.Fatalf("%+v", got)
	}
	if byID, ok := s2.TopicByID(a.ID); !ok || byID.Name != "a" {
		t.Fatal("by id")
	}
	if names := topicNames(s2.Topics()); names != "__consumer_offsets,a" {
		t.Fatal(names)
	}
	if ts := s2.Topics(); !ts[0].Internal {
		t.Fatal("internal lost")
	}
	if c := s2.BrokerConfigs(""); c["log.retention.ms"] != "9" {
		t.Fatal(c)
	}
	if next, _ := s2.AllocateProducerIDs(10); next != 1000 {
		t.Fatal(next)
	}
	// Snapshots: a change publishes new values and leaves what a
	// reader already holds as it was.
	before := len(got.Partitions)
	beforeCfg := maps.Clone(got.Configs)
	if _, err := s2.CreatePartitions("a", int32(before+2), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.AlterTopicConfigs("a", map[string]string{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	if len(got.Partitions) != before || !maps.Equal(got.Configs, beforeCfg) {
		t.Fatal("a held snapshot changed under its reader")
	}
	if again, _ := s2.Topic("a"); len(again.Partitions) != before+2 || again.Configs["x"] != "y" {
		t.Fatalf("the change is not visible: %d partitions, configs %v", len(again.Partitions), again.Configs)
	}
}

func topicNames(ts []Topic) string {
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}

func TestCorruptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Options{Dir: dir, NodeID: 1})
	if err == nil || !strings.Contains(err.Error(), FileName) {
		t.Fatalf("got %v", err)
	}
	// Another node's file is refused too.
	dir2 := t.TempDir()
	s := open(t, dir2)
	if _, err := s.CreateTopic("t", 1, nil, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir2, NodeID: 2}); err == nil {
		t.Fatal("opened another node's metadata")
	}
}

func TestListenersInOrder(t *testing.T) {
	s := open(t, t.TempDir())
	var mu sync.Mutex
	var got []string
	unsub := s.Subscribe(func(c Change) {
		// Reading the store from a listener is allowed.
		s.Topics()
		mu.Lock()
		got = append(got, fmt.Sprintf("%d:%s", c.Kind, c.Topic.Name))
		mu.Unlock()
	})
	s.CreateTopic("x", 1, nil, nil, false)
	s.CreatePartitions("x", 2, nil)
	s.AlterTopicConfigs("x", map[string]string{"a": "b"})
	s.DeleteTopic("x")
	s.AlterBrokerConfigs("1", map[string]string{"k": "v"})
	unsub()
	s.CreateTopic("y", 1, nil, nil, false)
	want := fmt.Sprintf("%d:x %d:x %d:x %d:x %d:", TopicCreated, PartitionsCreated, TopicConfigChanged, TopicDeleted, BrokerConfigChanged)
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	var mu sync.Mutex
	seen := map[string]bool{}
	s.Subscribe(func(c Change) {
		mu.Lock()
		defer mu.Unlock()
		if c.Kind == TopicCreated {
			seen[c.Topic.Name] = true
		}
	})
	var wg sync.WaitGroup
	ids := make([]int64, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("t%d", i)
			if _, err := s.CreateTopic(name, 2, nil, nil, false); err != nil {
				t.Error(err)
				return
			}
			// After CreateTopic returns its change has been delivered.
			mu.Lock()
			ok := seen[name]
			mu.Unlock()
			if !ok {
				t.Errorf("%s returned before its listener ran", name)
			}
			s.Topics()
			ids[i], _ = s.AllocateProducerIDs(10)
		}()
	}
	wg.Wait()
	uniq := map[int64]bool{}
	for _, id := range ids {
		uniq[id] = true
	}
	if len(uniq) != 16 || len(s.Topics()) != 16 {
		t.Fatalf("ids %v topics %d", ids, len(s.Topics()))
	}
	s.Close()
	if s2 := open(t, dir); len(s2.Topics()) != 16 {
		t.Fatal("lost topics")
	}
}

func TestTopicID(t *testing.T) {
	for range 1000 {
		id := uuid.Random()
		if id.IsZero() || id.String()[0] == '-' || id[6]>>4 != 4 {
			t.Fatal(id)
		}
		back, err := uuid.Parse(id.String())
		if err != nil || back != id {
			t.Fatal(err)
		}
	}
}
