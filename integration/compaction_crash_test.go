package integration

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kvNewest is the newest acknowledged write of a key: its sequence number
// (0 for a tombstone) and whether it deleted the key.
type kvNewest struct {
	seq  uint64
	tomb bool
}

// checkCompacted reads the topic and checks it against the acknowledged
// writes: offsets grow, each key's values appear in write order, and each
// key's last record is its newest acknowledged write (nothing lost,
// nothing older resurrected).
func checkCompacted(t *testing.T, ctx context.Context, seed string, model map[string]kvNewest) int {
	t.Helper()
	recs := readAll(t, ctx, seed, "kv")
	last := make(map[string]compactedRecord)
	seqs := make(map[string]uint64)
	for _, r := range recs {
		if r.Value != nil {
			s := binary.BigEndian.Uint64(r.Value)
			if s <= seqs[r.Key] {
				t.Fatalf("key %s: value %d at offset %d after value %d", r.Key, s, r.Offset, seqs[r.Key])
			}
			seqs[r.Key] = s
		}
		last[r.Key] = r
	}
	for k, want := range model {
		r, ok := last[k]
		switch {
		case !ok:
			t.Fatalf("key %s lost (newest write %+v)", k, want)
		case want.tomb && r.Value != nil:
			t.Fatalf("key %s: deleted, but reads %d at offset %d", k, binary.BigEndian.Uint64(r.Value), r.Offset)
		case !want.tomb && (r.Value == nil || binary.BigEndian.Uint64(r.Value) != want.seq):
			t.Fatalf("key %s: newest write %d, reads %v at offset %d", k, want.seq, r.Value, r.Offset)
		}
	}
	if len(last) != len(model) {
		t.Fatalf("%d keys read, %d written", len(last), len(model))
	}
	return len(recs)
}

// `moldau serve` is killed with SIGKILL at random moments of cleaning
// passes (twenty times; each time after new overwrites, once a .cleaned
// file shows the pass started, plus a random delay) and restarted on the
// same data: every time, the compacted topic holds the newest acknowledged
// value of every key, nothing older after it, and start-up finished any
// swap the kill interrupted. At the end the cleaner compacts it down to
// one record per key.
//
// The topic holds many live keys, so each pass recopies tens of MiB and,
// throttled by log.cleaner.io.max.bytes.per.second, lasts about a second:
// long enough for a random kill to land anywhere in it.
func TestCompactionKill9(t *testing.T) {
	runs, keys := 20, 20000
	if testing.Short() {
		runs, keys = 5, 5000
	}
	dir := t.TempDir()
	port := freePort(t)
	overrides := []string{"log.cleaner.backoff.ms=20", "log.cleaner.io.max.bytes.per.second=30000000"}
	ctx := ctxTimeout(t, 10*time.Minute)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	w := &kvWriter{model: make(map[string]kvNewest)}
	partDir := filepath.Join(dir, "kv-0")
	var midSwap, midClean, completed int
	for run := 0; run < runs; run++ {
		p := startProcess(t, dir, port, overrides...)
		if run == 0 {
			cfg := map[string]*string{
				"cleanup.policy":            kadm.StringPtr("compact"),
				"segment.bytes":             kadm.StringPtr("1048576"),
				"segment.ms":                kadm.StringPtr("200"),
				"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
			}
			if _, err := newAdmin(t, p.Addr).CreateTopic(ctx, 1, 1, cfg, "kv"); err != nil {
				t.Fatal(err)
			}
		} else {
			checkCompacted(t, ctx, p.Addr, w.model)
		}
		// New overwrites, all acknowledged, ending with a record of a
		// key of its own (so a read knows where the log ends).
		w.start(t, p.Addr)
		if run == 0 {
			for i := 0; i < keys; i++ {
				w.write(ctx, fmt.Sprintf("key-%05d", i), false)
			}
		}
		for i := 0; i < 1500; i++ {
			w.write(ctx, fmt.Sprintf("key-%05d", rng.IntN(keys)), rng.IntN(20) == 0)
		}
		w.write(ctx, fmt.Sprintf("end-%02d", run), false)
		w.finish(t)
		// Kill once a cleaning pass has begun: on odd runs at a random
		// moment of it, on even runs as soon as a .swap file shows (the
		// swap is a few milliseconds of a pass).
		deadline := time.Now().Add(5 * time.Second)
		for !hasFileWithSuffix(partDir, ".cleaned", ".swap") && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if run%2 == 1 {
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		} else {
			for !hasFileWithSuffix(partDir, ".swap") && time.Now().Before(deadline) {
			}
		}
		p.kill(t)
		switch {
		case hasFileWithSuffix(partDir, ".swap"):
			midSwap++
		case hasFileWithSuffix(partDir, ".cleaned"):
			midClean++
		}
		completed += strings.Count(p.Out.String(), "completing the swap of a cleaned segment")
	}
	p := startProcess(t, dir, port, overrides...)
	checkCompacted(t, ctx, p.Addr, w.model)
	completed += strings.Count(p.Out.String(), "completing the swap of a cleaned segment")
	// The cleaner catches up: one record per key (fillers roll the last
	// segment, so everything else becomes cleanable).
	filler := 0
	eventually(t, 2*time.Minute, func() error {
		w.start(t, p.Addr)
		w.write(ctx, fmt.Sprintf("filler-%d", filler), false)
		w.finish(t)
		filler++
		if n := checkCompacted(t, ctx, p.Addr, w.model); n != len(w.model) {
			return fmt.Errorf("%d records for %d keys", n, len(w.model))
		}
		return nil
	})
	p.stop(t)
	t.Logf("%d kills: %d with a .swap on disk, %d more with a .cleaned file; start-up completed %d swaps", runs, midSwap, midClean, completed)
	if midSwap+midClean == 0 {
		t.Fatalf("no kill landed in a cleaning pass\n%s", p.Out.String())
	}
}

// kvWriter produces numbered values (the first 8 bytes of a 1000-byte
// incompressible value) and tombstones, and keeps the newest acknowledged
// write of each key.
type kvWriter struct {
	model map[string]kvNewest
	seq   uint64
	cl    *kgo.Client
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
}

func (w *kvWriter) start(t *testing.T, addr string) {
	w.cl = newClient(t, addr, kgo.DefaultProduceTopic("kv"), kgo.ProducerLinger(2*time.Millisecond))
}

func (w *kvWriter) write(ctx context.Context, key string, tomb bool) {
	w.seq++
	r := &kgo.Record{Key: []byte(key)}
	if !tomb {
		r.Value = make([]byte, 1000)
		crand.Read(r.Value) // incompressible: the segments fill
		binary.BigEndian.PutUint64(r.Value, w.seq)
	}
	w.wg.Add(1)
	s := w.seq
	w.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
		defer w.wg.Done()
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.err = err
			return
		}
		if cur := w.model[key]; s > cur.seq || cur.seq == 0 {
			w.model[key] = kvNewest{seq: s, tomb: tomb}
		}
	})
}

// finish waits for every write to be acknowledged.
func (w *kvWriter) finish(t *testing.T) {
	w.wg.Wait()
	w.cl.Close()
	if w.err != nil {
		t.Fatal(w.err)
	}
}

// hasFileWithSuffix reports whether dir holds a file ending in one of the
// suffixes.
func hasFileWithSuffix(dir string, suffixes ...string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		for _, s := range suffixes {
			if strings.HasSuffix(e.Name(), s) {
				return true
			}
		}
	}
	return false
}
