package log

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moldau/moldau/broker/uuid"
)

// Checkpoint file names at the root of each log dir, and per partition.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	ReplicationCheckpointFile    = "replication-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	CleanShutdownFile            = ".kafka_cleanshutdown"
	LeaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	PartitionMetadataFile        = "partition.metadata"
)

// WriteOffsetCheckpoint writes a per-partition offset checkpoint in
// Kafka's format (OffsetCheckpointFile):
//
//	0
//	<count>
//	<topic> <partition> <offset>
//	...
//
// atomically (temporary file, fsync, rename, fsync of the dir).
func WriteOffsetCheckpoint(fsys FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return WriteFileAtomic(fsys, path, b.Bytes())
}

// ReadOffsetCheckpoint reads a file written by WriteOffsetCheckpoint. A
// missing file is an empty map and no error.
func ReadOffsetCheckpoint(fsys FS, path string) (map[TopicPartition]int64, error) {
	b, err := ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	lines, err := checkpointLines(b, path)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("checkpoint %s line %d: %q is not \"topic partition offset\"", path, i+3, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("checkpoint %s line %d: malformed %q", path, i+3, l)
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return out, nil
}

// checkpointLines checks the version (0) and count lines of a checkpoint
// and returns the entry lines.
func checkpointLines(b []byte, path string) ([]string, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("checkpoint %s: missing version or count line", path)
	}
	if strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("checkpoint %s: unsupported version %q", path, lines[0])
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("checkpoint %s: count line %q does not match %d entries", path, lines[1], len(lines)-2)
	}
	return lines[2:], nil
}

// EpochEntry is a leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// leaderEpochCache is a partition's leader-epoch-checkpoint (Kafka's
// LeaderEpochFileCache), kept simple: entries are added when a batch
// arrives with a new epoch and the file rewritten. Guarded by Log.mu.
type leaderEpochCache struct {
	fsys    FS
	path    string
	entries []EpochEntry
}

func loadLeaderEpochCache(fsys FS, dir string) (*leaderEpochCache, error) {
	c := &leaderEpochCache{fsys: fsys, path: filepath.Join(dir, LeaderEpochCheckpointFile)}
	b, err := ReadFile(fsys, c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	c.entries, err = parseLeaderEpochCheckpoint(b, c.path)
	return c, err
}

// ParseLeaderEpochCheckpoint reads a leader-epoch-checkpoint's content
// (Kafka's LeaderEpochCheckpointFile format: version 0, a count, then
// "epoch startOffset" lines), as a remote segment's LEADER_EPOCH index
// holds it.
func ParseLeaderEpochCheckpoint(b []byte) ([]EpochEntry, error) {
	return parseLeaderEpochCheckpoint(b, "leader-epoch checkpoint")
}

func parseLeaderEpochCheckpoint(b []byte, path string) ([]EpochEntry, error) {
	lines, err := checkpointLines(b, path)
	if err != nil {
		return nil, err
	}
	var entries []EpochEntry
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		entries = append(entries, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return entries, nil
}

func (c *leaderEpochCache) write() error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return WriteFileAtomic(c.fsys, c.path, b.Bytes())
}

func (c *leaderEpochCache) latestEpoch() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// assign records that epoch starts at offset.
func (c *leaderEpochCache) assign(epoch int32, offset int64) error {
	if epoch <= c.latestEpoch() {
		return nil
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: offset})
	return c.write()
}

// epochForOffset is the epoch in which offset was written, or -1.
func (c *leaderEpochCache) epochForOffset(offset int64) int32 {
	ep := int32(-1)
	for _, e := range c.entries {
		if e.StartOffset > offset {
			break
		}
		ep = e.Epoch
	}
	return ep
}

// truncateFromEnd drops epochs starting at or after endOffset (the log was
// truncated there).
func (c *leaderEpochCache) truncateFromEnd(endOffset int64) error {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.write()
}

// truncateFromStart drops epochs wholly below startOffset and moves the
// first remaining one's start up to it.
func (c *leaderEpochCache) truncateFromStart(startOffset int64) error {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= startOffset {
		i++
	}
	if i == 0 && (len(c.entries) == 0 || c.entries[0].StartOffset >= startOffset) {
		return nil
	}
	c.entries = append([]EpochEntry(nil), c.entries[i:]...)
	if c.entries[0].StartOffset < startOffset {
		c.entries[0].StartOffset = startOffset
	}
	return c.write()
}

func writePartitionMetadata(fsys FS, dir string, id [16]byte) error {
	return WriteFileAtomic(fsys, filepath.Join(dir, PartitionMetadataFile), partitionMetadata(id))
}

// writePartitionMetadataNoSync writes partition.metadata of a new log
// without fsync (see logParams.isNew): a crash may lose it, and
// GetOrCreateLog writes it again.
func writePartitionMetadataNoSync(fsys FS, dir string, id [16]byte) error {
	f, err := fsys.OpenFile(filepath.Join(dir, PartitionMetadataFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(partitionMetadata(id))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func partitionMetadata(id [16]byte) []byte {
	return fmt.Appendf(nil, "version: 0\ntopic_id: %s\n", uuid.UUID(id).String())
}

// readPartitionMetadata reads partition.metadata; ok is false if missing.
func readPartitionMetadata(fsys FS, dir string) (id [16]byte, ok bool, err error) {
	path := filepath.Join(dir, PartitionMetadataFile)
	b, err := ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	var version string
	var idStr string
	for _, l := range strings.Split(string(b), "\n") {
		k, v, found := strings.Cut(l, ":")
		if !found {
			continue
		}
		switch strings.TrimSpace(k) {
		case "version":
			version = strings.TrimSpace(v)
		case "topic_id":
			idStr = strings.TrimSpace(v)
		}
	}
	if version != "0" {
		return id, false, fmt.Errorf("%s: unsupported version %q", path, version)
	}
	var u uuid.UUID
	u, err = uuid.Parse(idStr)
	id = u
	if err != nil {
		return id, false, fmt.Errorf("%s: %w", path, err)
	}
	return id, true, nil
}

// cleanShutdownMarker is the content of .kafka_cleanshutdown, as Kafka 4's
// CleanShutdownFileHandler writes it.
type cleanShutdownMarker struct {
	Version     int    `json:"version"`
	BrokerEpoch *int64 `json:"brokerEpoch"`
}

func cleanShutdownContent(brokerEpoch int64) []byte {
	b, _ := json.Marshal(cleanShutdownMarker{Version: 0, BrokerEpoch: &brokerEpoch})
	return b
}

// readCleanShutdownEpoch is the broker epoch in a clean shutdown marker,
// -1 when it has none (an empty marker, as Kafka 3 and older Moldau wrote,
// or one that does not parse).
func readCleanShutdownEpoch(fsys FS, path string) int64 {
	if st, err := fsys.Stat(path); err != nil || st.Size() > 4096 {
		return -1
	}
	b, err := ReadFile(fsys, path)
	if err != nil {
		return -1
	}
	var m cleanShutdownMarker
	if json.Unmarshal(b, &m) != nil || m.BrokerEpoch == nil {
		return -1
	}
	return *m.BrokerEpoch
}
