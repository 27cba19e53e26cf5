package dev

import (
	"reflect"
	"testing"

	"github.com/moldau/moldau/cmd/moldau/console"
)

// Named lists the running producers with what their acknowledgements
// said, and leaves the stopped ones out.
func TestTrafficNamed(t *testing.T) {
	l := newLedger()
	tr := newTraffic(nil, l, &EventLog{})
	running := &producer{cfg: ProducerConfig{Name: "p1", Topic: "dev", Transactional: true}, done: make(chan struct{}), written: newWritten()}
	stopped := &producer{cfg: ProducerConfig{Name: "p0", Topic: "dev"}, done: make(chan struct{}), written: newWritten()}
	close(stopped.done)
	tr.producers["p1"], tr.producers["p0"] = running, stopped
	l.sent("p1", "p1:0", "dev")
	l.sent("p1", "p1:1", "dev")
	running.written.acked(2, 7)
	running.written.acked(0, -1) // a record of a non-idempotent client names no producer id
	want := []console.NamedProducer{{Name: "p1", ClientID: "moldau-dev-p1", Topic: "dev", Partitions: []int32{0, 2},
		ProducerID: 7, TransactionalID: "moldau-dev-p1", Records: 2}}
	if got := tr.Named(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Named() = %+v, want %+v", got, want)
	}
}
