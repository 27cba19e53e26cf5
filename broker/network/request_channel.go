package network

import (
	"sync/atomic"
	"time"

	"github.com/moldau/moldau/kapi"
)

// request is a kapi.Request plus what the socket server needs to route its
// response and account for its time. One is allocated per request, so that
// a late or repeated respond can be told apart from the next request of
// the same connection.
type request struct {
	kapi.Request

	conn  *connection
	frame *frameBuf // the pooled frame Body aliases
	// reserved and taken are what the frame holds of the request memory
	// pool: reserved (Reserve, a large frame) or taken (Take, a small one).
	reserved, taken int64

	// Kafka's RequestMetrics timestamps. dequeued is written by the
	// handler goroutine before Handle and responded before the response
	// is handed over, so the connection may read both once it has the
	// response; Handle may return after that, hence handledAt is atomic
	// (ns since the server's epoch, 0 until Handle returned).
	dequeued  time.Time
	responded time.Time
	handledAt atomic.Int64

	respondOnce atomic.Bool
	respondFn   func(*kapi.Response)
}

// requestChannel is the bounded queue between the processors and the
// handler pool (Kafka's RequestChannel). Its capacity is
// queued.max.requests; a full channel blocks the sending connection, which
// stops reading from its socket.
type requestChannel struct {
	queue chan *request
}

func newRequestChannel(capacity int) *requestChannel {
	return &requestChannel{queue: make(chan *request, capacity)}
}

// sendRequest queues r, blocking while the channel is full. It returns false
// if done is closed first.
func (c *requestChannel) sendRequest(r *request, done <-chan struct{}) bool {
	select {
	case c.queue <- r:
	default:
		select {
		case c.queue <- r:
		case <-done:
			return false
		}
	}
	return true
}

// receiveRequest takes the next request, blocking until one is queued or
// done or stop is closed (then it returns nil): done stops every handler,
// stop one handler of a shrinking pool.
func (c *requestChannel) receiveRequest(done, stop <-chan struct{}) *request {
	select {
	case <-stop:
		return nil
	default:
	}
	select {
	case r := <-c.queue:
		return r
	case <-done:
		return nil
	case <-stop:
		return nil
	}
}

// Len is the number of queued requests.
func (c *requestChannel) Len() int { return len(c.queue) }
