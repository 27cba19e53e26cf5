package group

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
)

// fakePersister records the share coordinator calls and keeps the states
// they make; failInit fails that many InitializeState calls first,
// failDelete every DeleteState.
type fakePersister struct {
	mu         sync.Mutex
	inits      []string
	deletes    []string
	failInit   int
	failDelete error
	states     map[string]ShareStateSummary
}

func (f *fakePersister) InitializeState(_ context.Context, group string, topic [16]byte, p, epoch int32, start int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failInit > 0 {
		f.failInit--
		return kerr.CoordinatorNotAvailable
	}
	f.inits = append(f.inits, shareCall(group, topic, p)+" epoch "+itoa(epoch)+" start "+itoa(int32(start)))
	if f.states == nil {
		f.states = map[string]ShareStateSummary{}
	}
	f.states[shareCall(group, topic, p)] = ShareStateSummary{StateEpoch: epoch, StartOffset: start, DeliveryCompleteCount: -1}
	return nil
}

func (f *fakePersister) ReadStateSummary(_ context.Context, group string, topic [16]byte, p int32) (ShareStateSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.states[shareCall(group, topic, p)]; ok {
		return st, nil
	}
	return ShareStateSummary{StartOffset: -1, DeliveryCompleteCount: -1}, nil
}

func (f *fakePersister) DeleteState(_ context.Context, group string, topic [16]byte, p int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failDelete != nil {
		return f.failDelete
	}
	f.deletes = append(f.deletes, shareCall(group, topic, p))
	delete(f.states, shareCall(group, topic, p))
	return nil
}

func (f *fakePersister) calls() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.inits), slices.Clone(f.deletes)
}

func shareCall(group string, topic [16]byte, p int32) string {
	return group + " " + string(topic[:3]) + "-" + itoa(p)
}

func itoa(n int32) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func newShareTestService(t *testing.T, p ShareStateInitializer) *Service {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ShareInitializeRetryInterval = time.Millisecond
	s := NewService(Options{
		Config:             cfg,
		Log:                runtimetest.NewMemLog(),
		Metadata:           newFakeTopics(TopicInfo{Name: "foo", Partitions: 3}),
		NumPartitions:      func() int32 { return 1 },
		Logger:             slog.New(slog.DiscardHandler),
		ShareGroupsEnabled: func() bool { return true },
		ShareState:         p,
	})
	t.Cleanup(s.Close)
	s.OnElection(0, 1)
	waitLoaded(t, s)
	return s
}

func serviceSHB(t *testing.T, s *Service, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	ch := make(chan *kmsg.ShareGroupHeartbeatResponse, 1)
	s.ShareGroupHeartbeat(RequestContext{ClientID: "c"}, req, func(r *kmsg.ShareGroupHeartbeatResponse) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("ShareGroupHeartbeat did not answer")
	}
	panic("unreachable")
}

// heartbeatUntilAssigned heartbeats until the member has n partitions.
func heartbeatUntilAssigned(t *testing.T, s *Service, group, member string, n int) int32 {
	t.Helper()
	epoch := serviceSHB(t, s, group, member, 0, "foo").MemberEpoch
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := serviceSHB(t, s, group, member, epoch)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil && len(r.Assignment.TopicPartitions) == 1 && len(r.Assignment.TopicPartitions[0].Partitions) == n {
			return epoch
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %s never got %d partitions", member, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// The persister initializes each new share-partition at the group epoch
// with start offset -1; partitions are assigned only after that, and a
// failed initialization is retried by a later heartbeat.
func TestShareStateInitializedThroughThePersister(t *testing.T) {
	p := &fakePersister{failInit: 1}
	s := newShareTestService(t, p)
	heartbeatUntilAssigned(t, s, "sg", "m1", 3)
	inits, _ := p.calls()
	want := []string{"sg foo-0 epoch 1 start -1", "sg foo-1 epoch 1 start -1", "sg foo-2 epoch 1 start -1"}
	if !slices.Equal(inits, want) {
		t.Fatalf("InitializeState calls %v, want %v", inits, want)
	}
}

// DeleteGroups deletes an empty share group's state through the persister,
// and keeps the group when that fails.
func TestShareGroupDeleteThroughThePersister(t *testing.T) {
	p := &fakePersister{failDelete: kerr.CoordinatorNotAvailable}
	s := newShareTestService(t, p)
	heartbeatUntilAssigned(t, s, "sg", "m1", 3)
	serviceSHB(t, s, "sg", "m1", -1)
	del := func() int16 {
		ch := make(chan []kmsg.DeleteGroupsResponseGroup, 1)
		s.DeleteGroups(RequestContext{}, []string{"sg"}, func(r []kmsg.DeleteGroupsResponseGroup) { ch <- r })
		select {
		case r := <-ch:
			return r[0].ErrorCode
		case <-time.After(10 * time.Second):
			t.Fatal("DeleteGroups did not answer")
		}
		panic("unreachable")
	}
	if code := del(); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("delete with a failing persister: %v", kerr.ErrorForCode(code))
	}
	p.mu.Lock()
	p.failDelete = nil
	p.mu.Unlock()
	if code := del(); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if _, deletes := p.calls(); !slices.Equal(deletes, []string{"sg foo-0", "sg foo-1", "sg foo-2"}) {
		t.Fatalf("DeleteState calls %v", deletes)
	}
	if code := del(); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete again: %v", kerr.ErrorForCode(code))
	}
}

// With share groups not enabled the heartbeat is UNSUPPORTED_VERSION.
func TestShareGroupHeartbeatDisabled(t *testing.T) {
	s := newShareTestService(t, nil)
	s.opts.ShareGroupsEnabled = func() bool { return false }
	if r := serviceSHB(t, s, "sg", "m1", 0, "foo"); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("%+v", r)
	}
}

// ShareGroupConfig is the group's share.* configs over the broker's.
func TestShareGroupConfigEffective(t *testing.T) {
	s := newShareTestService(t, nil)
	c := s.ShareGroupConfig("sg")
	if c.AutoOffsetReset.Type != "latest" || c.RecordLockDuration != 30*time.Second || c.IsolationLevel != "read_uncommitted" || c.DeliveryCountLimit != 5 {
		t.Fatalf("defaults: %+v", c)
	}
	s.UpdateGroupConfig("sg", map[string]string{"share.auto.offset.reset": "by_duration:PT1H", "share.record.lock.duration.ms": "15000",
		"share.isolation.level": "read_committed", "share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000"})
	c = s.ShareGroupConfig("sg")
	if c.AutoOffsetReset.Type != "by_duration" || c.AutoOffsetReset.ByDuration != time.Hour || c.RecordLockDuration != 15*time.Second || c.IsolationLevel != "read_committed" {
		t.Fatalf("overrides: %+v", c)
	}
	if r := serviceSHB(t, s, "sg", "m1", 0, "foo"); r.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("heartbeat interval %d", r.HeartbeatIntervalMillis)
	}
	if c := s.ShareGroupConfig("other"); c.AutoOffsetReset.Type != "latest" {
		t.Fatalf("another group: %+v", c)
	}
}
