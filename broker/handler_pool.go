package broker

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/moldau/moldau/kapi"
)

// KafkaRequestHandlerPool is num.io.threads goroutines taking requests from
// the RequestChannel and calling RequestHandler.Handle (Kafka's
// KafkaRequestHandlerPool). A panic in Handle is recovered, logged with its
// stack, and answered with a Close response.
type KafkaRequestHandlerPool struct {
	server *SocketServer
	meters []*busyMeter // one per handler goroutine: time inside Handle
}

func newKafkaRequestHandlerPool(s *SocketServer, n int) *KafkaRequestHandlerPool {
	p := &KafkaRequestHandlerPool{server: s, meters: make([]*busyMeter, n)}
	for i := range p.meters {
		p.meters[i] = newBusyMeter(s.epoch)
	}
	return p
}

func (p *KafkaRequestHandlerPool) start() {
	for id := range p.meters {
		p.server.handlerGroup.Go(func(<-chan struct{}) { p.run(id) })
	}
}

// run is one handler goroutine (Kafka's KafkaRequestHandler).
func (p *KafkaRequestHandlerPool) run(id int) {
	s := p.server
	meter := p.meters[id]
	for {
		r := s.channel.receiveRequest(s.stopHandlers)
		if r == nil {
			return
		}
		start := meter.begin()
		r.dequeued = time.Now()
		p.handle(id, r)
		handled := time.Now()
		r.handledAt.Store(int64(handled.Sub(s.epoch)))
		meter.end(start)
		if s.metrics != nil {
			s.metrics.api(r.APIKey, r.APIVersion).localTime.Observe(ms(handled.Sub(r.dequeued)))
		}
	}
}

func (p *KafkaRequestHandlerPool) handle(id int, r *request) {
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
