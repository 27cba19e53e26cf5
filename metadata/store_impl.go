package metadata

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// FileName is the name of the metadata file in Options.Dir.
const FileName = "cluster-metadata.json"

const fileVersion = 1

// state is what the file holds.
type state struct {
	Version        int                          `json:"version"`
	NodeID         int32                        `json:"nodeId"`
	Topics         []Topic                      `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"brokerConfigs,omitempty"`
	NextProducerID int64                        `json:"nextProducerId"`
}

// Store is the durable cluster metadata of one node. See the package doc.
type Store struct {
	opts Options
	log  *slog.Logger
	path string

	notifyMu sync.Mutex // serializes listener calls; taken before mu

	mu      sync.RWMutex
	closed  bool
	topics  map[string]*Topic // authoritative; each *Topic is immutable once published
	byID    map[TopicID]string
	brokers map[string]map[string]string
	nextPID int64
	pending []Change // durable, not yet delivered to listeners

	// byName and byIDLookup mirror topics for the produce and fetch paths:
	// lock-free reads of immutable *Topic values, updated (under mu)
	// only once a change is durable.
	byName     sync.Map // string -> *Topic
	byIDLookup sync.Map // TopicID -> *Topic

	lmu       sync.Mutex
	listeners []listener
	nextLID   int
}

type listener struct {
	id int
	fn func(Change)
}

// Open loads the store from opts.Dir, creating the directory if needed.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("metadata: no directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	s := &Store{
		opts:    opts,
		log:     opts.Logger,
		path:    filepath.Join(opts.Dir, FileName),
		topics:  make(map[string]*Topic),
		byID:    make(map[TopicID]string),
		brokers: make(map[string]map[string]string),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	_ = os.Remove(s.path + ".tmp") // a write interrupted by a crash
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("metadata: reading %s: %w", s.path, err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("metadata: %s is corrupt: %v", s.path, err)
	}
	if st.Version != fileVersion {
		return nil, fmt.Errorf("metadata: %s has version %d, expected %d", s.path, st.Version, fileVersion)
	}
	if st.NodeID != opts.NodeID {
		return nil, fmt.Errorf("metadata: %s was written by node %d, but this is node %d", s.path, st.NodeID, opts.NodeID)
	}
	for i := range st.Topics {
		t := st.Topics[i]
		if t.Name == "" || t.ID.IsZero() || s.topics[t.Name] != nil || s.byID[t.ID] != "" {
			return nil, fmt.Errorf("metadata: %s is corrupt: bad or duplicate topic %q (%s)", s.path, t.Name, t.ID)
		}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		s.topics[t.Name] = &t
		s.byID[t.ID] = t.Name
		s.publish(&t)
	}
	for r, c := range st.BrokerConfigs {
		s.brokers[r] = c
	}
	s.nextPID = st.NextProducerID
	return s, nil
}

// Close closes the store; later changes fail. Idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// Dir returns the directory of the store.
func (s *Store) Dir() string { return s.opts.Dir }

func copyTopic(t *Topic) Topic {
	c := *t
	c.Partitions = make([]Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		p.Replicas = slices.Clone(p.Replicas)
		p.ISR = slices.Clone(p.ISR)
		c.Partitions[i] = p
	}
	c.Configs = maps.Clone(t.Configs)
	if c.Configs == nil {
		c.Configs = map[string]string{}
	}
	return c
}

// Topics returns every topic, sorted by name.
func (s *Store) Topics() []Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Topic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Topic returns a topic by name.
func (s *Store) Topic(name string) (Topic, bool) {
	if t, ok := s.byName.Load(name); ok {
		return *t.(*Topic), true
	}
	return Topic{}, false
}

// TopicByID returns a topic by ID.
func (s *Store) TopicByID(id TopicID) (Topic, bool) {
	if t, ok := s.byIDLookup.Load(id); ok {
		return *t.(*Topic), true
	}
	return Topic{}, false
}

// publish makes t what lock-free lookups return for its name and ID; mu
// held for writing.
func (s *Store) publish(t *Topic) {
	s.byName.Store(t.Name, t)
	s.byIDLookup.Store(t.ID, t)
}

func (s *Store) unpublish(t *Topic) {
	s.byName.Delete(t.Name)
	s.byIDLookup.Delete(t.ID)
}

var errClosed = errors.New("metadata: store is closed")

// partitionsFor builds partitions first..first+n-1 from an assignment (nil:
// every partition on this node only).
func (s *Store) partitionsFor(first, n int32, assignment [][]int32, rf int) ([]Partition, error) {
	if assignment != nil && int32(len(assignment)) != n {
		return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "Attempted to add %d partition(s), but %d assignment(s) were specified.", n, len(assignment))
	}
	parts := make([]Partition, n)
	for i := range parts {
		replicas := []int32{s.opts.NodeID}
		if assignment != nil {
			replicas = slices.Clone(assignment[i])
			if len(replicas) == 0 {
				return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
			}
			sorted := slices.Sorted(slices.Values(replicas))
			if len(slices.Compact(sorted)) != len(replicas) {
				return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment for partition %d includes a broker more than once.", first+int32(i))
			}
			if rf > 0 && len(replicas) != rf {
				return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
			}
			rf = len(replicas)
		}
		leader := replicas[0]
		if slices.Contains(replicas, s.opts.NodeID) {
			leader = s.opts.NodeID
		}
		parts[i] = Partition{Index: first + int32(i), Leader: leader, Replicas: replicas, ISR: slices.Clone(replicas)}
	}
	return parts, nil
}

// CreateTopic creates a topic with a new random ID. assignment, if not
// nil, gives each partition's replicas (len(assignment) == partitions);
// nil places every partition on this node. The leader is this node (or the
// first replica), the leader epoch 0, the ISR all replicas. Names are
// validated by the caller (kapi); the store checks existence and counts.
func (s *Store) CreateTopic(name string, partitions int32, assignment [][]int32, configs map[string]string, internal bool) (Topic, error) {
	if name == "" {
		return Topic{}, apierr.Errorf(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	}
	if partitions <= 0 {
		return Topic{}, apierr.Errorf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	parts, err := s.partitionsFor(0, partitions, assignment, 0)
	if err != nil {
		return Topic{}, err
	}
	return s.mutate(func() (Change, error) {
		if s.topics[name] != nil {
			return Change{}, apierr.Errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
		}
		id := uuid.Random()
		for s.byID[id] != "" {
			id = uuid.Random()
		}
		t := &Topic{Name: name, ID: id, Internal: internal, Partitions: parts, Configs: maps.Clone(configs)}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		s.topics[name] = t
		s.byID[id] = name
		return Change{Kind: TopicCreated, Topic: copyTopic(t)}, nil
	}, func(c Change) {
		delete(s.topics, name)
		delete(s.byID, c.Topic.ID)
	})
}

// DeleteTopic deletes a topic and returns it as it was.
func (s *Store) DeleteTopic(name string) (Topic, error) {
	var old *Topic
	return s.mutate(func() (Change, error) {
		old = s.topics[name]
		if old == nil {
			return Change{}, apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
		}
		delete(s.topics, name)
		delete(s.byID, old.ID)
		return Change{Kind: TopicDeleted, Topic: copyTopic(old)}, nil
	}, func(Change) {
		s.topics[name] = old
		s.byID[old.ID] = name
	})
}

// CreatePartitions grows a topic to total partitions. assignment, if not
// nil, gives the replicas of each new partition (total - current of them).
func (s *Store) CreatePartitions(name string, total int32, assignment [][]int32) (Topic, error) {
	var t *Topic
	return s.mutate(func() (Change, error) {
		t = s.topics[name]
		if t == nil {
			return Change{}, apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
		}
		cur := int32(len(t.Partitions))
		switch {
		case total == cur:
			return Change{}, apierr.Errorf(kerr.InvalidPartitions, "Topic already has %d partition(s).", cur)
		case total < cur:
			return Change{}, apierr.Errorf(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", name, cur, total)
		}
		rf := 0
		if cur > 0 {
			rf = len(t.Partitions[0].Replicas)
		}
		parts, err := s.partitionsFor(cur, total-cur, assignment, rf)
		if err != nil {
			return Change{}, err
		}
		nt := *t
		nt.Partitions = append(slices.Clip(t.Partitions), parts...)
		s.topics[name] = &nt
		return Change{Kind: PartitionsCreated, Topic: copyTopic(&nt), NewPartitions: total - cur}, nil
	}, func(Change) { s.topics[name] = t })
}

// AlterTopicConfigs replaces a topic's config overrides.
func (s *Store) AlterTopicConfigs(name string, configs map[string]string) (Topic, error) {
	var t *Topic
	return s.mutate(func() (Change, error) {
		t = s.topics[name]
		if t == nil {
			return Change{}, apierr.Errorf(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
		}
		nt := *t
		nt.Configs = maps.Clone(configs)
		if nt.Configs == nil {
			nt.Configs = map[string]string{}
		}
		s.topics[name] = &nt
		return Change{Kind: TopicConfigChanged, Topic: copyTopic(&nt), ConfigNames: changedNames(t.Configs, nt.Configs)}, nil
	}, func(Change) { s.topics[name] = t })
}

// BrokerConfigs returns the dynamic configs of a broker resource ("" for
// the cluster default, or a node id).
func (s *Store) BrokerConfigs(resource string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := maps.Clone(s.brokers[resource])
	if c == nil {
		c = map[string]string{}
	}
	return c
}

// BrokerConfigResources returns the broker resources that have dynamic
// configs, sorted ("" first), for the broker to install at start-up.
func (s *Store) BrokerConfigResources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.brokers))
	for r := range s.brokers {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// AlterBrokerConfigs replaces the dynamic configs of a broker resource; an
// empty set removes the resource. The caller validates the configs.
func (s *Store) AlterBrokerConfigs(resource string, configs map[string]string) error {
	var before map[string]string
	var had bool
	_, err := s.mutate(func() (Change, error) {
		before, had = s.brokers[resource]
		if len(configs) == 0 {
			delete(s.brokers, resource)
		} else {
			s.brokers[resource] = maps.Clone(configs)
		}
		return Change{Kind: BrokerConfigChanged, BrokerResource: resource, ConfigNames: changedNames(before, configs)}, nil
	}, func(Change) {
		if had {
			s.brokers[resource] = before
		} else {
			delete(s.brokers, resource)
		}
	})
	return err
}

// AllocateProducerIDs reserves n producer ids and returns the first, as
// Kafka's controller hands out ProducerIdsRecord blocks. The counter is
// durable: ids are never handed out twice, even across restarts.
func (s *Store) AllocateProducerIDs(n int) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("metadata: cannot allocate %d producer ids", n)
	}
	var first int64
	_, err := s.mutate(func() (Change, error) {
		first = s.nextPID
		if first > 1<<63-1-int64(n) {
			return Change{}, apierr.Errorf(kerr.UnknownServerError, "producer ids exhausted")
		}
		s.nextPID += int64(n)
		return Change{}, nil // nothing for listeners
	}, func(Change) { s.nextPID = first })
	return first, err
}

// Subscribe registers a listener called with every change, after it is
// durable, in order, outside the store's lock. It must not change the
// store. The returned function unsubscribes.
func (s *Store) Subscribe(fn func(Change)) (unsubscribe func()) {
	s.lmu.Lock()
	id := s.nextLID
	s.nextLID++
	s.listeners = append(s.listeners, listener{id, fn})
	s.lmu.Unlock()
	return func() {
		s.lmu.Lock()
		s.listeners = slices.DeleteFunc(s.listeners, func(l listener) bool { return l.id == id })
		s.lmu.Unlock()
	}
}

// mutate applies apply under the lock, persists the state, rolls back
// with undo if the write fails, then delivers the pending changes.
func (s *Store) mutate(apply func() (Change, error), undo func(Change)) (Topic, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Topic{}, errClosed
	}
	c, err := apply()
	if err != nil {
		s.mu.Unlock()
		return Topic{}, err
	}
	if err := s.writeLocked(); err != nil {
		undo(c)
		s.mu.Unlock()
		s.log.Error("writing cluster metadata failed", "file", s.path, "err", err)
		return Topic{}, apierr.Errorf(kerr.KafkaStorageError, "writing cluster metadata: %v", err)
	}
	switch c.Kind {
	case TopicCreated, PartitionsCreated, TopicConfigChanged:
		s.publish(s.topics[c.Topic.Name])
	case TopicDeleted:
		s.unpublish(&c.Topic)
	}
	if c.Kind != 0 {
		s.pending = append(s.pending, c)
	}
	s.mu.Unlock()
	s.deliver()
	return c.Topic, nil
}

// deliver calls the listeners with every pending change, in order. The
// goroutine holding notifyMu delivers for everyone, so when any mutate
// returns, its change (and every earlier one) has been delivered.
func (s *Store) deliver() {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	for {
		s.mu.Lock()
		pending := s.pending
		s.pending = nil
		s.mu.Unlock()
		if len(pending) == 0 {
			return
		}
		s.lmu.Lock()
		ls := slices.Clone(s.listeners)
		s.lmu.Unlock()
		for _, c := range pending {
			for _, l := range ls {
				l.fn(c)
			}
		}
	}
}

// writeLocked persists the state atomically: tmp file, fsync, rename,
// fsync of the directory.
func (s *Store) writeLocked() error {
	st := state{Version: fileVersion, NodeID: s.opts.NodeID, NextProducerID: s.nextPID, Topics: make([]Topic, 0, len(s.topics))}
	for _, t := range s.topics {
		st.Topics = append(st.Topics, *t)
	}
	sort.Slice(st.Topics, func(i, j int) bool { return st.Topics[i].Name < st.Topics[j].Name })
	if len(s.brokers) > 0 {
		st.BrokerConfigs = s.brokers
	}
	b, err := json.MarshalIndent(&st, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return log.WriteFileAtomic(log.OSFS{}, s.path, b)
}

// changedNames lists the keys added, removed or changed, sorted.
func changedNames(before, after map[string]string) []string {
	var names []string
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			names = append(names, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}
