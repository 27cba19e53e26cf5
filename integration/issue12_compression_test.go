package integration

import (
	"context"
	"encoding/binary"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kcat (Debian's librdkafka 2.0.2) with -z gzip, snappy, lz4 and zstd
// stores batches compressed with that codec. librdkafka before 2.8 enables
// gzip and snappy only if the broker advertises Produce from v0; with
// Produce 3-13 it printed "Broker does not support compression type gzip:
// not compressing batch" and stored everything uncompressed (issue 12,
// point 2; KAFKA-18659). Its lz4 check looks at FindCoordinator v0 instead
// (see the lz4 case).
func TestKcatCompression(t *testing.T) {
	kcat := kcatPath(t)
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 2*time.Minute)
	for _, c := range []struct {
		codec string
		id    int16 // attributes & 0x7
	}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}} {
		t.Run(c.codec, func(t *testing.T) {
			// librdkafka 2.0.2 takes FindCoordinator v0 as its marker
			// for LZ4 support (brokers >= 0.8.2); the group coordinator
			// serves it.
			if c.codec == "lz4" && !advertisesV0(ctx, t, b.Seed(), 10) {
				t.Fatal("FindCoordinator v0 is not advertised: librdkafka would not compress with lz4")
			}
			topic := "kcat-" + c.codec
			if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			p := exec.Command(kcat, "-P", "-b", b.Seed(), "-t", topic, "-z", c.codec, "-X", "linger.ms=50")
			p.Stdin = strings.NewReader(strings.Repeat("a compressible line of text\n", 100))
			out, err := p.CombinedOutput()
			if err != nil {
				t.Fatalf("kcat -P -z %s: %v\n%s", c.codec, err, out)
			}
			if strings.Contains(string(out), "not compressing") {
				t.Fatalf("kcat did not compress:\n%s", out)
			}
			batches := fetchBatches(ctx, t, b.Seed(), topic)
			if len(batches) == 0 {
				t.Fatal("nothing stored")
			}
			records := 0
			for _, bt := range batches {
				if got := bt.Attributes & 0x7; got != c.id {
					t.Fatalf("stored batch at offset %d has codec %d, want %d (%s)", bt.FirstOffset, got, c.id, c.codec)
				}
				records += int(bt.NumRecords)
			}
			if records != 100 {
				t.Fatalf("%d records stored, want 100", records)
			}
		})
	}
}

// advertisesV0 reports whether ApiVersions lists the API key from v0.
func advertisesV0(ctx context.Context, t *testing.T, seed string, key int16) bool {
	t.Helper()
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, newClient(t, seed))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range av.ApiKeys {
		if k.ApiKey == key {
			return k.MinVersion == 0
		}
	}
	return false
}

// fetchBatches reads partition 0 of topic from offset 0 and returns the
// stored batches' headers.
func fetchBatches(ctx context.Context, t *testing.T, seed string, topic string) []kmsg.RecordBatch {
	t.Helper()
	cl := newClient(t, seed)
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, describeTopic(t, newAdmin(t, seed), topic).ID // kgo picks the version: name or ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	part := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
		t.Fatal(err)
	}
	var out []kmsg.RecordBatch
	raw := part.RecordBatches
	for len(raw) >= 12 {
		size := int(binary.BigEndian.Uint32(raw[8:])) + 12
		if size > len(raw) {
			break
		}
		var bt kmsg.RecordBatch
		if err := bt.ReadFrom(raw[:size]); err != nil {
			t.Fatal(err)
		}
		out = append(out, bt)
		raw = raw[size:]
	}
	return out
}

// A Produce v0, v1 or v2 request (magic 0/1 message sets) is refused: the
// connection is closed, as Kafka 4.0's socket server does; nothing is
// stored. ApiVersions advertises Produce from v0 all the same.
func TestProduceV0ToV2Refused(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, time.Minute)
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, "old"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Seed())
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range av.ApiKeys {
		if k.ApiKey == 0 && (k.MinVersion != 0 || k.MaxVersion < 3) {
			t.Fatalf("ApiVersions advertises Produce %d-%d, want from 0", k.MinVersion, k.MaxVersion)
		}
	}
	for v := int16(0); v <= 2; v++ {
		conn, err := net.Dial("tcp", b.Seed())
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version = v
		req.Acks = 1
		req.TimeoutMillis = 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "old"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = legacyMessageSet()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var buf [1]byte
		n, err := conn.Read(buf[:])
		conn.Close()
		if n != 0 || err == nil || isTimeout(err) {
			t.Fatalf("Produce v%d: read %d bytes, err %v; want the connection closed", v, n, err)
		}
	}
	if batches := fetchBatches(ctx, t, b.Seed(), "old"); len(batches) != 0 {
		t.Fatalf("%d batches stored from Produce v0-2", len(batches))
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// legacyMessageSet is one magic-0 message (offset, size, crc, magic,
// attributes, key, value), as Produce v0-2 carried them.
func legacyMessageSet() []byte {
	msg := []byte{0, 0, 0, 0, 0, 0, 0, 0} // crc placeholder: refused before it is read
	msg = append(msg[:4], 0, 0)           // magic 0, attributes 0
	msg = binary.BigEndian.AppendUint32(msg, 0xffffffff)
	msg = binary.BigEndian.AppendUint32(msg, 5)
	msg = append(msg, "hello"...)
	set := binary.BigEndian.AppendUint64(nil, 0)
	set = binary.BigEndian.AppendUint32(set, uint32(len(msg)))
	return append(set, msg...)
}
