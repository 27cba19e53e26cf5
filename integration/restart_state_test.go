package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recreatedTopic is a topic deleted and created again under the same name
// before the final incarnation receives finalRecords per partition.
type recreatedTopic struct {
	name       string
	partitions int32 // -1: num.partitions
	recreated  int   // times deleted and created again
}

// A topic deleted and created again under the same name keeps the records
// of its last incarnation across a clean restart and a kill -9 (the
// restarted broker used to replay the old topic's creation first, take the
// new log for a stray of it and delete it). Once re-created, three times
// re-created, and with the broker's num.partitions. A group config set
// before the restarts is there after each.
func TestRecreatedTopicSurvivesRestarts(t *testing.T) {
	const finalRecords = 100
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port, "num.partitions=3")
	topics := []recreatedTopic{{"again", 1, 1}, {"thrice", 1, 3}, {"defaulted", -1, 1}}
	want := map[string]int32{} // partitions of the final incarnation
	func() {
		admCl := newClient(t, p.Addr)
		adm := kadm.NewClient(admCl)
		ctx := ctxTimeout(t, time.Minute)
		for _, tc := range topics {
			for round := 0; round <= tc.recreated; round++ {
				if round > 0 {
					deleteTopicAndWait(t, ctx, adm, tc.name)
				}
				resp, err := adm.CreateTopic(ctx, tc.partitions, 1, nil, tc.name)
				if err == nil {
					err = resp.Err
				}
				if err != nil {
					t.Fatalf("creating %s (round %d): %v", tc.name, round, err)
				}
				want[tc.name] = resp.NumPartitions
				n := 10
				if round == tc.recreated {
					n = finalRecords
				}
				// A client per incarnation: one that knew the old
				// topic id keeps sending it (UNKNOWN_TOPIC_ID).
				prod := newClient(t, p.Addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
				produceEach(t, ctx, prod, tc.name, resp.NumPartitions, n, fmt.Sprintf("round-%d", round))
				prod.Close()
			}
		}
		checkFinalIncarnations(t, ctx, p.Addr, adm, want, finalRecords, "before any restart")
		// A group config: metadata state of its own kind, checked
		// across the same restarts.
		if code, msg := setGroupConfigs(t, admCl, "kept-group", "consumer.session.timeout.ms", "50000"); code != 0 {
			t.Fatalf("setting a group config: %d %s", code, msg)
		}
	}()

	for _, restart := range []string{"clean restart", "kill -9"} {
		if restart == "kill -9" {
			p.kill(t)
		} else {
			p.stop(t)
		}
		p = startProcess(t, dir, port, "num.partitions=3")
		cl := newClient(t, p.Addr)
		checkFinalIncarnations(t, ctxTimeout(t, time.Minute), p.Addr, kadm.NewClient(cl), want, finalRecords, "after a "+restart)
		if got := describeGroupConfigs(t, cl, "kept-group")["consumer.session.timeout.ms"]; got != "50000 GROUP_CONFIG" {
			t.Fatalf("after a %s the group config is %q, want 50000 GROUP_CONFIG", restart, got)
		}
		if strings.Contains(p.Out.String(), "stray log") {
			t.Fatalf("after a %s the broker took a log for a stray:\n%s", restart, p.Out.String())
		}
	}
}

func deleteTopicAndWait(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) {
	t.Helper()
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("deleting %s: %v", topic, err)
	}
	eventually(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		if d := md.Topics[topic]; d.Err == nil {
			return fmt.Errorf("%s still exists", topic)
		}
		return nil
	})
}

// produceEach writes n records to every partition of topic, acks=all.
func produceEach(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, n int, tag string) {
	t.Helper()
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%s-%d-%d", tag, p, i)})
		}
	}
	// Right after a creation the client may still see the old topic's
	// metadata: retry until every record is acknowledged once.
	eventually(t, 30*time.Second, func() error {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		return nil
	})
}

// checkFinalIncarnations checks that every partition of every topic holds
// exactly the final incarnation's records: high watermark n, and the
// records read back are that round's.
func checkFinalIncarnations(t *testing.T, ctx context.Context, seed string, adm *kadm.Client, want map[string]int32, n int, when string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	var ends kadm.ListedOffsets
	eventually(t, 30*time.Second, func() error {
		var err error
		ends, err = adm.ListEndOffsets(ctx, names...)
		if err == nil {
			err = ends.Error()
		}
		return err
	})
	for name, parts := range want {
		for p := range parts {
			o, ok := ends.Lookup(name, p)
			if !ok || o.Offset != int64(n) {
				t.Fatalf("%s: %s-%d has high watermark %d (found %v), want %d: acknowledged records were lost", when, name, p, o.Offset, ok, n)
			}
		}
	}
	for name, parts := range want {
		offsets := map[string]map[int32]kgo.Offset{name: {}}
		for p := range parts {
			offsets[name][p] = kgo.NewOffset().AtStart()
		}
		consumer := newClient(t, seed, kgo.ConsumePartitions(offsets))
		seen := map[int32]int{}
		total := 0
		for total < int(parts)*n {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: read %d of %d records of %s: %v", when, total, int(parts)*n, name, err)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Logf("%s: fetch error: %v", when, err) })
			fs.EachRecord(func(r *kgo.Record) {
				wantV := fmt.Sprintf("round-%d-%d-%d", roundsOf(name), r.Partition, seen[r.Partition])
				if string(r.Value) != wantV {
					t.Fatalf("%s: %s-%d offset %d holds %q, want %q", when, name, r.Partition, r.Offset, r.Value, wantV)
				}
				seen[r.Partition]++
				total++
			})
		}
		consumer.Close()
	}
}

// roundsOf is the round of a test topic's final incarnation.
func roundsOf(name string) int {
	if name == "thrice" {
		return 3
	}
	return 1
}

// After each of twenty kill -9 restarts, ten new consumer groups commit
// offsets and three new transactional ids are initialised within 15 s of
// the start. A coordinator shard could stay unloaded for minutes: the
// restarted broker replayed every earlier start's step-down and step-up of
// its partitions, and an election queued behind a resignation was dropped.
func TestCoordinatorsServeAfterKill9Restarts(t *testing.T) {
	restarts := 20
	if testing.Short() {
		restarts = 5
	}
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port)
	func() {
		adm := newAdmin(t, p.Addr)
		if _, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 1, 1, nil, "committed"); err != nil {
			t.Fatal(err)
		}
	}()
	for round := range restarts {
		started := time.Now()
		cl := newClient(t, p.Addr)
		ctx, cancel := context.WithDeadline(context.Background(), started.Add(15*time.Second))
		for g := range 10 {
			group := fmt.Sprintf("group-%d-%d", round, g)
			if err := commitUntilDone(ctx, kadm.NewClient(cl), group); err != nil {
				cancel()
				t.Fatalf("restart %d: committing offsets for %s: %v (%.1fs after the start)", round, group, err, time.Since(started).Seconds())
			}
		}
		for i := range 3 {
			id := fmt.Sprintf("txn-%d-%d", round, i)
			if err := initProducerIDUntilDone(ctx, cl, id); err != nil {
				cancel()
				t.Fatalf("restart %d: InitProducerId for %s: %v (%.1fs after the start)", round, id, err, time.Since(started).Seconds())
			}
		}
		cancel()
		cl.Close()
		p.kill(t)
		p = startProcess(t, dir, port)
	}
	// Every group's offsets are still there.
	adm := newAdmin(t, p.Addr)
	for round := range restarts {
		group := fmt.Sprintf("group-%d-0", round)
		var fetched kadm.OffsetResponses
		eventually(t, 15*time.Second, func() error {
			var err error
			fetched, err = adm.FetchOffsets(ctxTimeout(t, 10*time.Second), group)
			return err
		})
		if o, ok := fetched.Lookup("committed", 0); !ok || o.At != int64(round+1) {
			t.Fatalf("group %s: committed offset %+v (found %v), want %d", group, o, ok, round+1)
		}
	}
}

// commitUntilDone commits offset round+1 on committed-0 for group,
// retrying what a client retries, until ctx ends.
func commitUntilDone(ctx context.Context, adm *kadm.Client, group string) error {
	var round int
	fmt.Sscanf(group, "group-%d-", &round)
	offsets := kadm.Offsets{}
	offsets.AddOffset("committed", 0, int64(round+1), -1)
	for {
		resp, err := adm.CommitOffsets(ctx, group, offsets)
		if err == nil {
			err = resp.Error()
		}
		if err == nil || !retriable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// initProducerIDUntilDone initialises a transactional id as a producer's
// first step does, retrying what a client retries, until ctx ends.
func initProducerIDUntilDone(ctx context.Context, cl *kgo.Client, id string) error {
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil || !retriable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func retriable(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && ke.Retriable || errors.Is(err, kerr.NotCoordinator) ||
		errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.ConcurrentTransactions)
}
