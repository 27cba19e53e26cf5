package group

import (
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
	"github.com/moldau/moldau/log"
)

// fakeTopics is a Metadata of fixed topics.
type fakeTopics struct {
	mu     sync.Mutex
	topics map[string]TopicInfo
}

func newFakeTopics(ts ...TopicInfo) *fakeTopics {
	f := &fakeTopics{topics: map[string]TopicInfo{}}
	for _, t := range ts {
		f.add(t)
	}
	return f
}

func (f *fakeTopics) add(t TopicInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.ID == ([16]byte{}) {
		copy(t.ID[:], t.Name)
		t.ID[15] = byte(len(t.Name))
	}
	f.topics[t.Name] = t
}

func (f *fakeTopics) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.topics, name)
}

func (f *fakeTopics) TopicByName(name string) (TopicInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[name]
	return t, ok
}

func (f *fakeTopics) TopicByID(id [16]byte) (TopicInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.topics {
		if t.ID == id {
			return t, true
		}
	}
	return TopicInfo{}, false
}

func (f *fakeTopics) Topics() []TopicInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TopicInfo
	for _, t := range f.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// testShard drives a Shard as the runtime would, with a MockTimer: every
// result's records are replayed (unless NoReplay), appended to a log, and
// committed at once.
type testShard struct {
	t        *testing.T
	cfg      Config
	timer    *runtime.MockTimer
	topics   *fakeTopics
	versions *metadataVersions
	gcfgs    *groupConfigs
	s        *Shard
	log      []runtime.Record
}

var testStart = time.Unix(1_700_000_000, 0)

func newTestShard(t *testing.T, mutate ...func(*Config)) *testShard {
	cfg := DefaultConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	ts := &testShard{t: t, cfg: cfg, versions: &metadataVersions{}, gcfgs: &groupConfigs{}, timer: runtime.NewMockTimer(testStart), topics: newFakeTopics(TopicInfo{Name: "foo", Partitions: 3}, TopicInfo{Name: "bar", Partitions: 2})}
	ts.s = ts.newShard()
	ts.s.OnLoaded()
	return ts
}

func (ts *testShard) newShard() *Shard {
	s := newShard(&ts.cfg, runtime.ShardContext{
		TopicPartition: log.TopicPartition{Topic: "__consumer_offsets", Partition: 0},
		Timer:          ts.timer,
		Now:            ts.timer.Now,
		Logger:         slog.New(slog.DiscardHandler),
	}, ts.topics, ts.versions, nil)
	if ts.gcfgs != nil {
		s.groupConfigs = ts.gcfgs
	}
	return s
}

// commit writes a result as the runtime does.
func commit[T any](ts *testShard, res runtime.Result[T], err error) T {
	ts.t.Helper()
	if err != nil {
		var zero T
		return zero
	}
	for _, r := range res.Records {
		if !res.NoReplay {
			if err := ts.s.Replay(int64(len(ts.log)), -1, -1, r.Key, r.Value); err != nil {
				ts.t.Fatalf("replay: %v", err)
			}
		}
		ts.log = append(ts.log, r)
	}
	if res.OnWritten != nil {
		res.OnWritten(nil)
	}
	return res.Response
}

// advance moves the clock, running and committing due timers.
func (ts *testShard) advance(d time.Duration) {
	ts.timer.Advance(d, func(f runtime.Fired) { commit(ts, f.Result, f.Err) })
}

// reload replays the log into a fresh shard, as a restart does.
func (ts *testShard) reload() {
	ts.t.Helper()
	ts.s.OnUnloaded()
	ts.timer = runtime.NewMockTimer(ts.timer.Now())
	ts.s = ts.newShard()
	for i, r := range ts.log {
		if err := ts.s.Replay(int64(i), -1, -1, r.Key, r.Value); err != nil {
			ts.t.Fatalf("replay on load: %v", err)
		}
	}
	ts.s.OnLoaded()
}

// joinResult collects the (possibly later) response of a JoinGroup.
type joinResult struct{ resp *kmsg.JoinGroupResponse }

func (j *joinResult) done() bool { return j.resp != nil }

func (ts *testShard) join(version int16, group, memberID string, instanceID *string, protocols ...string) *joinResult {
	ts.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group, req.MemberID, req.InstanceID = group, memberID, instanceID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 60000
	req.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		md := kmsg.NewConsumerMemberMetadata()
		md.Topics = []string{"foo"}
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: md.AppendTo(nil)})
	}
	jr := &joinResult{}
	res, err := ts.s.classicGroupJoin(RequestContext{ClientID: "client", ClientHost: "/127.0.0.1", APIVersion: version}, req, func(r *kmsg.JoinGroupResponse) {
		if jr.resp != nil {
			ts.t.Fatalf("JoinGroup answered twice: %+v then %+v", jr.resp, r)
		}
		jr.resp = r
	})
	commit(ts, res, err)
	return jr
}

// joinNew joins as a new dynamic member the KIP-394 way and returns the
// member id and the parked join.
func (ts *testShard) joinNew(group string) (string, *joinResult) {
	ts.t.Helper()
	first := ts.join(9, group, "", nil)
	if first.resp == nil || first.resp.ErrorCode != kerr.MemberIDRequired.Code {
		ts.t.Fatalf("first join: %+v", first.resp)
	}
	id := first.resp.MemberID
	return id, ts.join(9, group, id, nil)
}

type syncResult struct{ resp *kmsg.SyncGroupResponse }

func (ts *testShard) sync(group, memberID string, instanceID *string, generation int32, assignments map[string]string) *syncResult {
	ts.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, memberID, instanceID, generation
	pt, pn := "consumer", "range"
	req.ProtocolType, req.Protocol = &pt, &pn
	for m, a := range assignments {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	sr := &syncResult{}
	res, err := ts.s.classicGroupSync(RequestContext{APIVersion: 5}, req, func(r *kmsg.SyncGroupResponse) { sr.resp = r })
	commit(ts, res, err)
	return sr
}

func (ts *testShard) heartbeat(group, memberID string, generation int32) int16 {
	ts.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, generation
	res, err := ts.s.classicGroupHeartbeat(req)
	if err != nil {
		return errCode(err)
	}
	return commit(ts, res, nil).ErrorCode
}

func (ts *testShard) classic(group string) *ClassicGroup {
	ts.t.Helper()
	g, ok := ts.s.groups[group].(*ClassicGroup)
	if !ok {
		ts.t.Fatalf("group %s is not a classic group: %T", group, ts.s.groups[group])
	}
	return g
}

func ptr[T any](v T) *T { return &v }
