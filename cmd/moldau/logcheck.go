package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kerr"
)

// moldau log check: every batch of a log dir, offline, as kafka-dump-log
// --deep-iteration reads them, with a summary per partition and an exit
// code. Built on the dump (logdump*.go), run quietly.

func logCheckCommand() *command {
	return &command{
		name: "check", args: "PATH...", minArgs: 1, maxArgs: -1,
		summary: "Check every batch, index and checkpoint of log dirs offline; exit 1 naming the damage.",
		long: `Checks the data of a broker's log dirs without a broker, as
kafka-dump-log.sh --deep-iteration reads it, and prints one summary line
per partition. PATH is a log dir (every partition dir in it, and its
checkpoints) or a partition dir (topic-N).

What log dump validates is checked, quietly: each batch's framing, CRC-32C
and offsets (which only grow), each record's framing and count, after
decompression (--shallow skips the records), index entries against the
batches they point at, producer snapshots, leader epoch and offset
checkpoints. Every problem is printed on stderr with its partition, the
offset it is at, the file and the position; the command then exits 1 with
one line naming the partitions and offsets. A clean check exits 0.

Run it on a stopped broker (or a copy): the active segment of a running
one is being written. The broker's log scrubber (moldau.log.scrub.*) does
the batch checks of this command on closed segments while it runs.`,
		example: `  moldau log check moldau-data
  moldau log check moldau-data/orders-0 moldau-data/orders-1 --shallow
  moldau log check moldau-data --json | jq 'select(.problems | length > 0)'`,
		setup: func(fs *pflag.FlagSet) runner {
			shallow := fs.Bool("shallow", false, "check batches only, not the records in them (no decompression)")
			return func(ctx context.Context, e *env, args []string) error {
				return runLogCheck(ctx, e, !*shallow, args)
			}
		},
	}
}

// problem is one thing wrong, as a dump's fail reports it.
type problem struct {
	File     string `json:"file"`
	Position int64  `json:"position"` // -1: the file as a whole
	Offset   int64  `json:"offset"`   // -1: not in a .log
	Error    string `json:"error"`
}

type checkStats struct{ segments, batches, records, bytes int64 }

// partitionCheck is the result for one partition dir (or the log dir's
// own checkpoints).
type partitionCheck struct {
	Type      string    `json:"type"` // "partition" or "log_dir"
	Partition string    `json:"partition,omitempty"`
	Dir       string    `json:"dir"`
	Segments  int64     `json:"segments"`
	Batches   int64     `json:"batches"`
	Records   int64     `json:"records"`
	Bytes     int64     `json:"bytes"`
	Problems  []problem `json:"problems"`
}

func runLogCheck(ctx context.Context, e *env, deep bool, paths []string) error {
	var targets []checkTarget
	for _, p := range paths {
		ts, err := checkTargets(p)
		if err != nil {
			return err
		}
		targets = append(targets, ts...)
	}
	var results []partitionCheck
	for _, t := range targets {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		results = append(results, checkOne(ctx, e, deep, t))
	}
	if e.json {
		for _, r := range results {
			if err := writeJSON(e.stdout, r); err != nil {
				return err
			}
		}
	} else {
		tbl := newTable(e.stdout, "PARTITION", "SEGMENTS", "BATCHES", "RECORDS", "BYTES", "PROBLEMS")
		for _, r := range results {
			if r.Type == "log_dir" {
				if len(r.Problems) > 0 {
					tbl.row(r.Dir+" (checkpoints)", "-", "-", "-", "-", len(r.Problems))
				}
				continue
			}
			records := strconv.FormatInt(r.Records, 10)
			if !deep {
				records += " (headers)"
			}
			tbl.row(r.Partition, r.Segments, r.Batches, records, r.Bytes, len(r.Problems))
		}
		if err := tbl.flush(); err != nil {
			return err
		}
	}
	var named []string
	n := 0
	for _, r := range results {
		if len(r.Problems) == 0 {
			continue
		}
		name := r.Partition
		if name == "" {
			name = r.Dir
		}
		for _, p := range r.Problems {
			where := p.File
			if p.Position >= 0 {
				where = fmt.Sprintf("%s position %d", p.File, p.Position)
			}
			at := ""
			if p.Offset >= 0 {
				at = fmt.Sprintf("offset %d: ", p.Offset)
			}
			fmt.Fprintf(e.stderr, "error: %s: %s%s: %s\n", name, at, where, p.Error)
		}
		n++
		named = append(named, name+describeProblems(r.Problems))
	}
	if n > 0 {
		return fmt.Errorf("problems in %d partition(s): %s", n, strings.Join(named, "; "))
	}
	return nil
}

// describeProblems says where a partition's problems are: the offsets,
// and the other files.
func describeProblems(ps []problem) string {
	var offsets []string
	files := map[string]bool{}
	for _, p := range ps {
		if p.Offset >= 0 {
			if o := strconv.FormatInt(p.Offset, 10); len(offsets) == 0 || offsets[len(offsets)-1] != o {
				offsets = append(offsets, o)
			}
		} else {
			files[filepath.Base(p.File)] = true
		}
	}
	var parts []string
	switch {
	case len(offsets) == 1:
		parts = append(parts, "at offset "+offsets[0])
	case len(offsets) > 1:
		parts = append(parts, "at offsets "+strings.Join(offsets, ", "))
	}
	if len(files) > 0 {
		names := make([]string, 0, len(files))
		for f := range files {
			names = append(names, f)
		}
		sort.Strings(names)
		parts = append(parts, "in "+strings.Join(names, ", "))
	}
	return " " + strings.Join(parts, " and ")
}

// checkTarget is a partition dir, or a log dir's own files.
type checkTarget struct {
	dir       string
	partition string // "" for a log dir's checkpoints
}

// checkTargets lists what to check under path: a partition dir is itself;
// a log dir is its checkpoints and every partition dir in it.
func checkTargets(path string) ([]checkTarget, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory: log check takes log dirs or partition dirs (log dump takes files)", path)
	}
	if name, ok := partitionDirName(filepath.Base(filepath.Clean(path))); ok {
		return []checkTarget{{dir: path, partition: name}}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	out := []checkTarget{{dir: path}}
	for _, en := range ents {
		if name, ok := partitionDirName(en.Name()); ok && en.IsDir() {
			out = append(out, checkTarget{dir: filepath.Join(path, en.Name()), partition: name})
		}
	}
	return out, nil
}

// partitionDirName recognises "<topic>-<partition>" (not the "-delete"
// and "-stray" dirs of deleted logs).
func partitionDirName(name string) (string, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return "", false
	}
	return name, true
}

// checkOne checks one target with a quiet dump.
func checkOne(ctx context.Context, e *env, deep bool, t checkTarget) partitionCheck {
	r := partitionCheck{Type: "partition", Partition: t.partition, Dir: t.dir, Problems: []problem{}}
	d := newDumper(e, dumpOpts{deep: deep})
	d.quiet = true
	d.report = func(p problem) {
		p.Error = strings.TrimPrefix(p.Error, kerr.CorruptMessage.Error()+": ")
		r.Problems = append(r.Problems, p)
	}
	if t.partition == "" {
		r.Type = "log_dir"
		ents, err := os.ReadDir(t.dir)
		if err != nil {
			d.fail(t.dir, -1, "%v", unwrapPathError(err))
		}
		for _, en := range ents {
			if !en.IsDir() && fileKindOf(en.Name()) != kindUnknown {
				d.dumpFile(filepath.Join(t.dir, en.Name()))
			}
		}
		return r
	}
	if err := d.dumpDir(ctx, t.dir); err != nil {
		d.fail(t.dir, -1, "%v", err)
	}
	r.Segments, r.Batches, r.Records, r.Bytes = d.stats.segments, d.stats.batches, d.stats.records, d.stats.bytes
	return r
}
