package integration

import (
	"crypto/rand"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With a small retention.ms and segment.bytes, old segments go, the log
// start moves, a fetch below it gets OFFSET_OUT_OF_RANGE, and kcat reads
// with -o beginning from the new start.
func TestRetentionMovesLogStart(t *testing.T) {
	b := startBroker(t, "", "log.retention.check.interval.ms=100")
	ctx := ctxTimeout(t, 60*time.Second)
	segBytes, retMs, delay := "1048576", "600000", "0"
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, map[string]*string{
		"segment.bytes": &segBytes, "retention.ms": &retMs, "file.delete.delay.ms": &delay,
	}, "ret"); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, b.Seed(), kgo.DefaultProduceTopic("ret"))
	v := make([]byte, 10<<10)
	rand.Read(v)                      // incompressible, so the segments fill
	old := time.Now().Add(-time.Hour) // already past retention.ms
	for i := 0; i < 400; i++ {        // ~4 MiB: several segments
		if err := p.ProduceSync(ctx, &kgo.Record{Value: v, Timestamp: old}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// One fresh record, so the active segment is not expired.
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("fresh")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Retention may already have run while the records went in; it is
	// done once every segment but the active one (which holds the fresh
	// record) is gone, and the log starts at the active segment's base.
	active := activeSegmentBase(t, filepath.Join(b.Dir, "ret-0"))
	if active == 0 {
		t.Fatal("the records did not fill more than one segment")
	}
	var start int64
	eventually(t, 20*time.Second, func() error {
		offs, err := newAdmin(t, b.Seed()).ListStartOffsets(ctx, "ret")
		if err != nil {
			return err
		}
		o, _ := offs.Lookup("ret", 0)
		start = o.Offset
		if start != active {
			return fmt.Errorf("log start %d, want the active segment's base %d", start, active)
		}
		return nil
	})

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "ret", describeTopic(t, newAdmin(t, b.Seed()), "ret").ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below log start %d: error %d, want OFFSET_OUT_OF_RANGE", start, got)
	}

	out, err := exec.Command("kcat", "-C", "-b", b.Seed(), "-t", "ret", "-o", "beginning", "-e", "-f", "%o\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	first := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	if first != fmt.Sprint(start) {
		t.Fatalf("kcat -o beginning starts at %q, want the new log start %d\n%s", first, start, out)
	}
}

// activeSegmentBase returns the base offset of a partition directory's
// newest segment (the highest NNN.log).
func activeSegmentBase(t *testing.T, dir string) int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no segments in %s: %v", dir, err)
	}
	var newest int64
	for _, n := range names {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".log"), 10, 64)
		if err != nil {
			t.Fatalf("segment name %s: %v", n, err)
		}
		newest = max(newest, base)
	}
	return newest
}
