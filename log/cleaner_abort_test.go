package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ctDirtyLog writes n batches of overwritten keys and rolls.
func ctDirtyLog(t *testing.T, l *Log, clock *ltClock, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: []string{fmt.Sprint("k", i%10), fmt.Sprint("x", i)}}))
	}
	ctAppend(t, l)
}

// noLeftovers fails if a .cleaned or .swap file is in dir.
func noLeftovers(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), CleanedFileSuffix) || strings.HasSuffix(e.Name(), SwapFileSuffix) {
			t.Fatalf("%s left in %s", e.Name(), dir)
		}
	}
}

// Aborting a running cleaning stops it at its next read, leaves the log
// as it was (the cleaned file deleted) and pauses the partition until it
// is resumed; switching cleanup.policy to delete stops a running cleaning
// the same way, and back to compact makes the log eligible again.
func TestCleanerAbortPauseAndPolicySwitch(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := ctConfig()
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	ctDirtyLog(t, l, clock, 300)
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	c := lc.threads[0].cleaner
	check := c.checkDone
	var reads int
	var block func() // runs at the third read of the pass
	c.checkDone = func(l *Log) error {
		if reads++; reads == 3 && block != nil {
			block()
		}
		return check(l)
	}
	before := ctDescribe(t, l)

	// Abort and pause from another goroutine while the pass is at its
	// third read.
	var wg sync.WaitGroup
	block = func() {
		wg.Add(1)
		go func() { defer wg.Done(); lc.mgr.abortAndPauseCleaning(l.tp) }()
		for !lc.mgr.isAborted(l.tp) {
			time.Sleep(time.Millisecond)
		}
	}
	if !ctCleanOnce(t, lc) {
		t.Fatal("the aborted pass did not run")
	}
	wg.Wait()
	if got := ctDescribe(t, l); got != before {
		t.Fatal("an aborted cleaning changed the log")
	}
	noLeftovers(t, dir)
	if _, ok := lc.mgr.allCleanerCheckpoints()[l.tp]; ok {
		t.Fatal("an aborted cleaning was checkpointed")
	}
	reads, block = 0, nil
	if ctCleanOnce(t, lc) {
		t.Fatal("a paused partition was cleaned")
	}
	if err := lc.mgr.resumeCleaning(l.tp); err != nil {
		t.Fatal(err)
	}
	if err := lc.mgr.resumeCleaning(l.tp); err == nil {
		t.Fatal("resuming a partition that is not paused succeeded")
	}

	// cleanup.policy back to delete in the middle of a pass.
	block = func() {
		cfg.CleanupPolicy = []string{"delete"}
		l.SetConfig(cfg)
	}
	reads = 0
	ctCleanOnce(t, lc)
	if got := ctDescribe(t, l); got != before {
		t.Fatal("a cleaning went on after cleanup.policy became delete")
	}
	noLeftovers(t, dir)
	reads, block = 0, nil
	if ctCleanOnce(t, lc) {
		t.Fatal("a log with cleanup.policy=delete was cleaned")
	}
	if len(lc.mgr.uncleanable) != 0 {
		t.Fatalf("stopped cleanings marked partitions uncleanable: %v", lc.mgr.uncleanable)
	}
	cfg.CleanupPolicy = []string{"compact", "delete"}
	l.SetConfig(cfg)
	if !ctCleanOnce(t, lc) {
		t.Fatal("a log switched back to compact was not cleaned")
	}
	if got := ctDescribe(t, l); got == before {
		t.Fatal("cleaning changed nothing")
	}
}

// Deleting a log while the cleaner works on it (a Manager with running
// cleaner threads, throttled so the cleaning is slow) aborts the cleaning
// and drops the log's cleaner checkpoint; closing the Manager stops the
// cleaner first.
func TestCleanerDeleteLogWhileCleaning(t *testing.T) {
	clock := newLtClock()
	cc := ctCleanerConfig()
	cc.MaxIOBytesPerSecond = 200 << 10
	dirs := []string{t.TempDir()}
	m, err := NewManager(ManagerConfig{Dirs: dirs, Logger: ctLogger(), Now: clock.Now, Cleaner: cc})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := ctConfig()
	cfg.SegmentBytes = 256 << 10
	other, _ := m.GetOrCreateLog(TopicPartition{"other", 0}, [16]byte{2}, cfg)
	ctDirtyLog(t, other, clock, 20)
	l, _ := m.GetOrCreateLog(TopicPartition{"doomed", 0}, [16]byte{1}, cfg)
	for i := 0; i < 1500; i++ {
		ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: []string{fmt.Sprint("k", i%10)}, values: [][]byte{make([]byte, 500)}}))
	}
	ctAppend(t, l)
	m.Start()
	// The doomed log is the dirtiest; wait until it is being cleaned.
	for deadline := time.Now().Add(30 * time.Second); ; {
		m.cleaner.mgr.mu.Lock()
		st := m.cleaner.mgr.inProgress[l.tp]
		m.cleaner.mgr.mu.Unlock()
		if st != nil && st.state == cleaningInProgress {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cleaner never started on the log")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := m.DeleteLog(l.tp); err != nil {
		t.Fatal(err)
	}
	t.Logf("DeleteLog waited %v for the cleaning to stop", time.Since(start))
	if _, ok := m.CleanerCheckpoint(l.tp); ok {
		t.Fatal("the deleted log keeps a cleaner checkpoint")
	}
	b, _ := os.ReadFile(filepath.Join(dirs[0], CleanerOffsetCheckpointFile))
	if strings.Contains(string(b), "doomed") {
		t.Fatalf("cleaner-offset-checkpoint still names the deleted log:\n%s", b)
	}
	// The other log gets cleaned afterwards.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, ok := m.CleanerCheckpoint(other.tp); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other log was never cleaned")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dirs[0], CleanerOffsetCheckpointFile))
	if !strings.HasPrefix(string(b), "0\n1\nother 0 ") {
		t.Fatalf("cleaner-offset-checkpoint:\n%s", b)
	}
}

// A truncation (a follower's, Log.TruncateTo) in the middle of a pass
// makes the pass give up without marking the partition uncleanable; one
// below the cleaner checkpoint lowers it, so data written again there is
// cleaned (Kafka's LogManager.truncateTo does both).
func TestCleanerTruncation(t *testing.T) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _ := ltOpen(t, dir, ctConfig(), clock, false, nil)
	ctDirtyLog(t, l, clock, 300)
	lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
	c := lc.threads[0].cleaner
	check := c.checkDone
	reads := 0
	c.checkDone = func(l *Log) error {
		if reads++; reads == 5 {
			if _, err := l.TruncateTo(100); err != nil {
				t.Error(err)
			}
		}
		return check(l)
	}
	ctCleanOnce(t, lc)
	if len(lc.mgr.uncleanable) != 0 {
		t.Fatalf("a truncation made the partition uncleanable: %v", lc.mgr.uncleanable)
	}
	noLeftovers(t, dir)
	if l.LogEndOffset() != 100 {
		t.Fatalf("log end %d after truncating to 100", l.LogEndOffset())
	}
	c.checkDone = check
	ltCheckIndexes(t, l)

	// Clean, then truncate below the checkpoint and write again.
	ctAppend(t, l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned")
	}
	if cp := lc.mgr.allCleanerCheckpoints()[l.tp]; cp != 100 {
		t.Fatalf("checkpoint %d, want 100", cp)
	}
	if _, err := l.TruncateTo(90); err != nil {
		t.Fatal(err)
	}
	// Offsets 90-91 (below the old checkpoint) overwrite a key twice.
	ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: []string{"again", "again"}}))
	for i := 0; i < 30; i++ {
		ltAppend(t, l, ctBatch(t, ctBatchSpec{ts: clock.Now().UnixMilli(), keys: []string{fmt.Sprint("later", i)}}))
	}
	ctAppend(t, l)
	if !ctCleanOnce(t, lc) {
		t.Fatal("nothing cleaned after the truncation")
	}
	n := 0
	for _, r := range ctRead(t, l) {
		if r.key == "again" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d records of the key written below the old checkpoint, want 1", n)
	}
	ltCheckIndexes(t, l)
}
