package kapi

// Forwarding to the active controller (Kafka's ForwardingManager): the
// admin APIs (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
// IncrementalAlterConfigs, AlterClientQuotas, ElectLeaders, UpdateFeatures,
// DescribeQuorum) and producer-id blocks are decided by the controller, not
// here. A broker forwards the client's request as it came, at the client's
// version, and relays the answer; when the answer created, deleted or
// elected something, it first waits (bounded by the request's own timeout)
// until its own metadata shows it, so that the client's next request to
// this broker sees what it was told happened.

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

// forwarded turns a handler that forwards to the controller (and waits for
// its answer and for this broker's metadata) into an async one: it runs on
// its own goroutine, so that admin requests waiting on the controller never
// hold the handler pool that Produce and Fetch need (Kafka's forwarding is
// asynchronous too). A panic is recovered and closes the connection, as
// the handler pool does.
func forwarded(fn func(*Handler, *RequestContext, kmsg.Request) kmsg.Response) func(*Handler, *RequestContext, kmsg.Request) {
	return func(h *Handler, rc *RequestContext, req kmsg.Request) {
		started := h.g.Go(func(<-chan struct{}) {
			defer func() {
				if v := recover(); v != nil {
					h.log.Error("request handler panic", "request", kmsg.NameForKey(req.Key()), "version", req.GetVersion(),
						"client_id", rc.ClientID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					rc.respond(&Response{Close: true, CloseReason: fmt.Sprintf("request handler panic: %v", v)})
				}
			}()
			rc.finish(fn(h, rc, req))
		})
		if !started {
			rc.respond(&Response{Close: true, CloseReason: "the broker is shutting down"})
		}
	}
}

// defaultForwardTimeout bounds a forwarded request whose own timeout is
// not set (Kafka's request.timeout.ms for the controller channel is 30 s).
const defaultForwardTimeout = 30 * time.Second

// forward sends req to the active controller within timeout.
func (h *Handler) forward(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if timeout <= 0 {
		timeout = defaultForwardTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := h.cfg.Controller.Send(ctx, req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, apierr.Errorf(kerr.RequestTimedOut, "The controller did not answer %s in time.", kmsg.NameForKey(req.Key()))
		}
		var ke *kerr.Error
		if !errors.As(err, &ke) {
			return nil, apierr.Errorf(kerr.NotController, "%s could not reach the active controller: %v", kmsg.NameForKey(req.Key()), err)
		}
		return nil, err
	}
	return resp, nil
}

// waitForMetadata waits (at most timeout) until cond holds for this
// broker's metadata; on timeout it returns without error: the controller
// said yes, and the broker catches up on its own.
func (h *Handler) waitForMetadata(ctx context.Context, timeout time.Duration, cond func(*metadata.Image) bool) {
	if timeout <= 0 || timeout > defaultForwardTimeout {
		timeout = defaultForwardTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := h.cfg.Metadata.WaitFor(ctx, cond); err != nil {
		h.log.Warn("metadata did not catch up with the controller's answer in time", "err", err)
	}
}
