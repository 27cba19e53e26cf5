package log

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A tiered log deletes by local retention only what was copied, keeps its
// log start below the local one across a restart, answers reads between
// them with OFFSET_MOVED_TO_TIERED_STORAGE, and moves the log start only
// by remote retention or DeleteRecords.
func TestTieredLogLocalRetention(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	cfg := ltConfig()
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	cfg.LocalRetentionBytes = 20 << 10
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	for i := 0; i < 100; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 400, ts: clock.Now().UnixMilli()}))
	}
	l.UpdateHighWatermark(l.LogEndOffset())

	// Nothing copied: nothing goes.
	if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
		t.Fatalf("deleted %d (%v) before any copy", n, err)
	}
	cands := l.CopyableSegments()
	if len(cands) != l.NumSegments()-1 {
		t.Fatalf("%d copyable of %d segments", len(cands), l.NumSegments())
	}
	for i, c := range cands {
		if c.Size == 0 || c.NextOffset <= c.BaseOffset || c.ProducerSnapshot != "" && !tieredFileExists(c.ProducerSnapshot) {
			t.Fatalf("candidate %d: %+v", i, c)
		}
		for _, p := range []string{c.LogPath, c.OffsetIndex, c.TimeIndex} {
			if !tieredFileExists(p) {
				t.Fatalf("candidate %d: %s missing", i, p)
			}
		}
	}
	// Copy the first two: only those may go.
	l.UpdateHighestOffsetInRemoteStorage(cands[1].NextOffset - 1)
	if got := l.CopyableSegments(); len(got) != len(cands)-2 || got[0].BaseOffset != cands[2].BaseOffset {
		t.Fatalf("copyable after two copied: %d", len(got))
	}
	n, err := l.DeleteOldSegments()
	if err != nil || n != 2 {
		t.Fatalf("deleted %d, %v; want the 2 copied", n, err)
	}
	if l.LogStartOffset() != 0 || l.LocalLogStartOffset() != cands[2].BaseOffset {
		t.Fatalf("log start %d, local %d; want 0, %d", l.LogStartOffset(), l.LocalLogStartOffset(), cands[2].BaseOffset)
	}
	if _, err := l.Read(5, 1000, l.HighWatermark(), true); !errors.Is(err, kerr.OffsetMovedToTieredStorage) {
		t.Fatalf("read below the local start: %v", err)
	}
	if to, ok, err := l.FetchOffsetByTimestamp(EarliestLocalTimestamp); err != nil || !ok || to.Offset != cands[2].BaseOffset {
		t.Fatalf("earliest local %+v %v %v", to, ok, err)
	}
	if to, _, _ := l.FetchOffsetByTimestamp(EarliestTimestamp); to.Offset != 0 {
		t.Fatalf("earliest %+v", to)
	}
	if l.EpochForOffset(0) != 0 {
		t.Fatalf("epoch of offset 0 forgotten: %d", l.EpochForOffset(0))
	}

	// The log start survives a restart through the checkpoint the
	// manager writes.
	hw, start := l.HighWatermark(), l.LogStartOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, _, err := loadLog(logParams{
		dir: dir, tp: TopicPartition{"t", 0}, cfg: cfg, fsys: OSFS{}, logger: ltLogger(t), now: clock.Now,
		hadCleanShutdown: true, logStartOffset: start, highWatermark: hw, recoveryPoint: hw,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() != 0 || l2.LocalLogStartOffset() != cands[2].BaseOffset {
		t.Fatalf("after restart: log start %d, local %d", l2.LogStartOffset(), l2.LocalLogStartOffset())
	}

	// Remote retention moves the log start, still below the local start.
	if got, err := l2.UpdateLogStartOffsetFromRemoteTier(cands[1].BaseOffset); err != nil || got != cands[1].BaseOffset {
		t.Fatalf("remote log start %d, %v", got, err)
	}
	if _, err := l2.Read(cands[0].BaseOffset, 1000, l2.HighWatermark(), true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	// DeleteRecords past the local start moves both.
	target := cands[3].BaseOffset + 1
	if got, err := l2.DeleteRecordsBefore(target); err != nil || got != target {
		t.Fatalf("delete records: %d, %v", got, err)
	}
	if l2.LogStartOffset() != target || l2.LocalLogStartOffset() != target {
		t.Fatalf("after delete records: log start %d, local %d", l2.LogStartOffset(), l2.LocalLogStartOffset())
	}
}

// A log that is not tiered keeps today's rules: the local start is the
// log start and retention needs no copy.
func TestUntieredLogHasOneStart(t *testing.T) {
	clock := newLtClock()
	cfg := ltConfig()
	cfg.RetentionMs, cfg.RetentionBytes = -1, 20<<10
	cfg.LocalRetentionBytes = 0 // ignored: not tiered
	l, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
	defer l.Close()
	for i := 0; i < 100; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 400, ts: clock.Now().UnixMilli()}))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if n, err := l.DeleteOldSegments(); err != nil || n == 0 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if l.LogStartOffset() != l.LocalLogStartOffset() || l.CopyableSegments() != nil {
		t.Fatalf("log start %d, local %d", l.LogStartOffset(), l.LocalLogStartOffset())
	}
	if _, err := l.Read(0, 1000, l.HighWatermark(), true); !errors.Is(err, kerr.OffsetOutOfRange) || errors.Is(err, kerr.OffsetMovedToTieredStorage) {
		t.Fatalf("read below log start: %v", err)
	}
}

func tieredFileExists(p string) bool {
	_, err := os.Stat(filepath.Clean(p))
	return err == nil
}

// A tiered log loaded before its config said tiered (a broker loads its
// logs before it has the topics' configs) gets its start below the local
// one back when SetConfig says tiered; with no checkpoint, from what the
// remote metadata says (RestoreLogStartFromRemote).
func TestTieredLogStartAfterRestart(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	cfg := ltConfig()
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	cfg.LocalRetentionBytes = 20 << 10
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	for i := 0; i < 100; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 400, ts: clock.Now().UnixMilli()}))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	cands := l.CopyableSegments()
	l.UpdateHighestOffsetInRemoteStorage(cands[1].NextOffset - 1)
	if _, err := l.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	hw, local := l.HighWatermark(), l.LocalLogStartOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	untiered := cfg
	untiered.RemoteStorageEnable = false
	for _, ckpt := range []int64{0, -1} {
		l, _, err := loadLog(logParams{
			dir: dir, tp: TopicPartition{"t", 0}, cfg: untiered, fsys: OSFS{}, logger: ltLogger(t), now: clock.Now,
			hadCleanShutdown: true, logStartOffset: ckpt, highWatermark: hw, recoveryPoint: hw,
		})
		if err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != local {
			t.Fatalf("untiered: log start %d, want the local %d", l.LogStartOffset(), local)
		}
		l.SetConfig(cfg)
		want := int64(0)
		if ckpt < 0 {
			want = local
		}
		if l.LogStartOffset() != want {
			t.Fatalf("checkpoint %d, tiered: log start %d, want %d", ckpt, l.LogStartOffset(), want)
		}
		l.RestoreLogStartFromRemote(5)
		if ckpt < 0 {
			want = 5
		}
		if l.LogStartOffset() != want {
			t.Fatalf("checkpoint %d, restored from remote: log start %d, want %d", ckpt, l.LogStartOffset(), want)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A tiered log restarted without its log-start-offset-checkpoint entry (a
// kill -9 within log.flush.start.offset.checkpoint.interval.ms of local
// retention deleting segments), or loaded before its config said tiered,
// keeps the leader epochs that ended below its local start: Kafka's
// LogLoader truncates the cache only to the checkpointed log start, 0
// when there is none. Once the log start is known again (from the remote
// metadata, or the checkpoint), the cache is cut there.
func TestTieredLogKeepsEpochsBelowLocalStartAfterRestart(t *testing.T) {
	cfg := ltTieredConfig()
	untiered := cfg
	untiered.RemoteStorageEnable = false
	for _, tc := range []struct {
		name       string
		ckpt       int64 // the log-start-offset-checkpoint entry, -1: none
		loadConfig Config
	}{
		{"no checkpoint, config known at load", -1, cfg},
		{"no checkpoint, loaded before the config", -1, untiered},
		{"checkpoint, loaded before the config", 0, untiered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, want, hw, local := ltTieredEpochLog(t, cfg)
			if len(want) != 3 || want[1].StartOffset != 80 || want[2].StartOffset != 160 || local <= want[2].StartOffset {
				t.Fatalf("epochs %v, local start %d: want epochs 1 and 2 to end below the local start", want, local)
			}
			l := ltReload(t, dir, tc.loadConfig, tc.ckpt, hw)
			defer l.Close()
			l.SetConfig(cfg)
			if got := l.RestoreLogStartFromRemote(0); got != 0 {
				t.Fatalf("log start %d after the restore, want 0", got)
			}
			if got := l.LeaderEpochEntries(); !slices.Equal(got, want) {
				t.Fatalf("epochs after restart %v, want %v", got, want)
			}
			for epoch, end := range map[int32]int64{1: 80, 2: 160} {
				if e, o := l.EndOffsetForEpoch(epoch); e != epoch || o != end {
					t.Fatalf("OffsetForLeaderEpoch(%d) = %d, %d; want %d, %d", epoch, e, o, epoch, end)
				}
			}
			// Remote retention moves the log start past epoch 1: the
			// cache follows it.
			if _, err := l.UpdateLogStartOffsetFromRemoteTier(100); err != nil {
				t.Fatal(err)
			}
			if got := l.LeaderEpochEntries(); got[0] != (EpochEntry{Epoch: 2, StartOffset: 100}) {
				t.Fatalf("epochs after the log start moved to 100: %v", got)
			}
		})
	}
	// A log that turns out not tiered starts at its first local offset,
	// and its epochs with it.
	dir, _, hw, local := ltTieredEpochLog(t, cfg)
	l := ltReload(t, dir, untiered, -1, hw)
	defer l.Close()
	l.SetConfig(untiered)
	if got := l.LeaderEpochEntries(); len(got) != 1 || got[0] != (EpochEntry{Epoch: 3, StartOffset: local}) {
		t.Fatalf("not tiered: epochs %v, want epoch 3 from the local start %d", got, local)
	}
}

// A tiered log whose remote metadata holds nothing below its local start
// (remote retention took it all) starts at its local start, and its
// leader epochs below it go, as Kafka's findLogStartOffset falls back to
// the local log start and moves the log start there.
func TestTieredLogRestoreLogStartCutsEpochs(t *testing.T) {
	cfg := ltTieredConfig()
	dir, _, hw, local := ltTieredEpochLog(t, cfg)
	l := ltReload(t, dir, cfg, -1, hw)
	defer l.Close()
	if got := l.RestoreLogStartFromRemote(local); got != local {
		t.Fatalf("log start %d, want the local %d", got, local)
	}
	if got := l.LeaderEpochEntries(); len(got) != 1 || got[0] != (EpochEntry{Epoch: 3, StartOffset: local}) {
		t.Fatalf("epochs %v, want epoch 3 from the local start %d", got, local)
	}
}

// ltTieredConfig is a tiered log's config with 20 KiB of local retention
// and no total retention.
func ltTieredConfig() Config {
	cfg := ltConfig()
	cfg.RemoteStorageEnable = true
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	cfg.LocalRetentionBytes = 20 << 10
	return cfg
}

// ltTieredEpochLog writes a closed tiered log of 240 records in leader
// epochs 1 (offsets 0-79), 2 (80-159) and 3, all but the last closed
// segment copied and deleted by local retention, and returns its dir,
// its epochs, high watermark and local log start.
func ltTieredEpochLog(t *testing.T, cfg Config) (dir string, epochs []EpochEntry, hw, local int64) {
	t.Helper()
	clock := newLtClock()
	dir = t.TempDir()
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	for i := 0; i < 120; i++ {
		if _, err := l.Append(ltBatch(t, ltBatchSpec{n: 2, valueSize: 400, ts: clock.Now().UnixMilli()}), int32(1+i/40)); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	cands := l.CopyableSegments()
	l.UpdateHighestOffsetInRemoteStorage(cands[len(cands)-2].NextOffset - 1)
	if _, err := l.DeleteOldSegments(); err != nil {
		t.Fatal(err)
	}
	epochs, hw, local = l.LeaderEpochEntries(), l.HighWatermark(), l.LocalLogStartOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, epochs, hw, local
}

// ltReload loads the log in dir as after a kill: with cfg, the
// log-start-offset-checkpoint entry ckpt (-1: none) and high watermark hw.
func ltReload(t *testing.T, dir string, cfg Config, ckpt, hw int64) *Log {
	t.Helper()
	l, _, err := loadLog(logParams{
		dir: dir, tp: TopicPartition{"t", 0}, cfg: cfg, fsys: OSFS{}, logger: ltLogger(t), now: newLtClock().Now,
		logStartOffset: ckpt, highWatermark: hw, recoveryPoint: 0,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}
