package dev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerConfig is one built-in producer (franz-go).
type ProducerConfig struct {
	Name  string `json:"name"`
	Topic string `json:"topic"`
	// Rate is records per second (default 10); Burst is how many records
	// go at once (default 1): Burst records every Burst/Rate seconds.
	Rate  float64 `json:"rate"`
	Burst int     `json:"burst"`
	// Keys: records are keyed k0..k(Keys-1) in turn (0: no keys).
	Keys int `json:"keys"`
	// TombstoneEvery: every Nth record has a null value (0: none).
	TombstoneEvery int `json:"tombstone_every"`
	// Acks: "all" (default), "1" or "0". Idempotent (default true with
	// acks=all) needs acks=all.
	Acks       string `json:"acks"`
	Idempotent *bool  `json:"idempotent,omitempty"`
	// Transactional: records go in transactions of TxnRecords records
	// (default 10), every AbortEvery-th aborted (0: none).
	Transactional bool `json:"transactional"`
	TxnRecords    int  `json:"txn_records"`
	AbortEvery    int  `json:"abort_every"`
	// Linger is how long the client batches records (0: kgo's default).
	LingerMs int `json:"linger_ms"`
	// Count stops the producer after that many records (0: no end).
	Count int64 `json:"count"`
}

// ConsumerConfig is one built-in group consumer (franz-go).
type ConsumerConfig struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	Topic string `json:"topic"`
	// Protocol: "classic" (default) or "consumer" (KIP-848, the broker
	// assigns). Assignor: for classic, cooperative-sticky (default),
	// sticky, range or roundrobin; for consumer, uniform or range.
	Protocol string `json:"protocol"`
	Assignor string `json:"assignor"`
	// Isolation: "read_committed" (default) or "read_uncommitted".
	Isolation string `json:"isolation"`
	// CommitIntervalMs is the auto-commit interval (default 1000).
	CommitIntervalMs int `json:"commit_interval_ms"`
}

// Traffic runs the built-in producers and consumers against the cluster
// through the proxies, recording everything in the ledger.
type Traffic struct {
	seeds  []string
	ledger *Ledger
	events *EventLog

	mu        sync.Mutex
	producers map[string]*producer
	consumers map[string]*consumer
	closed    bool // Close began: nothing new starts (a rebuild or the exit)
	wg        sync.WaitGroup
}

// errTrafficClosed refuses a client started while its cluster goes away.
var errTrafficClosed = errors.New("the cluster is being rebuilt or stopped: start it again once it serves")

type producer struct {
	cfg     ProducerConfig
	cancel  context.CancelFunc
	done    chan struct{}
	written *written
}

type consumer struct {
	cfg     ConsumerConfig
	cl      *kgo.Client
	cancel  context.CancelFunc
	done    chan struct{}
	crashed chan struct{} // closed: its dials fail, as if the process died
	conns   *connSet
}

func newTraffic(seeds []string, ledger *Ledger, events *EventLog) *Traffic {
	return &Traffic{seeds: seeds, ledger: ledger, events: events, producers: map[string]*producer{}, consumers: map[string]*consumer{}}
}

// Bounds of the built-in clients' settings: a dev panel's typo must not
// exhaust the dev process.
const (
	maxRate      = 100000
	maxBurst     = 10000
	maxTxnRecord = 10000
)

// validName is a producer's or consumer's name: it goes into URLs and
// client ids.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// validTopic is Kafka's rule for a topic name.
var validTopic = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

func checkNames(name, topic string) error {
	if name != "" && !validName.MatchString(name) {
		return fmt.Errorf("name %q: want 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'", name)
	}
	if topic != "" && !validTopic.MatchString(topic) {
		return fmt.Errorf("topic %q: not a valid topic name", topic)
	}
	return nil
}

func (c *ProducerConfig) defaults() error {
	if err := checkNames(c.Name, c.Topic); err != nil {
		return err
	}
	if c.Rate > maxRate || c.Burst > maxBurst || c.TxnRecords > maxTxnRecord || c.Keys < 0 || c.Count < 0 || c.LingerMs < 0 || c.LingerMs > 60000 {
		return fmt.Errorf("rate at most %d/s, burst at most %d, txn_records at most %d, linger_ms 0 to 60000, keys and count not negative", maxRate, maxBurst, maxTxnRecord)
	}
	if c.Topic == "" {
		c.Topic = "dev"
	}
	if c.Rate <= 0 {
		c.Rate = 10
	}
	if c.Burst <= 0 {
		c.Burst = 1
	}
	if c.Acks == "" {
		c.Acks = "all"
	}
	if c.Acks != "all" && c.Acks != "1" && c.Acks != "0" && c.Acks != "-1" {
		return fmt.Errorf("acks %q: want all, 1 or 0", c.Acks)
	}
	if c.Idempotent == nil {
		on := c.Acks == "all" || c.Acks == "-1"
		c.Idempotent = &on
	}
	if *c.Idempotent && c.Acks != "all" && c.Acks != "-1" {
		return errors.New("an idempotent producer needs acks=all")
	}
	if c.Transactional && !*c.Idempotent {
		return errors.New("a transactional producer is idempotent")
	}
	if c.TxnRecords <= 0 {
		c.TxnRecords = 10
	}
	return nil
}

// AddProducer starts a producer; its name must be new or of a stopped one.
func (t *Traffic) AddProducer(cfg ProducerConfig) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errTrafficClosed
	}
	if cfg.Name == "" {
		cfg.Name = "p" + strconv.Itoa(len(t.producers)+1)
	}
	if p := t.producers[cfg.Name]; p != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("producer %s is running", cfg.Name)
		}
	}
	opts := []kgo.Opt{kgo.SeedBrokers(t.seeds...), kgo.ClientID(devClientID(cfg.Name)), kgo.DefaultProduceTopic(cfg.Topic),
		kgo.AllowAutoTopicCreation(), kgo.RecordDeliveryTimeout(30 * time.Second), kgo.MetadataMinAge(250 * time.Millisecond)}
	switch cfg.Acks {
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !*cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if cfg.Transactional {
		opts = append(opts, kgo.TransactionalID(devClientID(cfg.Name)))
	}
	if cfg.LingerMs > 0 {
		opts = append(opts, kgo.ProducerLinger(time.Duration(cfg.LingerMs)*time.Millisecond))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &producer{cfg: cfg, cancel: cancel, done: make(chan struct{}), written: newWritten()}
	t.producers[cfg.Name] = p
	t.events.Add("traffic", fmt.Sprintf("producer %s started: topic %s, %.0f/s, acks=%s, idempotent=%v, transactional=%v", cfg.Name, cfg.Topic, cfg.Rate, cfg.Acks, *cfg.Idempotent, cfg.Transactional),
		map[string]any{"producer": cfg})
	t.wg.Go(func() {
		defer close(p.done)
		defer cl.Close()
		t.produce(ctx, cl, p.cfg, p.written)
	})
	return nil
}

// produce sends records until ctx is done or Count are sent.
func (t *Traffic) produce(ctx context.Context, cl *kgo.Client, cfg ProducerConfig, w *written) {
	every := time.Duration(float64(time.Second) * float64(cfg.Burst) / cfg.Rate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var seq int64
	var txnIDs []string
	txns := 0
	next := func() *kgo.Record {
		id := fmt.Sprintf("%s:%d", cfg.Name, seq)
		r := &kgo.Record{Topic: cfg.Topic, Value: []byte(id), Headers: []kgo.RecordHeader{{Key: idHeader, Value: []byte(id)}}}
		if cfg.Keys > 0 {
			r.Key = []byte("k" + strconv.Itoa(int(seq%int64(cfg.Keys))))
		}
		if cfg.TombstoneEvery > 0 && (seq+1)%int64(cfg.TombstoneEvery) == 0 {
			r.Value = nil
		}
		seq++
		t.ledger.sent(cfg.Name, id, cfg.Topic)
		return r
	}
	for cfg.Count == 0 || seq < cfg.Count {
		select {
		case <-ctx.Done():
			if cfg.Transactional && len(txnIDs) > 0 {
				t.endTxn(cl, cfg, txnIDs, false)
			} else {
				cl.Flush(context.Background())
			}
			return
		case <-tick.C:
		}
		for range cfg.Burst {
			if cfg.Count > 0 && seq >= cfg.Count {
				break
			}
			if cfg.Transactional && len(txnIDs) == 0 {
				if err := cl.BeginTransaction(); err != nil {
					t.events.Add("txn", fmt.Sprintf("producer %s: begin: %v", cfg.Name, err), nil)
					break
				}
			}
			r := next()
			id := string(r.Headers[0].Value)
			inTxn := cfg.Transactional
			if inTxn {
				txnIDs = append(txnIDs, id)
			}
			// Not ctx: stopping the producer flushes what it sent.
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				t.ledger.answered(id, r.Partition, r.Offset, err, inTxn)
				if err == nil {
					w.acked(r.Partition, r.ProducerID)
				}
			})
			if cfg.Transactional && len(txnIDs) >= cfg.TxnRecords {
				txns++
				t.endTxn(cl, cfg, txnIDs, cfg.AbortEvery == 0 || txns%cfg.AbortEvery != 0)
				txnIDs = nil
			}
		}
	}
	if len(txnIDs) > 0 {
		t.endTxn(cl, cfg, txnIDs, true)
	}
	cl.Flush(context.Background())
}

// endTxn flushes and ends a transaction, committing or aborting, and
// records its outcome.
func (t *Traffic) endTxn(cl *kgo.Client, cfg ProducerConfig, ids []string, commit bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.Flush(ctx)
	want := kgo.TransactionEndTry(commit)
	if err != nil {
		want = kgo.TryAbort
	}
	if eerr := cl.EndTransaction(ctx, want); eerr != nil && err == nil {
		err = eerr
	}
	committed := err == nil && commit
	t.ledger.ended(ids, committed)
	outcome := "committed"
	switch {
	case err != nil:
		outcome = "failed: " + err.Error()
	case !commit:
		outcome = "aborted"
	}
	t.events.Add("txn", fmt.Sprintf("producer %s: transaction of %d records %s", cfg.Name, len(ids), outcome),
		map[string]any{"producer": cfg.Name, "records": len(ids), "committed": committed, "first": ids[0], "last": ids[len(ids)-1]})
}

// StopProducer stops a producer (its last records are flushed).
func (t *Traffic) StopProducer(name string) error {
	t.mu.Lock()
	p := t.producers[name]
	t.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no producer %q", name)
	}
	p.cancel()
	<-p.done
	t.events.Add("traffic", "producer "+name+" stopped", nil)
	return nil
}

// WaitProducer waits until a producer with a Count has sent and
// flushed everything, or ctx is done.
func (t *Traffic) WaitProducer(ctx context.Context, name string) error {
	t.mu.Lock()
	p := t.producers[name]
	t.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no producer %q", name)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// connSet tracks a client's connections, to drop them all at once.
type connSet struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (s *connSet) dial(crashed <-chan struct{}) func(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		select {
		case <-crashed:
			return nil, errors.New("crashed")
		default:
		}
		c, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		return c, nil
	}
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

func (c *ConsumerConfig) defaults() error {
	if err := checkNames(c.Name, c.Topic); err != nil {
		return err
	}
	if c.Group != "" && !validName.MatchString(c.Group) {
		return fmt.Errorf("group %q: want 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'", c.Group)
	}
	if c.Topic == "" {
		c.Topic = "dev"
	}
	if c.Group == "" {
		c.Group = "dev-group"
	}
	if c.Protocol == "" {
		c.Protocol = "classic"
	}
	if c.Isolation == "" {
		c.Isolation = "read_committed"
	}
	if c.CommitIntervalMs <= 0 {
		c.CommitIntervalMs = 1000
	}
	switch c.Protocol {
	case "classic", "consumer":
	default:
		return fmt.Errorf("group protocol %q: want classic or consumer", c.Protocol)
	}
	switch c.Isolation {
	case "read_committed", "read_uncommitted":
	default:
		return fmt.Errorf("isolation %q: want read_committed or read_uncommitted", c.Isolation)
	}
	return nil
}

// AddConsumer starts a group consumer (or restarts a closed or crashed
// one by its name, with the same configuration when cfg has only the
// name).
func (t *Traffic) AddConsumer(cfg ConsumerConfig) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errTrafficClosed
	}
	if old := t.consumers[cfg.Name]; old != nil && cfg.Name != "" {
		select {
		case <-old.done:
		default:
			return fmt.Errorf("consumer %s is running", cfg.Name)
		}
		if cfg.Topic == "" && cfg.Group == "" {
			cfg = old.cfg
		}
	}
	if err := cfg.defaults(); err != nil {
		return err
	}
	if cfg.Name == "" {
		cfg.Name = "c" + strconv.Itoa(len(t.consumers)+1)
	}
	balancer, err := balancerFor(cfg)
	if err != nil {
		return err
	}
	c := &consumer{cfg: cfg, done: make(chan struct{}), crashed: make(chan struct{}), conns: &connSet{conns: map[net.Conn]struct{}{}}}
	opts := []kgo.Opt{kgo.SeedBrokers(t.seeds...), kgo.ClientID(devClientID(cfg.Name)), kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumerGroup(cfg.Group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(balancer),
		kgo.AutoCommitInterval(time.Duration(cfg.CommitIntervalMs) * time.Millisecond), kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond), kgo.AllowAutoTopicCreation(), kgo.Dialer(c.conns.dial(c.crashed)),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			t.events.Add("rebalance", fmt.Sprintf("consumer %s assigned %v", cfg.Name, m), map[string]any{"consumer": cfg.Name, "assigned": m})
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			t.events.Add("rebalance", fmt.Sprintf("consumer %s revoked %v", cfg.Name, m), map[string]any{"consumer": cfg.Name, "revoked": m})
			cl.CommitUncommittedOffsets(ctx)
		}),
	}
	if cfg.Isolation == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if cfg.Protocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	c.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	t.consumers[cfg.Name] = c
	t.ledger.addConsumer(cfg.Name, cfg.Group)
	t.events.Add("traffic", fmt.Sprintf("consumer %s started in group %s (%s protocol, %s, %s)", cfg.Name, cfg.Group, cfg.Protocol, balancer.ProtocolName(), cfg.Isolation),
		map[string]any{"consumer": cfg})
	t.wg.Go(func() {
		defer close(c.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == idHeader {
						t.ledger.processedRecord(cfg.Name, cfg.Group, string(h.Value), r.Topic, r.Partition, r.Offset)
					}
				}
			})
		}
	})
	return nil
}

func balancerFor(cfg ConsumerConfig) (kgo.GroupBalancer, error) {
	switch cfg.Assignor {
	case "", "cooperative-sticky":
		if cfg.Protocol == "consumer" {
			return kgo.RangeBalancer(), nil // the broker's uniform assignor assigns
		}
		return kgo.CooperativeStickyBalancer(), nil
	case "sticky", "uniform":
		return kgo.StickyBalancer(), nil
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	}
	return nil, fmt.Errorf("assignor %q: want cooperative-sticky, sticky, range, roundrobin or uniform", cfg.Assignor)
}

// RestartConsumer starts a closed or crashed consumer again, with its
// configuration, as a new member of its group.
func (t *Traffic) RestartConsumer(name string) error {
	t.mu.Lock()
	_, ok := t.consumers[name]
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("no consumer %q", name)
	}
	return t.AddConsumer(ConsumerConfig{Name: name})
}

// CloseConsumer stops a consumer cleanly: it commits what it processed
// and leaves its group.
func (t *Traffic) CloseConsumer(name string) error {
	c, err := t.runningConsumer(name)
	if err != nil {
		return err
	}
	c.cancel()
	<-c.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.cl.CommitUncommittedOffsets(ctx)
	c.cl.Close()
	t.ledger.consumerState(name, "closed")
	t.events.Add("traffic", "consumer "+name+" closed (committed, left the group)", nil)
	return nil
}

// CrashConsumer stops a consumer as if its process died: its connections
// drop, it commits nothing more and does not leave the group, which
// notices after the session timeout.
func (t *Traffic) CrashConsumer(name string) error {
	c, err := t.runningConsumer(name)
	if err != nil {
		return err
	}
	close(c.crashed)
	c.conns.closeAll()
	c.cancel()
	<-c.done
	t.ledger.consumerState(name, "crashed")
	t.events.Add("traffic", "consumer "+name+" crashed (no commit, no LeaveGroup)", nil)
	t.wg.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c.cl.LeaveGroupContext(ctx) // fails: it cannot dial
		c.cl.Close()
	})
	return nil
}

func (t *Traffic) runningConsumer(name string) (*consumer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.consumers[name]
	if c == nil {
		return nil, fmt.Errorf("no consumer %q", name)
	}
	select {
	case <-c.done:
		return nil, fmt.Errorf("consumer %s is not running", name)
	default:
	}
	return c, nil
}

// Close stops every producer and consumer.
func (t *Traffic) Close() {
	t.mu.Lock()
	t.closed = true
	var ps []string
	var cs []string
	for n := range t.producers {
		ps = append(ps, n)
	}
	for n := range t.consumers {
		cs = append(cs, n)
	}
	t.mu.Unlock()
	for _, n := range ps {
		t.mu.Lock()
		p := t.producers[n]
		t.mu.Unlock()
		p.cancel()
		<-p.done
	}
	for _, n := range cs {
		t.CloseConsumer(n)
	}
	// A crashed consumer's client may take a while to give up its group;
	// the process is ending, it is not waited for longer.
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
