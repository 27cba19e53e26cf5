package replica

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// The replication gauges count from the partitions' state: a partition led
// here with the whole ISR, one led here with a follower out of the ISR
// (under-replicated, below min.insync.replicas 2), and one followed.
func TestReplicationGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	tm := newMinISR2Manager(t, reg)
	id := uuid.Random()
	tm.apply(&metadata.TopicRecord{Name: "t", TopicID: id},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
		&metadata.PartitionRecord{PartitionID: 1, TopicID: id, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
		&metadata.PartitionRecord{PartitionID: 2, TopicID: id, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2})
	want := map[string]float64{
		"kafka_server_replicamanager_partitioncount":            3,
		"kafka_server_replicamanager_leadercount":               2,
		"kafka_server_replicamanager_underreplicatedpartitions": 1,
		"kafka_server_replicamanager_underminisrpartitioncount": 1,
		"kafka_server_replicamanager_atminisrpartitioncount":    1,
		"kafka_server_replicamanager_isrshrinks_total":          0,
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mm := range mf.GetMetric() {
			switch {
			case mm.GetGauge() != nil:
				got[mf.GetName()] += mm.GetGauge().GetValue()
			case mm.GetCounter() != nil:
				got[mf.GetName()] += mm.GetCounter().GetValue()
			}
		}
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
}

// newMinISR2Manager is broker 1's replica manager over a real log dir,
// every topic with min.insync.replicas 2, its metadata applied by hand.
func newMinISR2Manager(t *testing.T, reg prometheus.Registerer) *testMetadata {
	t.Helper()
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	tm := &testMetadata{t: t, image: metadata.Empty, ids: map[string]uuid.UUID{}}
	minISR2 := log.DefaultConfig()
	minISR2.MinInSyncReplicas = 2
	m, err := NewManager(Config{NodeID: 1, Logs: logs, Image: func() *metadata.Image { return tm.image }, Registerer: reg,
		ConfigFor: func(*metadata.Topic) log.Config { return minISR2 }})
	if err != nil {
		t.Fatal(err)
	}
	tm.m = m
	t.Cleanup(m.Close)
	return tm
}
