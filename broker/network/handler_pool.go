package network

import (
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/moldau/moldau/kapi"
)

// kafkaRequestHandlerPool is num.io.threads goroutines taking requests from
// the RequestChannel and calling RequestHandler.Handle (Kafka's
// KafkaRequestHandlerPool). A panic in Handle is recovered, logged with its
// stack, and answered with a Close response. Resize changes the number of
// goroutines at run time (Kafka's resizeThreadPool, for a dynamic
// num.io.threads): a goroutine asked to stop finishes the request it is
// handling first.
type kafkaRequestHandlerPool struct {
	server *SocketServer
	busy   *busyMeter // time inside Handle, summed over the handlers

	mu    sync.Mutex
	stops []chan struct{} // one per running handler, in id order
}

func newRequestHandlerPool(s *SocketServer) *kafkaRequestHandlerPool {
	return &kafkaRequestHandlerPool{server: s, busy: newBusyMeter(s.epoch)}
}

// Size is the number of handler goroutines.
func (p *kafkaRequestHandlerPool) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.stops)
}

// Resize starts or stops handler goroutines until there are n (at least
// 1). It does nothing once the server is shutting down.
func (p *kafkaRequestHandlerPool) Resize(n int) {
	n = max(n, 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.stops) < n {
		stop := make(chan struct{})
		id := len(p.stops)
		if !p.server.handlerGroup.Go(func(<-chan struct{}) { p.run(id, stop) }) {
			return
		}
		p.stops = append(p.stops, stop)
	}
	for len(p.stops) > n {
		last := len(p.stops) - 1
		close(p.stops[last])
		p.stops = p.stops[:last]
	}
}

// run is one handler goroutine (Kafka's KafkaRequestHandler).
func (p *kafkaRequestHandlerPool) run(id int, stop <-chan struct{}) {
	s := p.server
	for {
		r := s.channel.receiveRequest(s.stopHandlers, stop)
		if r == nil {
			return
		}
		start := p.busy.begin()
		r.dequeued = time.Now()
		p.handle(id, r)
		handled := time.Now()
		r.handledAt.Store(int64(handled.Sub(s.epoch)))
		p.busy.end(start)
		if s.metrics != nil {
			s.metrics.api(r.APIKey, r.APIVersion).localTime.Observe(ms(handled.Sub(r.dequeued)))
		}
	}
}

func (p *kafkaRequestHandlerPool) handle(id int, r *request) {
	s := p.server
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("request handler panic",
				"handler", id,
				"request", apiName(r.APIKey), "version", r.APIVersion,
				"correlation_id", r.CorrelationID, "client_id", r.ClientID,
				"peer", r.conn.peer, "conn", r.ConnID,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			// If the handler already answered, this is dropped.
			r.deliver(&kapi.Response{Close: true, CloseReason: fmt.Sprintf("request handler panic: %v", v)}, true)
		}
	}()
	s.cfg.Handler.Handle(s.ctx, &r.Request, r.respondFn)
}
