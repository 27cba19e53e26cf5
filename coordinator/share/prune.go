package share

import (
	"time"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The prune job (Kafka's ShareCoordinatorService.setupRecordPruning):
// __share_group_state is not compacted (compaction would keep only a key's
// last ShareUpdate), so every Config.PruneInterval each partition led here
// has its records before the least offset of its keys' latest snapshots
// deleted (Options.DeleteRecords, Kafka's DeleteRecords on the partition).
// The offset is taken by a read on the shard, which answers only once
// every record before it is committed: the snapshots it names are in the
// log for good before anything below them goes.

// pruneWait bounds how long the job waits for one shard's answer.
const pruneWait = 30 * time.Second

// prune runs one round of the job, on the job's goroutine; lastPruned is
// the job's own memory of what it deleted.
func (s *Service) prune(lastPruned map[int32]int64, stopping <-chan struct{}) {
	for _, p := range s.rt.Partitions() {
		type answer struct {
			offset int64
			ok     bool
		}
		ch := make(chan answer, 1)
		runtime.Read(s.rt, "write-state-record-prune", p, func(sh *Shard) (answer, error) {
			o, ok := sh.lastRedundantOffset()
			return answer{o, ok}, nil
		}, func(a answer, err error) { ch <- answer{a.offset, a.ok && err == nil} })
		var a answer
		select {
		case a = <-ch:
		case <-stopping:
			return
		case <-time.After(pruneWait):
			s.log.Warn("the share coordinator's prune job got no answer from a partition", "partition", p)
			continue
		}
		if !a.ok || a.offset <= lastPruned[p] {
			continue
		}
		if err := s.opts.DeleteRecords(p, a.offset); err != nil {
			s.log.Warn("pruning a partition of the share coordinator's topic failed", "partition", p, "before", a.offset, "err", err)
			continue
		}
		s.log.Debug("pruned a partition of the share coordinator's topic", "partition", p, "before", a.offset)
		lastPruned[p] = a.offset
	}
}

// startPruning starts the job unless it has nothing to delete through or
// its interval is 0.
func (s *Service) startPruning() {
	if s.opts.DeleteRecords == nil || s.cfg.PruneInterval <= 0 {
		return
	}
	s.routines.Go(func(done <-chan struct{}) {
		lastPruned := map[int32]int64{}
		t := time.NewTicker(s.cfg.PruneInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.prune(lastPruned, done)
			}
		}
	})
}
