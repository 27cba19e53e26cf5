package raft

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// testSM is a state machine whose state is every record value committed,
// in order; its snapshot is that list.
type testSM struct {
	mu        sync.Mutex
	records   []string
	offsets   []int64 // last offset of each batch delivered
	lastEnd   int64   // offset after the last batch or snapshot
	snapshots []OffsetAndEpoch
	leaders   []LeaderAndEpoch
	failSnap  error
}

func (s *testSM) HandleCommit(batches []Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range batches {
		if b.BaseOffset != s.lastEnd {
			panic(fmt.Sprintf("batch at %d after end %d", b.BaseOffset, s.lastEnd))
		}
		for _, r := range b.Records {
			s.records = append(s.records, string(r))
		}
		s.offsets = append(s.offsets, b.LastOffset)
		s.lastEnd = b.LastOffset + 1
	}
}

func (s *testSM) HandleLoadSnapshot(r *SnapshotReader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = nil
	for {
		b, ok, err := r.Next()
		if err != nil {
			panic(err)
		}
		if !ok {
			break
		}
		for _, rec := range b.Records {
			s.records = append(s.records, string(rec))
		}
	}
	s.snapshots = append(s.snapshots, r.SnapshotID())
	s.lastEnd = r.SnapshotID().Offset
}

func (s *testSM) HandleLeaderChange(le LeaderAndEpoch) {
	s.mu.Lock()
	s.leaders = append(s.leaders, le)
	s.mu.Unlock()
}

func (s *testSM) WriteSnapshot(w *SnapshotWriter) error {
	s.mu.Lock()
	recs := slices.Clone(s.records)
	end, fail := s.lastEnd, s.failSnap
	s.mu.Unlock()
	if fail != nil {
		return fail
	}
	if w.SnapshotID().Offset != end {
		return fmt.Errorf("snapshot at %d, state at %d", w.SnapshotID().Offset, end)
	}
	for _, r := range recs {
		if err := w.Append([]byte(r)); err != nil {
			return err
		}
	}
	return nil
}

func (s *testSM) state() ([]string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records), s.lastEnd
}

// testServer is a minimal controller listener: Kafka framing, one request
// at a time per connection, APIKey requests handed to the node.
type testServer struct {
	ln    net.Listener
	node  atomic.Pointer[Node]
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newTestServer(t testing.TB) *testServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *testServer) addr() string { return s.ln.Addr().String() }

func (s *testServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *testServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		var sz [4]byte
		if _, err := io.ReadFull(r, sz[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(sz[:]))
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		key := int16(binary.BigEndian.Uint16(frame))
		corr := frame[4:8]
		idLen := int(int16(binary.BigEndian.Uint16(frame[8:])))
		body := frame[10+max(idLen, 0):]
		var resp []byte
		n := s.node.Load()
		if key == 1 || key == 59 || key == 82 {
			if n == nil {
				return
			}
			if resp = serveObserverRequest(n, key, int16(binary.BigEndian.Uint16(frame[2:])), body); resp == nil {
				return
			}
		}
		switch {
		case resp != nil:
		case key != APIKey:
			return
		case n == nil:
			resp = ackBody(nil)
			resp[1] = 8 // not available yet
		default:
			resp, _ = n.HandleTransportRequest(body)
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(4+len(resp)))
		out = append(append(out, corr...), resp...)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// serveObserverRequest answers an observer's Fetch or FetchSnapshot as the
// controller listener does: body is after the client id, so a flexible
// request's header tags come first; the response body starts with the
// flexible response header's empty tags.
func serveObserverRequest(n *Node, key, version int16, body []byte) []byte {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if req.IsFlexible() {
		tags, k := binary.Uvarint(body)
		if k <= 0 || tags != 0 {
			return nil
		}
		body = body[k:]
	}
	if err := req.ReadFrom(body); err != nil {
		return nil
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		resp = n.HandleFetch(r)
	case *kmsg.FetchSnapshotRequest:
		resp = n.HandleFetchSnapshot(r)
	case *kmsg.UpdateRaftVoterRequest:
		resp = n.HandleUpdateRaftVoter(context.Background(), r)
	}
	return resp.AppendTo([]byte{0})
}

func (s *testServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// cluster is n voters in one process over TCP on 127.0.0.1.
type cluster struct {
	t       testing.TB
	voters  map[int32]string
	servers map[int32]*testServer
	dirs    map[int32]string
	fs      map[int32]log.FS
	nodes   map[int32]*Node
	sms     map[int32]*testSM
	tweak   func(*Config)
	// keyed: every node knows its directory id and endpoints (the
	// server it listens on), so voters send UpdateRaftVoter.
	keyed bool
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("RAFT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newCluster(t testing.TB, size int, tweak func(*Config)) *cluster {
	return newClusterOf(t, size, tweak, false)
}

func newClusterOf(t testing.TB, size int, tweak func(*Config), keyed bool) *cluster {
	c := &cluster{
		t: t, voters: map[int32]string{}, servers: map[int32]*testServer{}, dirs: map[int32]string{},
		fs: map[int32]log.FS{}, nodes: map[int32]*Node{}, sms: map[int32]*testSM{}, tweak: tweak, keyed: keyed,
	}
	for id := int32(1); id <= int32(size); id++ {
		c.servers[id] = newTestServer(t)
		c.voters[id] = c.servers[id].addr()
		c.dirs[id] = filepath.Join(t.TempDir(), fmt.Sprintf("node-%d", id))
	}
	for id := range c.voters {
		c.start(id)
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.stop(id)
		}
	})
	return c
}

func (c *cluster) config(id int32) Config {
	cfg := Config{
		NodeID: id, Voters: c.voters, Dir: c.dirs[id], Logger: testLogger(c.t).With("test_node", id),
		FS: c.fs[id], TickInterval: 50 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
	}
	if c.keyed {
		srv := c.servers[id]
		cfg.ClusterID, cfg.DirectoryID = "test-cluster", testDirectoryID(id)
		cfg.LocalEndpoints = func() []Endpoint { return endpointsOf(srv.addr()) }
	}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	return cfg
}

func (c *cluster) start(id int32) {
	c.t.Helper()
	sm := &testSM{}
	n, err := Open(c.config(id), sm)
	if err != nil {
		c.t.Fatalf("open node %d: %v", id, err)
	}
	c.nodes[id], c.sms[id] = n, sm
	c.servers[id].node.Store(n)
}

func (c *cluster) stop(id int32) {
	c.t.Helper()
	n := c.nodes[id]
	if n == nil {
		return
	}
	c.servers[id].node.Store(nil)
	if err := n.Close(); err != nil {
		c.t.Errorf("close node %d: %v", id, err)
	}
	delete(c.nodes, id)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// leader waits for a leader all running nodes agree on, whose listener
// was told it leads, and returns it.
func (c *cluster) leader(timeout time.Duration) (int32, int32) {
	c.t.Helper()
	var lid, epoch int32
	waitFor(c.t, timeout, "a leader", func() bool {
		lid, epoch = -1, -1
		for _, n := range c.nodes {
			le := n.LeaderAndEpoch()
			if le.LeaderID < 0 || (lid >= 0 && (le.LeaderID != lid || le.Epoch != epoch)) {
				return false
			}
			lid, epoch = le.LeaderID, le.Epoch
		}
		if c.nodes[lid] == nil {
			return false
		}
		sm := c.sms[lid]
		sm.mu.Lock()
		defer sm.mu.Unlock()
		return len(sm.leaders) > 0 && sm.leaders[len(sm.leaders)-1] == LeaderAndEpoch{lid, epoch}
	})
	return lid, epoch
}

// appendAndCommit appends one batch on the leader and waits for its
// commit.
func appendAndCommit(t testing.TB, n *Node, epoch int32, recs ...string) int64 {
	t.Helper()
	var rs [][]byte
	for _, r := range recs {
		rs = append(rs, []byte(r))
	}
	off, err := n.ScheduleAppend(epoch, rs)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitForCommit(ctx, epoch, off); err != nil {
		t.Fatalf("wait for commit of %d: %v", off, err)
	}
	return off
}

// waitState waits until every running node's state machine holds want.
func (c *cluster) waitState(want []string) {
	c.t.Helper()
	for id := range c.nodes {
		sm := c.sms[id]
		waitFor(c.t, 10*time.Second, fmt.Sprintf("node %d to apply %d records", id, len(want)), func() bool {
			got, _ := sm.state()
			return slices.Equal(got, want)
		})
	}
}

var errTest = errors.New("test")

// testDirectoryID is node id's directory id in a keyed cluster.
func testDirectoryID(id int32) [16]byte { return [16]byte{15: byte(id), 0: 0xd1} }

// endpointsOf is the CONTROLLER endpoint at addr.
func endpointsOf(addr string) []Endpoint {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return []Endpoint{{Name: "CONTROLLER", Host: host, Port: uint16(p)}}
}
