package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func consumeCommand() *command {
	return &command{
		name: "consume", args: "TOPIC...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Print records from topics, optionally as a group member.",
		long: `Prints the records of every partition of the topics (or of --partition),
each partition in offset order, until Ctrl-C, --num records, or with
--exit-at-end the end offsets listed when the command started.

--offset is where each partition starts:
` + offsetSpecList + `
An offset outside the log is moved to its start or end.

With --group, the command joins the consumer group (as any consumer does)
and reads the partitions the group assigns it from the group's committed
offsets; --offset applies only to partitions without one. It commits the
offsets of the records it printed, periodically and when it stops.
--partition cannot be used with --group.

With --share-group, the command joins the share group (KIP-932, as
kafka-console-share-consumer.sh does): the partitions' leaders hand it
records no other member of the group holds, and it accepts each record it
prints (one it does not print, past --num, it releases). Where the group
starts and whether it reads committed records only are the group's
configs (share.auto.offset.reset, share.isolation.level); --offset,
--partition, --exit-at-end and --read-committed do not apply.

--format is a template; the default is "%v\n" (the value on a line):
` + formatHelp + `

--json prints one JSON object per line and record: topic, partition,
offset, timestamp (Unix ms), leader_epoch, key, value, headers [{key,
value}]. Keys and values that are valid UTF-8 are JSON strings; others are
base64 with "key_encoding"/"value_encoding": "base64" next to them; null is
null.

Progress goes to stderr when it is a terminal and stdout is not.`,
		example: `  moldau consume orders --exit-at-end
  moldau consume orders -o -10 -n 10 -f '%p/%o %k=%v\n'
  moldau consume orders -o @2024-05-01T00:00:00Z --json
  moldau consume orders -p 0,1 -o 1500
  moldau consume orders --group billing -n 100
  moldau consume jobs --share-group workers`,
		setup: func(fs *pflag.FlagSet) runner {
			o := &consumeOpts{}
			fs.StringVarP(&o.offset, "offset", "o", "start", "where to start in each partition (see above)")
			fs.Int32SliceVarP(&o.partitions, "partition", "p", nil, "consume only these `partitions` (comma-separated or repeated)")
			fs.StringVarP(&o.group, "group", "g", "", "consume as a member of this consumer group")
			fs.StringVar(&o.shareGroup, "share-group", "", "consume as a member of this share group, accepting what is printed")
			fs.IntVarP(&o.num, "num", "n", 0, "stop after this many records (0: no limit)")
			fs.BoolVarP(&o.exitAtEnd, "exit-at-end", "e", false, "stop at the end offsets listed at start")
			fs.StringVarP(&o.format, "format", "f", `%v\n`, "output template (see above)")
			fs.BoolVar(&o.readCommitted, "read-committed", false, "read only committed transactional records (isolation level read_committed)")
			return func(ctx context.Context, e *env, args []string) error {
				o.topics = args
				o.formatSet = fs.Changed("format")
				return runConsume(ctx, e, o)
			}
		},
	}
}

type consumeOpts struct {
	topics                   []string
	offset, group, format    string
	shareGroup               string
	partitions               []int32
	num                      int
	exitAtEnd, readCommitted bool
	formatSet                bool
}

// tp is a topic partition.
type tp struct {
	topic     string
	partition int32
}

func runConsume(ctx context.Context, e *env, o *consumeOpts) error {
	spec, err := parseOffsetSpec(o.offset, e.now())
	if err != nil {
		return usageErrorf(e, "--offset: %v", err)
	}
	format, err := parseFormat(o.format)
	if err != nil {
		return usageErrorf(e, "--format: %v", err)
	}
	switch {
	case o.group != "" && len(o.partitions) > 0:
		return usageErrorf(e, "--partition cannot be used with --group: the group assigns partitions")
	case o.shareGroup != "" && (o.group != "" || len(o.partitions) > 0 || o.exitAtEnd || o.readCommitted || o.offset != "start"):
		return usageErrorf(e, "--share-group cannot be used with --group, --partition, --exit-at-end, --read-committed or --offset: the share group's configs decide where it reads")
	case e.json && o.formatSet:
		return usageErrorf(e, "--json and --format cannot be used together")
	case o.num < 0:
		return usageErrorf(e, "--num must not be negative")
	}
	adm, acl, err := e.newAdmin(ctx)
	if err != nil {
		return err
	}
	defer acl.Close()
	if o.group != "" {
		if err := requireGroups(ctx, acl); err != nil {
			return err
		}
	}
	if o.shareGroup != "" {
		if err := requireAPI(ctx, acl, kmsg.ShareFetch.Int16(), "share groups (share.version 1)"); err != nil {
			return err
		}
	}
	rctx, cancel := e.requestCtx(ctx)
	defer cancel()
	b, err := loadBounds(rctx, adm, o.topics, o.partitions, spec, o.readCommitted)
	if err != nil {
		return err
	}

	c := &consumer{e: e, o: o, spec: spec, format: format, bounds: b, pending: map[tp]int64{}}
	// Fetches of at most 4 MiB bound the client's memory (each record
	// becomes a kgo.Record) at no cost in speed; a larger batch still
	// comes whole. The reset offset, for a committed or requested offset
	// below the log start, is the start: nothing that exists is skipped.
	opts := []kgo.Opt{kgo.KeepControlRecords(), kgo.FetchMaxBytes(1 << 20), kgo.FetchMaxPartitionBytes(1 << 20), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if o.readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	switch {
	case o.shareGroup != "":
		opts = []kgo.Opt{kgo.ShareGroup(o.shareGroup), kgo.ConsumeTopics(o.topics...), kgo.FetchMaxBytes(1 << 20)}
	case o.group == "":
		opts = append(opts, kgo.ConsumePartitions(c.directStart()))
		if o.exitAtEnd && len(c.pending) == 0 {
			return nil // every partition is already at its end
		}
	default:
		opts = append(opts,
			kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(o.topics...),
			kgo.ConsumeStartOffset(spec.kgoOffset()), kgo.AutoCommitMarks(),
			kgo.OnPartitionsAssigned(c.assigned), kgo.OnPartitionsRevoked(c.revoked), kgo.OnPartitionsLost(c.revoked))
	}
	cl, err := e.newClient(ctx, opts...)
	if err != nil {
		return err
	}
	c.cl, c.adm = cl, adminFor(e, cl)
	err = c.run(ctx)
	if o.shareGroup != "" {
		// Send the acknowledgements of what was printed before leaving.
		fctx, fcancel := e.requestCtx(context.Background())
		if ferr := cl.FlushAcks(fctx); ferr != nil && err == nil {
			err = fmt.Errorf("acknowledging records of share group %q: %s", o.shareGroup, errorMessage(ferr))
		}
		fcancel()
	}
	if o.group != "" {
		// Commit what was printed before leaving the group.
		cctx, ccancel := e.requestCtx(context.Background())
		if cerr := cl.CommitMarkedOffsets(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("committing offsets of group %q: %s", o.group, errorMessage(cerr))
		}
		ccancel()
	}
	cl.Close()
	return err
}

// requireGroups checks that the cluster serves consumer groups.
func requireGroups(ctx context.Context, cl *kgo.Client) error {
	for _, key := range []int16{kmsg.FindCoordinator.Int16(), kmsg.JoinGroup.Int16(), kmsg.OffsetFetch.Int16()} {
		if err := requireAPI(ctx, cl, key, "consumer groups"); err != nil {
			return err
		}
	}
	return nil
}

// partitionBounds are the offsets of a set of partitions when the command
// started: log start, end (the high watermark, or the last stable offset
// with --read-committed) and, for @T specs, the offset at T.
type partitionBounds struct {
	parts  []tp
	start  map[tp]int64
	end    map[tp]int64
	atTime map[tp]int64
}

// loadBounds lists the offsets of the topics' partitions (all, or only
// those in only). A missing topic or partition is an error.
func loadBounds(ctx context.Context, adm *kadm.Client, topics []string, only []int32, spec offsetSpec, readCommitted bool) (*partitionBounds, error) {
	tds, err := describeTopicsMeta(ctx, adm, topics)
	if err != nil {
		return nil, err
	}
	b := &partitionBounds{start: map[tp]int64{}, end: map[tp]int64{}, atTime: map[tp]int64{}}
	for _, t := range dedupe(topics) {
		ps := tds[t].Partitions
		if len(only) == 0 {
			for _, p := range ps.Numbers() {
				b.parts = append(b.parts, tp{t, p})
			}
			continue
		}
		for _, p := range only {
			if _, ok := ps[p]; !ok {
				return nil, fmt.Errorf("topic %q has %d partitions: there is no partition %d", t, len(ps), p)
			}
			b.parts = append(b.parts, tp{t, p})
		}
	}
	topics = dedupe(topics)
	lists := []struct {
		m    map[tp]int64
		list func(context.Context, ...string) (kadm.ListedOffsets, error)
	}{{b.start, adm.ListStartOffsets}, {b.end, adm.ListEndOffsets}}
	if readCommitted {
		lists[1].list = adm.ListCommittedOffsets
	}
	if spec.needsTimeLookup() {
		lists = append(lists, struct {
			m    map[tp]int64
			list func(context.Context, ...string) (kadm.ListedOffsets, error)
		}{b.atTime, func(ctx context.Context, ts ...string) (kadm.ListedOffsets, error) {
			return adm.ListOffsetsAfterMilli(ctx, spec.millis, ts...)
		}})
	}
	for _, l := range lists {
		listed, err := l.list(ctx, topics...)
		if err != nil {
			return nil, firstShardError(err)
		}
		for _, p := range b.parts {
			lo, ok := listed.Lookup(p.topic, p.partition)
			if !ok {
				return nil, fmt.Errorf("topic %q partition %d: no offsets listed", p.topic, p.partition)
			}
			if lo.Err != nil {
				return nil, fmt.Errorf("topic %q partition %d: %s", p.topic, p.partition, errorMessage(lo.Err))
			}
			l.m[p] = lo.Offset
		}
	}
	return b, nil
}

func dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// consumer is one run of consume.
type consumer struct {
	e      *env
	o      *consumeOpts
	spec   offsetSpec
	format *recordFormat
	bounds *partitionBounds
	cl     *kgo.Client
	adm    *kadm.Client

	// With --exit-at-end: the partitions not yet read to their end offset
	// (the value). In group mode they are those assigned to this member;
	// gotAssigned is set once the first assignment arrived.
	mu          sync.Mutex
	pending     map[tp]int64
	gotAssigned bool
	// assignErr is an error found while handling an assignment.
	assignErr error

	printed, printedBytes, toRead atomic.Int64
}

// directStart resolves --offset in every partition and, with
// --exit-at-end, notes the partitions that have records to read.
func (c *consumer) directStart() map[string]map[int32]kgo.Offset {
	m := map[string]map[int32]kgo.Offset{}
	for _, p := range c.bounds.parts {
		from := c.resolve(p)
		if m[p.topic] == nil {
			m[p.topic] = map[int32]kgo.Offset{}
		}
		m[p.topic][p.partition] = kgo.NewOffset().At(from)
		if end := c.bounds.end[p]; from < end {
			c.pending[p] = end
			c.toRead.Add(end - from)
		}
	}
	return m
}

func (c *consumer) resolve(p tp) int64 {
	at, ok := c.bounds.atTime[p]
	if !ok {
		at = -1
	}
	return c.spec.resolve(c.bounds.start[p], c.bounds.end[p], at)
}

// assigned runs when the group gives this member partitions: with
// --exit-at-end, each is pending until read to its end, starting from the
// group's committed offset or, without one, --offset.
func (c *consumer) assigned(ctx context.Context, _ *kgo.Client, assigned map[string][]int32) {
	if !c.o.exitAtEnd {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, c.e.client.timeout)
	committed, err := c.adm.FetchOffsets(fctx, c.o.group)
	cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gotAssigned = true
	if err != nil {
		c.assignErr = fmt.Errorf("fetching the committed offsets of group %q: %s", c.o.group, errorMessage(firstShardError(err)))
		return
	}
	for t, ps := range assigned {
		for _, p := range ps {
			key := tp{t, p}
			end, ok := c.bounds.end[key]
			if !ok {
				continue // a partition created after the start: not part of this run
			}
			from := c.resolve(key)
			if or, ok := committed.Lookup(t, p); ok && or.Err == nil && or.At >= 0 {
				from = or.At
			}
			if from < end {
				c.pending[key] = end
				c.toRead.Add(end - from)
			}
		}
	}
}

func (c *consumer) revoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range revoked {
		for _, p := range ps {
			delete(c.pending, tp{t, p})
		}
	}
}

// atEnd reports whether --exit-at-end is satisfied.
func (c *consumer) atEnd() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (c.o.group == "" || c.gotAssigned) && len(c.pending) == 0
}

// pastEnd records that r was read and reports whether it lies at or past
// its partition's end offset (not to be printed with --exit-at-end).
func (c *consumer) pastEnd(r *kgo.Record) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := tp{r.Topic, r.Partition}
	end, ok := c.bounds.end[key]
	if !ok {
		return true
	}
	if r.Offset+1 >= end {
		delete(c.pending, key)
	}
	return r.Offset >= end
}

func (c *consumer) run(ctx context.Context) error {
	w := bufio.NewWriterSize(c.e.stdout, 64<<10)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	prog := startProgress(c.e.stderr, c.e.stderrTTY && !c.e.stdoutTTY, c.status)
	defer prog.Stop()
	var buf []byte
	var marks []*kgo.Record
	for {
		if c.o.exitAtEnd && c.atEnd() {
			return w.Flush()
		}
		fetches := c.cl.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return w.Flush() // Ctrl-C: a normal way to stop
		}
		if err := c.fetchError(fetches); err != nil {
			w.Flush()
			return err
		}
		marks = marks[:0]
		stop := false
		it := fetches.RecordIter()
		for !it.Done() && !stop {
			r := it.Next()
			if c.o.exitAtEnd && c.pastEnd(r) || r.Attrs.IsControl() {
				continue
			}
			if c.e.json {
				if err := enc.Encode(toJSONRecord(r)); err != nil {
					return err
				}
			} else {
				buf = c.format.appendRecord(buf[:0], r)
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			marks = append(marks, r)
			c.printedBytes.Add(int64(len(r.Key) + len(r.Value)))
			if n := c.printed.Add(1); c.o.num > 0 && n >= int64(c.o.num) {
				stop = true
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if c.o.group != "" && len(marks) > 0 {
			c.cl.MarkCommitRecords(marks...)
		}
		if c.o.shareGroup != "" {
			for _, r := range marks {
				r.Ack(kgo.AckAccept)
			}
			// What was not printed goes back to the group (kgo would
			// accept it at the next poll or at close).
			for !it.Done() {
				it.Next().Ack(kgo.AckRelease)
			}
		}
		if stop {
			return nil
		}
	}
}

// fetchError turns the first fetch error into the command's error.
func (c *consumer) fetchError(fs kgo.Fetches) error {
	c.mu.Lock()
	aerr := c.assignErr
	c.mu.Unlock()
	if aerr != nil {
		return aerr
	}
	var err error
	fs.EachError(func(t string, p int32, ferr error) {
		if err != nil || errors.Is(ferr, context.Canceled) {
			return
		}
		switch {
		case t == "":
			err = ferr
		case c.o.group != "" && p < 0:
			err = groupError(c.o.group, ferr)
		default:
			err = fmt.Errorf("topic %q partition %d: %s", t, p, errorMessage(ferr))
		}
	})
	return err
}

func (c *consumer) status() string {
	s := fmt.Sprintf("consumed %d records (%s)", c.printed.Load(), humanBytes(c.printedBytes.Load()))
	if c.o.exitAtEnd {
		s += fmt.Sprintf(" of %d", c.toRead.Load())
	}
	return s
}
