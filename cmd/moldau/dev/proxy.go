package dev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Clients is the source "node" of a link from a client (anything that is
// not a node of the cluster) in Link.
const Clients int32 = 0

// maxFrame bounds a frame the proxy reads (socket.request.max.bytes is
// 100 MiB; a fetch response may be as large as fetch.max.bytes, 55 MiB).
const maxFrame = 128 << 20

// Link is one direction of traffic between two ends: From is the node
// that opened the connection (Clients for a client), To the node it
// reached.
type Link struct {
	From int32 `json:"from"`
	To   int32 `json:"to"`
}

func (l Link) String() string {
	from := "clients"
	if l.From != Clients {
		from = "node " + strconv.Itoa(int(l.From))
	}
	return fmt.Sprintf("%s -> node %d", from, l.To)
}

// Network is the state every proxy consults: which nodes are cut off and
// which links lose their next request or response. Its methods are safe
// for concurrent use.
type Network struct {
	mu         sync.Mutex
	cutPeers   map[int32]bool
	cutClients map[int32]bool
	loseReq    map[Link]int
	loseResp   map[Link]int
	conns      map[*proxyConn]struct{}
	onLost     func(l Link, response bool, apiKey int16)
}

func newNetwork(onLost func(Link, bool, int16)) *Network {
	return &Network{cutPeers: map[int32]bool{}, cutClients: map[int32]bool{}, loseReq: map[Link]int{}, loseResp: map[Link]int{},
		conns: map[*proxyConn]struct{}{}, onLost: onLost}
}

// blocked reports whether traffic on l is cut.
func (n *Network) blocked(l Link) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.blockedLocked(l)
}

func (n *Network) blockedLocked(l Link) bool {
	if l.From == Clients {
		return n.cutClients[l.To]
	}
	return n.cutPeers[l.From] || n.cutPeers[l.To]
}

// Cut cuts node off from the other nodes (peers) or from the clients,
// closing the connections it had on those links; new ones are closed as
// soon as their first request names who opened them.
func (n *Network) Cut(node int32, fromClients bool) {
	n.mu.Lock()
	if fromClients {
		n.cutClients[node] = true
	} else {
		n.cutPeers[node] = true
	}
	var closing []*proxyConn
	for c := range n.conns {
		if n.blockedLocked(c.link) {
			closing = append(closing, c)
		}
	}
	n.mu.Unlock()
	for _, c := range closing {
		c.close()
	}
}

// Heal lifts every cut of node.
func (n *Network) Heal(node int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cutPeers, node)
	delete(n.cutClients, node)
}

// Cuts returns the nodes cut off from peers and from clients.
func (n *Network) Cuts() (peers, clients []int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, on := range n.cutPeers {
		if on {
			peers = append(peers, id)
		}
	}
	for id, on := range n.cutClients {
		if on {
			clients = append(clients, id)
		}
	}
	return peers, clients
}

// LoseNext makes the link drop its next request (response false) or the
// next response, silently: the other end sees nothing.
func (n *Network) LoseNext(l Link, response bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if response {
		n.loseResp[l]++
	} else {
		n.loseReq[l]++
	}
}

// takeLoss reports whether this frame on l is to be lost, and if so
// consumes the armed loss.
func (n *Network) takeLoss(l Link, response bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.loseReq
	if response {
		m = n.loseResp
	}
	if m[l] == 0 {
		return false
	}
	m[l]--
	return true
}

// Proxy forwards TCP connections from its listener to one node's
// listener, a Kafka frame at a time (a 4-byte size, then the frame), so
// that it can name the link of a connection from its first request's
// client id and lose one request or response.
type Proxy struct {
	net     *Network
	ln      net.Listener
	to      int32
	clients bool // in front of the node's client listener
	backend func() string
	wg      sync.WaitGroup

	mu       sync.Mutex
	accepted map[net.Conn]struct{} // every client connection being served
	closed   bool
}

// newProxy listens on a free loopback port for node to's listener at
// backend(); clients says it is the client listener.
func newProxy(n *Network, to int32, clients bool, backend func() string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{net: n, ln: ln, to: to, clients: clients, backend: backend, accepted: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting and closes the proxy's connections, including
// those that have not sent their first request yet.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.accepted {
		c.Close() // its serve closes the server side as it returns
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.accepted[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() {
			p.serve(c)
			p.mu.Lock()
			delete(p.accepted, c)
			p.mu.Unlock()
		})
	}
}

// peerClientID finds the node in the client id of a node's own
// connections: broker-N-replica-fetcher, broker-N-txn-marker-sender,
// moldau-broker-N-to-controller, moldau-raft-N, ...
var peerClientID = regexp.MustCompile(`^(?:moldau-)?(?:broker|raft)-(\d+)`)

type proxyConn struct {
	proxy          *Proxy
	link           Link
	client, server net.Conn
	once           sync.Once
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		c.client.Close()
		if c.server != nil {
			c.server.Close()
		}
	})
}

func (p *Proxy) serve(client net.Conn) {
	pc := &proxyConn{proxy: p, client: client}
	defer pc.close()
	first, err := readFrame(client)
	if err != nil {
		return
	}
	pc.link = Link{From: Clients, To: p.to}
	if !p.clients {
		pc.link.From = -1 // a peer listener reached by something else
		if m := peerClientID.FindSubmatch(clientID(first)); m != nil {
			id, _ := strconv.Atoi(string(m[1]))
			pc.link.From = int32(id)
		}
	}
	server, err := net.DialTimeout("tcp", p.backend(), 3*time.Second)
	if err != nil {
		return
	}
	pc.server = server
	p.net.mu.Lock()
	if p.net.blockedLocked(pc.link) {
		p.net.mu.Unlock()
		server.Close()
		return
	}
	p.net.conns[pc] = struct{}{}
	p.net.mu.Unlock()
	defer func() {
		p.net.mu.Lock()
		delete(p.net.conns, pc)
		p.net.mu.Unlock()
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.pump(pc, server, client, nil, true)
		pc.close()
	}()
	p.pump(pc, client, server, first, false)
	pc.close()
	<-done
}

// pump copies frames from src to dst until either fails, dropping one
// when a loss is armed on the link in that direction.
func (p *Proxy) pump(pc *proxyConn, src, dst net.Conn, first []byte, response bool) {
	frame := first
	for {
		if frame == nil {
			var err error
			if frame, err = readFrame(src); err != nil {
				return
			}
		}
		if p.net.takeLoss(pc.link, response) {
			if p.net.onLost != nil {
				p.net.onLost(pc.link, response, apiKeyOf(frame, response))
			}
		} else if _, err := dst.Write(frame); err != nil {
			return
		}
		frame = nil
	}
}

// readFrame reads one size-prefixed frame, the size included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxFrame {
		return nil, errors.New("frame size out of bounds")
	}
	b := make([]byte, 4+int(n))
	copy(b, size[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

// clientID is the client id of a request frame (header v1 and later:
// api key, version, correlation id, then a 2-byte length and the id).
func clientID(frame []byte) []byte {
	b := frame[4:]
	if len(b) < 10 {
		return nil
	}
	n := int(int16(binary.BigEndian.Uint16(b[8:])))
	if n < 0 || len(b) < 10+n {
		return nil
	}
	return b[10 : 10+n]
}

// apiKeyOf is a request frame's API key (-1 for a response, which does
// not carry one).
func apiKeyOf(frame []byte, response bool) int16 {
	if response || len(frame) < 6 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(frame[4:]))
}
