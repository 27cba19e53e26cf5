package metadata

import (
	"reflect"
	"slices"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

// KIP-858's fields: PartitionRecord v1 Directories, PartitionChangeRecord
// tag 8, RegisterBrokerRecord v3 and BrokerRegistrationChangeRecord v2
// LogDirs, each written only at the version that has them.
func TestDirectoryRecordsRoundTrip(t *testing.T) {
	id, d1, d2 := uuid.Random(), uuid.Random(), uuid.Random()
	for _, c := range []struct {
		rec     Record
		version int16
	}{
		{&PartitionRecord{TopicID: id, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: 1,
			Directories: []uuid.UUID{d1, {}}}, 1},
		{&PartitionRecord{TopicID: id, Replicas: []int32{1}, ISR: []int32{1}, RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: 1,
			Directories: []uuid.UUID{d1}, EligibleLeaderReplicas: []int32{2}}, 2},
		{&PartitionChangeRecord{TopicID: id, Leader: NoLeaderChange, LeaderRecoveryState: -1, Directories: []uuid.UUID{d1, d2}}, 1},
		{&RegisterBrokerRecord{BrokerID: 1, EndPoints: nil, Features: nil, LogDirs: []uuid.UUID{d1, d2}}, 3},
		{&BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 2, LogDirs: []uuid.UUID{d2}}, 2},
		{&BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 2, LogDirs: []uuid.UUID{}}, 2},
	} {
		b := Encode(c.rec)
		if v := decodedVersion(b); v != c.version {
			t.Errorf("%T written as v%d, want v%d", c.rec, v, c.version)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("%T: %v", c.rec, err)
		}
		if !reflect.DeepEqual(back, c.rec) {
			t.Errorf("%T round trip:\n got %+v\nwant %+v", c.rec, back, c.rec)
		}
	}
	// Without directories, the old versions.
	if v := decodedVersion(Encode(&PartitionRecord{TopicID: id, Replicas: []int32{1}, Directories: []uuid.UUID{{}}})); v != 0 {
		t.Errorf("unassigned directories written as v%d", v)
	}
	if v := decodedVersion(Encode(&RegisterBrokerRecord{BrokerID: 1})); v != 1 {
		t.Errorf("a registration without log dirs written as v%d", v)
	}
}

// The image keeps each replica's directory through changes: a change of
// the replicas keeps the dirs of those that stay and leaves new ones
// unassigned; a registration change of the log dirs replaces the online
// dirs; the image's records rebuild both.
func TestDirectoriesInImage(t *testing.T) {
	id, d1, d2 := uuid.Random(), uuid.Random(), uuid.Random()
	_, im := replayAll(t, Empty,
		&RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 5, LogDirs: []uuid.UUID{d2, d1}},
		&TopicRecord{Name: "t", TopicID: id},
		&PartitionRecord{TopicID: id, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
	)
	p := im.topicsMust(t, "t").Partitions[0]
	if p.Directories != nil || p.Directory(1) != (uuid.UUID{}) {
		t.Fatalf("directories of a new partition: %v", p.Directories)
	}
	b := im.Brokers[1]
	if len(b.LogDirs) != 2 || !b.HasOnlineDir(d1) || !b.HasOnlineDir(uuid.UUID{}) || b.HasOnlineDir(uuid.Random()) {
		t.Fatalf("broker log dirs %v", b.LogDirs)
	}
	ch := NewPartitionChangeRecord(id, 0)
	ch.Directories = p.WithDirectory(1, d1)
	_, im = replayAll(t, im, ch)
	p = im.topicsMust(t, "t").Partitions[0]
	if p.Directory(1) != d1 || p.PartitionEpoch != 1 || p.LeaderEpoch != 0 {
		t.Fatalf("after the assignment: %+v", p)
	}
	ch = NewPartitionChangeRecord(id, 0)
	ch.Replicas = []int32{3, 1}
	_, im = replayAll(t, im, ch, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 5, LogDirs: []uuid.UUID{d1}})
	p = im.topicsMust(t, "t").Partitions[0]
	if !slices.Equal(p.Directories, []uuid.UUID{{}, d1}) {
		t.Fatalf("directories after the replicas changed: %v", p.Directories)
	}
	if b := im.Brokers[1]; b.HasOnlineDir(d2) || !b.HasOnlineDir(d1) {
		t.Fatalf("online dirs after the change: %v", b.LogDirs)
	}
	var recs []Record
	for _, r := range im.Records() {
		back, err := Decode(Encode(r))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, back)
	}
	_, again := replayAll(t, Empty, recs...)
	if q := again.topicsMust(t, "t").Partitions[0]; !slices.Equal(q.Directories, p.Directories) ||
		!reflect.DeepEqual(again.Brokers[1].LogDirs, im.Brokers[1].LogDirs) {
		t.Fatalf("rebuilt image: directories %v, log dirs %v", q.Directories, again.Brokers[1].LogDirs)
	}
}
