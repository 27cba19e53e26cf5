package dev

import (
	"errors"
	"testing"
)

// The producer counters follow each record's outcome: acknowledged,
// failed, and in a transaction pending until it commits or aborts.
func TestLedgerCounters(t *testing.T) {
	l := newLedger()
	for _, id := range []string{"p:0", "p:1", "p:2", "t:0", "t:1", "t:2"} {
		l.sent(id[:1], id, "dev")
	}
	l.answered("p:0", 0, 10, nil, false)
	l.answered("p:1", 0, -1, errors.New("timed out"), false)
	l.answered("p:0", 0, 11, nil, false) // a second answer changes nothing
	l.answered("t:0", 1, 5, nil, true)
	l.answered("t:1", 1, 6, nil, true)
	l.ended([]string{"t:0"}, true)
	l.ended([]string{"t:1", "t:2"}, false) // t:2 never answered: aborted too
	got := map[string]ProducerCounters{}
	for _, p := range l.Counters().Producers {
		got[p.Name] = p
	}
	p, tx := got["p"], got["t"]
	if p.Sent != 3 || p.Acked != 1 || p.Failed != 1 || p.InFlight != 1 || p.LastError != "timed out" {
		t.Errorf("producer p: %+v", p)
	}
	if tx.Sent != 3 || tx.Acked != 1 || tx.Aborted != 2 || tx.InFlight != 0 {
		t.Errorf("producer t: %+v", tx)
	}
	if r := l.recs["p:0"]; r.partition != 0 || r.offset != 10 {
		t.Errorf("p:0 at %d/%d, want 0/10", r.partition, r.offset)
	}
}
