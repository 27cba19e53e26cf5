package console

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/brokertest"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// startController starts a one-node broker and controller with a
// controller listener of its own, and returns a client of the broker
// and the controller listener's address.
func startController(t *testing.T) (*kgo.Client, string) {
	b := brokertest.Start(t, "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.listener.names=CONTROLLER", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1", "moldau.metrics.listener=")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr("").String()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, b.Addr("CONTROLLER").String()
}

func metadataPoller(t *testing.T, cl *kgo.Client, ctrl string, backlog int64) *Poller {
	p := NewPoller(cl, 100*time.Millisecond, 5*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.meta.bootstrap, p.meta.backlog = []string{ctrl}, backlog
	t.Cleanup(func() { p.meta.close(); p.internal.close() })
	return p
}

func hasMetadata(text string) func(*Snapshot) bool {
	return func(s *Snapshot) bool {
		return slices.ContainsFunc(s.Internal, func(e InternalEvent) bool {
			return e.Kind == kindMetadata && e.Topic == metadataTopic && strings.HasPrefix(e.Text, text)
		})
	}
}

// describeQuorum asks the controller listener for DescribeQuorum.
func describeQuorum(t *testing.T, ctrl string) kmsg.DescribeQuorumResponseTopicPartition {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ctrl))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadataTopic
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.DescribeQuorumResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// A poller given the controller listener follows __cluster_metadata:
// creating a topic and altering its config show as decoded metadata
// events, with the topic named; the leader does not list the console
// among DescribeQuorum's observers.
func TestPollerMetadataLog(t *testing.T) {
	cl, ctrl := startController(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	p := metadataPoller(t, cl, ctrl, 0)
	pollUntil(t, p, "the broker's registration", hasMetadata("RegisterBrokerRecord broker "))

	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "m"); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, p, "the topic", hasMetadata("TopicRecord m, id "))
	before := pollUntil(t, p, "its partition 1", hasMetadata("PartitionRecord m-1: replicas [1], leader 1, ISR [1]"))
	// A recording keeps them as additions to the window, as the
	// internal topics' records.
	rec := NewRecorder()
	rec.interval = 0
	rec.Add(before)
	v := "1234567"
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, "m")
	if err == nil {
		_, err = resp.On("m", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := pollUntil(t, p, "the config", hasMetadata("ConfigRecord topic m: retention.ms=1234567"))
	rec.Add(s)
	frames, _ := rec.Frames()
	if len(frames) != 2 {
		t.Fatalf("%d frames recorded, want 2", len(frames))
	}
	added := string(frames[1].Patch[internalAddedField])
	if _, whole := frames[1].Patch[internalField]; whole || !strings.Contains(added, "ConfigRecord topic m: retention.ms=1234567") {
		t.Errorf("the second frame does not add the config's record: %v", frames[1].Patch)
	}
	if !s.MetadataLog {
		t.Error("the snapshot does not say the metadata log is followed")
	}
	if s.Errors["metadata_log"] != "" {
		t.Errorf("metadata_log part: %s", s.Errors["metadata_log"])
	}
	for _, e := range s.Internal {
		if e.Kind == kindMetadata && e.Time <= 0 {
			t.Errorf("metadata event without a time: %+v", e)
		}
	}
	if q := describeQuorum(t, ctrl); len(q.Observers) != 0 {
		t.Errorf("DescribeQuorum lists observers %+v; the console fetches with no replica id", q.Observers)
	}
}

// With more records in the log than the backlog, the events start near
// the high watermark, not at the log's start.
func TestPollerMetadataLogBacklog(t *testing.T) {
	cl, ctrl := startController(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 20, 1, nil, "wide"); err != nil {
		t.Fatal(err)
	}
	hw := describeQuorum(t, ctrl).HighWatermark
	const backlog = 5
	p := metadataPoller(t, cl, ctrl, backlog)
	// The broker may append more (its replicas' log dirs) meanwhile: the
	// poller starts at most backlog records before the high watermark it
	// first sees, which is hw or later.
	s := pollUntil(t, p, "a record of the topic's partitions", func(s *Snapshot) bool {
		return slices.ContainsFunc(s.Internal, func(e InternalEvent) bool {
			return e.Kind == kindMetadata && (strings.HasPrefix(e.Text, "PartitionRecord wide-") || strings.HasPrefix(e.Text, "PartitionChangeRecord wide-"))
		})
	})
	for _, e := range s.Internal {
		if e.Kind != kindMetadata {
			continue
		}
		if e.Offset < hw-backlog {
			t.Errorf("event at %d, before the backlog's start %d (high watermark %d): %s", e.Offset, hw-backlog, hw, e.Text)
		}
		if strings.HasPrefix(e.Text, "TopicRecord wide") {
			t.Errorf("the topic's record is %d records before the high watermark, past the backlog", hw-e.Offset)
		}
	}
	// The TopicRecord was not read: the partitions' records name the
	// topic from the Metadata's topics (the condition above).
}

// A broker listener given as a controller: the error says what to check.
func TestPollerMetadataLogOnBrokerListener(t *testing.T) {
	seed, _ := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p := metadataPoller(t, cl, seed, 0)
	s := pollUntil(t, p, "an error naming the listener", func(s *Snapshot) bool {
		return strings.Contains(s.Errors["metadata_log"], seed) && strings.Contains(s.Errors["metadata_log"], "controller listener")
	})
	t.Logf("metadata_log: %s", s.Errors["metadata_log"])
}

// A Fetch answered NOT_LEADER_OR_FOLLOWER by a controller that is not
// the leader sends the next one to the leader it names (NodeEndpoints),
// with its epoch; one with no endpoint to the next bootstrap controller.
func TestMetaReaderFollowsLeader(t *testing.T) {
	m := &metaReader{bootstrap: []string{"c1:9093", "c2:9093"}}
	answer := func(code int16, leader int32, epoch int32, brokers ...kmsg.FetchResponseBroker) metaResult {
		resp := kmsg.NewPtrFetchResponse()
		rt := kmsg.NewFetchResponseTopic()
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.ErrorCode = code
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		resp.Brokers = brokers
		return metaResult{addr: "c1:9093", resp: resp}
	}
	notLeader := func(leader int32, epoch int32, brokers ...kmsg.FetchResponseBroker) metaResult {
		return answer(kerr.NotLeaderForPartition.Code, leader, epoch, brokers...)
	}
	b := kmsg.NewFetchResponseBroker()
	b.NodeID, b.Host, b.Port = 3, "c3", 9093
	if _, err := m.handle(notLeader(3, 7, b), &Snapshot{}); err != nil {
		t.Fatal(err)
	}
	if m.addr != "c3:9093" || m.leaderEpoch != 7 {
		t.Fatalf("after NOT_LEADER naming 3 at c3:9093 in epoch 7: addr %q epoch %d", m.addr, m.leaderEpoch)
	}
	m.addr = ""
	if _, err := m.handle(notLeader(-1, -1), &Snapshot{}); err != nil {
		t.Fatal(err)
	}
	if m.addr != "" || m.bootstrap[m.boot%2] != "c2:9093" {
		t.Fatalf("after NOT_LEADER with no leader: addr %q, next bootstrap %q", m.addr, m.bootstrap[m.boot%2])
	}
	// Kafka checks the epoch first: FENCED_LEADER_EPOCH from a follower
	// names the leader and its epoch too.
	b.NodeID, b.Host = 4, "c4"
	if _, err := m.handle(answer(kerr.FencedLeaderEpoch.Code, 4, 8, b), &Snapshot{}); err != nil {
		t.Fatal(err)
	}
	if m.addr != "c4:9093" || m.leaderEpoch != 8 {
		t.Fatalf("after FENCED_LEADER_EPOCH naming 4 at c4:9093 in epoch 8: addr %q epoch %d", m.addr, m.leaderEpoch)
	}
}

// Each record type reads as its name and its main fields in words.
func TestDecodeMetadata(t *testing.T) {
	id := uuid.UUID{1: 7}
	names := func(u uuid.UUID) (string, bool) { return "orders", u == id }
	pc := metadata.NewPartitionChangeRecord(id, 3)
	pc.Leader, pc.ISR = 2, []int32{2, 3}
	secret := "hunter2"
	for _, c := range []struct {
		rec  metadata.Record
		want string
	}{
		{pc, "PartitionChangeRecord orders-3: leader 2, ISR [2 3]"},
		{&metadata.RemoveTopicRecord{TopicID: id}, "RemoveTopicRecord orders"},
		{&metadata.PartitionChangeRecord{TopicID: id, PartitionID: 0, Leader: metadata.NoLeaderChange, LeaderRecoveryState: -1,
			Directories: []uuid.UUID{{1}}}, "PartitionChangeRecord orders-0: log dirs of 1 replicas"},
		{&metadata.RegisterControllerRecord{ControllerID: 3, EndPoints: []metadata.BrokerEndpoint{{Name: "CONTROLLER", Host: "h", Port: 9093}}},
			"RegisterControllerRecord controller 3, CONTROLLER://h:9093"},
		{&metadata.FenceBrokerRecord{ID: 2, Epoch: 40}, "FenceBrokerRecord broker 2, epoch 40"},
		{&metadata.BrokerRegistrationChangeRecord{BrokerID: 2, BrokerEpoch: 40, Fenced: -1}, "BrokerRegistrationChangeRecord broker 2, epoch 40: unfenced"},
		{&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 27}, "FeatureLevelRecord metadata.version = 27"},
		{&metadata.ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 5, NextProducerID: 2000}, "ProducerIdsRecord broker 1, next producer id 2000"},
		{&metadata.ConfigRecord{ResourceType: metadata.BrokerResource, ResourceName: "1", Name: "listener.name.sasl.plain.sasl.jaas.config", Value: &secret},
			"ConfigRecord broker 1: listener.name.sasl.plain.sasl.jaas.config set (sensitive)"},
		{&metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: "orders", Name: "retention.ms"}, "ConfigRecord topic orders: retention.ms deleted"},
	} {
		if got := decodeMetadata(metadata.Encode(c.rec), names); got.Kind != kindMetadata || got.Text != c.want {
			t.Errorf("%T: %q (%s), want %q", c.rec, got.Text, got.Kind, c.want)
		}
	}
	if got := decodeMetadata([]byte{1, 99, 0}, names); !strings.Contains(got.Text, "unknown type 99") {
		t.Errorf("an unknown type: %q", got.Text)
	}
}
