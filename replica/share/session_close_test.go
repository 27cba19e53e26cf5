package share

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
)

func testCounter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// fetchOn is a share fetch of member that came on connection conn.
func (f *managerFixture) fetchOn(t *testing.T, member string, epoch int32, conn string, maxRecords int) FetchResponse {
	t.Helper()
	req := FetchRequest{Group: "g", Member: member, SessionEpoch: epoch, ConnID: conn, MaxBytes: 1 << 20, MaxRecords: maxRecords, TopicName: f.names}
	if epoch == InitialSessionEpoch {
		req.Add = []TopicIDPartition{f.tip}
	}
	done := make(chan FetchResponse, 1)
	f.m.Fetch(req, func(r FetchResponse) { done <- r })
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("share fetch did not answer")
	}
	return FetchResponse{}
}

// heldBy is the number of records member holds in the fixture's loaded
// share partition.
func (f *managerFixture) heldBy(member string) int64 {
	f.m.mu.Lock()
	e := f.m.parts[f.key()]
	f.m.mu.Unlock()
	if e == nil || e.sp == nil {
		return 0
	}
	e.sp.mu.Lock()
	defer e.sp.mu.Unlock()
	n := int64(0)
	for _, r := range e.sp.runs {
		if r.state == Acquired && r.member == member {
			n += r.count()
		}
	}
	return n
}

// A session ends with the connection its opening ShareFetch came on, not
// with another one the member's later requests used: the member's
// acquired records are given back at once (the lock is 30 s), and
// another member acquires them.
func TestSessionEndsWithItsConnection(t *testing.T) {
	f := newManagerFixture(t, 2, 5) // offsets 0-9
	if got, want := acquiredOf(f.fetchOn(t, "m1", 0, "conn-1", 100)), []AcquiredRecords{{0, 9, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("m1 acquired %v, want %v", got, want)
	}
	if r := f.fetchOn(t, "m2", 0, "conn-2", 100); r.Err != nil || len(acquiredOf(r)) != 0 {
		t.Fatalf("m2's first fetch: %v, acquired %v", r.Err, acquiredOf(r))
	}
	// m1's next request comes on another connection; that one closes.
	if r := f.fetchOn(t, "m1", 1, "conn-3", 100); r.Err != nil {
		t.Fatalf("m1's fetch on another connection: %v", r.Err)
	}
	f.m.Sessions().OnDisconnect("conn-3")
	f.m.Sessions().OnDisconnect("conn-unknown")
	if !f.m.Sessions().Has("g", "m1") || f.heldBy("m1") != 10 {
		t.Fatalf("closing another connection ended m1's session (has %v) or released its records (holds %d)", f.m.Sessions().Has("g", "m1"), f.heldBy("m1"))
	}

	f.m.Sessions().OnDisconnect("conn-1")
	if f.m.Sessions().Has("g", "m1") {
		t.Fatal("m1's session outlived its connection")
	}
	if !f.m.Sessions().Has("g", "m2") {
		t.Fatal("m2's session, on another connection, ended too")
	}
	eventually(t, func() bool { return f.heldBy("m1") == 0 })
	if got, want := acquiredOf(f.fetchOn(t, "m2", 1, "conn-2", 100)), []AcquiredRecords{{0, 9, 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("m2 acquired %v, want %v", got, want)
	}
	if r := f.fetchOn(t, "m1", 2, "conn-3", 100); !errors.Is(r.Err, kerr.ShareSessionNotFound) {
		t.Fatalf("m1's session after its connection closed: %v", r.Err)
	}
	if got := testCounter(t, f.m.metrics.sessionEvictions); got != 1 {
		t.Fatalf("%v evictions counted, want 1", got)
	}
}

// A session re-opened (epoch 0) on a new connection, or closed with the
// final epoch, is not ended by the old connection closing (KAFKA-19950).
func TestSessionReopenedOutlivesItsOldConnection(t *testing.T) {
	f := newManagerFixture(t, 1, 5)
	f.fetchOn(t, "m1", 0, "conn-1", 100)
	f.fetchOn(t, "m1", 0, "conn-2", 0) // re-opened on conn-2
	f.m.Sessions().OnDisconnect("conn-1")
	if !f.m.Sessions().Has("g", "m1") {
		t.Fatal("the old connection's close ended the re-opened session")
	}
	f.m.Sessions().OnDisconnect("conn-2")
	if f.m.Sessions().Has("g", "m1") {
		t.Fatal("the session outlived the connection that re-opened it")
	}
}

// A connection closing while a fetch of its session (on another
// connection) acquires leaves no record held by the member that left,
// whichever comes first, and nothing deadlocks.
func TestSessionCloseRacesFetch(t *testing.T) {
	f := newManagerFixture(t, 2, 5)
	f.deliveryLimit = 1000 // m1 acquires the same records again and again
	// m2's session keeps the group's share partitions loaded when m1's ends.
	if _, err := f.m.Sessions().Update(SessionUpdate{Group: "g", Member: "m2", Add: []TopicIDPartition{f.tip}, ConnID: "conn-m2"}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		conn := fmt.Sprintf("conn-%d", i)
		if _, err := f.m.Sessions().Update(SessionUpdate{Group: "g", Member: "m1", Add: []TopicIDPartition{f.tip}, ConnID: conn}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			r := f.fetchOn(t, "m1", 1, "other", 100)
			if r.Err != nil && !errors.Is(r.Err, kerr.ShareSessionNotFound) {
				t.Errorf("fetch racing the close: %v", r.Err)
			}
		}()
		go func() {
			defer wg.Done()
			f.m.Sessions().OnDisconnect(conn)
		}()
		wg.Wait()
		if f.m.Sessions().Has("g", "m1") {
			t.Fatal("the session outlived its connection")
		}
		eventually(t, func() bool { return f.heldBy("m1") == 0 })
		if t.Failed() {
			return
		}
	}
}
