package log

// MemoryAccount is a memory budget the log reports to (the broker's
// request memory pool, broker/memory.Pool): a batch decompressed for
// validation is taken from it while it is validated and returned after,
// so that produce requests with compressed batches count what they
// really hold. Take never waits (validation runs under the partition's
// lock, and waiting there could deadlock against requests queued for
// the same memory); it makes new request frames wait instead.
type MemoryAccount interface {
	Take(n int64)
	Return(n int64)
}
