package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker bounds low enough that a group's session timeout can expire a
// member within the test.
var groupConfigBroker = []string{
	"group.consumer.min.session.timeout.ms=1000",
	"group.consumer.min.heartbeat.interval.ms=100",
}

// setGroupConfigs sets group configs with IncrementalAlterConfigs on a
// GROUP resource (kadm has no helper for group configs) and returns the
// resource's error code and message.
func setGroupConfigs(t *testing.T, cl *kgo.Client, group string, kv ...string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = kv[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[i+1])
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.Resources[0]
	msg := ""
	if rr.ErrorMessage != nil {
		msg = *rr.ErrorMessage
	}
	return rr.ErrorCode, msg
}

// describeGroupConfigs returns a GROUP resource's configs as
// name -> "value source".
func describeGroupConfigs(t *testing.T, cl *kgo.Client, group string) map[string]string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("describe group %s: %v", group, err)
	}
	out := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = fmt.Sprintf("%s %s", *c.Value, c.Source)
	}
	return out
}

// joinConsumerGroup sends a KIP-848 ConsumerGroupHeartbeat joining group
// and returns the heartbeat interval the coordinator gives the member.
func joinConsumerGroup(t *testing.T, cl *kgo.Client, group, topic string) (string, int32) {
	t.Helper()
	var id [16]byte
	_, _ = rand.Read(id[:])
	member := fmt.Sprintf("%x", id)
	var interval int32
	eventually(t, 20*time.Second, func() error {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, 0
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{topic}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err // COORDINATOR_LOAD_IN_PROGRESS right after start
		}
		interval = resp.HeartbeatIntervalMillis
		return nil
	})
	return member, interval
}

// consumerGroupMembers lists the members of a consumer-protocol group.
func consumerGroupMembers(ctx context.Context, cl *kgo.Client, group string) ([]string, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
	}
	return ids, nil
}

// A group's configs, set with IncrementalAlterConfigs on a GROUP resource,
// are described with source GROUP_CONFIG, give the group's KIP-848 members
// their heartbeat interval and session timeout, refuse values outside the
// broker's bounds, outlive DeleteGroups, and survive a restart.
func TestGroupConfigs(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir, groupConfigBroker...)
	cl := newClient(t, b.Seed())
	adm := newAdmin(t, b.Seed())
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "gc-topic"); err != nil {
		t.Fatal(err)
	}

	if code, msg := setGroupConfigs(t, cl, "gc", "consumer.session.timeout.ms", "1500", "consumer.heartbeat.interval.ms", "200"); code != 0 {
		t.Fatalf("set: %d %s", code, msg)
	}
	want := map[string]string{"consumer.session.timeout.ms": "1500 GROUP_CONFIG", "consumer.heartbeat.interval.ms": "200 GROUP_CONFIG",
		// The share group keys, at the broker's values.
		"share.session.timeout.ms": "45000 DEFAULT_CONFIG", "share.heartbeat.interval.ms": "5000 DEFAULT_CONFIG",
		"share.record.lock.duration.ms": "30000 DEFAULT_CONFIG", "share.auto.offset.reset": "latest DEFAULT_CONFIG",
		"share.isolation.level": "read_uncommitted DEFAULT_CONFIG"}
	if got := describeGroupConfigs(t, cl, "gc"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("describe: %v, want %v", got, want)
	}
	other := describeGroupConfigs(t, cl, "other")
	if other["consumer.session.timeout.ms"] != "45000 DEFAULT_CONFIG" || other["consumer.heartbeat.interval.ms"] != "5000 DEFAULT_CONFIG" {
		t.Fatalf("describe of a group without configs: %v", other)
	}

	// Out of the broker's bounds: INVALID_CONFIG, nothing changes.
	code, msg := setGroupConfigs(t, cl, "gc", "consumer.session.timeout.ms", "70000")
	if code != kerr.InvalidConfig.Code || msg != "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms" {
		t.Fatalf("out of bounds: %d %q", code, msg)
	}
	if got := describeGroupConfigs(t, cl, "gc"); got["consumer.session.timeout.ms"] != "1500 GROUP_CONFIG" {
		t.Fatalf("after a refused change: %v", got)
	}

	// The group's member gets the group's heartbeat interval, another
	// group's the broker's; a member that stops heartbeating leaves after
	// the group's 1.5s, far before the broker's 45s.
	member, interval := joinConsumerGroup(t, cl, "gc", "gc-topic")
	if interval != 200 {
		t.Fatalf("heartbeat interval %d, want the group's 200", interval)
	}
	if _, interval := joinConsumerGroup(t, cl, "other", "gc-topic"); interval != 5000 {
		t.Fatalf("heartbeat interval %d in another group, want the broker's 5000", interval)
	}
	joined := time.Now()
	eventually(t, 20*time.Second, func() error {
		ids, err := consumerGroupMembers(ctx, cl, "gc")
		if err != nil {
			return err
		}
		if len(ids) != 0 {
			return fmt.Errorf("members %v (waiting for %s to expire)", ids, member)
		}
		return nil
	})
	if waited := time.Since(joined); waited > 15*time.Second {
		t.Fatalf("the member expired after %v, not with the group's 1.5s session timeout", waited)
	}

	// Deleting the (now empty) group leaves its configs, as in Kafka.
	if _, err := adm.DeleteGroup(ctx, "gc"); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	if got := describeGroupConfigs(t, cl, "gc"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after DeleteGroups: %v", got)
	}

	// A clean restart over the same data: the configs are back, in
	// DescribeConfigs and in the coordinator.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, dir, groupConfigBroker...)
	cl2 := newClient(t, b2.Seed())
	if got := describeGroupConfigs(t, cl2, "gc"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart: %v", got)
	}
	if _, interval := joinConsumerGroup(t, cl2, "gc", "gc-topic"); interval != 200 {
		t.Fatalf("heartbeat interval %d after restart, want the group's 200", interval)
	}
}

// confluent-kafka's AdminClient (Debian's python3-confluent-kafka on its
// librdkafka) sets and describes a group config, if it can address GROUP
// config resources (type 32). The script reports what the client lacks
// when it cannot, and the broker's answer to what it sends instead.
func TestPythonGroupConfigs(t *testing.T) {
	b := startBroker(t, "", groupConfigBroker...)
	cl := newClient(t, b.Seed())
	if code, msg := setGroupConfigs(t, cl, "py-gc", "consumer.heartbeat.interval.ms", "300"); code != 0 {
		t.Fatalf("set: %d %s", code, msg)
	}
	script := `
import sys
import confluent_kafka
from confluent_kafka.admin import AdminClient, ConfigResource
a = AdminClient({"bootstrap.servers": sys.argv[1]})
types = {m.name: m.value for m in ConfigResource.Type}
group_config = [n for n, v in types.items() if v == 32]
print("client", confluent_kafka.version()[0], "librdkafka", confluent_kafka.libversion()[0], "resource types", types)
if not group_config:
    # ConfigResource.Type.GROUP is the ACL resource type (3): sent as a
    # config resource type it is not GROUP (32); the broker must refuse it
    # cleanly, per resource.
    f = a.describe_configs([ConfigResource(ConfigResource.Type.GROUP, "py-gc")])
    for res, fut in f.items():
        try:
            fut.result(timeout=30)
            print("UNEXPECTED: type 3 described")
        except confluent_kafka.KafkaException as e:
            print("NO_GROUP_CONFIG_RESOURCE type 3 refused:", e.args[0].name(), e.args[0].str())
    sys.exit(0)
t = getattr(ConfigResource.Type, group_config[0])
res = ConfigResource(t, "py-gc")
res.set_config("consumer.session.timeout.ms", "50000")
if hasattr(a, "incremental_alter_configs"):
    from confluent_kafka.admin import ConfigEntry, AlterConfigOpType
    res = ConfigResource(t, "py-gc", incremental_configs=[
        ConfigEntry("consumer.session.timeout.ms", "50000", incremental_operation=AlterConfigOpType.SET)])
    for fut in a.incremental_alter_configs([res]).values():
        fut.result(timeout=30)
else:
    # The legacy AlterConfigs replaces the whole set.
    res.set_config("consumer.heartbeat.interval.ms", "300")
    for fut in a.alter_configs([res]).values():
        fut.result(timeout=30)
for fut in a.describe_configs([ConfigResource(t, "py-gc")]).values():
    got = {k: (v.value, int(v.source)) for k, v in fut.result(timeout=30).items()}
assert got["consumer.session.timeout.ms"] == ("50000", 8), got
assert got["consumer.heartbeat.interval.ms"] == ("300", 8), got
print("ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, b.Seed())
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("timed out:\n%s", out)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	switch s := string(out); {
	case strings.Contains(s, "NO_GROUP_CONFIG_RESOURCE type 3 refused: INVALID_REQUEST"):
		// Reported, not skipped: the client cannot name a GROUP config
		// resource, so the set/describe part cannot run with it.
		t.Logf("confluent-kafka cannot address GROUP config resources (type 32); set/describe with it not run:\n%s", s)
	case strings.HasSuffix(strings.TrimSpace(s), "ok"):
	default:
		t.Fatalf("unexpected output:\n%s", s)
	}
}
