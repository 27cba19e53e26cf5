package share

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
	"github.com/moldau/moldau/log"
)

var topicA = [16]byte{0xa, 1, 2, 3}

// recordTypes are the types of the records written to partition p, with
// tombstones as -1, in order.
func recordTypes(t *testing.T, l *runtimetest.MemLog, p int32) []int16 {
	t.Helper()
	var out []int16
	for _, batch := range l.Batches(log.TopicPartition{Topic: metadata.ShareGroupStateTopic, Partition: p}) {
		it := log.NewRecordIter(batch[log.BatchHeaderSize:])
		var r log.Record
		for {
			ok, err := it.Next(&r)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			typ, _, _, err := parseKey(r.Key)
			if err != nil {
				t.Fatal(err)
			}
			if r.Value == nil {
				typ = -1
			}
			out = append(out, typ)
		}
	}
	return out
}

// Initialize, then writes: the state read back is the batches merged in
// order, and the records are a snapshot, then updates, then a snapshot
// after every share.coordinator.snapshot.update.records.per.snapshot
// updates (Kafka counts them from 0 after the first update following a
// snapshot, so the first cycle has one update more).
func TestWriteMergesAndSnapshotsOnCadence(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SnapshotUpdateRecordsPerSnapshot = 3
	ts := newTestService(t, cfg, 1)
	k := Key{GroupID: "g", TopicID: topicA, Partition: 0}
	must(t, ts.initialize(k, 1, 0))

	var model []StateBatch
	start := int64(0)
	for i := range int64(10) {
		first := i * 10
		batches := []StateBatch{b(first, first+9, DeliveryAcknowledged, 1), b(first+5, first+7, DeliveryArchived, 2)}
		newStart := int64(-1)
		if i == 6 {
			newStart = 30 // the start offset moves: older batches go
		}
		must(t, ts.write(k, PartitionState{StateEpoch: 1, LeaderEpoch: 0, StartOffset: newStart, DeliveryCompleteCount: int32(i), Batches: batches}))
		if newStart != -1 {
			start = newStart
		}
		model = combineStateBatches(model, combineStateBatches(nil, batches, newStart), start)
	}
	st, err := ts.read(k, 0)
	must(t, err)
	if st.StartOffset != 30 || st.StateEpoch != 1 || st.DeliveryCompleteCount != 9 || !slices.Equal(st.Batches, model) {
		t.Fatalf("read %+v, want start 30, state epoch 1, count 9, batches %v", st, model)
	}
	for _, x := range st.Batches {
		if x.FirstOffset < 30 {
			t.Fatalf("batch %v below the start offset survived", x)
		}
	}
	want := []int16{0, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1}
	if got := recordTypes(t, ts.log, 0); !slices.Equal(got, want) {
		t.Fatalf("record types %v, want %v", got, want)
	}
}

// A shard loaded from the log holds exactly the state the live shard
// built: snapshots, updates, a tombstone and a re-initialized key.
func TestReplayEqualsLiveState(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SnapshotUpdateRecordsPerSnapshot = 2
	l := runtimetest.NewMemLog()
	ts := newTestServiceOn(t, cfg, 3, l)
	var keys []Key
	for g := range 4 {
		for p := range int32(3) {
			keys = append(keys, Key{GroupID: string(rune('a' + g)), TopicID: topicA, Partition: p})
		}
	}
	for _, k := range keys {
		must(t, ts.initialize(k, 2, 5))
		for i := range int64(6) {
			must(t, ts.write(k, PartitionState{StateEpoch: 2, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1,
				Batches: []StateBatch{b(5+i*3, 9+i*3, DeliveryAvailable, int16(i%3)), b(6+i*3, 6+i*3, DeliveryAcknowledged, 1)}}))
		}
		_, err := ts.read(k, 4) // records leader epoch 4
		must(t, err)
	}
	must(t, ts.remove(keys[0]))
	must(t, ts.remove(keys[1]))
	must(t, ts.initialize(keys[1], 3, 100))
	live := ts.states()
	if _, ok := live[keys[0]]; ok || len(live) != len(keys)-1 {
		t.Fatalf("live state has %d keys, deleted key present: %v", len(live), ok)
	}

	reloaded := newTestServiceOn(t, cfg, 3, l)
	if got := reloaded.states(); !reflect.DeepEqual(got, live) {
		t.Fatalf("replayed state differs:\n got %v\nwant %v", got, live)
	}
	st, err := reloaded.read(keys[2], 4)
	must(t, err)
	if st.LeaderEpoch != 4 {
		t.Fatalf("leader epoch after replay %d, want 4", st.LeaderEpoch)
	}
}

// Fencing and refusals, with Kafka's error codes.
func TestFencingAndRefusals(t *testing.T) {
	ts := newTestService(t, DefaultConfig(), 1)
	k := Key{GroupID: "g", TopicID: topicA, Partition: 0}
	w := func(stateEpoch, leaderEpoch int32) error {
		return ts.write(k, PartitionState{StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: -1, DeliveryCompleteCount: -1})
	}
	if err := w(0, 0); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("write before initialize: %v, want INVALID_REQUEST", err)
	}
	if _, err := ts.read(k, 0); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("read before initialize: %v, want INVALID_REQUEST", err)
	}
	st, err := ts.summary(k, 0)
	if err != nil || st.StartOffset != -1 || st.StateEpoch != 0 || st.LeaderEpoch != 0 || st.DeliveryCompleteCount != -1 {
		t.Fatalf("summary before initialize: %+v, %v; want start -1, epochs 0, count -1", st, err)
	}
	must(t, ts.initialize(k, 5, -1))
	if st, err = ts.summary(k, 0); err != nil || st.StartOffset != -1 || st.StateEpoch != 5 || st.DeliveryCompleteCount != -1 {
		t.Fatalf("summary after initialize without a start offset: %+v, %v", st, err)
	}
	must(t, ts.initialize(k, 5, 10))
	if st, err = ts.summary(k, 0); err != nil || st.StartOffset != 10 || st.DeliveryCompleteCount != 0 {
		t.Fatalf("summary after initialize at 10: %+v, %v; want count 0", st, err)
	}
	if err := ts.initialize(k, 4, 0); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("initialize at an older state epoch: %v, want FENCED_STATE_EPOCH", err)
	}
	if _, err := ts.read(k, 3); err != nil {
		t.Fatal(err)
	}
	if st, err = ts.summary(k, 0); err != nil || st.LeaderEpoch != 3 {
		t.Fatalf("summary after a read at leader epoch 3: %+v, %v", st, err)
	}
	for _, c := range []struct {
		name              string
		stateEp, leaderEp int32
		want              error
	}{
		{"older leader epoch", 5, 2, kerr.FencedLeaderEpoch},
		{"older state epoch", 4, 3, kerr.FencedStateEpoch},
		{"no epochs", -1, -1, nil},
		{"current epochs", 5, 3, nil},
		{"newer epochs", 6, 7, nil},
	} {
		if err := w(c.stateEp, c.leaderEp); !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := ts.read(k, 2); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("read at an older leader epoch: %v, want FENCED_LEADER_EPOCH", err)
	}
	// A write does not move the recorded leader epoch; only a read does.
	if st, _ = ts.summary(k, 0); st.LeaderEpoch != 3 {
		t.Fatalf("leader epoch %d after writes, want 3", st.LeaderEpoch)
	}
	neg := Key{GroupID: "g", TopicID: topicA, Partition: -1}
	if err := ts.initialize(neg, 0, 0); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("negative partition: %v, want INVALID_REQUEST", err)
	}
	must(t, ts.remove(k))
	must(t, ts.remove(k)) // no state: still fine
	if st, err = ts.summary(k, 0); err != nil || st.StartOffset != -1 {
		t.Fatalf("summary after delete: %+v, %v", st, err)
	}
}

// The metadata check: a topic or partition the image does not have.
func TestUnknownTopicPartition(t *testing.T) {
	s := NewService(Options{Log: runtimetest.NewMemLog(), NumPartitions: func() int32 { return 1 },
		Topics: func(id [16]byte) (int32, bool) { return 2, id == topicA }})
	t.Cleanup(s.Close)
	ts := &testService{Service: s, t: t, log: nil, parts: 1, epoch: 0}
	ts.elect()
	for _, k := range []Key{{GroupID: "g", TopicID: [16]byte{9}, Partition: 0}, {GroupID: "g", TopicID: topicA, Partition: 2}} {
		if err := ts.initialize(k, 0, 0); !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("%v: %v, want UNKNOWN_TOPIC_OR_PARTITION", k, err)
		}
	}
}

// Without a shard for the key's partition the answer is NOT_COORDINATOR.
func TestNotCoordinator(t *testing.T) {
	s := NewService(Options{Log: runtimetest.NewMemLog(), NumPartitions: func() int32 { return 1 }})
	t.Cleanup(s.Close)
	ts := &testService{Service: s, t: t, parts: 1}
	k := Key{GroupID: "g", TopicID: topicA}
	if err := ts.initialize(k, 0, 0); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("%v, want NOT_COORDINATOR", err)
	}
}

// PartitionFor is Kafka's: abs(String.hashCode("group:topicId:partition"))
// % partitions, the topic id as Kafka prints it.
func TestPartitionFor(t *testing.T) {
	id := [16]byte{0x52, 0x3e, 0x70, 0x9f, 0xf1, 0x6a, 0x4d, 0x78, 0xab, 0x10, 0x04, 0xaf, 0x55, 0x94, 0x58, 0xd7}
	k := Key{GroupID: "gs1", TopicID: id, Partition: 0}
	if got := k.CoordinatorKey(); got != "gs1:Uj5wn_FqTXirEASvVZRY1w:0" {
		t.Fatalf("coordinator key %q", got)
	}
	if got, err := ParseCoordinatorKey(" gs1 :Uj5wn_FqTXirEASvVZRY1w:+0"); err != nil || got != k {
		t.Fatalf("ParseCoordinatorKey: %+v, %v", got, err)
	}
	for _, bad := range []string{"gs1:Uj5wn_FqTXirEASvVZRY1w", " :Uj5wn_FqTXirEASvVZRY1w:0", "g:nope:0", "g:Uj5wn_FqTXirEASvVZRY1w:x", "g:Uj5wn_FqTXirEASvVZRY1w:0:1"} {
		if _, err := ParseCoordinatorKey(bad); err == nil {
			t.Errorf("ParseCoordinatorKey(%q) accepted", bad)
		}
	}
	// "gs1:Uj5wn_FqTXirEASvVZRY1w:0".hashCode() in Java is 2096296251
	// (31*h + c over its UTF-16 units, in int32).
	if got, want := PartitionFor(k.CoordinatorKey(), 50), int32(2096296251%50); got != want {
		t.Fatalf("partition %d, want %d", got, want)
	}
}

// A deleted topic's share-partition states are tombstoned; the others
// stay.
func TestOnTopicsDeleted(t *testing.T) {
	ts := newTestService(t, DefaultConfig(), 3)
	other := [16]byte{0xb}
	var gone []Key
	for p := range int32(4) {
		k := Key{GroupID: "g", TopicID: topicA, Partition: p}
		must(t, ts.initialize(k, 0, 0))
		gone = append(gone, k)
		must(t, ts.initialize(Key{GroupID: "g", TopicID: other, Partition: p}, 0, 0))
	}
	ts.OnTopicsDeleted([][16]byte{topicA})
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := ts.states()
		left := 0
		for _, k := range gone {
			if _, ok := st[k]; ok {
				left++
			}
		}
		if left == 0 && len(st) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d states of the deleted topic left, %d states in all", left, len(st))
		}
		time.Sleep(time.Millisecond)
	}
	reloaded := newTestServiceOn(t, DefaultConfig(), 3, ts.log)
	if st := reloaded.states(); len(st) != 4 {
		t.Fatalf("%d states after a reload, want 4", len(st))
	}
}
