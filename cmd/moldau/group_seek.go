package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seekCommitChunk is how many partitions one OffsetCommit carries, so a
// seek of many partitions shows progress between requests.
const seekCommitChunk = 1000

func groupSeekCommand() *command {
	return &command{
		name: "seek", args: "GROUP", minArgs: 1, maxArgs: 1, client: true,
		summary: "Move a group's committed offsets (reset offsets).",
		long: `Commits new offsets for a group, so its consumers resume there. --to is
one of:
` + offsetSpecList + `
  TOPIC:PARTITION=OFFSET,...
         exact offsets for the listed partitions only

With start, end, N, -N, +N or @T, the partitions moved are those of
--topics, or else every partition the group has committed offsets for.
Offsets are kept within each partition's log.

The group must have no active members (as kafka-consumer-groups
--reset-offsets requires): stop its consumers first. A group that does not
exist yet is created with these offsets. --dry-run prints the plan
(current and new offset per partition) and commits nothing.

A share group's share-partition start offsets are moved the same way
(AlterShareGroupOffsets, as kafka-share-groups --reset-offsets): its
members then read from there, what was delivered before included.`,
		example: `  moldau group seek billing --to start --dry-run
  moldau group seek billing --to @-1h --topics orders
  moldau group seek billing --to orders:0=1200,orders:1=1180`,
		setup: func(fs *pflag.FlagSet) runner {
			to := fs.String("to", "", "where to move the offsets (required; see above)")
			topics := fs.StringSlice("topics", nil, "the `topics` to move (default: those the group has committed offsets for)")
			dry := fs.Bool("dry-run", false, "print the plan and commit nothing")
			return func(ctx context.Context, e *env, args []string) error {
				target, err := parseSeekTarget(*to, e.now())
				if err != nil {
					return usageErrorf(e, "--to: %v", err)
				}
				if target.exact != nil && len(*topics) > 0 {
					return usageErrorf(e, "--topics cannot be used with exact TOPIC:PARTITION=OFFSET targets")
				}
				return runGroupSeek(ctx, e, args[0], target, *topics, *dry)
			}
		},
	}
}

// seekTarget is a parsed --to: an offset spec, or exact offsets.
type seekTarget struct {
	spec  offsetSpec
	exact map[tp]int64
}

// parseSeekTarget parses --to.
func parseSeekTarget(s string, now time.Time) (seekTarget, error) {
	if s == "" {
		return seekTarget{}, fmt.Errorf("required: %s, or TOPIC:PARTITION=OFFSET,...", offsetSpecHelp)
	}
	if !strings.Contains(s, "=") {
		spec, err := parseOffsetSpec(s, now)
		return seekTarget{spec: spec}, err
	}
	exact := map[tp]int64{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		tpart, off, ok := strings.Cut(item, "=")
		i := strings.LastIndexByte(tpart, ':')
		if !ok || i <= 0 {
			return seekTarget{}, fmt.Errorf("%q: expected TOPIC:PARTITION=OFFSET", item)
		}
		p, err1 := strconv.ParseInt(tpart[i+1:], 10, 32)
		o, err2 := strconv.ParseInt(off, 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return seekTarget{}, fmt.Errorf("%q: expected TOPIC:PARTITION=OFFSET with numbers", item)
		}
		key := tp{tpart[:i], int32(p)}
		if _, dup := exact[key]; dup {
			return seekTarget{}, fmt.Errorf("%s:%d is given twice", key.topic, key.partition)
		}
		exact[key] = o
	}
	return seekTarget{exact: exact}, nil
}

type seekRow struct {
	Topic         string  `json:"topic"`
	Partition     int32   `json:"partition"`
	CurrentOffset int64   `json:"current_offset"` // -1: none
	NewOffset     int64   `json:"new_offset"`
	Error         *string `json:"error,omitempty"`
}

type seekResult struct {
	Group      string    `json:"group"`
	DryRun     bool      `json:"dry_run"`
	Partitions []seekRow `json:"partitions"`
}

func runGroupSeek(ctx context.Context, e *env, group string, target seekTarget, topics []string, dry bool) error {
	adm, cl, err := groupAdmin(ctx, e, kmsg.DescribeGroups, kmsg.OffsetFetch, kmsg.OffsetCommit)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := e.requestCtx(ctx)
	defer cancel()
	g, _, err := groupState(rctx, adm, cl, group)
	if err != nil {
		return err
	}
	if n := len(g.Members); n > 0 {
		return fmt.Errorf("group %q has %d active member(s) (state %s): stop its consumers before moving its offsets", group, n, g.State)
	}
	share := g.Type == "share"
	var committed kadm.OffsetResponses
	if share {
		committed, err = shareStartOffsets(rctx, adm, group)
	} else {
		committed, err = adm.FetchOffsets(rctx, group)
	}
	if err != nil {
		return groupError(group, firstShardError(err))
	}
	plan, err := seekPlan(rctx, adm, group, target, topics, committed)
	if err != nil {
		return err
	}
	res := seekResult{Group: group, DryRun: dry, Partitions: plan}
	if !dry {
		commit := commitPlan
		if share {
			commit = alterSharePlan
		}
		if err := commit(ctx, e, adm, group, res.Partitions); err != nil {
			return err
		}
	}
	if e.json {
		if err := writeJSON(e.stdout, res); err != nil {
			return err
		}
	} else if err := printSeek(e, res); err != nil {
		return err
	}
	for _, r := range res.Partitions {
		if r.Error != nil {
			return fmt.Errorf("group %q: topic %q partition %d not moved: %s", group, r.Topic, r.Partition, *r.Error)
		}
	}
	return nil
}

// seekPlan lists the partitions to move with their current and new
// offsets.
func seekPlan(ctx context.Context, adm *kadm.Client, group string, target seekTarget, topics []string, committed kadm.OffsetResponses) ([]seekRow, error) {
	var parts []tp
	switch {
	case target.exact != nil:
		for p := range target.exact {
			parts = append(parts, p)
		}
	case len(topics) > 0:
		tds, err := describeTopicsMeta(ctx, adm, topics)
		if err != nil {
			return nil, err
		}
		for _, t := range dedupe(topics) {
			for _, p := range tds[t].Partitions.Numbers() {
				parts = append(parts, tp{t, p})
			}
		}
	default:
		committed.Each(func(o kadm.OffsetResponse) { parts = append(parts, tp{o.Topic, o.Partition}) })
		if len(parts) == 0 {
			return nil, fmt.Errorf("group %q has no committed offsets: name the topics to move with --topics", group)
		}
	}
	var names []string
	for _, p := range parts {
		if !slices.Contains(names, p.topic) {
			names = append(names, p.topic)
		}
	}
	spec := target.spec
	if target.exact != nil {
		spec = offsetSpec{kind: offsetExact}
	}
	b, err := boundsOf(ctx, adm, names, parts, spec)
	if err != nil {
		return nil, err
	}
	rows := make([]seekRow, 0, len(parts))
	for _, p := range parts {
		row := seekRow{Topic: p.topic, Partition: p.partition, CurrentOffset: -1}
		if c, ok := committed.Lookup(p.topic, p.partition); ok && c.Err == nil {
			row.CurrentOffset = c.At
		}
		s := spec
		if target.exact != nil {
			s.n = target.exact[p]
		}
		at, ok := b.atTime[p]
		if !ok {
			at = -1
		}
		row.NewOffset = s.resolve(b.start[p], b.end[p], at)
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
	return rows, nil
}

// boundsOf lists start, end and (for @T) timestamp offsets of the topics'
// partitions; every partition of parts must exist.
func boundsOf(ctx context.Context, adm *kadm.Client, topics []string, parts []tp, spec offsetSpec) (*partitionBounds, error) {
	b, err := loadBounds(ctx, adm, topics, nil, spec, false)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if _, ok := b.start[p]; !ok {
			return nil, fmt.Errorf("topic %q has no partition %d", p.topic, p.partition)
		}
	}
	return b, nil
}

// commitPlan commits the new offsets in chunks, with progress on a
// terminal, and records each partition's error in its row.
func commitPlan(ctx context.Context, e *env, adm *kadm.Client, group string, rows []seekRow) error {
	var done atomic.Int64
	prog := startProgress(e.stderr, e.stderrTTY, func() string {
		return fmt.Sprintf("committed %d of %d partitions", done.Load(), len(rows))
	})
	defer prog.Stop()
	for i := 0; i < len(rows); i += seekCommitChunk {
		chunk := rows[i:min(i+seekCommitChunk, len(rows))]
		os := kadm.Offsets{}
		for _, r := range chunk {
			os.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.NewOffset, LeaderEpoch: -1})
		}
		cctx, cancel := e.requestCtx(ctx)
		resps, err := adm.CommitOffsets(cctx, group, os)
		cancel()
		if err != nil {
			return groupError(group, firstShardError(err))
		}
		for j := range chunk {
			if r, ok := resps.Lookup(chunk[j].Topic, chunk[j].Partition); ok && r.Err != nil {
				msg := errorMessage(r.Err)
				chunk[j].Error = &msg
			}
		}
		done.Add(int64(len(chunk)))
	}
	return nil
}

func printSeek(e *env, res seekResult) error {
	headers := []string{"TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"}
	if !res.DryRun {
		headers = append(headers, "STATUS")
	}
	t := newTable(e.stdout, headers...)
	for _, r := range res.Partitions {
		cols := []any{r.Topic, r.Partition, dash(r.CurrentOffset), r.NewOffset}
		if !res.DryRun {
			status := "OK"
			if r.Error != nil {
				status = *r.Error
			}
			cols = append(cols, status)
		}
		t.row(cols...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if res.DryRun {
		fmt.Fprintf(e.stdout, "Dry run: nothing committed. Run without --dry-run to move group %q.\n", res.Group)
	}
	return nil
}

// shareStartOffsets are a share group's share-partition start offsets
// (DescribeShareGroupOffsets), as the current offsets of a seek.
func shareStartOffsets(ctx context.Context, adm *kadm.Client, group string) (kadm.OffsetResponses, error) {
	ds, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	d := ds[group]
	if d.Err != nil {
		return nil, d.Err
	}
	out := kadm.OffsetResponses{}
	for t, ps := range d.Offsets {
		for p, o := range ps {
			if o.Err != nil || o.StartOffset < 0 {
				continue
			}
			if out[t] == nil {
				out[t] = map[int32]kadm.OffsetResponse{}
			}
			out[t][p] = kadm.OffsetResponse{Offset: kadm.Offset{Topic: t, Partition: p, At: o.StartOffset, LeaderEpoch: -1}}
		}
	}
	return out, nil
}

// alterSharePlan moves a share group's start offsets to the plan's new
// offsets (AlterShareGroupOffsets), noting each partition's error.
func alterSharePlan(ctx context.Context, e *env, adm *kadm.Client, group string, rows []seekRow) error {
	os := kadm.Offsets{}
	for _, r := range rows {
		os.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.NewOffset, LeaderEpoch: -1})
	}
	cctx, cancel := e.requestCtx(ctx)
	defer cancel()
	resps, err := adm.AlterShareGroupOffsets(cctx, group, os)
	if err != nil {
		return groupError(group, firstShardError(err))
	}
	for i := range rows {
		if err, ok := resps.Lookup(rows[i].Topic, rows[i].Partition); ok && err != nil {
			msg := errorMessage(err)
			rows[i].Error = &msg
		}
	}
	return nil
}
