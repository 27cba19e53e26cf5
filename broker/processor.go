package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/bits"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/kapi"
)

// Processor owns a group of connections of one listener (Kafka's
// Processor): their registry and count, their busy-time accounting for
// NetworkProcessorAvgIdlePercent, and their shutdown. Each connection runs
// its own goroutine; see the package documentation.
type Processor struct {
	id       int
	listener string
	server   *SocketServer
	busy     *busyMeter

	connCount                prometheus.Gauge // nil without metrics
	connCreation, connClosed prometheus.Counter

	mu      sync.Mutex
	conns   map[*connection]struct{}
	index   uint64 // connections registered so far, for connection ids
	closing bool
	retired bool // removed by a smaller num.network.threads
}

func newProcessor(s *SocketServer, id int, listener string) *Processor {
	p := &Processor{
		id:       id,
		listener: listener,
		server:   s,
		busy:     newBusyMeter(s.epoch),
		conns:    make(map[*connection]struct{}),
	}
	if m := s.metrics; m != nil {
		p.connCount = m.connectionCount.WithLabelValues(listener)
		p.connCreation = m.connectionCreation.WithLabelValues(listener)
		p.connClosed = m.connectionClose.WithLabelValues(listener)
	}
	return p
}

// register takes ownership of an accepted connection and starts serving it.
func (p *Processor) register(nc net.Conn) {
	s := p.server
	c := &connection{
		server:    s,
		processor: p,
		nc:        nc,
		br:        bufio.NewReaderSize(nc, connReadBufferSize),
		peer:      nc.RemoteAddr().String(),
		respCh:    make(chan *kapi.Response, 1),
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		_ = nc.Close()
		return
	}
	c.id = fmt.Sprintf("%s-%s-%d", nc.LocalAddr().String(), c.peer, p.index)
	p.index++
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	if !s.connGroup.Go(func(<-chan struct{}) { c.serve() }) {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		_ = nc.Close()
		return
	}
	if p.connCount != nil {
		p.connCount.Inc()
		p.connCreation.Inc()
	}
	s.connLog.opened1(c)
}

func (p *Processor) unregister(c *connection) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	if p.connCount != nil {
		p.connCount.Dec()
		p.connClosed.Inc()
	}
}

func (p *Processor) connectionCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// drain closes idle connections now and the others after their request in
// flight.
func (p *Processor) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closing = true
	for c := range p.conns {
		c.drain()
	}
}

// retire drains the processor because num.network.threads shrank: it
// takes no new connection and its connections close after their request
// in flight.
func (p *Processor) retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	p.drain()
}

func (p *Processor) isRetired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retired
}

// force interrupts every connection's blocking I/O.
func (p *Processor) force() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.force()
	}
}

const connReadBufferSize = 4096

type connState uint8

const (
	stateIdle connState = iota // waiting for the next request
	stateBusy                  // reading, queueing, muted or writing
)

// aLongTimeAgo is a deadline in the past, to interrupt blocking I/O.
var aLongTimeAgo = time.Unix(1, 0)

var errForced = errors.New("connection closed by a forced shutdown")

// connection is one client connection, served by one goroutine (serve):
// read a request, queue it, wait (muted) for its response, write it.
type connection struct {
	server    *SocketServer
	processor *Processor
	nc        net.Conn
	br        *bufio.Reader
	raw       syscall.RawConn // lazily, for sendfile
	id        string          // Kafka's connection id
	peer      string

	// respCh carries the response of the request in flight; capacity 1
	// and at most one request in flight, so respond never blocks.
	respCh       chan *kapi.Response
	lastClientID string // interned: clients send the same id every time
	sizeBuf      [4]byte

	// why is the reason the connection closes (closed* constants), set
	// by the serving goroutine before it returns.
	why string

	mu       sync.Mutex
	state    connState
	draining bool // finish the request in flight, then close
	forced   bool // stop now
	closed   bool // serve returned; late responses are released
}

func (c *connection) idleDeadline() time.Time {
	if d := c.server.cfg.ConnectionsMaxIdle; d > 0 {
		return time.Now().Add(d)
	}
	return time.Time{}
}

// awaitRequest marks the connection idle and arms the idle deadline; false
// if the connection must close instead.
func (c *connection) awaitRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	c.state = stateIdle
	_ = c.nc.SetReadDeadline(c.idleDeadline())
	return true
}

// beginRequest marks the connection busy (a drain lets it finish) and arms
// the deadline for the rest of the frame.
func (c *connection) beginRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forced {
		return false
	}
	c.state = stateBusy
	_ = c.nc.SetReadDeadline(c.idleDeadline())
	return true
}

func (c *connection) armWrite() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forced {
		return false
	}
	_ = c.nc.SetWriteDeadline(c.idleDeadline())
	return true
}

func (c *connection) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	if c.state == stateIdle {
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
}

func (c *connection) force() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	c.forced = true
	_ = c.nc.SetDeadline(aLongTimeAgo)
}

// serve is the connection's goroutine.
func (c *connection) serve() {
	defer c.close()
	for c.serveRequest() {
	}
}

// serveRequest serves one request; false closes the connection.
func (c *connection) serveRequest() bool {
	s := c.server
	if !c.awaitRequest() {
		c.why = closedByShutdown
		return false
	}
	if _, err := io.ReadFull(c.br, c.sizeBuf[:]); err != nil {
		c.readFailed(err, true)
		return false
	}
	busy := c.processor.busy.begin()
	r, ok := c.readRequest(c.sizeBuf)
	if ok {
		ok = s.channel.sendRequest(r, s.forced)
		if !ok {
			c.why = closedByShutdown
			s.frames.put(r.frame)
		}
	}
	c.processor.busy.end(busy)
	if !ok {
		return false
	}

	// Muted until the response comes back.
	var resp *kapi.Response
	select {
	case resp = <-c.respCh:
	case <-s.forced:
		// The handler may still be reading the frame: leave it to
		// the garbage collector, and its late response to close.
		c.why = closedByShutdown
		return false
	}

	busy = c.processor.busy.begin()
	sendStart := time.Now()
	err := c.writeResponse(resp)
	sendEnd := time.Now()
	release(resp)
	s.frames.put(r.frame)
	r.frame = nil
	c.processor.busy.end(busy)
	if s.metrics != nil {
		s.metrics.observeRequest(r, s.epoch, sendStart, sendEnd)
	}
	if err != nil {
		c.why = closedByShutdown
		if err != errForced {
			c.why = closedIOError
			s.log.Debug("writing response failed, closing connection",
				"peer", c.peer, "conn", c.id, "request", apiName(r.APIKey), "err", err)
		}
		return false
	}
	if resp.Close {
		c.why = closedByHandler
		level := slog.LevelDebug
		if s.connLog.refused(resp.CloseReason) {
			level = slog.LevelInfo // first time in this summary interval
		}
		s.log.Log(context.Background(), level, "closing connection as the request handler asked",
			"peer", c.peer, "conn", c.id, "listener", c.processor.listener, "client_id", r.ClientID,
			"request", apiName(r.APIKey), "version", r.APIVersion, "reason", resp.CloseReason)
		return false
	}
	return true
}

// readRequest reads the frame whose size prefix is sizeBuf and parses its
// header; false closes the connection (already logged).
func (c *connection) readRequest(sizeBuf [4]byte) (*request, bool) {
	s := c.server
	if !c.beginRequest() {
		c.why = closedByShutdown
		return nil, false
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 || size > s.cfg.SocketRequestMaxBytes {
		c.why = closedBadFrame
		s.log.Warn("invalid request size, closing connection",
			"peer", c.peer, "conn", c.id, "listener", c.processor.listener,
			"size", size, "socket.request.max.bytes", s.cfg.SocketRequestMaxBytes)
		return nil, false
	}
	fb, err := s.frames.read(c.br, int(size))
	if err != nil {
		c.readFailed(err, false)
		return nil, false
	}
	received := time.Now()
	h, body, err := parseRequestHeader(fb.b)
	if errors.Is(err, errUnknownAPIKey) && slices.Contains(s.cfg.PrivateAPIKeys, h.APIKey) {
		// A Moldau-private key (the metadata quorum's messages): a v1
		// header, parsed as far as the client id.
		h, body, err = parseHeaderV1(fb.b)
	}
	if err != nil {
		c.why = closedBadFrame
		s.log.Warn("invalid request header, closing connection",
			"peer", c.peer, "conn", c.id, "listener", c.processor.listener, "err", err,
			"size", size, "api_key", h.APIKey, "api_version", h.APIVersion,
			"correlation_id", h.CorrelationID, "client_id", string(h.ClientID))
		s.frames.put(fb)
		return nil, false
	}
	if string(h.ClientID) != c.lastClientID {
		c.lastClientID = string(h.ClientID)
	}
	r := &request{
		Request: kapi.Request{
			APIKey:        h.APIKey,
			APIVersion:    h.APIVersion,
			CorrelationID: h.CorrelationID,
			ClientID:      c.lastClientID,
			Body:          body,
			Size:          int(size),
			Listener:      c.processor.listener,
			ClientAddr:    c.nc.RemoteAddr(),
			ConnID:        c.id,
			Received:      received,
		},
		conn:  c,
		frame: fb,
	}
	r.respondFn = r.respond
	return r, true
}

// readFailed logs why a read ended the connection; waiting: the read was
// waiting for the next request (rather than reading one).
func (c *connection) readFailed(err error, waiting bool) {
	s := c.server
	c.mu.Lock()
	draining := c.draining
	c.mu.Unlock()
	var ne net.Error
	switch {
	case draining:
		// Shutdown interrupted the read.
		c.why = closedByShutdown
	case errors.Is(err, io.EOF) && waiting:
		c.why = closedByPeer
	case errors.As(err, &ne) && ne.Timeout():
		c.why = closedIdle
		s.log.Debug("closing idle connection", "peer", c.peer, "conn", c.id,
			"connections.max.idle.ms", s.cfg.ConnectionsMaxIdle.Milliseconds(), "mid_request", !waiting)
	default:
		c.why = closedIOError
		s.log.Debug("connection read failed", "peer", c.peer, "conn", c.id, "mid_request", !waiting, "err", err)
	}
}

// close ends the connection: late responses are released from now on.
func (c *connection) close() {
	c.mu.Lock()
	c.closed = true
	select {
	case resp := <-c.respCh:
		release(resp)
	default:
	}
	c.mu.Unlock()
	_ = c.nc.Close()
	c.processor.unregister(c)
	why := c.why
	if why == "" {
		why = closedIOError
	}
	if why == closedByShutdown && c.processor.isRetired() {
		why = closedProcessorRemoved
	}
	c.server.connLog.closed1(c, why)
}

// respond is the request's respond function, handed to the handler.
func (r *request) respond(resp *kapi.Response) { r.deliver(resp, false) }

// deliver hands resp to the connection, once per request. Later calls are
// dropped (and logged unless the call comes from the panic handler).
func (r *request) deliver(resp *kapi.Response, afterPanic bool) {
	c := r.conn
	if resp == nil {
		resp = &kapi.Response{Close: true, CloseReason: "request handler returned a nil response"}
	}
	if !r.respondOnce.CompareAndSwap(false, true) {
		if !afterPanic {
			c.server.log.Error("respond called twice for a request; dropping the second response",
				"request", apiName(r.APIKey), "correlation_id", r.CorrelationID, "conn", r.ConnID)
		}
		release(resp)
		return
	}
	r.responded = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		release(resp)
		return
	}
	c.respCh <- resp // never blocks: capacity 1, one request in flight
}

func release(resp *kapi.Response) {
	if resp != nil && resp.Release != nil {
		resp.Release()
	}
}

// writeResponse writes resp: Buf with its file regions spliced in.
func (c *connection) writeResponse(resp *kapi.Response) error {
	if resp.NoResponse || (len(resp.Buf) == 0 && len(resp.Regions) == 0) {
		return nil
	}
	if !c.armWrite() {
		return errForced
	}
	if len(resp.Regions) == 0 {
		_, err := c.nc.Write(resp.Buf)
		return err
	}
	pos := 0
	for i := range resp.Regions {
		reg := &resp.Regions[i]
		if reg.At < pos || reg.At > len(resp.Buf) || reg.Len < 0 || reg.File == nil {
			return fmt.Errorf("invalid file region %d (at %d, len %d) in a response of %d bytes", i, reg.At, reg.Len, len(resp.Buf))
		}
		if reg.At > pos {
			if _, err := c.nc.Write(resp.Buf[pos:reg.At]); err != nil {
				return err
			}
			pos = reg.At
		}
		if err := c.writeRegion(reg); err != nil {
			return err
		}
	}
	if pos < len(resp.Buf) {
		_, err := c.nc.Write(resp.Buf[pos:])
		return err
	}
	return nil
}

// maxSendfileChunk bounds one sendfile(2) call (Linux caps it near 2 GiB).
const maxSendfileChunk = 1 << 30

// writeRegion writes a file region: sendfile(2) at the region's own offset
// on a TCP connection, else a copy through an io.SectionReader (which also
// leaves the file's shared position alone).
func (c *connection) writeRegion(reg *kapi.FileRegion) error {
	if reg.Len == 0 {
		return nil
	}
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		n, err := io.Copy(c.nc, io.NewSectionReader(reg.File, reg.Off, reg.Len))
		if err == nil && n < reg.Len {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if c.raw == nil {
		raw, err := tc.SyscallConn()
		if err != nil {
			return err
		}
		c.raw = raw
	}
	return sendfile(c.raw, reg.File, reg.Off, reg.Len, &c.server.sendfileBytes)
}

// sendfile writes length bytes of f from offset off to the socket, with
// the explicit offset (the kernel advances our copy of off, not the file's
// position). File.SyscallConn's Control keeps f open meanwhile (unlike
// f.Fd, which would also switch the file to blocking mode). The socket's
// write deadline applies while waiting for room in its buffer.
func sendfile(sock syscall.RawConn, f *os.File, off, length int64, counter interface{ Add(int64) int64 }) error {
	fraw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	remaining := length
	var serr error
	cerr := fraw.Control(func(ffd uintptr) {
		werr := sock.Write(func(sfd uintptr) bool {
			for remaining > 0 {
				n, err := syscall.Sendfile(int(sfd), int(ffd), &off, int(min(remaining, maxSendfileChunk)))
				if n > 0 {
					remaining -= int64(n)
					counter.Add(int64(n))
				}
				switch {
				case err == syscall.EAGAIN:
					return false // wait until writable
				case err == syscall.EINTR:
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case n == 0:
					serr = fmt.Errorf("sendfile: %s ends %d bytes before the end of the region", f.Name(), remaining)
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr != nil {
		return serr
	}
	return cerr
}

// framePool hands out frame buffers in power-of-two size classes.
type framePool struct {
	classes [maxFrameClass + 1]sync.Pool
}

const (
	minFrameClass = 9  // 512 B
	maxFrameClass = 24 // 16 MiB; larger frames are not pooled
	// growFrameAbove: frames larger than this grow as bytes arrive,
	// so memory follows what the peer sent, not what it announced.
	growFrameAbove = 1 << 20
)

type frameBuf struct {
	b     []byte
	class int // -1: not pooled
}

func frameClass(size int) int {
	if size <= 1<<minFrameClass {
		return minFrameClass
	}
	return bits.Len(uint(size - 1))
}

func (p *framePool) get(size int) *frameBuf {
	c := frameClass(size)
	if c > maxFrameClass {
		return &frameBuf{b: make([]byte, size), class: -1}
	}
	if fb, _ := p.classes[c].Get().(*frameBuf); fb != nil {
		fb.b = fb.b[:size]
		return fb
	}
	return &frameBuf{b: make([]byte, size, 1<<c), class: c}
}

func (p *framePool) put(fb *frameBuf) {
	if fb == nil || fb.class < 0 {
		return
	}
	fb.b = fb.b[:0]
	p.classes[fb.class].Put(fb)
}

// read reads a frame of size bytes from r into a pooled buffer.
func (p *framePool) read(r io.Reader, size int) (*frameBuf, error) {
	if size <= growFrameAbove {
		fb := p.get(size)
		if _, err := io.ReadFull(r, fb.b); err != nil {
			p.put(fb)
			return nil, err
		}
		return fb, nil
	}
	fb := p.get(growFrameAbove)
	have := 0
	for {
		if _, err := io.ReadFull(r, fb.b[have:]); err != nil {
			p.put(fb)
			return nil, err
		}
		have = len(fb.b)
		if have == size {
			return fb, nil
		}
		next := p.get(min(2*have, size))
		copy(next.b, fb.b)
		p.put(fb)
		fb = next
	}
}

// requestHeader is a parsed request header (v1, or v2 when flexible).
type requestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      []byte // aliases the frame; nil when null
	Flexible      bool   // header v2: tagged fields followed the client id
}

var (
	errTruncatedHeader  = errors.New("truncated request header")
	errClientIDLength   = errors.New("invalid client id length")
	errUnknownAPIKey    = errors.New("unknown API key")
	errHeaderTaggedFlds = errors.New("malformed request header tagged fields")
	errUnsupportedVer   = errors.New("unsupported API version")
)

// parseRequestHeader parses the request header at the start of frame and
// returns it with the body that follows. It never reads past frame and
// allocates nothing: ClientID aliases frame. For an unknown API key it
// returns the v1 header, for logging, and errUnknownAPIKey.
func parseRequestHeader(frame []byte) (h requestHeader, body []byte, err error) {
	h, b, err := parseHeaderV1(frame)
	if err != nil {
		return h, nil, err
	}
	flexible, known := headerFlexible(h.APIKey, h.APIVersion)
	if !known {
		return h, nil, errUnknownAPIKey
	}
	if !versionKnown(h.APIKey, h.APIVersion) {
		if h.APIKey != apiVersionsKey {
			// The header's shape is unknown past this point, and
			// Kafka closes the connection too.
			return h, nil, errUnsupportedVer
		}
		// ApiVersions at a version we do not know: kapi answers in the
		// v0 format (KIP-511), which needs only the correlation id;
		// the body is not read.
		if rest, err := skipTaggedFields(b); err == nil {
			b = rest
		}
		h.Flexible = flexible
		return h, b, nil
	}
	if flexible {
		h.Flexible = true
		if b, err = skipTaggedFields(b); err != nil {
			return h, nil, err
		}
	}
	return h, b, nil
}

// parseHeaderV1 parses the v1 part of a request header (key, version,
// correlation id, client id), which every header starts with; a
// Moldau-private API key has only that.
func parseHeaderV1(frame []byte) (h requestHeader, body []byte, err error) {
	const fixed = 2 + 2 + 4 + 2 // key, version, correlation id, client id length
	if len(frame) < fixed {
		return h, nil, errTruncatedHeader
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	b := frame[fixed:]
	switch {
	case n == -1:
	case n < -1 || int(n) > len(b):
		return h, nil, errClientIDLength
	default:
		h.ClientID = b[:n:n]
		b = b[n:]
	}
	return h, b, nil
}

// skipTaggedFields skips a tagged-field section; every length is checked
// against what is left of b.
func skipTaggedFields(b []byte) ([]byte, error) {
	num, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errHeaderTaggedFlds
	}
	b = b[n:]
	if num > uint64(len(b)/2) { // a field takes at least 2 bytes
		return nil, errHeaderTaggedFlds
	}
	for range num {
		if _, n = binary.Uvarint(b); n <= 0 { // tag
			return nil, errHeaderTaggedFlds
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errHeaderTaggedFlds
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// flexibleFrom[key] is the first version of key whose request header is
// flexible (v2), math.MaxInt16 if none, -1 if kmsg does not know the key.
// It is an immutable table derived from kmsg, computed once.
var flexibleFrom = sync.OnceValue(func() []int16 {
	t := make([]int16, 256)
	for key := range t {
		t[key] = firstFlexibleVersion(int16(key))
	}
	return t
})

func firstFlexibleVersion(key int16) int16 {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return -1
	}
	for v := int16(0); v <= req.MaxVersion(); v++ {
		req.SetVersion(v)
		if req.IsFlexible() {
			return v
		}
	}
	return math.MaxInt16
}

const apiVersionsKey = 18

// versionKnown reports whether kmsg knows this version of the key (kapi
// then decides whether it is served). It allocates nothing.
func versionKnown(key, version int16) bool {
	if key < 0 || int(key) >= 256 {
		return false
	}
	return version >= 0 && version <= maxVersion()[key]
}

// maxVersion[key] is kmsg's newest version of key, -1 if unknown; an
// immutable table computed once.
var maxVersion = sync.OnceValue(func() []int16 {
	t := make([]int16, 256)
	for key := range t {
		t[key] = -1
		if req := kmsg.RequestForKey(int16(key)); req != nil {
			t[key] = req.MaxVersion()
		}
	}
	return t
})

// headerFlexible reports whether (key, version) uses request header v2,
// and whether the key is known at all.
func headerFlexible(key, version int16) (flexible, known bool) {
	var from int16
	if key >= 0 && int(key) < 256 {
		from = flexibleFrom()[key]
	} else {
		from = firstFlexibleVersion(key)
	}
	if from < 0 {
		return false, false
	}
	return version >= from, true
}

// apiName is Kafka's name of an API key, as in RequestMetrics.
func apiName(key int16) string { return kmsg.NameForKey(key) }
