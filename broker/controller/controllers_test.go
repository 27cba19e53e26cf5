package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// ControllerRegistration writes a RegisterControllerRecord once per
// incarnation and endpoints: the same request again appends nothing.
func TestRegisterController(t *testing.T) {
	c, f, _ := newTestController(t)
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID, req.IncarnationID = 2, uuid.Random()
	l := kmsg.NewControllerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "c2", 9093
	req.Listeners = append(req.Listeners, l)
	if _, err := c.RegisterController(ctx(t), req); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	n := len(f.batches)
	f.mu.Unlock()
	if _, err := c.RegisterController(ctx(t), req); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	again := len(f.batches)
	f.mu.Unlock()
	if again != n {
		t.Fatalf("the same registration appended %d more batches", again-n)
	}
	// The log replays to the registration.
	d := metadata.NewDelta(metadata.Empty)
	f.mu.Lock()
	for _, b := range f.batches {
		for _, raw := range b.Records {
			r, err := metadata.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.mu.Unlock()
	r := d.Apply().Controllers[2]
	if r == nil || r.IncarnationID != uuid.UUID(req.IncarnationID) || len(r.Endpoints) != 1 || r.Endpoints[0].Port != 9093 {
		t.Fatalf("registration %+v", r)
	}
}
