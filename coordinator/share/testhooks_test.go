package share

import "github.com/moldau/moldau/coordinator/runtime"

// readShard runs fn on partition p's shard (tests only).
func readShard[T any](s *Service, p int32, fn func(*Shard) T, done func(T, error)) {
	runtime.Read(s.rt, "test-read", p, func(sh *Shard) (T, error) { return fn(sh), nil }, done)
}
