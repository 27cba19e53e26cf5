package console

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds of one tick's work.
const (
	maxGroups       = 200 // groups described per tick
	maxTransactions = 200 // transactions described per tick
	// unsupportedRetry is how many ticks an API the cluster refused with
	// UNSUPPORTED_VERSION is left alone before it is asked again (a
	// rolling upgrade may bring it).
	unsupportedRetry = 60
)

// Poller polls a cluster and publishes a Snapshot whenever it changes.
// Current and SetClient are safe for concurrent use; Run and Poll are
// called from one goroutine.
type Poller struct {
	cl       *kgo.Client
	adm      *kadm.Client
	interval time.Duration
	timeout  time.Duration
	metrics  []string
	httpc    *http.Client
	log      *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	cur     *Snapshot
	changed chan struct{} // closed when cur is replaced
	next    *kgo.Client   // SetClient's client, taken by the next poll
	// nextCtrls is SetControllers' list, taken by the next poll when
	// ctrlsSet.
	nextCtrls    []string
	nextCtrlOpts []kgo.Opt
	ctrlsSet     bool

	// Owned by the polling goroutine.
	tick        int
	unsupported map[string]int // part -> first tick to ask again
	lastMetrics map[string]metricsSample
	internal    internalReader
	meta        metaReader        // the metadata log, with --bootstrap-controller
	cells       map[tp]cellsState // per partition, its last read of the records' shape
	// metricsEvery is the time between two scrapes of the metrics pages
	// (a Moldau broker's /metrics costs it a fraction of a millisecond
	// per partition); lastScrape when the last began.
	metricsEvery time.Duration
	lastScrape   time.Time
	// named lists the producers the embedding program knows by name
	// (Config.Producers); flows keeps the counters behind the rates.
	named func() []NamedProducer
	flows flowMeter
}

// NewPoller returns a poller on cl, which it uses but does not close.
// interval is the time between the end of one poll and the start of the
// next; timeout bounds one poll.
func NewPoller(cl *kgo.Client, interval, timeout time.Duration, metricsURLs []string, log *slog.Logger) *Poller {
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(timeout / time.Millisecond))
	return &Poller{
		cl: cl, adm: adm, interval: interval, timeout: timeout, metrics: metricsURLs,
		httpc: &http.Client{Timeout: timeout}, log: log, now: time.Now,
		changed: make(chan struct{}), unsupported: map[string]int{}, lastMetrics: map[string]metricsSample{},
	}
}

// Current returns the latest snapshot (nil before the first poll) and a
// channel closed when a newer one is published.
func (p *Poller) Current() (*Snapshot, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur, p.changed
}

// SetClient makes the next polls ask the cluster through cl (a dev
// cluster rebuilt with other nodes). The poller does not close either
// client; a poll under way finishes with the old one.
func (p *Poller) SetClient(cl *kgo.Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = cl
}

// SetControllers makes the next polls follow the metadata log from the
// controllers at addrs (host:port of their listeners; none: not at all),
// starting over. opts are added to the clients' options (a dialer, TLS,
// SASL).
func (p *Poller) SetControllers(addrs []string, opts ...kgo.Opt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextCtrls, p.nextCtrlOpts, p.ctrlsSet = slices.Clone(addrs), opts, true
}

// Run polls until ctx is done, then closes the consumer of the internal
// topics and the metadata log's Fetch that the polls started.
func (p *Poller) Run(ctx context.Context) {
	defer p.meta.close()
	defer p.internal.close()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.Poll(ctx)
		t.Reset(p.interval)
	}
}

// Poll asks the cluster once and publishes the result if it differs from
// the current snapshot. It reports whether it published.
func (p *Poller) Poll(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	p.mu.Lock()
	swapped := p.next != nil
	if swapped {
		p.cl, p.adm = p.next, kadm.NewClient(p.next)
		p.adm.SetTimeoutMillis(int32(p.timeout / time.Millisecond))
		p.next = nil
		clear(p.unsupported)
		clear(p.lastMetrics)
		clear(p.cells)
	}
	ctrls, ctrlOpts, ctrlsSet := p.nextCtrls, p.nextCtrlOpts, p.ctrlsSet
	p.nextCtrls, p.nextCtrlOpts, p.ctrlsSet = nil, nil, false
	p.mu.Unlock()
	// Outside the lock: Current must not wait for a consumer to close.
	if swapped || ctrlsSet {
		p.internal.close() // the window holds both logs' events: start over
		p.meta.close()
	}
	if ctrlsSet {
		p.meta.bootstrap, p.meta.opts = ctrls, ctrlOpts
	}
	prev, _ := p.Current()
	next := p.build(ctx, prev)
	p.tick++
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		return false // shutting down: what we have is partial
	}
	if prev != nil && !Diff(prev, next).Any() {
		return false
	}
	return p.publish(next) == nil
}

// publish makes s the current snapshot, numbered after the previous one.
func (p *Poller) publish(s *Snapshot) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.Seq = 1
	if p.cur != nil {
		s.Seq = p.cur.Seq + 1
	}
	// The page iterates these: never null, even before the cluster
	// first answers.
	if s.Brokers == nil {
		s.Brokers = []Broker{}
	}
	if s.Topics == nil {
		s.Topics = []Topic{}
	}
	if s.Groups == nil {
		s.Groups = []Group{}
	}
	if s.Transactions == nil {
		s.Transactions = []Transaction{}
	}
	data, err := json.Marshal(s)
	if err != nil {
		p.log.Error("console: encoding the snapshot", "err", err)
		return err
	}
	s.data = data
	p.cur = s
	close(p.changed)
	p.changed = make(chan struct{})
	return nil
}

// build assembles a new snapshot; each part that fails keeps prev's value.
func (p *Poller) build(ctx context.Context, prev *Snapshot) *Snapshot {
	if prev == nil {
		prev = &Snapshot{ControllerID: -1}
	}
	s := &Snapshot{Errors: map[string]string{}, Truncated: map[string]int{}}
	fail := func(part string, err error) {
		s.Errors[part] = errorText(err)
		p.log.Debug("console poll", "part", part, "err", err)
	}
	md, err := p.adm.Metadata(ctx)
	if err != nil {
		fail("metadata", err)
		s.ClusterID, s.ControllerID, s.Topics = prev.ClusterID, prev.ControllerID, prev.Topics
		s.Brokers = prev.Brokers
	} else {
		s.ClusterID, s.ControllerID = md.Cluster, md.Controller
		s.Topics = topicsFromMetadata(md)
		fenced, err := p.fencedBrokers(ctx)
		if err != nil {
			fail("cluster", err)
		}
		s.Brokers = brokersFrom(md.Brokers, fenced, s.Topics)
	}
	if err := p.ask("quorum", func() error { return p.pollQuorum(ctx, s) }); err != nil {
		fail("quorum", err)
		if !errors.Is(err, errNotServed) {
			s.Quorum = prev.Quorum
		}
	}
	if err := p.pollLogDirs(ctx, s, prev); err != nil {
		fail("log_dirs", err)
	}
	if err := p.pollOffsets(ctx, s, prev); err != nil {
		fail("offsets", err)
	}
	if err := p.pollRecords(ctx, s, prev); err != nil {
		fail("records", err)
	}
	if err := p.pollGroups(ctx, s); err != nil {
		fail("groups", err)
		s.Groups = prev.Groups
	}
	if err := p.ask("transactions", func() error { return p.pollTransactions(ctx, s) }); err != nil {
		fail("transactions", err)
		if !errors.Is(err, errNotServed) {
			s.Transactions = prev.Transactions
		}
	}
	// The metadata log's events join the internal topics' window.
	s.MetadataLog = len(p.meta.bootstrap) > 0
	got, err := p.pollMetadataLog(s)
	if err != nil {
		fail("metadata_log", err)
	}
	p.internal.events = appendEvents(p.internal.events, got, maxInternalEvents)
	if err := p.pollInternal(s); err != nil {
		fail("internal", err)
	}
	switch now := p.now(); {
	case len(p.metrics) == 0:
	case p.lastScrape.IsZero() || now.Sub(p.lastScrape) >= p.metricsEvery:
		p.lastScrape = now
		s.Metrics = p.scrapeMetrics(ctx)
	default:
		s.Metrics = prev.Metrics
	}
	p.pollFlows(ctx, s, prev) // after the metrics: the wires' bytes come from them
	if len(s.Errors) == 0 {
		s.Errors = nil
	}
	if len(s.Truncated) == 0 {
		s.Truncated = nil
	}
	s.Time = p.now().UnixMilli()
	return s
}

// errNotServed marks a part the cluster does not serve; it is reported
// once per unsupportedRetry ticks and otherwise left out.
var errNotServed = errors.New("not served by this cluster")

// ask runs fn unless the part was refused as unsupported recently. An
// unsupported answer is remembered and reported as errNotServed.
func (p *Poller) ask(part string, fn func() error) error {
	if until, ok := p.unsupported[part]; ok && p.tick < until {
		return errNotServed
	}
	err := fn()
	if isUnsupported(err) {
		p.unsupported[part] = p.tick + unsupportedRetry
		return errNotServed
	}
	delete(p.unsupported, part)
	return err
}

// isUnsupported reports whether err says the broker does not know the
// request (UNSUPPORTED_VERSION, or kgo's "broker is too old" when
// ApiVersions does not list it).
func isUnsupported(err error) bool {
	return err != nil && (errors.Is(err, kerr.UnsupportedVersion) || strings.Contains(err.Error(), "broker is too old"))
}

// errorText is the one-line note shown for a failed part.
func errorText(err error) string {
	var se *kadm.ShardErrors
	if errors.As(err, &se) && len(se.Errs) > 0 {
		err = se.Errs[0].Err
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
