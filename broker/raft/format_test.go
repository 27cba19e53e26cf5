package raft

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/moldau/moldau/log"
)

func TestSnapshotFileNames(t *testing.T) {
	id := OffsetAndEpoch{Offset: 12345, Epoch: 7}
	name := snapshotFileName(id)
	if name != "00000000000000012345-0000000007.checkpoint" {
		t.Fatalf("name %q", name)
	}
	if got, ok := parseSnapshotFileName(name); !ok || got != id {
		t.Fatalf("parse %q: %v %v", name, got, ok)
	}
	for _, bad := range []string{"00000000000000012345-0000000007.checkpoint.part", "12345-7.checkpoint", "00000000000000012345.log"} {
		if _, ok := parseSnapshotFileName(bad); ok {
			t.Fatalf("parsed %q", bad)
		}
	}
}

func TestSnapshotWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	id := OffsetAndEpoch{Offset: 100, Epoch: 3}
	hdr := snapshotHeader{LastContainedLogTimestamp: 1_700_000_000_000, LastContainedRaftIndex: 42, EndOffset: 100}
	w, err := newSnapshotWriter(log.OSFS{}, dir, id, hdr, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 100 {
		r := strings.Repeat("r", i)
		want = append(want, r)
		if err := w.Append([]byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.freeze(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, snapshotFileName(id)))
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's layout: a control batch holding the SnapshotHeaderRecord at
	// offset 0, data batches, a control batch holding the footer.
	first, err := log.ParseBatchHeader(data)
	if err != nil || !first.IsControl() || first.BaseOffset != 0 || first.PartitionLeaderEpoch != 3 {
		t.Fatalf("first batch %+v %v", first, err)
	}
	b, ctype, err := decodeBatch(data[:first.TotalSize()])
	if err != nil || ctype != ControlSnapshotHeader {
		t.Fatalf("header batch type %d: %v", ctype, err)
	}
	// The record's key is Kafka's ControlRecordKey, decodable by kmsg.
	var key kmsg.ControlRecordKey
	rec := log.NewRecordIter(data[log.BatchHeaderSize:first.TotalSize()])
	var r log.Record
	if ok, err := rec.Next(&r); !ok || err != nil {
		t.Fatal(err)
	}
	if err := key.ReadFrom(r.Key); err != nil || key.Type != kmsg.ControlRecordKeyTypeSnapshotHeader {
		t.Fatalf("control key %+v %v", key, err)
	}
	if got, _ := parseSnapshotHeader(b.Records[0]); got != hdr {
		t.Fatalf("header %+v", got)
	}
	rd, err := newSnapshotReader(id, data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		b, ok, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		for _, r := range b.Records {
			got = append(got, string(r))
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || rd.LastContainedLogTimestamp() != hdr.LastContainedLogTimestamp {
		t.Fatalf("read back %d records", len(got))
	}
	// A snapshot cut short (no footer) is refused.
	if _, err := checkSnapshot(data[:len(data)-10]); err == nil {
		t.Fatal("a truncated snapshot passed the check")
	}
	if _, err := newSnapshotReader(OffsetAndEpoch{Offset: 99, Epoch: 3}, data); err == nil {
		t.Fatal("a snapshot read under another end offset")
	}
}

func TestLeaderChangeMessageIsKafkas(t *testing.T) {
	b := buildControlBatch(5, 2, 1000, ControlLeaderChange, leaderChangeValue(3, []int32{1, 2, 3}))
	h, err := log.CheckBatch(b)
	if err != nil || !h.IsControl() || h.IsTransactional() || h.ProducerID != -1 || h.BaseOffset != 5 {
		t.Fatalf("header %+v %v", h, err)
	}
	it := log.NewRecordIter(b[log.BatchHeaderSize:])
	var r log.Record
	if ok, err := it.Next(&r); !ok || err != nil {
		t.Fatal(err)
	}
	var m kmsg.LeaderChangeMessage
	if err := m.ReadFrom(r.Value); err != nil || m.LeaderID != 3 || len(m.Voters) != 3 {
		t.Fatalf("LeaderChangeMessage %+v %v", m, err)
	}
	if typ, _ := controlType(r.Key); typ != 2 {
		t.Fatalf("control type %d", typ)
	}
}

func TestQuorumStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), quorumStateFile)
	if _, ok, err := readQuorumState(log.OSFS{}, path); ok || err != nil {
		t.Fatalf("missing file: %v %v", ok, err)
	}
	qs := newQuorumState(7, 2, 3, []int32{3, 1, 2})
	if err := writeQuorumState(log.OSFS{}, path, qs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := `{"clusterId":"","leaderId":3,"leaderEpoch":7,"votedId":2,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}` + "\n"
	if string(b) != want {
		t.Fatalf("quorum-state\n%s\nwant\n%s", b, want)
	}
	got, ok, err := readQuorumState(log.OSFS{}, path)
	if !ok || err != nil || got.LeaderEpoch != 7 || got.VotedID != 2 {
		t.Fatalf("read %+v %v %v", got, ok, err)
	}
	os.WriteFile(path, []byte(`{"leaderEpoch":1}`), 0o644)
	if _, _, err := readQuorumState(log.OSFS{}, path); err == nil {
		t.Fatal("a file without data_version was accepted")
	}
}

func TestParseVoters(t *testing.T) {
	v, err := ParseVoters("1@127.0.0.1:9093, 2@host:9094,0@[::1]:9095")
	if err != nil || len(v) != 3 || v[0] != "[::1]:9095" || v[2] != "host:9094" {
		t.Fatalf("%v %v", v, err)
	}
	for _, bad := range []string{"", "1@h:1,1@h:2", "x@h:1", "1:h:1", "1@nohostport", "-1@h:1"} {
		if _, err := ParseVoters(bad); err == nil {
			t.Fatalf("parsed %q", bad)
		}
	}
	if raftID(0) != 1 || nodeID(raftID(7)) != 7 || nodeID(0) != -1 {
		t.Fatal("id mapping")
	}
}

func TestTransportEncoding(t *testing.T) {
	msgs := []*pb.Message{
		{Type: pb.MsgHeartbeat.Enum(), To: new(uint64(2)), From: new(uint64(1)), Term: new(uint64(3))},
		{Type: pb.MsgApp.Enum(), To: new(uint64(2)), From: new(uint64(1)), Entries: []*pb.Entry{{Index: new(uint64(9)), Data: []byte("batch")}}},
	}
	body, err := encodeMessages(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMessages(body)
	if err != nil || len(got) != 2 || got[1].GetEntries()[0].GetIndex() != 9 || !bytes.Equal(got[1].GetEntries()[0].GetData(), []byte("batch")) {
		t.Fatalf("decoded %v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0, 0, 0, 9}, append(body[:len(body)-1:len(body)-1], 0, 0), binary.BigEndian.AppendUint32(nil, 1<<30)} {
		if _, err := decodeMessages(bad); err == nil {
			t.Fatalf("decoded %x", bad)
		}
	}
}

func TestHandleTransportRequestChecksMessages(t *testing.T) {
	c := newCluster(t, 3, nil)
	n := c.nodes[1]
	for _, m := range []*pb.Message{
		{Type: pb.MsgHeartbeat.Enum(), To: new(uint64(3)), From: new(uint64(3))}, // not for node 1 (raft id 2)
		{Type: pb.MsgHeartbeat.Enum(), To: new(raftID(1)), From: new(raftID(1))}, // from itself
		{Type: pb.MsgHup.Enum(), To: new(raftID(1)), From: new(raftID(2))},       // local only
		{Type: pb.MsgProp.Enum(), To: new(raftID(1)), From: new(raftID(2))},      // no forwarding
	} {
		body, _ := encodeMessages(nil, []*pb.Message{m})
		resp, err := n.HandleTransportRequest(body)
		if err == nil || int16(binary.BigEndian.Uint16(resp)) != kerr.InvalidRequest.Code {
			t.Fatalf("%v accepted: %x %v", m, resp, err)
		}
	}
	resp, err := n.HandleTransportRequest([]byte{1, 2})
	if err == nil || int16(binary.BigEndian.Uint16(resp)) != kerr.InvalidRequest.Code {
		t.Fatalf("garbage accepted: %v", err)
	}
	c.stop(1)
	body, _ := encodeMessages(nil, []*pb.Message{{Type: pb.MsgHeartbeat.Enum(), To: new(raftID(1)), From: new(raftID(2))}})
	if _, err := n.HandleTransportRequest(body); err == nil {
		t.Fatal("a closed node took messages")
	}
}

func TestTransportQueueFullDropsAndReports(t *testing.T) {
	n := &Node{wake: make(chan struct{}, 1)}
	tr := &transport{n: n, peers: map[uint64]*peer{2: {id: 2, queue: make(chan *pb.Message, 1)}}}
	tr.send([]*pb.Message{
		{Type: pb.MsgApp.Enum(), To: new(uint64(2))},
		{Type: pb.MsgApp.Enum(), To: new(uint64(2))},  // queue full: dropped
		{Type: pb.MsgSnap.Enum(), To: new(uint64(2))}, // dropped, snapshot failed
		{Type: pb.MsgApp.Enum(), To: new(uint64(7))},  // no such peer: ignored
	})
	if len(tr.peers[2].queue) != 1 {
		t.Fatalf("queued %d", len(tr.peers[2].queue))
	}
	if !n.notes.unreachable[2] || n.notes.snapStatus[2] != raft.SnapshotFailure {
		t.Fatalf("notes %v %v", n.notes.unreachable, n.notes.snapStatus)
	}
	select {
	case <-n.wake:
	default:
		t.Fatal("the raft goroutine was not woken")
	}
}
