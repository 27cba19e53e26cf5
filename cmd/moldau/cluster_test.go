package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
)

func quorumResponse() *kmsg.DescribeQuorumResponse {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = metadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 7, 1500
	for _, r := range []struct {
		id  int32
		leo int64
	}{{1, 1480}, {2, 1510}, {3, 1510}} {
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID, v.LogEndOffset = r.id, r.leo
		v.LastFetchTimestamp, v.LastCaughtUpTimestamp = 1714564799000, 1714564798000
		p.CurrentVoters = append(p.CurrentVoters, v)
	}
	o := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	o.ReplicaID, o.LogEndOffset = 4, 1200
	p.Observers = append(p.Observers, o)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

func TestQuorumFromResponse(t *testing.T) {
	q, err := quorumFrom(quorumResponse())
	if err != nil {
		t.Fatal(err)
	}
	if q.LeaderID != 2 || q.LeaderEpoch != 7 || q.HighWatermark != 1500 || q.MaxFollowerLag != 30 || len(q.Voters) != 3 || len(q.Observers) != 1 {
		t.Fatalf("%+v", q)
	}
	if v := q.Voters[0]; v.Role != "Follower" || v.Lag != 30 {
		t.Errorf("voter 1: %+v", v)
	}
	if v := q.Voters[1]; v.Role != "Leader" || v.Lag != 0 {
		t.Errorf("voter 2: %+v", v)
	}
	if o := q.Observers[0]; o.Role != "Observer" || o.Lag != 310 || o.LastFetchTimestamp != -1 {
		t.Errorf("observer: %+v", o)
	}

	var out bytes.Buffer
	now := time.UnixMilli(1714564800000)
	if err := printClusterInfo(&out, &clusterInfo{Quorum: q}, false, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LEADER            2", "MAX-FOLLOWER-LAG  30", "1     Follower  1480            30   1s ago      2s ago", "4     Observer  1200            310  -"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	bad := quorumResponse()
	bad.Topics[0].Partitions[0].ErrorCode = kerr.NotLeaderForPartition.Code
	if _, err := quorumFrom(bad); err == nil {
		t.Error("a partition error is not reported")
	}
	bad = quorumResponse()
	bad.Topics = nil
	if _, err := quorumFrom(bad); err == nil {
		t.Error("a response without the partition is not reported")
	}
}

func TestPrintAPIVersions(t *testing.T) {
	same := []brokerAPIVersions{
		{Broker: 1, APIs: []apiVersion{{0, "Produce", 3, 13}, {1, "Fetch", 4, 18}}},
		{Broker: 2, APIs: []apiVersion{{0, "Produce", 3, 13}, {1, "Fetch", 4, 18}}},
	}
	var out bytes.Buffer
	if err := printAPIVersions(&out, same); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "KEY  API      MIN  MAX\n0    Produce  3    13\n") {
		t.Errorf("one table expected:\n%s", out.String())
	}
	differ := append(same[:1:1], brokerAPIVersions{Broker: 2, APIs: []apiVersion{{0, "Produce", 3, 12}}})
	out.Reset()
	if err := printAPIVersions(&out, differ); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "KEY  API      BROKER-1  BROKER-2\n0    Produce  3-13      3-12\n1    Fetch    4-18      -\n") {
		t.Errorf("a column per broker expected:\n%s", out.String())
	}
}

func TestNewVoterSpec(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "server.properties")
	props := "node.id=4\nprocess.roles=controller\ncontroller.listener.names=CONTROLLER\n" +
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT\nlisteners=CONTROLLER://0.0.0.0:9093\nadvertised.listeners=CONTROLLER://ctrl4:9093\n" +
		"controller.quorum.bootstrap.servers=ctrl1:9093\nlog.dirs=" + dir + "\n"
	if err := os.WriteFile(cfg, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newVoterSpec(cfg, -1, "", nil); err == nil || !strings.Contains(err.Error(), "directory id") {
		t.Fatalf("unformatted log dir: %v, want an error naming the directory id", err)
	}
	meta := "version=1\nnode.id=4\ncluster.id=abc\ndirectory.id=pbvuBlaTTwKRxS5NLJwRFQ\n"
	if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := newVoterSpec(cfg, -1, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.id != 4 || uuid.UUID(v.dir).String() != "pbvuBlaTTwKRxS5NLJwRFQ" || listenersString(v.listeners) != "CONTROLLER://ctrl4:9093" {
		t.Fatalf("from --config: %+v", v)
	}
	// Flags take precedence.
	v, err = newVoterSpec(cfg, 5, "AAAAAAAAAAAAAAAAAAAAAQ", []string{"controller://h:1", "OTHER://[::1]:2"})
	if err != nil {
		t.Fatal(err)
	}
	if v.id != 5 || v.dir != [16]byte{15: 1} || listenersString(v.listeners) != "CONTROLLER://h:1,OTHER://[::1]:2" {
		t.Fatalf("flags over --config: %+v", v)
	}
	for _, tc := range []struct {
		id        int32
		dir       string
		endpoints []string
		want      string
	}{
		{-1, "AAAAAAAAAAAAAAAAAAAAAQ", []string{"CONTROLLER://h:1"}, "--id"},
		{4, "", []string{"CONTROLLER://h:1"}, "--directory-id"},
		{4, "not-a-uuid", []string{"CONTROLLER://h:1"}, "--directory-id"},
		{4, "AAAAAAAAAAAAAAAAAAAAAQ", nil, "--endpoint"},
		{4, "AAAAAAAAAAAAAAAAAAAAAQ", []string{"h:1"}, "NAME://host:port"},
		{4, "AAAAAAAAAAAAAAAAAAAAAQ", []string{"CONTROLLER://h:0"}, "NAME://host:port"},
	} {
		if _, err := newVoterSpec("", tc.id, tc.dir, tc.endpoints); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc, err, tc.want)
		}
	}
}

func TestPrintQuorum(t *testing.T) {
	resp := quorumResponse()
	resp.Version = 2
	resp.Topics[0].Partitions[0].CurrentVoters[1].ReplicaDirectoryID = [16]byte{15: 1}
	n := kmsg.NewDescribeQuorumResponseNode()
	n.NodeID = 2
	n.Listeners = []kmsg.DescribeQuorumResponseNodeListener{{Name: "CONTROLLER", Host: "ctrl2", Port: 9093}}
	resp.Nodes = append(resp.Nodes, n)
	q, err := quorumFrom(resp)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	now := time.UnixMilli(1714564800000)
	if err := printQuorum(&out, q, true, true, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"MAX-FOLLOWER-LAG-TIME  2s",
		"NODE  DIRECTORY-ID            ROLE      LOG-END-OFFSET  LAG  LAST-FETCH  LAST-CAUGHT-UP  ENDPOINTS",
		"2     AAAAAAAAAAAAAAAAAAAAAQ  Leader    1510            0    1s ago      2s ago          CONTROLLER://ctrl2:9093",
		"4     -                       Observer  1200            310  -           -               -",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := printQuorum(&out, q, true, false, now); err != nil || strings.Contains(out.String(), "NODE") || !strings.Contains(out.String(), "LEADER") {
		t.Errorf("--status: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := printQuorum(&out, q, false, true, now); err != nil || strings.Contains(out.String(), "LEADER ") || !strings.Contains(out.String(), "NODE") {
		t.Errorf("--replication: %v\n%s", err, out.String())
	}
}
