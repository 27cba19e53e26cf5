package replica

import (
	"testing"
	"time"
)

// Kafka's RackAwareReplicaSelector, case by case.
func TestRackAwareReplicaSelector(t *testing.T) {
	leader := ReplicaView{BrokerID: 1, Rack: "a", LogEndOffset: 100}
	b := ReplicaView{BrokerID: 2, Rack: "b", LogEndOffset: 90, SinceCaughtUp: time.Second}
	b2 := ReplicaView{BrokerID: 3, Rack: "b", LogEndOffset: 95, SinceCaughtUp: 2 * time.Second}
	b3 := ReplicaView{BrokerID: 4, Rack: "b", LogEndOffset: 95, SinceCaughtUp: time.Millisecond}
	for _, c := range []struct {
		name     string
		rack     string
		replicas []ReplicaView
		want     int32
	}{
		{"no rack: the leader", "", []ReplicaView{leader, b}, 1},
		{"the leader's rack: the leader", "a", []ReplicaView{leader, b}, 1},
		{"no replica in the rack: the leader", "c", []ReplicaView{leader, b}, 1},
		{"the one in the rack", "b", []ReplicaView{leader, b}, 2},
		{"the most caught up in the rack", "b", []ReplicaView{leader, b, b2}, 3},
		{"equal log ends: the most recently caught up", "b", []ReplicaView{leader, b, b2, b3}, 4},
	} {
		if got := (RackAwareReplicaSelector{}).Select(ClientMetadata{RackID: c.rack}, leader, c.replicas); got.BrokerID != c.want {
			t.Errorf("%s: broker %d, want %d", c.name, got.BrokerID, c.want)
		}
	}
	if _, err := NewReplicaSelector("org.example.Mine"); err == nil {
		t.Error("an unknown replica.selector.class was accepted")
	}
	if s, err := NewReplicaSelector(""); s != nil || err != nil {
		t.Errorf("no class: %v %v", s, err)
	}
}
