package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// actAnswer is an action's answer: ActResult or ActError fields.
type actAnswer struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

func postAct(t *testing.T, url, path string, body any) (int, actAnswer) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url+"/api/act/"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a actAnswer
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("POST %s: %s %q: %v", path, resp.Status, data, err)
	}
	t.Logf("POST /api/act/%s: %d %+v", path, resp.StatusCode, a)
	return resp.StatusCode, a
}

// waitFor polls cond every 50 ms until it holds, or fails after 15 s.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s: %v", what, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// The actions on a real broker: elections answered by name, DeleteRecords
// moving the log start, a group's offsets reset when it is empty and
// refused (with kafka-consumer-groups.sh's words) while it has a member,
// DeleteGroups refused with NON_EMPTY_GROUP and then done, a dynamic
// broker config set and deleted (a static one refused), and a hanging
// transaction aborted so that the last stable offset reaches the high
// watermark. Every action is logged and handed to OnAction.
func TestActions(t *testing.T) {
	seed, _ := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "t", "tx"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for range 10 {
		recs = append(recs, &kgo.Record{Topic: "t", Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var logged bytes.Buffer
	var actions []Action
	p := NewPoller(cl, time.Second, 5*time.Second, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv, _ := testServer(t, p, Config{
		Logger:   slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logged}, nil)),
		OnAction: func(a Action) { mu.Lock(); actions = append(actions, a); mu.Unlock() },
	})

	// Elections: one broker, so its replica already leads.
	if code, a := postAct(t, srv.URL, "partition/elect", map[string]any{"topic": "t", "partition": 0, "type": "preferred"}); code != 200 || !a.OK || !strings.Contains(a.Message, "ELECTION_NOT_NEEDED") {
		t.Errorf("preferred election of t-0: %d %+v", code, a)
	}
	if code, a := postAct(t, srv.URL, "partition/elect", map[string]any{"topic": "t", "partition": 7, "type": "preferred"}); code != http.StatusConflict || a.Error != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Errorf("election of t-7, which does not exist: %d %+v", code, a)
	}

	// A dynamic broker config set, refused when it is not dynamic, and
	// deleted.
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := md.Brokers[0].NodeID
	maxConns := func() (string, string) {
		cs, err := p.BrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs.Configs {
			if c.Name == "max.connections" && c.Value != nil {
				return *c.Value, c.Source
			}
		}
		return "", ""
	}
	if code, a := postAct(t, srv.URL, "broker/alter-config", map[string]any{"broker": id, "name": "max.connections", "value": "1000"}); code != 200 || !a.OK {
		t.Fatalf("setting max.connections: %d %+v", code, a)
	}
	if v, src := maxConns(); v != "1000" || src != "DYNAMIC_BROKER_CONFIG" {
		t.Errorf("max.connections after setting it: %s from %s", v, src)
	}
	if code, a := postAct(t, srv.URL, "broker/alter-config", map[string]any{"broker": id, "name": "node.id", "value": "9"}); code != http.StatusConflict || a.Error == "" {
		t.Errorf("setting node.id, which is read-only: %d %+v, want 409 and Kafka's error", code, a)
	}
	if code, a := postAct(t, srv.URL, "broker/alter-config", map[string]any{"broker": id, "name": "max.connections", "value": nil}); code != 200 || !a.OK {
		t.Fatalf("deleting max.connections: %d %+v", code, a)
	}
	if v, src := maxConns(); v == "1000" || src == "DYNAMIC_BROKER_CONFIG" {
		t.Errorf("max.connections after deleting it: %s from %s", v, src)
	}

	// DeleteRecords moves the log start.
	if code, a := postAct(t, srv.URL, "partition/delete-records", map[string]any{"topic": "t", "partition": 0, "offset": 4}); code != 200 || !strings.Contains(a.Message, "log start offset is 4") {
		t.Fatalf("delete records of t-0 before 4: %d %+v", code, a)
	}
	starts, err := adm.ListStartOffsets(ctx, "t")
	if err != nil || starts["t"][0].Offset != 4 {
		t.Fatalf("log start of t-0 after DeleteRecords: %+v %v", starts["t"][0], err)
	}

	// An empty group (offsets committed, no member) is reset.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 10, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "idle", offs); err != nil {
		t.Fatal(err)
	}
	committed := func(group string) int64 {
		t.Helper()
		fo, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := fo.Lookup("t", 0)
		if !ok {
			return -1
		}
		return o.At
	}
	if code, a := postAct(t, srv.URL, "group/reset-offsets", map[string]any{"group": "idle", "topic": "t", "partition": -1, "to": "earliest"}); code != 200 || committed("idle") != 4 {
		t.Fatalf("reset of group idle to earliest: %d %+v, committed %d", code, a, committed("idle"))
	}
	if code, _ := postAct(t, srv.URL, "group/reset-offsets", map[string]any{"group": "idle", "topic": "t", "partition": 0, "to": "offset", "offset": 7}); code != 200 || committed("idle") != 7 {
		t.Fatalf("reset of group idle to 7: %d, committed %d", code, committed("idle"))
	}

	// A group with a member: the reset and the delete are refused.
	member, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	if fs := member.PollFetches(ctx); fs.Err0() != nil {
		t.Fatal(fs.Err0())
	}
	waitFor(t, "group live stable", func() error {
		ds, err := adm.DescribeGroups(ctx, "live")
		if err == nil && ds["live"].State != "Stable" {
			err = fmt.Errorf("state %s", ds["live"].State)
		}
		return err
	})
	code, a := postAct(t, srv.URL, "group/reset-offsets", map[string]any{"group": "live", "topic": "t", "partition": -1, "to": "latest"})
	if want := "Assignments can only be reset if the group 'live' is inactive, but the current state is Stable."; code != http.StatusConflict || a.Message != want {
		t.Errorf("reset of a live group: %d %+v, want 409 %q", code, a, want)
	}
	if code, a := postAct(t, srv.URL, "group/delete", map[string]any{"group": "live"}); code != http.StatusConflict || a.Error != "NON_EMPTY_GROUP" {
		t.Errorf("delete of a live group: %d %+v, want 409 NON_EMPTY_GROUP", code, a)
	}
	if code, a := postAct(t, srv.URL, "group/delete", map[string]any{"group": "idle"}); code != 200 || !a.OK {
		t.Fatalf("delete of group idle: %d %+v", code, a)
	}
	if gs, err := adm.ListGroups(ctx); err != nil || gs["idle"].Group != "" {
		t.Errorf("group idle after its deletion: %+v %v", gs["idle"], err)
	}

	// A hanging transaction: begun, produced to, never ended, with a
	// timeout far beyond the test.
	txn, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.TransactionalID("hanging"), kgo.TransactionTimeout(10*time.Minute),
		kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("never committed")}, &kgo.Record{Value: []byte("nor this")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lso := func() (lso, hw int64) {
		c, err1 := adm.ListCommittedOffsets(ctx, "tx")
		e, err2 := adm.ListEndOffsets(ctx, "tx")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return c["tx"][0].Offset, e["tx"][0].Offset
	}
	if l, h := lso(); l != 0 || h != 2 {
		t.Fatalf("the open transaction: LSO %d, HW %d; want 0 and 2", l, h)
	}
	if code, a := postAct(t, srv.URL, "txn/abort", map[string]any{"transactional_id": "hanging"}); code != 200 || !strings.Contains(a.Message, "tx-0 from offset 0") {
		t.Fatalf("abort of the hanging transaction: %d %+v", code, a)
	}
	waitFor(t, "the LSO at the HW after the abort", func() error {
		if l, h := lso(); l != h || h < 3 {
			return fmt.Errorf("LSO %d, HW %d", l, h)
		}
		return nil
	})
	// Nothing open any more: a second abort says so.
	if code, a := postAct(t, srv.URL, "txn/abort", map[string]any{"transactional_id": "hanging"}); code != http.StatusConflict || !strings.Contains(a.Message, "no open transaction") {
		t.Errorf("a second abort: %d %+v", code, a)
	}

	// Bad requests.
	if code, _ := postAct(t, srv.URL, "partition/elect", map[string]any{"topic": "t", "partition": 0, "type": "random"}); code != http.StatusBadRequest {
		t.Errorf("an election of an unknown type: %d", code)
	}
	if code, _ := postAct(t, srv.URL, "topic/burn", map[string]any{}); code != http.StatusNotFound {
		t.Errorf("an unknown action: %d", code)
	}

	mu.Lock()
	defer mu.Unlock()
	// Every action but the unknown one, done or refused.
	if n := strings.Count(logged.String(), "console action"); n != len(actions) || n != 14 {
		t.Errorf("%d actions logged, %d handed to OnAction:\n%s", n, len(actions), logged.String())
	}
}

// A read-only console answers 403 to every action and its page says so,
// as does a replay; a body with an unknown field is 400, a form 415.
func TestActionsReadOnly(t *testing.T) {
	srv, _ := testServer(t, testPoller(), Config{ReadOnly: true})
	if code, a := postAct(t, srv.URL, "group/delete", map[string]any{"group": "g"}); code != http.StatusForbidden || !strings.Contains(a.Message, "read-only") {
		t.Errorf("an action on a read-only console: %d %+v", code, a)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(page, []byte(`<body data-read-only="true">`)) {
		t.Errorf("the read-only page does not say so")
	}
	// A replay has no cluster to act on.
	run, _ := recordRun(t, 3)
	r, err := NewReplay(run)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ = serveSource(t, r, Config{}, nil)
	if code, a := postAct(t, srv.URL, "group/delete", map[string]any{"group": "g"}); code != http.StatusForbidden || !strings.Contains(a.Message, "replay") {
		t.Errorf("an action on a replay: %d %+v", code, a)
	}

	srv, _ = testServer(t, testPoller(), Config{})
	if code, _ := postAct(t, srv.URL, "group/delete", map[string]any{"nope": 1}); code != http.StatusBadRequest {
		t.Errorf("an unknown field: %d, want 400", code)
	}
	resp, err = http.Post(srv.URL+"/api/act/group/delete", "application/x-www-form-urlencoded", strings.NewReader("group=g"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a form post: %s, want 415", resp.Status)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
