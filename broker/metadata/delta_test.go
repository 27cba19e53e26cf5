package metadata

import (
	"reflect"
	"slices"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

func replayAll(t *testing.T, base *Image, recs ...Record) (*Delta, *Image) {
	t.Helper()
	d := NewDelta(base)
	for _, r := range recs {
		if err := d.Replay(r); err != nil {
			t.Fatalf("replay %T: %v", r, err)
		}
	}
	d.SetProvenance(base.Offset+int64(len(recs)), 1)
	return d, d.Apply()
}

func TestDeltaTopicsLifecycle(t *testing.T) {
	a, b := uuid.Random(), uuid.Random()
	v := "compact"
	d, im := replayAll(t, Empty,
		&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 25},
		&RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 1, Fenced: true, EndPoints: []BrokerEndpoint{{Name: "PLAINTEXT", Host: "h", Port: 1}}},
		&TopicRecord{Name: "a", TopicID: a},
		&ConfigRecord{ResourceType: TopicResource, ResourceName: "a", Name: "cleanup.policy", Value: &v},
		&PartitionRecord{PartitionID: 0, TopicID: a, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&PartitionRecord{PartitionID: 1, TopicID: a, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&TopicRecord{Name: "__consumer_offsets", TopicID: b},
		&PartitionRecord{PartitionID: 0, TopicID: b, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	)
	if len(d.CreatedTopics()) != 2 || len(d.DeletedTopics()) != 0 {
		t.Fatalf("created %d deleted %d", len(d.CreatedTopics()), len(d.DeletedTopics()))
	}
	ta, ok := im.Topic("a")
	if !ok || len(ta.Partitions) != 2 || ta.Configs["cleanup.policy"] != "compact" || ta.Internal {
		t.Fatalf("topic a: %+v", ta)
	}
	if tb, _ := im.TopicByID(b); tb == nil || !tb.Internal {
		t.Fatal("__consumer_offsets not internal")
	}
	if im.Features[MetadataVersionFeature] != 25 || !im.Brokers[1].Fenced {
		t.Fatal("features or brokers")
	}

	// A leader change bumps the leader and partition epochs; the base
	// image is untouched.
	pc := NewPartitionChangeRecord(a, 1)
	pc.Leader = NoLeader
	d2, im2 := replayAll(t, im, pc, &UnfenceBrokerRecord{ID: 1, Epoch: 1})
	p := im2.topicsMust(t, "a").Partitions[1]
	if p.Leader != NoLeader || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("after change: %+v", p)
	}
	if im.topicsMust(t, "a").Partitions[1].Leader != 1 || !im.Brokers[1].Fenced || im2.Brokers[1].Fenced {
		t.Fatal("the base image changed, or the unfence was lost")
	}
	changed := d2.ChangedPartitions()
	if len(changed) != 1 {
		t.Fatalf("changed partitions %v", changed)
	}
	for tp, ps := range changed {
		if tp.Name != "a" || !slices.Equal(ps, []int32{1}) {
			t.Fatalf("changed %s %v", tp.Name, ps)
		}
	}
	// Unchanged topics are shared, not copied.
	tb1, _ := im.TopicByID(b)
	tb2, _ := im2.TopicByID(b)
	if tb1 != tb2 {
		t.Fatal("an unchanged topic was copied")
	}

	// Deleting a topic drops its configs; the name can be reused.
	c := uuid.Random()
	d3, im3 := replayAll(t, im2, &RemoveTopicRecord{TopicID: a}, &TopicRecord{Name: "a", TopicID: c})
	if got := d3.DeletedTopics(); len(got) != 1 || got[0].ID != a {
		t.Fatalf("deleted %v", got)
	}
	if ta3 := im3.topicsMust(t, "a"); ta3.ID != c || len(ta3.Configs) != 0 || len(ta3.Partitions) != 0 {
		t.Fatalf("recreated a: %+v", ta3)
	}
	if _, ok := im3.TopicByID(a); ok {
		t.Fatal("old id still there")
	}
}

func (im *Image) topicsMust(t *testing.T, name string) *Topic {
	t.Helper()
	tp, ok := im.Topic(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	return tp
}

func TestDeltaRejectsInconsistentRecords(t *testing.T) {
	id := uuid.Random()
	for name, recs := range map[string][]Record{
		"partition of unknown topic": {&PartitionRecord{PartitionID: 0, TopicID: id}},
		"partition gap":              {&TopicRecord{Name: "x", TopicID: id}, &PartitionRecord{PartitionID: 1, TopicID: id}},
		"topic twice":                {&TopicRecord{Name: "x", TopicID: id}, &TopicRecord{Name: "x", TopicID: uuid.Random()}},
		"remove unknown":             {&RemoveTopicRecord{TopicID: id}},
		"fence unknown broker":       {&FenceBrokerRecord{ID: 3, Epoch: 1}},
		"producer ids backwards":     {&ProducerIdsRecord{NextProducerID: 5000}, &ProducerIdsRecord{NextProducerID: 4000}},
	} {
		d := NewDelta(Empty)
		var err error
		for _, r := range recs {
			if err = d.Replay(r); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s: replayed", name)
		}
	}
}

// An image's Records rebuild an equal image (the snapshot round trip).
func TestImageRecordsRebuildImage(t *testing.T) {
	a := uuid.Random()
	v := "1000"
	_, im := replayAll(t, Empty,
		&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 25},
		&RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 5, Rack: ptr("r"), EndPoints: []BrokerEndpoint{{Name: "PLAINTEXT", Host: "h", Port: 9}}},
		&TopicRecord{Name: "t", TopicID: a},
		&PartitionRecord{PartitionID: 0, TopicID: a, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 3, PartitionEpoch: 4},
		&ConfigRecord{ResourceType: TopicResource, ResourceName: "t", Name: "retention.ms", Value: &v},
		&ConfigRecord{ResourceType: BrokerResource, ResourceName: "", Name: "log.retention.ms", Value: &v},
		&ConfigRecord{ResourceType: GroupResource, ResourceName: "g", Name: "consumer.session.timeout.ms", Value: ptr("50000")},
		&ProducerIdsRecord{BrokerID: 2, BrokerEpoch: 5, NextProducerID: 3000},
	)
	var recs []Record
	for _, r := range im.Records() {
		back, err := Decode(Encode(r))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, back)
	}
	_, again := replayAll(t, Empty, recs...)
	again.Offset, again.Epoch = im.Offset, im.Epoch
	if !reflect.DeepEqual(im.Records(), again.Records()) || !reflect.DeepEqual(im.Brokers, again.Brokers) {
		t.Fatal("the rebuilt image differs")
	}
	if again.topicsMust(t, "t").Configs["retention.ms"] != "1000" || again.NextProducerID != 3000 ||
		again.GroupConfigs("g")["consumer.session.timeout.ms"] != "50000" {
		t.Fatal("configs or producer ids lost")
	}
}

// Group configs (resource type 32) are kept by group id, apart from
// topics and brokers; deleting the last key removes the resource, and
// deleting a topic of the same name leaves them alone.
func TestGroupConfigs(t *testing.T) {
	a := uuid.Random()
	d, im := replayAll(t, Empty,
		&TopicRecord{Name: "g", TopicID: a},
		&ConfigRecord{ResourceType: GroupResource, ResourceName: "g", Name: "consumer.session.timeout.ms", Value: ptr("50000")},
		&ConfigRecord{ResourceType: GroupResource, ResourceName: "g", Name: "consumer.heartbeat.interval.ms", Value: ptr("6000")},
	)
	if got := im.GroupConfigs("g"); len(got) != 2 || got["consumer.heartbeat.interval.ms"] != "6000" {
		t.Fatalf("%v", got)
	}
	if tp := im.topicsMust(t, "g"); len(tp.Configs) != 0 {
		t.Fatalf("group configs leaked into the topic: %v", tp.Configs)
	}
	if ch := d.ChangedConfigs(); len(ch) != 1 || ch[0] != (ConfigResource{GroupResource, "g"}) {
		t.Fatalf("%v", ch)
	}
	_, im = replayAll(t, im,
		&RemoveTopicRecord{TopicID: a},
		&ConfigRecord{ResourceType: GroupResource, ResourceName: "g", Name: "consumer.heartbeat.interval.ms"},
	)
	if got := im.GroupConfigs("g"); len(got) != 1 || got["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("%v", got)
	}
	_, im = replayAll(t, im, &ConfigRecord{ResourceType: GroupResource, ResourceName: "g", Name: "consumer.session.timeout.ms"})
	if _, ok := im.Configs[ConfigResource{GroupResource, "g"}]; ok {
		t.Fatal("an empty group config resource is kept")
	}
}

func ptr(s string) *string { return &s }

// A snapshot that lacks a topic deletes it; one that has it keeps it as a
// change, not a creation.
func TestSnapshotDelta(t *testing.T) {
	keep, gone := uuid.Random(), uuid.Random()
	_, base := replayAll(t, Empty,
		&TopicRecord{Name: "keep", TopicID: keep},
		&PartitionRecord{PartitionID: 0, TopicID: keep, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&TopicRecord{Name: "gone", TopicID: gone},
	)
	_, snap := replayAll(t, Empty,
		&TopicRecord{Name: "keep", TopicID: keep},
		&PartitionRecord{PartitionID: 0, TopicID: keep, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 7},
		&PartitionRecord{PartitionID: 1, TopicID: keep, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
	)
	d, err := snapshotDelta(base, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.CreatedTopics()) != 0 || len(d.DeletedTopics()) != 1 || d.DeletedTopics()[0].ID != gone {
		t.Fatalf("created %v deleted %v", d.CreatedTopics(), d.DeletedTopics())
	}
	im := d.Apply()
	if k := im.topicsMust(t, "keep"); len(k.Partitions) != 2 || k.Partitions[0].LeaderEpoch != 7 {
		t.Fatalf("keep: %+v", k)
	}
}

// Client quotas: set, change, remove; the image's records rebuild them.
func TestDeltaClientQuotas(t *testing.T) {
	def := []QuotaEntityData{{EntityType: QuotaClientID}}
	alice := []QuotaEntityData{{EntityType: QuotaUser, EntityName: ptr("alice")}}
	_, im := replayAll(t, Empty,
		&ClientQuotaRecord{Entity: def, Key: "controller_mutation_rate", Value: 10},
		&ClientQuotaRecord{Entity: alice, Key: "producer_byte_rate", Value: 1024},
		&ClientQuotaRecord{Entity: alice, Key: "consumer_byte_rate", Value: 2048},
	)
	_, im2 := replayAll(t, im,
		&ClientQuotaRecord{Entity: alice, Key: "producer_byte_rate", Remove: true},
		&ClientQuotaRecord{Entity: def, Key: "controller_mutation_rate", Value: 5},
	)
	de, _ := QuotaEntityFrom(def)
	ae, _ := QuotaEntityFrom(alice)
	if im2.ClientQuotas[de]["controller_mutation_rate"] != 5 || len(im2.ClientQuotas[ae]) != 1 || im2.ClientQuotas[ae]["consumer_byte_rate"] != 2048 {
		t.Fatalf("quotas: %v", im2.ClientQuotas)
	}
	if im.ClientQuotas[de]["controller_mutation_rate"] != 10 {
		t.Fatal("the base image changed")
	}
	_, again := replayAll(t, Empty, im2.Records()...)
	if !reflect.DeepEqual(again.ClientQuotas, im2.ClientQuotas) {
		t.Fatalf("rebuilt quotas %v, want %v", again.ClientQuotas, im2.ClientQuotas)
	}
	if _, ok := QuotaEntityFrom([]QuotaEntityData{{EntityType: "group"}}); ok {
		t.Fatal("unknown entity type accepted")
	}
}
