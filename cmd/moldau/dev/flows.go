package dev

import (
	"cmp"
	"slices"
	"sync"

	"github.com/moldau/moldau/cmd/moldau/console"
)

// written is what a built-in producer has written, from its records'
// acknowledgements: the partitions and its idempotent producer id, so
// the console can draw it as a box with wires to the partitions' leaders.
type written struct {
	mu    sync.Mutex
	parts map[int32]bool
	pid   int64 // -1: none (not idempotent) or none acknowledged yet
}

func newWritten() *written { return &written{parts: map[int32]bool{}, pid: -1} }

// acked notes one acknowledged record.
func (w *written) acked(partition int32, pid int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.parts[partition] = true
	if pid >= 0 {
		w.pid = pid
	}
}

// Named lists the running producers for the console (console.Config.Producers).
func (t *Traffic) Named() []console.NamedProducer {
	t.mu.Lock()
	var ps []*producer
	for _, p := range t.producers {
		select {
		case <-p.done:
		default:
			ps = append(ps, p)
		}
	}
	t.mu.Unlock()
	out := make([]console.NamedProducer, 0, len(ps))
	for _, p := range ps {
		n := console.NamedProducer{Name: p.cfg.Name, ClientID: devClientID(p.cfg.Name), Topic: p.cfg.Topic,
			Records: t.ledger.sentBy(p.cfg.Name)}
		if p.cfg.Transactional {
			n.TransactionalID = devClientID(p.cfg.Name)
		}
		p.written.mu.Lock()
		for part := range p.written.parts {
			n.Partitions = append(n.Partitions, part)
		}
		n.ProducerID = p.written.pid
		p.written.mu.Unlock()
		slices.Sort(n.Partitions)
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b console.NamedProducer) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// devClientID is a built-in client's client id (and a transactional
// producer's transactional id).
func devClientID(name string) string { return "moldau-dev-" + name }

// sentBy is how many records a producer has sent.
func (l *Ledger) sentBy(name string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.producers[name]; p != nil {
		return p.Sent
	}
	return 0
}
