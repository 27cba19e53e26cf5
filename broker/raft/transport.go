package raft

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// APIKey is the Moldau-private Kafka API key that carries raft messages
// between voters on the controller listener. It is far above every Kafka
// key and is not advertised in ApiVersions: only voters send it.
//
// Request: Kafka framing (int32 size, request header v1: api key, api
// version 0, correlation id, client id "moldau-raft-<node.id>"), then the
// body: int32 count, and count times (int32 length, a marshalled
// raftpb.Message). Response: int32 size, correlation id (response header
// v0), int16 error code (0: every message was queued for the raft
// goroutine).
const APIKey int16 = 10000

// APIVersion is the only version of APIKey.
const APIVersion int16 = 0

const (
	maxMessagesPerRequest = 4096
	maxRequestBatchBytes  = 4 << 20
	maxBackoff            = time.Second
	inboxWait             = time.Second
)

// encodeMessages appends a request body holding msgs.
func encodeMessages(dst []byte, msgs []*pb.Message) ([]byte, error) {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(msgs)))
	for _, m := range msgs {
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		var err error
		if dst, err = (proto.MarshalOptions{}).MarshalAppend(dst, m); err != nil {
			return dst, err
		}
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	return dst, nil
}

// decodeMessages parses a request body.
func decodeMessages(body []byte) ([]*pb.Message, error) {
	if len(body) < 4 {
		return nil, errors.New("raft: truncated request body")
	}
	n := binary.BigEndian.Uint32(body)
	body = body[4:]
	if n > maxMessagesPerRequest || int(n) > len(body)/4 {
		return nil, fmt.Errorf("raft: request claims %d messages", n)
	}
	msgs := make([]*pb.Message, 0, n)
	for range n {
		if len(body) < 4 {
			return nil, errors.New("raft: truncated message length")
		}
		size := binary.BigEndian.Uint32(body)
		if uint64(size) > uint64(len(body)-4) {
			return nil, fmt.Errorf("raft: message of %d bytes, %d left", size, len(body)-4)
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(body[4:4+size], m); err != nil {
			return nil, fmt.Errorf("raft: malformed message: %w", err)
		}
		msgs = append(msgs, m)
		body = body[4+size:]
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("raft: %d trailing bytes after the messages", len(body))
	}
	return msgs, nil
}

// networkMsg reports the message types that travel between voters.
func networkMsg(t pb.MessageType) bool {
	switch t {
	case pb.MsgApp, pb.MsgAppResp, pb.MsgVote, pb.MsgVoteResp, pb.MsgPreVote, pb.MsgPreVoteResp,
		pb.MsgSnap, pb.MsgHeartbeat, pb.MsgHeartbeatResp, pb.MsgTimeoutNow,
		pb.MsgReadIndex, pb.MsgReadIndexResp, pb.MsgTransferLeader:
		return true
	}
	return false
}

// HandleTransportRequest is the server side of the transport: the
// controller listener's handler calls it with the body of an APIKey
// request and answers with the returned body (response header v0 before
// it). The messages are queued for the raft goroutine; the error says why
// some were not (also coded in the body), for the caller's log.
func (n *Node) HandleTransportRequest(body []byte) ([]byte, error) {
	if n.isObserver() {
		return ackBody(kerr.InvalidRequest), fmt.Errorf("raft: node %d is an observer, not a voter", n.cfg.NodeID)
	}
	msgs, err := decodeMessages(body)
	if err == nil {
		err = n.checkInbound(msgs)
	}
	if err != nil {
		return ackBody(kerr.InvalidRequest), err
	}
	select {
	case <-n.g.Stopping():
		return ackBody(kerr.BrokerNotAvailable), n.stoppedErr()
	default:
	}
	t := time.NewTimer(inboxWait)
	defer t.Stop()
	select {
	case n.inbox <- msgs:
		return ackBody(nil), nil
	case <-n.g.Stopping():
		return ackBody(kerr.BrokerNotAvailable), n.stoppedErr()
	case <-t.C:
		return ackBody(kerr.RequestTimedOut), errors.New("raft: the raft goroutine is not taking messages; dropped them")
	}
}

func (n *Node) checkInbound(msgs []*pb.Message) error {
	for _, m := range msgs {
		if m.GetTo() != n.id {
			return fmt.Errorf("raft: message for node %d reached node %d", nodeID(m.GetTo()), n.cfg.NodeID)
		}
		// Any other node may send: the voter set changes (KIP-853), and
		// etcd raft ignores messages from nodes outside its configuration.
		if m.GetFrom() == n.id || m.GetFrom() == raft.None {
			return fmt.Errorf("raft: message from node %d, not a peer", nodeID(m.GetFrom()))
		}
		if !networkMsg(m.GetType()) {
			return fmt.Errorf("raft: message type %s does not travel between voters", m.GetType())
		}
	}
	return nil
}

func ackBody(code *kerr.Error) []byte {
	var c int16
	if code != nil {
		c = code.Code
	}
	return binary.BigEndian.AppendUint16(nil, uint16(c))
}

// transport is the client side: one connection and one sender goroutine
// per peer voter, each fed by a bounded queue. send never blocks the raft
// goroutine: a full queue drops the message and reports the peer
// unreachable (and a dropped snapshot failed), as etcd's rafthttp does.
type transport struct {
	n *Node
	// ctx is the voter scope's: it ends, and every sender with it, when
	// the node stops or turns observer.
	ctx context.Context

	mu      sync.Mutex
	peers   map[uint64]*peer
	started bool
}

type peer struct {
	t         *transport
	id        uint64
	addr      string
	queue     chan *pb.Message
	connected atomic.Bool
	// ctx ends when the node stops or turns observer, or the peer leaves
	// the voter set.
	ctx    context.Context
	cancel context.CancelFunc
}

func newTransport(n *Node, ctx context.Context) *transport {
	t := &transport{n: n, ctx: ctx, peers: map[uint64]*peer{}}
	t.setPeers(n.conf)
	return t
}

func (t *transport) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started = true
	for _, p := range t.peers {
		t.n.goVoter(p.run)
	}
}

// setPeers makes the peers the voters of set other than this node: a
// sender for each new one (or one whose address changed), the senders of
// the others stopped (raft goroutine).
func (t *transport) setPeers(set VoterSet) {
	n := t.n
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := map[uint64]bool{}
	for _, v := range set {
		if v.ID == n.cfg.NodeID {
			continue
		}
		rid, addr := raftID(v.ID), v.Addr(n.cfg.ListenerName)
		keep[rid] = true
		if p := t.peers[rid]; p != nil && p.addr == addr {
			continue
		} else if p != nil {
			p.cancel()
		}
		p := &peer{t: t, id: rid, addr: addr, queue: make(chan *pb.Message, n.cfg.PeerQueueSize)}
		p.ctx, p.cancel = context.WithCancel(t.ctx)
		t.peers[rid] = p
		if t.started {
			n.goVoter(p.run)
		}
	}
	for rid, p := range t.peers {
		if !keep[rid] {
			p.cancel()
			delete(t.peers, rid)
		}
	}
}

// send queues msgs for their peers (raft goroutine).
func (t *transport) send(msgs []*pb.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range msgs {
		p := t.peers[m.GetTo()]
		if p == nil {
			continue
		}
		select {
		case p.queue <- m:
		default:
			t.n.reportUnreachable(p.id)
			if m.GetType() == pb.MsgSnap {
				t.n.reportSnapshot(p.id, raft.SnapshotFailure)
			}
		}
	}
}

// disconnected counts peers without a live connection (Kafka's
// number-unknown-voter-connections).
func (t *transport) disconnected() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := 0
	for _, p := range t.peers {
		if !p.connected.Load() {
			k++
		}
	}
	return k
}

// run sends the peer's queue, a batch per request, waiting for each
// acknowledgement (the socket server handles one request per connection
// at a time). A failed dial or request drops the batch, reports the peer
// unreachable and backs off before redialling.
func (p *peer) run(<-chan struct{}) {
	n := p.t.n
	done := p.ctx.Done()
	var conn *peerConn
	defer func() {
		if conn != nil {
			conn.close()
		}
	}()
	backoff := n.cfg.RetryBackoff
	batch := make([]*pb.Message, 0, 64)
	for {
		batch = batch[:0]
		select {
		case <-done:
			return
		case m := <-p.queue:
			batch = append(batch, m)
		}
		batch = p.fill(batch)
		if conn == nil {
			c, err := p.dial()
			if err != nil {
				p.failed(batch, err)
				if !sleep(done, backoff) {
					return
				}
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			conn = c
			p.connected.Store(true)
		}
		if err := conn.roundTrip(batch, n.cfg.RequestTimeout); err != nil {
			conn.close()
			conn = nil
			p.connected.Store(false)
			p.failed(batch, err)
			continue
		}
		backoff = n.cfg.RetryBackoff
		for _, m := range batch {
			if m.GetType() == pb.MsgSnap {
				n.reportSnapshot(p.id, raft.SnapshotFinish)
			}
		}
	}
}

// fill adds queued messages to batch, up to the request limits; a
// snapshot travels alone.
func (p *peer) fill(batch []*pb.Message) []*pb.Message {
	if batch[0].GetType() == pb.MsgSnap {
		return batch
	}
	size := 0
	for len(batch) < maxMessagesPerRequest && size < maxRequestBatchBytes {
		select {
		case m := <-p.queue:
			batch = append(batch, m)
			if m.GetType() == pb.MsgSnap {
				return batch
			}
			for _, e := range m.GetEntries() {
				size += len(e.GetData())
			}
		default:
			return batch
		}
	}
	return batch
}

func (p *peer) failed(batch []*pb.Message, err error) {
	n := p.t.n
	n.logger.Debug("sending to a voter failed", "peer", nodeID(p.id), "addr", p.addr, "messages", len(batch), "err", err)
	n.reportUnreachable(p.id)
	for _, m := range batch {
		if m.GetType() == pb.MsgSnap {
			n.reportSnapshot(p.id, raft.SnapshotFailure)
		}
	}
}

func (p *peer) dial() (*peerConn, error) {
	n := p.t.n
	ctx, cancel := context.WithTimeout(p.ctx, n.cfg.RequestTimeout)
	defer cancel()
	c, err := n.cfg.Dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	pc := &peerConn{c: c, r: bufio.NewReader(c), clientID: fmt.Sprintf("moldau-raft-%d", n.cfg.NodeID)}
	// Closing the node cuts a request short rather than waiting for its
	// deadline.
	pc.stop = context.AfterFunc(p.ctx, func() { c.Close() })
	return pc, nil
}

func sleep(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		return true
	}
}

// peerConn is one connection to a peer's controller listener.
type peerConn struct {
	c        net.Conn
	stop     func() bool
	r        *bufio.Reader
	clientID string
	corr     int32
	buf      []byte
}

func (c *peerConn) close() {
	c.stop()
	c.c.Close()
}

// roundTrip sends one request and reads its acknowledgement.
func (c *peerConn) roundTrip(msgs []*pb.Message, timeout time.Duration) error {
	c.corr++
	b := append(c.buf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(APIKey))
	b = binary.BigEndian.AppendUint16(b, uint16(APIVersion))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.clientID)))
	b = append(b, c.clientID...)
	b, err := encodeMessages(b, msgs)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.buf = b
	// A snapshot may take long to send: allow for 10 MiB/s.
	deadline := time.Now().Add(timeout + time.Duration(len(b)/(10<<20))*time.Second)
	if err := c.c.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := c.c.Write(b); err != nil {
		return err
	}
	var hdr [10]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	corr := int32(binary.BigEndian.Uint32(hdr[4:]))
	code := int16(binary.BigEndian.Uint16(hdr[8:]))
	if size < 6 || corr != c.corr {
		return fmt.Errorf("raft: bad acknowledgement (size %d, correlation id %d, want %d)", size, corr, c.corr)
	}
	if _, err := c.r.Discard(int(size) - 6); err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("raft: peer answered %v", kerr.ErrorForCode(code))
	}
	return nil
}
