package console

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func part(n, leader int32, replicas, isr []int32, start, end int64) Partition {
	return Partition{Partition: n, Leader: leader, Replicas: replicas, ISR: isr, OfflineReplicas: []int32{},
		LogStartOffset: start, LogEndOffset: end, HighWatermark: end, LastStable: end}
}

func baseSnapshot() *Snapshot {
	return &Snapshot{
		Seq: 7, Time: 1000, ClusterID: "c", ControllerID: 1,
		Quorum:  &Quorum{LeaderID: 1, LeaderEpoch: 3, Voters: []QuorumVoter{{ID: 1}, {ID: 2}}},
		Brokers: []Broker{{ID: 1, Alive: true}, {ID: 2, Alive: true}},
		Topics: []Topic{
			{Name: "a", Partitions: []Partition{part(0, 1, []int32{1, 2}, []int32{1, 2}, 0, 10)}},
			{Name: "b", Partitions: []Partition{part(0, 2, []int32{2, 1}, []int32{2, 1}, 0, 5)}},
		},
		Groups:       []Group{{ID: "g", State: "Stable", Lag: 3}},
		Transactions: []Transaction{{ID: "t", State: "Ongoing"}},
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *Snapshot)
		want   Changes
	}{
		{"nothing", func(s *Snapshot) {}, Changes{}},
		{"seq and time are not changes", func(s *Snapshot) { s.Seq, s.Time = 8, 2000 }, Changes{}},
		{"controller", func(s *Snapshot) { s.ControllerID = 2 }, Changes{Cluster: true}},
		{"an error note", func(s *Snapshot) { s.Errors = map[string]string{"groups": "x"} }, Changes{Cluster: true}},
		{"quorum epoch", func(s *Snapshot) { s.Quorum.LeaderEpoch = 4 }, Changes{Quorum: true}},
		{"quorum gone", func(s *Snapshot) { s.Quorum = nil }, Changes{Quorum: true}},
		{"broker dies", func(s *Snapshot) { s.Brokers[1].Alive = false }, Changes{Brokers: true}},
		{"high watermark of b", func(s *Snapshot) { s.Topics[1].Partitions[0].HighWatermark = 6 }, Changes{Topics: []string{"b"}}},
		{"ISR of a shrinks", func(s *Snapshot) { s.Topics[0].Partitions[0].ISR = []int32{1} }, Changes{Topics: []string{"a"}}},
		{"topic removed", func(s *Snapshot) { s.Topics = s.Topics[:1] }, Changes{Topics: []string{"b"}}},
		{"topic added", func(s *Snapshot) { s.Topics = append(s.Topics, Topic{Name: "c"}) }, Changes{Topics: []string{"c"}}},
		{"group lag", func(s *Snapshot) { s.Groups[0].Lag = 0 }, Changes{Groups: []string{"g"}}},
		{"transaction state", func(s *Snapshot) { s.Transactions[0].State = "CompleteCommit" }, Changes{Transactions: true}},
		{"metrics", func(s *Snapshot) { s.Metrics = []Metrics{{URL: "u"}} }, Changes{Metrics: true}},
		{"a wire's rate", func(s *Snapshot) { s.Wires = []Wire{{Kind: WireProduce, Rate: 1}} }, Changes{Flows: true}},
		{"a producer", func(s *Snapshot) { s.Producers = []Producer{{ID: "p"}} }, Changes{Flows: true}},
		{"an internal record", func(s *Snapshot) { s.Internal = []InternalEvent{{Kind: kindOffsetCommit}} }, Changes{Internal: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := baseSnapshot(), baseSnapshot()
			tc.change(b)
			got := Diff(a, b)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Diff = %+v, want %+v", got, tc.want)
			}
			if got.Any() != !reflect.DeepEqual(tc.want, Changes{}) {
				t.Fatalf("Any() = %v", got.Any())
			}
		})
	}
	if c := Diff(nil, baseSnapshot()); !c.Cluster || !c.Brokers || len(c.Topics) != 2 || len(c.Groups) != 1 {
		t.Fatalf("Diff(nil, s) = %+v, want everything", c)
	}
}

func TestBrokersFrom(t *testing.T) {
	rack := "r1"
	live := kadm.BrokerDetails{{NodeID: 2, Host: "h2", Port: 9092, Rack: &rack}, {NodeID: 1, Host: "h1", Port: 9092}}
	fenced := map[int32]kmsg.DescribeClusterResponseBroker{4: {NodeID: 4, Host: "h4", Port: 9092, IsFenced: true}}
	topics := []Topic{{Name: "a", Partitions: []Partition{{Replicas: []int32{1, 3}}, {Replicas: []int32{2, 4}}}}}
	got := brokersFrom(live, fenced, topics)
	want := []Broker{
		{ID: 1, Host: "h1", Port: 9092, Alive: true, Size: -1},
		{ID: 2, Host: "h2", Port: 9092, Rack: "r1", Alive: true, Size: -1},
		{ID: 3, Size: -1}, // named by a replica list only: dead or absent
		{ID: 4, Host: "h4", Port: 9092, Fenced: true, Size: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("brokersFrom:\n got %+v\nwant %+v", got, want)
	}
}

func TestTopicsFromMetadata(t *testing.T) {
	md := kadm.Metadata{Topics: kadm.TopicDetails{
		"z": {Topic: "z", Partitions: kadm.PartitionDetails{
			1: {Partition: 1, Leader: -1, LeaderEpoch: 4, Replicas: []int32{1}, Err: kerr.LeaderNotAvailable},
			0: {Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		}},
		"a": {Topic: "a", IsInternal: true, Partitions: kadm.PartitionDetails{}},
	}}
	got := topicsFromMetadata(md)
	if len(got) != 2 || got[0].Name != "a" || !got[0].Internal || got[1].Name != "z" {
		t.Fatalf("topics not sorted by name: %+v", got)
	}
	ps := got[1].Partitions
	if len(ps) != 2 || ps[0].Partition != 0 || ps[1].Partition != 1 {
		t.Fatalf("partitions not sorted: %+v", ps)
	}
	if ps[1].Error == "" || ps[1].Leader != -1 || ps[1].LogEndOffset != -1 || ps[1].ISR == nil || ps[1].OfflineReplicas == nil {
		t.Fatalf("offline partition: %+v", ps[1])
	}
}

func TestApplyOffsets(t *testing.T) {
	prev := baseSnapshot()
	prev.Topics[1].Partitions[0].HighWatermark, prev.Topics[1].Partitions[0].LogEndOffset = 5, 5
	tests := []struct {
		name                       string
		start, end, stable         map[tp]listed
		wantA, wantB               [4]int64 // start, end, hw, lso
		wantErr, wantAErr, wantBEr bool
	}{
		{
			name:   "all answered",
			start:  map[tp]listed{{"a", 0}: {offset: 2}, {"b", 0}: {offset: 0}},
			end:    map[tp]listed{{"a", 0}: {offset: 12}, {"b", 0}: {offset: 9}},
			stable: map[tp]listed{{"a", 0}: {offset: 11}, {"b", 0}: {offset: 9}},
			wantA:  [4]int64{2, 12, 12, 11}, wantB: [4]int64{0, 9, 9, 9},
		},
		{
			name:   "b's leader failed: b keeps its offsets",
			start:  map[tp]listed{{"a", 0}: {offset: 2}, {"b", 0}: {offset: -1, err: kerr.NotLeaderForPartition}},
			end:    map[tp]listed{{"a", 0}: {offset: 12}, {"b", 0}: {offset: -1, err: kerr.NotLeaderForPartition}},
			stable: map[tp]listed{{"a", 0}: {offset: 12}},
			wantA:  [4]int64{2, 12, 12, 12}, wantB: [4]int64{0, 5, 5, 5},
			wantErr: true, wantBEr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{Topics: []Topic{
				{Name: "a", Partitions: []Partition{part(0, 1, []int32{1}, []int32{1}, -1, -1)}},
				{Name: "b", Partitions: []Partition{part(0, 1, []int32{1}, []int32{1}, -1, -1)}},
			}}
			err := applyOffsets(s, prev, tc.start, tc.end, tc.stable)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			for i, want := range [][4]int64{tc.wantA, tc.wantB} {
				p := s.Topics[i].Partitions[0]
				got := [4]int64{p.LogStartOffset, p.LogEndOffset, p.HighWatermark, p.LastStable}
				if got != want {
					t.Errorf("%s: offsets %v, want %v", s.Topics[i].Name, got, want)
				}
			}
			if (s.Topics[1].Partitions[0].Error != "") != tc.wantBEr {
				t.Errorf("b's error note: %q", s.Topics[1].Partitions[0].Error)
			}
		})
	}
}

func TestApplyLogDirs(t *testing.T) {
	prev := baseSnapshot()
	prev.Brokers[1].Size = 77
	prev.Brokers[1].LogDirs = []LogDir{{Dir: "/d2", Size: 77}}
	prev.Topics[0].Partitions[0].ReplicaSizes = map[int32]int64{1: 10, 2: 70}
	s := baseSnapshot()
	dirs := kadm.DescribedAllLogDirs{1: kadm.DescribedLogDirs{"/d1": {Broker: 1, Dir: "/d1", Topics: kadm.DescribedLogDirTopics{
		"a": {0: {Broker: 1, Dir: "/d1", Topic: "a", Partition: 0, Size: 40}},
		"b": {0: {Broker: 1, Dir: "/d1", Topic: "b", Partition: 0, Size: 2}},
	}}}} // broker 2 did not answer
	applyLogDirs(s, prev, dirs)
	if b := s.Brokers[0]; b.Size != 42 || len(b.LogDirs) != 1 || b.LogDirs[0].Size != 42 {
		t.Fatalf("broker 1: %+v", b)
	}
	if b := s.Brokers[1]; b.Size != 77 || len(b.LogDirs) != 1 {
		t.Fatalf("broker 2 should keep its previous sizes: %+v", b)
	}
	if got := s.Topics[0].Partitions[0].ReplicaSizes; !reflect.DeepEqual(got, map[int32]int64{1: 40, 2: 70}) {
		t.Fatalf("a-0 replica sizes: %v", got)
	}
}

func TestGroupsFrom(t *testing.T) {
	topics := []Topic{{Name: "a", Partitions: []Partition{part(0, 1, nil, nil, 0, 10), part(1, 1, nil, nil, 0, 4)}}}
	listed := []kadm.ListedGroup{
		{Group: "classic", GroupType: "classic", ProtocolType: "consumer", State: "Stable", Coordinator: 1},
		{Group: "new", GroupType: "consumer", State: "Stable", Coordinator: 2},
	}
	ma := &kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "a", Partitions: []int32{1, 0}}}}
	classic := kadm.DescribedGroups{"classic": {Group: "classic", State: "Stable", ProtocolType: "consumer", Protocol: "range",
		Coordinator: kadm.BrokerDetail{NodeID: 1}, Members: []kadm.DescribedGroupMember{{MemberID: "m1", ClientID: "c1", ClientHost: "/10.0.0.1"}}}}
	consumer := kadm.DescribedConsumerGroups{"new": {Group: "new", State: "Stable", Epoch: 9, AssignorName: "uniform",
		Coordinator: kadm.BrokerDetail{NodeID: 2}, Members: []kadm.ConsumerGroupMember{{MemberID: "m2", ClientID: "c2",
			Assignment: kadm.TopicsSet{"a": {1: {}}}}}}}
	offsets := kadm.FetchOffsetsResponses{
		"classic": {Group: "classic", Fetched: kadm.OffsetResponses{"a": {0: {Offset: kadm.Offset{Topic: "a", Partition: 0, At: 7}}, 1: {Offset: kadm.Offset{Topic: "a", Partition: 1, At: 4}}}}},
		"new":     {Group: "new", Err: kerr.CoordinatorNotAvailable},
	}
	got := groupsFrom(listed, classic, consumer, offsets, topics)
	if len(got) != 2 {
		t.Fatalf("groups: %+v", got)
	}
	c := got[0]
	if c.Protocol != "classic" || c.Assignor != "range" || c.Lag != 3 || len(c.Offsets) != 2 || c.Offsets[0].Lag != 3 || c.Offsets[1].Lag != 0 {
		t.Fatalf("classic group: %+v", c)
	}
	if len(c.Members) != 1 || c.Members[0].ClientID != "c1" || c.Members[0].Assigned == nil {
		t.Fatalf("classic members: %+v", c.Members)
	}
	// kadm decodes the assignment; its conversion is consumerAssigned.
	if got := consumerAssigned(ma); !reflect.DeepEqual(got, []TopicPartitions{{Topic: "a", Partitions: []int32{0, 1}}}) {
		t.Fatalf("consumerAssigned: %+v", got)
	}
	n := got[1]
	if n.Protocol != "consumer" || n.Epoch != 9 || n.Error == "" || len(n.Members) != 1 || n.Members[0].Assigned[0].Partitions[0] != 1 {
		t.Fatalf("consumer group: %+v", n)
	}
}

func TestTransactionsFrom(t *testing.T) {
	listed := kadm.ListedTransactions{"t1": {TxnID: "t1", State: "Ongoing", ProducerID: 5, Coordinator: 1}, "t2": {TxnID: "t2", State: "Empty", ProducerID: 6}}
	described := kadm.DescribedTransactions{
		"t1": {TxnID: "t1", State: "Ongoing", ProducerID: 5, ProducerEpoch: 2, Coordinator: 1, TimeoutMillis: 60000, StartTimestamp: 123,
			Topics: kadm.TopicsSet{"a": {0: {}, 2: {}}}},
		"t2": {TxnID: "t2", Err: kerr.CoordinatorLoadInProgress},
	}
	got := transactionsFrom([]string{"t1", "t2"}, listed, described)
	want := []Transaction{
		{ID: "t1", State: "Ongoing", ProducerID: 5, ProducerEpoch: 2, Coordinator: 1, TimeoutMs: 60000, StartTime: 123,
			Partitions: []TopicPartitions{{Topic: "a", Partitions: []int32{0, 2}}}},
		{ID: "t2", State: "Empty", ProducerID: 6, ProducerEpoch: -1, StartTime: -1, Partitions: []TopicPartitions{},
			Error: errorText(kerr.CoordinatorLoadInProgress)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("transactionsFrom:\n got %+v\nwant %+v", got, want)
	}
}

func TestQuorumFrom(t *testing.T) {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	tp := kmsg.NewDescribeQuorumResponseTopic()
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 5, 100
	p.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{{ReplicaID: 1, LogEndOffset: 90}, {ReplicaID: 2, LogEndOffset: 100}, {ReplicaID: 3, LogEndOffset: -1}}
	tp.Partitions = append(tp.Partitions, p)
	resp.Topics = append(resp.Topics, tp)
	q, err := quorumFrom(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := &Quorum{LeaderID: 2, LeaderEpoch: 5, HighWatermark: 100, Observers: []QuorumVoter{},
		Voters: []QuorumVoter{{ID: 1, LogEndOffset: 90, Lag: 10}, {ID: 2, LogEndOffset: 100, Lag: 0}, {ID: 3, LogEndOffset: -1, Lag: -1}}}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("quorumFrom:\n got %+v\nwant %+v", q, want)
	}
	resp.ErrorCode = kerr.NotController.Code
	if _, err := quorumFrom(resp); !errors.Is(err, kerr.NotController) {
		t.Fatalf("error code: %v", err)
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP kafka_server_brokertopicmetrics_bytesin_total Bytes in.
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 100
kafka_server_brokertopicmetrics_bytesin_total{topic="b",x="}"} 50 1700000000000
kafka_server_brokertopicmetrics_messagesin_total 7
kafka_server_brokertopicmetrics_bytesout_total 1e3
other_total 5
`
	var m Metrics
	if err := parseMetrics(strings.NewReader(text), &m); err != nil {
		t.Fatal(err)
	}
	if m.BytesIn != 150 || m.MessagesIn != 7 || m.BytesOut != 1000 {
		t.Fatalf("parsed %+v", m)
	}
	if err := parseMetrics(strings.NewReader("kafka_server_brokertopicmetrics_messagesin_total x\n"), &m); err == nil {
		t.Fatal("a bad value parsed")
	}
	if r := rate(10, 5, 1); r != -1 {
		t.Fatalf("a counter reset has rate %v", r)
	}
	if r := rate(0, 25, 2); r != 12.5 {
		t.Fatalf("rate = %v", r)
	}
}

func TestIsUnsupported(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{kerr.UnsupportedVersion, true},
		{errors.New("broker is too old; the broker has already indicated it will not know how to handle the request"), true},
		{kerr.NotController, false},
	} {
		if got := isUnsupported(tc.err); got != tc.want {
			t.Errorf("isUnsupported(%v) = %v", tc.err, got)
		}
	}
}
