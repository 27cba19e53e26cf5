package dev

import (
	"sort"
	"sync"
	"time"
)

// idHeader is the header that names a built-in producer's record:
// "PRODUCER:SEQ", unique over the run.
const idHeader = "moldau-dev-id"

// Record states in the ledger.
const (
	recSent    = iota // handed to the client, no answer yet
	recPending        // acknowledged inside a transaction not yet ended
	recAcked          // acknowledged (committed, for a transaction)
	recFailed         // the client gave up
	recAborted        // written inside an aborted transaction
)

// recState is what the ledger knows of one record it sent.
type recState struct {
	producer  string
	topic     string
	partition int32
	offset    int64 // -1: unknown (acks=0)
	state     uint8
}

// processing is one time a consumer processed a record.
type processing struct {
	consumer  string
	topic     string
	partition int32
	offset    int64
}

// ProducerCounters are one producer's counters. Sent counts records
// handed to the client; InFlight those with no outcome yet; Acked those
// acknowledged (for a transactional producer: in a committed
// transaction); Aborted those in aborted transactions. Lost and
// Duplicates come from the last check against the logs.
type ProducerCounters struct {
	Name       string    `json:"name"`
	Sent       int64     `json:"sent"`
	Acked      int64     `json:"acked"`
	InFlight   int64     `json:"in_flight"`
	Failed     int64     `json:"failed"`
	Aborted    int64     `json:"aborted"`
	Lost       []Anomaly `json:"lost"`
	Duplicates []Anomaly `json:"duplicates"`
	LastError  string    `json:"last_error,omitempty"`
}

// ConsumerCounters are one consumer's counters; ProcessedTwice and
// Skipped (from the last check) are its group's and name the consumers
// involved.
type ConsumerCounters struct {
	Name           string    `json:"name"`
	Group          string    `json:"group"`
	State          string    `json:"state"`
	Processed      int64     `json:"processed"`
	ProcessedTwice []Anomaly `json:"processed_twice"`
	Skipped        []Anomaly `json:"skipped"`
}

// Anomaly is one record that was lost, duplicated, processed twice or
// skipped, with the offsets concerned (for a duplicate, every offset the
// record is at; for a record processed twice, every offset it was
// processed at, by whom).
type Anomaly struct {
	ID        string   `json:"id"`
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offsets   []int64  `json:"offsets"`
	Consumers []string `json:"consumers,omitempty"`
	Detail    string   `json:"detail,omitempty"`
}

// Counters is the delivery counters of the run, as /api/dev/counters
// answers them.
type Counters struct {
	Producers []ProducerCounters `json:"producers"`
	Consumers []ConsumerCounters `json:"consumers"`
	// CheckedAt is when the logs were last read back (zero: never);
	// CheckError why the last check failed.
	CheckedAt  time.Time `json:"checked_at"`
	CheckError string    `json:"check_error,omitempty"`
	// LogRecords is how many records of the built-in producers the
	// check found in the leaders' logs.
	LogRecords int64 `json:"log_records"`
}

// Ledger is what the built-in clients did: every record sent with its
// outcome, and every record processed by every consumer. Safe for
// concurrent use; one entry per record, so a dev run is bounded by its
// traffic (a few hundred bytes a record).
type Ledger struct {
	mu        sync.Mutex
	recs      map[string]*recState
	producers map[string]*ProducerCounters
	consumers map[string]*ConsumerCounters
	order     []string                           // consumers, in the order added
	processed map[string]map[string][]processing // group -> id -> processings
	last      checkResult
}

func newLedger() *Ledger {
	return &Ledger{recs: map[string]*recState{}, producers: map[string]*ProducerCounters{}, consumers: map[string]*ConsumerCounters{},
		processed: map[string]map[string][]processing{}}
}

func (l *Ledger) producer(name string) *ProducerCounters {
	p := l.producers[name]
	if p == nil {
		p = &ProducerCounters{Name: name}
		l.producers[name] = p
	}
	return p
}

func (l *Ledger) sent(producer, id, topic string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs[id] = &recState{producer: producer, topic: topic, partition: -1, offset: -1}
	p := l.producer(producer)
	p.Sent++
	p.InFlight++
}

// answered records the client's answer to one record: err nil with its
// partition and offset, or the error. In a transaction, an acknowledged
// record waits for the transaction's end (pending).
func (l *Ledger) answered(id string, partition int32, offset int64, err error, inTxn bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recs[id]
	if r == nil || r.state != recSent {
		return
	}
	p := l.producer(r.producer)
	r.partition, r.offset = partition, offset
	switch {
	case err != nil:
		r.state = recFailed
		p.InFlight--
		p.Failed++
		p.LastError = err.Error()
	case inTxn:
		r.state = recPending
	default:
		r.state = recAcked
		p.InFlight--
		p.Acked++
	}
}

// ended records a transaction's outcome for its records.
func (l *Ledger) ended(ids []string, committed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		r := l.recs[id]
		if r == nil {
			continue
		}
		p := l.producer(r.producer)
		switch {
		case r.state == recPending && committed:
			r.state = recAcked
			p.InFlight--
			p.Acked++
		case r.state == recPending || r.state == recSent:
			r.state = recAborted
			p.InFlight--
			p.Aborted++
		}
	}
}

func (l *Ledger) addConsumer(name, group string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.consumers[name]
	if c == nil {
		c = &ConsumerCounters{Name: name, Group: group}
		l.consumers[name] = c
		l.order = append(l.order, name)
	}
	c.State = "running"
}

func (l *Ledger) consumerState(name, state string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.consumers[name]; c != nil {
		c.State = state
	}
}

// processedRecord records that consumer processed the record id at
// partition/offset.
func (l *Ledger) processedRecord(consumer, group, id, topic string, partition int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.consumers[consumer]; c != nil {
		c.Processed++
	}
	g := l.processed[group]
	if g == nil {
		g = map[string][]processing{}
		l.processed[group] = g
	}
	g[id] = append(g[id], processing{consumer: consumer, topic: topic, partition: partition, offset: offset})
}

// Counters returns the counters with the last check's anomalies.
func (l *Ledger) Counters() Counters {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := Counters{CheckedAt: l.last.at, CheckError: l.last.err, LogRecords: l.last.logRecords}
	names := make([]string, 0, len(l.producers))
	for n := range l.producers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := *l.producers[n]
		p.Lost = nonNil(l.last.lost[n])
		p.Duplicates = nonNil(l.last.duplicates[n])
		out.Producers = append(out.Producers, p)
	}
	for _, n := range l.order {
		c := *l.consumers[n]
		c.ProcessedTwice = nonNil(l.last.twice[c.Group])
		c.Skipped = nonNil(l.last.skipped[c.Group])
		out.Consumers = append(out.Consumers, c)
	}
	return out
}

func nonNil(a []Anomaly) []Anomaly {
	if a == nil {
		return []Anomaly{}
	}
	return a
}
