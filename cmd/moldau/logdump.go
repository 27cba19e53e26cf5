package main

import (
	"github.com/moldau/moldau/broker/uuid"

	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/moldau/moldau/log"
)

func logCommand() *command {
	return &command{
		name:    "log",
		summary: "Inspect a broker's data files offline; move replicas between log dirs.",
		subs:    []*command{logDumpCommand(), logCheckCommand(), logMoveCommand()},
	}
}

func logDumpCommand() *command {
	return &command{
		name: "dump", args: "PATH...", minArgs: 1, maxArgs: -1,
		summary: "Decode segments, indexes, snapshots and checkpoints (kafka-dump-log).",
		long: `Decodes the files of a log dir without a broker, as Kafka's
kafka-dump-log.sh does. PATH is a file, a partition dir (topic-N) or a
whole log dir (every partition dir in it, and its checkpoints). Files are
recognised by name:

  NNN.log                   record batches: one line per batch (offsets,
                            producer, epoch, timestamps, codec, CRC);
                            --deep-iteration adds a line per record,
                            --print-data-log its key, value and headers
  NNN.index, NNN.timeindex  offset and time index entries, each checked
                            against the batch it points to in NNN.log
  NNN.txnindex              aborted transactions (Kafka's AbortedTxn)
  NNN.snapshot              producer state (Kafka's ProducerSnapshot v1)
  leader-epoch-checkpoint   epoch and start offset pairs
  partition.metadata        the topic ID
  recovery-point-offset-checkpoint, replication-offset-checkpoint,
  log-start-offset-checkpoint, cleaner-offset-checkpoint
                            topic, partition and offset lines

A .deleted, .cleaned or .swap suffix is looked through. Other files in a
dir are skipped; a named file of unknown type is an error.

Every file is validated as it is read: batch framing, CRC-32C, offsets that
only grow, record framing and count (with --deep-iteration), index entries
that point at the right batch, snapshot CRCs, checkpoint syntax. Each
problem is reported on stderr with the file and position, dumping goes on
where it can, and the command exits 1.

Keys and values that are not printable UTF-8 are shown Go-quoted in text
output. --json prints one object per line with a "type" (file, batch,
index_entry, time_index_entry, aborted_txn, producer, epoch,
partition_metadata, checkpoint_entry, error) and the "file"; keys and
values are encoded as consume --json does.`,
		example: `  moldau log dump moldau-data/orders-0/00000000000000000000.log --deep-iteration --print-data-log
  moldau log dump moldau-data/orders-0
  moldau log dump moldau-data --json | jq 'select(.type == "error")'`,
		setup: func(fs *pflag.FlagSet) runner {
			o := dumpOpts{}
			fs.BoolVar(&o.deep, "deep-iteration", false, "decode every record of every batch (decompressing them)")
			fs.BoolVar(&o.data, "print-data-log", false, "print record keys, values and headers (implies --deep-iteration)")
			fs.BoolVar(&o.verifyOnly, "verify-index-only", false, "check index entries against the log without printing them")
			fs.Int64Var(&o.maxBytes, "max-bytes", 0, "decode at most this many bytes of each .log (0: all)")
			return func(ctx context.Context, e *env, args []string) error {
				if o.data {
					o.deep = true
				}
				if o.maxBytes < 0 {
					return usageErrorf(e, "--max-bytes must not be negative")
				}
				return runLogDump(ctx, e, o, args)
			}
		},
	}
}

type dumpOpts struct {
	deep, data, verifyOnly bool
	maxBytes               int64
}

// dumper writes one log dump run's output and counts its problems.
type dumper struct {
	e    *env
	o    dumpOpts
	w    *bufio.Writer
	enc  *json.Encoder
	errs int
	bad  map[string]bool // files with errors
	// scans caches the batch headers of .log files, for index checks.
	scans map[string]*logScan

	// For log check (logcheck.go): quiet prints nothing but hands every
	// problem to report; offset is the offset a problem in a .log is at
	// (-1: none); stats counts what was read.
	quiet  bool
	report func(problem)
	offset int64
	stats  checkStats
}

func runLogDump(ctx context.Context, e *env, o dumpOpts, paths []string) error {
	d := newDumper(e, o)
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		st, err := os.Stat(p)
		if err != nil {
			d.flush()
			return fmt.Errorf("%s: %w", p, unwrapPathError(err))
		}
		if st.IsDir() {
			if err := d.dumpDir(ctx, p); err != nil {
				d.flush()
				return err
			}
			continue
		}
		if kind := fileKindOf(filepath.Base(p)); kind == kindUnknown {
			d.flush()
			return fmt.Errorf("%s: not a file log dump knows (.log, .index, .timeindex, .txnindex, .snapshot, a checkpoint or partition.metadata)", p)
		}
		d.dumpFile(p)
	}
	if err := d.flush(); err != nil {
		return err
	}
	if d.errs > 0 {
		return fmt.Errorf("%d problem(s) found in %d file(s); see above", d.errs, len(d.bad))
	}
	return ctx.Err()
}

func newDumper(e *env, o dumpOpts) *dumper {
	d := &dumper{e: e, o: o, w: bufio.NewWriterSize(e.stdout, 64<<10), bad: map[string]bool{}, scans: map[string]*logScan{}, offset: -1}
	d.enc = json.NewEncoder(d.w)
	d.enc.SetEscapeHTML(false)
	return d
}

// notef prints a note on stderr, unless quiet.
func (d *dumper) notef(format string, args ...any) {
	if !d.quiet {
		fmt.Fprintf(d.e.stderr, "note: "+format+"\n", args...)
	}
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (d *dumper) flush() error { return d.w.Flush() }

// textf prints a line in text mode.
func (d *dumper) textf(format string, args ...any) {
	if !d.e.json && !d.quiet {
		fmt.Fprintf(d.w, format+"\n", args...)
	}
}

// object prints a JSON line in --json mode.
func (d *dumper) object(v any) {
	if d.e.json && !d.quiet {
		d.enc.Encode(v)
	}
}

type dumpError struct {
	Type     string `json:"type"`
	File     string `json:"file"`
	Position *int64 `json:"position"`
	Error    string `json:"error"`
}

// pathless drops the file's path from an error of the log package, which
// names it, since the dump prints it first.
func pathless(err error, path string) string {
	msg := err.Error()
	for _, p := range []string{"checkpoint " + path + ": ", "checkpoint " + path + " ", path + ": "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// fail reports a problem in file at byte position pos (-1: none) on
// stderr, and in the JSON stream with --json.
func (d *dumper) fail(file string, pos int64, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.errs++
	d.bad[file] = true
	if d.report != nil {
		d.report(problem{File: file, Position: pos, Offset: d.offset, Error: msg})
		return
	}
	obj := dumpError{Type: "error", File: file, Error: msg}
	where := file
	if pos >= 0 {
		obj.Position = &pos
		where = fmt.Sprintf("%s: position %d", file, pos)
	}
	d.object(obj)
	d.w.Flush() // keep stdout and stderr in order on a terminal
	fmt.Fprintf(d.e.stderr, "error: %s: %s\n", where, msg)
}

// File kinds, by name.
type fileKind int

const (
	kindUnknown fileKind = iota
	kindLog
	kindIndex
	kindTimeIndex
	kindTxnIndex
	kindSnapshot
	kindEpochCheckpoint
	kindPartitionMetadata
	kindOffsetCheckpoint
)

var kindNames = map[fileKind]string{
	kindLog: "log", kindIndex: "index", kindTimeIndex: "timeindex", kindTxnIndex: "txnindex",
	kindSnapshot: "snapshot", kindEpochCheckpoint: "leader-epoch-checkpoint",
	kindPartitionMetadata: "partition-metadata", kindOffsetCheckpoint: "offset-checkpoint",
}

// fileKindOf recognises a file by its name, looking through a .deleted,
// .cleaned or .swap suffix.
func fileKindOf(name string) fileKind {
	for _, s := range []string{log.DeletedFileSuffix, log.CleanedFileSuffix, log.SwapFileSuffix} {
		name = strings.TrimSuffix(name, s)
	}
	switch name {
	case log.LeaderEpochCheckpointFile:
		return kindEpochCheckpoint
	case log.PartitionMetadataFile:
		return kindPartitionMetadata
	case log.RecoveryPointCheckpointFile, log.ReplicationCheckpointFile, log.LogStartOffsetCheckpointFile, "cleaner-offset-checkpoint":
		return kindOffsetCheckpoint
	}
	if _, ok := segmentBase(name); !ok {
		return kindUnknown
	}
	switch filepath.Ext(name) {
	case log.LogFileSuffix:
		return kindLog
	case log.IndexFileSuffix:
		return kindIndex
	case log.TimeIndexFileSuffix:
		return kindTimeIndex
	case log.TxnIndexFileSuffix:
		return kindTxnIndex
	case log.SnapshotFileSuffix:
		return kindSnapshot
	}
	return kindUnknown
}

// segmentBase parses the base offset a segment file is named by (20
// digits, as Kafka names them; any digit count is accepted).
func segmentBase(name string) (int64, bool) {
	stem, _, ok := strings.Cut(name, ".")
	if !ok || stem == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	return n, err == nil && n >= 0
}

// kindOrder puts a segment's .log before its indexes.
var kindOrder = map[fileKind]int{kindLog: 0, kindIndex: 1, kindTimeIndex: 2, kindTxnIndex: 3, kindSnapshot: 4}

// dumpDir dumps every known file of dir, and of the dirs in it, in order:
// segments by base offset, then the partition's other files; then the
// subdirectories.
func (d *dumper) dumpDir(ctx context.Context, dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, unwrapPathError(err))
	}
	type item struct {
		name string
		kind fileKind
		base int64
	}
	var files []item
	var dirs []string
	for _, en := range ents {
		if en.IsDir() {
			dirs = append(dirs, filepath.Join(dir, en.Name()))
			continue
		}
		k := fileKindOf(en.Name())
		if k == kindUnknown {
			continue
		}
		base, isSeg := segmentBase(en.Name())
		if !isSeg {
			base = -1
		}
		files = append(files, item{en.Name(), k, base})
	}
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if (a.base < 0) != (b.base < 0) {
			return a.base >= 0 // segments first
		}
		if a.base != b.base {
			return a.base < b.base
		}
		if a.kind != b.kind {
			return kindOrder[a.kind] < kindOrder[b.kind]
		}
		return a.name < b.name
	})
	for _, f := range files {
		if ctx.Err() != nil {
			return nil
		}
		d.dumpFile(filepath.Join(dir, f.name))
	}
	sort.Strings(dirs)
	for _, sub := range dirs {
		if err := d.dumpDir(ctx, sub); err != nil {
			return err
		}
	}
	return nil
}

type fileHeader struct {
	Type       string `json:"type"`
	File       string `json:"file"`
	Kind       string `json:"kind"`
	BaseOffset *int64 `json:"base_offset,omitempty"`
}

// dumpFile dumps one file of a known kind.
func (d *dumper) dumpFile(path string) {
	kind := fileKindOf(filepath.Base(path))
	d.textf("Dumping %s", path)
	h := fileHeader{Type: "file", File: path, Kind: kindNames[kind]}
	base, isSeg := segmentBase(filepath.Base(path))
	if isSeg {
		h.BaseOffset = &base
	}
	d.object(h)
	switch kind {
	case kindLog:
		d.dumpLog(path, base)
	case kindIndex:
		d.dumpIndex(path, base)
	case kindTimeIndex:
		d.dumpTimeIndex(path, base)
	case kindTxnIndex:
		d.dumpTxnIndex(path, base)
	case kindSnapshot:
		d.dumpSnapshot(path)
	case kindEpochCheckpoint:
		d.dumpEpochCheckpoint(path)
	case kindPartitionMetadata:
		d.dumpPartitionMetadata(path)
	case kindOffsetCheckpoint:
		d.dumpOffsetCheckpoint(path)
	}
}

// maxSmallFile bounds what readSmallFile reads: segment.index.bytes is at
// most 2 GiB and defaults to 10 MiB; snapshots and checkpoints are smaller.
const maxSmallFile = 1 << 30

// readSmallFile reads a whole index, snapshot or checkpoint file.
func (d *dumper) readSmallFile(path string) ([]byte, bool) {
	st, err := os.Stat(path)
	if err == nil && st.Size() > maxSmallFile {
		d.fail(path, -1, "%d bytes: larger than the %d an index, snapshot or checkpoint can be here", st.Size(), maxSmallFile)
		return nil, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		d.fail(path, -1, "%v", unwrapPathError(err))
		return nil, false
	}
	return b, true
}

type epochEntry struct {
	Type        string `json:"type"`
	File        string `json:"file"`
	Epoch       int32  `json:"epoch"`
	StartOffset int64  `json:"start_offset"`
}

func (d *dumper) dumpEpochCheckpoint(path string) {
	if filepath.Base(path) != log.LeaderEpochCheckpointFile {
		// The log package reads it by its dir and fixed name.
		d.fail(path, -1, "a leader epoch checkpoint is read under its own name, %s", log.LeaderEpochCheckpointFile)
		return
	}
	entries, err := log.ReadLeaderEpochCheckpoint(log.OSFS{}, filepath.Dir(path))
	if err != nil {
		d.fail(path, -1, "%s", pathless(err, path))
		return
	}
	prev := log.EpochEntry{Epoch: -1, StartOffset: -1}
	for i, en := range entries {
		d.textf("epoch: %d startOffset: %d", en.Epoch, en.StartOffset)
		d.object(epochEntry{Type: "epoch", File: path, Epoch: en.Epoch, StartOffset: en.StartOffset})
		if i > 0 && (en.Epoch <= prev.Epoch || en.StartOffset < prev.StartOffset) {
			d.fail(path, -1, "entry %d (epoch %d at %d) does not follow (epoch %d at %d)", i, en.Epoch, en.StartOffset, prev.Epoch, prev.StartOffset)
		}
		prev = en
	}
}

type partitionMetadata struct {
	Type    string `json:"type"`
	File    string `json:"file"`
	Version int    `json:"version"`
	TopicID string `json:"topic_id"`
}

func (d *dumper) dumpPartitionMetadata(path string) {
	if filepath.Base(path) != log.PartitionMetadataFile {
		d.fail(path, -1, "partition metadata is read under its own name, %s", log.PartitionMetadataFile)
		return
	}
	id, ok, err := log.ReadPartitionMetadata(log.OSFS{}, filepath.Dir(path))
	if err != nil || !ok {
		d.fail(path, -1, "%s", pathless(firstErr(err, errors.New("missing")), path))
		return
	}
	d.textf("version: 0 topicId: %s", uuid.UUID(id).String())
	d.object(partitionMetadata{Type: "partition_metadata", File: path, Version: 0, TopicID: uuid.UUID(id).String()})
}

type checkpointEntry struct {
	Type      string `json:"type"`
	File      string `json:"file"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func (d *dumper) dumpOffsetCheckpoint(path string) {
	m, err := log.ReadOffsetCheckpoint(log.OSFS{}, path)
	if err != nil {
		d.fail(path, -1, "%s", pathless(err, path))
		return
	}
	tps := make([]log.TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	for _, tp := range tps {
		d.textf("topic: %s partition: %d offset: %d", tp.Topic, tp.Partition, m[tp])
		d.object(checkpointEntry{Type: "checkpoint_entry", File: path, Topic: tp.Topic, Partition: tp.Partition, Offset: m[tp]})
	}
}
