package network

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/kapi"
)

// disconnects records the connection ids it is told of.
type disconnects struct {
	mu  sync.Mutex
	ids []string
}

func (d *disconnects) OnDisconnect(id string) {
	d.mu.Lock()
	d.ids = append(d.ids, id)
	d.mu.Unlock()
}

func (d *disconnects) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ids...)
}

type panicking struct{}

func (panicking) OnDisconnect(string) { panic("listener failed") }

// Every listener is told once of a connection that closes, with the id
// its requests carried, whether the client or the handler closed it; a
// panicking listener does not keep the others from being told.
func TestDisconnectListenersToldOfEveryClose(t *testing.T) {
	var mu sync.Mutex
	connIDs := map[string]bool{}
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		mu.Lock()
		connIDs[r.ConnID] = true
		mu.Unlock()
		testHandler(ctx, r, respond)
	})
	d := &disconnects{}
	s := startServer(t, h, func(c *Config) {
		c.DisconnectListeners = []ConnectionDisconnectListener{panicking{}, d}
	})

	byClient := dial(t, s.addr)
	if err := roundTrip(byClient, 1); err != nil {
		t.Fatal(err)
	}
	byClient.Close()
	waitFor(t, func() bool { return len(d.seen()) == 1 })

	byHandler := dial(t, s.addr)
	if _, err := byHandler.Write(apiVersionsRequest(2, "close")); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, byHandler)
	waitFor(t, func() bool { return len(d.seen()) == 2 })

	ids := d.seen()
	mu.Lock()
	defer mu.Unlock()
	if ids[0] == ids[1] || !connIDs[ids[0]] || !connIDs[ids[1]] {
		t.Fatalf("told of %v, the requests came on %v", ids, connIDs)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
	}
}
