package kapi

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/metadata"
)

// blockedChannel is a controller that answers only when released.
type blockedChannel struct{ release chan struct{} }

func (c blockedChannel) ActiveController() int32 { return 1 }
func (c blockedChannel) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return req.ResponseKind(), nil
}

// A request forwarded to the controller does not hold the handler pool's
// goroutine while it waits: Handle returns at once and the answer comes
// later, so a slow controller cannot starve Produce and Fetch.
func TestForwardedRequestsDoNotHoldHandlers(t *testing.T) {
	cfg, _, err := config.Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := blockedChannel{release: make(chan struct{})}
	h := New(Config{NodeID: 1, Logger: slog.New(slog.DiscardHandler), Broker: cfg, Metadata: metadata.NewLoader(nil), Controller: ch})
	defer h.Close()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	body := req.AppendTo(nil)
	answered := make(chan *Response, 8)
	start := time.Now()
	for i := range 8 {
		h.Handle(context.Background(), &Request{APIKey: 37, APIVersion: 3, CorrelationID: int32(i), Body: body}, func(r *Response) { answered <- r })
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("8 forwarded requests held the caller %v", d)
	}
	select {
	case <-answered:
		t.Fatal("answered before the controller did")
	default:
	}
	close(ch.release)
	for range 8 {
		if r := <-answered; r.Close {
			t.Fatalf("closed: %s", r.CloseReason)
		}
	}
}
