package share

import "github.com/moldau/moldau/coordinator/runtime"

// readShard runs fn on partition p's shard (tests only).
func readShard[T any](s *Service, p int32, fn func(*Shard) T, done func(T, error)) {
	runtime.Read(s.rt, "test-read", p, func(sh *Shard) (T, error) { return fn(sh), nil }, done)
}

// runColdSnapshots runs the cold-partition snapshot job once on partition
// p, as its timer would, and returns how many records it wrote.
func runColdSnapshots(s *Service, p int32, done func(int, error)) {
	runtime.Write(s.rt, "test-cold-snapshots", p, func(sh *Shard) (runtime.Result[int], error) {
		recs := sh.coldSnapshots()
		return runtime.Result[int]{Records: recs, Response: len(recs)}, nil
	}, done)
}
