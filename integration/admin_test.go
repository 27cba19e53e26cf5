package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topics, their IDs, partition counts and configs are created, listed,
// described and altered with kadm, and all of it survives a restart.
func TestTopicAdminSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	adm := newAdmin(t, b.Seed())
	ctx := ctxTimeout(t, 30*time.Second)

	retention := "3600000"
	created, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": &retention}, "orders")
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err == nil {
		t.Fatal("creating an existing topic succeeded")
	} else if !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if _, err := adm.CreatePartitions(ctx, 2, "orders"); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	segBytes := "2097152"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: &segBytes}}, "orders"); err != nil {
		t.Fatalf("alter: %v", err)
	}

	before := describeTopic(t, adm, "orders")
	if n := len(before.Partitions); n != 5 {
		t.Fatalf("partitions = %d, want 5", n)
	}

	b.Close()
	b2 := startBroker(t, dir)
	adm2 := newAdmin(t, b2.Seed())
	after := describeTopic(t, adm2, "orders")
	if after.ID != before.ID {
		t.Fatalf("topic ID changed across restart: %v -> %v", before.ID, after.ID)
	}
	if len(after.Partitions) != 5 {
		t.Fatalf("partitions after restart = %d, want 5", len(after.Partitions))
	}
	rcs, err := adm2.DescribeTopicConfigs(ctxTimeout(t, 10*time.Second), "orders")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"retention.ms": "3600000", "segment.bytes": "2097152"}
	for _, c := range rc.Configs {
		if w, ok := want[c.Key]; ok {
			if c.MaybeValue() != w || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("%s = %q (source %v), want %q from the topic", c.Key, c.MaybeValue(), c.Source, w)
			}
			delete(want, c.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("configs missing after restart: %v", want)
	}

	// Delete, and the topic is gone after another restart too.
	if _, err := adm2.DeleteTopics(ctxTimeout(t, 10*time.Second), "orders"); err != nil {
		t.Fatal(err)
	}
	b2.Close()
	b3 := startBroker(t, dir)
	tds, err := newAdmin(t, b3.Seed()).ListTopics(ctxTimeout(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if tds.Has("orders") {
		t.Fatal("deleted topic is back after restart")
	}
}

func describeTopic(t testing.TB, adm *kadm.Client, topic string) kadm.TopicDetail {
	t.Helper()
	tds, err := adm.ListTopics(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		t.Fatalf("topic %s: present %v, err %v", topic, ok, td.Err)
	}
	return td
}

// Metadata answers for the cluster: the broker, a cluster ID, this node as
// controller, and auto-created topics.
func TestMetadataAndAutoCreate(t *testing.T) {
	b := startBroker(t, "", "num.partitions=3")
	cl := newClient(t, b.Seed(), kgo.AllowAutoTopicCreation())
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto-made")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	var resp *kmsg.MetadataResponse
	eventually(t, 10*time.Second, func() error {
		r, err := req.RequestWith(ctxTimeout(t, 5*time.Second), cl)
		if err != nil {
			return err
		}
		resp = r
		return kerr.ErrorForCode(r.Topics[0].ErrorCode)
	})
	if resp.ClusterID == nil || *resp.ClusterID != b.ClusterID() {
		t.Errorf("cluster id %v, want %s", resp.ClusterID, b.ClusterID())
	}
	if len(resp.Brokers) != 1 || resp.ControllerID != resp.Brokers[0].NodeID {
		t.Errorf("brokers %+v controller %d", resp.Brokers, resp.ControllerID)
	}
	if n := len(resp.Topics[0].Partitions); n != 3 {
		t.Errorf("auto-created topic has %d partitions, want num.partitions=3", n)
	}
	if resp.Topics[0].TopicID == [16]byte{} {
		t.Error("auto-created topic has no topic ID")
	}
}
