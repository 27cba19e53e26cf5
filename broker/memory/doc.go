// Package memory is the broker's memory budget: Pool, a budget of bytes
// that request frames reserve before they are read (Kafka's MemoryPool
// and SimpleMemoryPool, sized by queued.max.request.bytes), and the
// figures the budget is derived from (the Go memory limit, the cgroup
// limit, the machine's memory); and GCFloor, a floor under the garbage
// collector's heap goal while the live heap is small.
//
// # Pool
//
// A Pool counts bytes; it does not allocate. Reserve waits in line (FIFO)
// until the bytes fit, TryReserve does not wait, and Release gives them
// back; Take never waits and may drive the pool below zero (for memory
// that exists already, such as a response or a decompressed batch, so
// that taking it can never deadlock against the reservations waiting for
// it), and Return gives its bytes back. Giving back grants the waiters at
// the head of the line that now fit.
//
// Where Kafka differs: Kafka's SocketServer pool is non-strict (a buffer
// is allocated while any byte is left, so the pool may overshoot by one
// request) and queued.max.request.bytes must be at least
// socket.request.max.bytes. Ours is strict (a reservation waits until it
// fits), and a reservation larger than the whole pool is granted when no
// other reservation is held, alone, which lets the derived default be
// smaller than socket.request.max.bytes on a small machine.
//
// # Budget
//
// Budget is GOMEMLIMIT when it is set (runtime/debug.SetMemoryLimit), else
// the cgroup limit (CgroupLimit: cgroup v2 memory.max or v1
// memory.limit_in_bytes, the smallest along the process's cgroup path),
// else the machine's memory (MemTotal). DefaultQueuedMaxRequestBytes is a
// quarter of it, at least 16 MiB.
//
// # GC floor
//
// GCFloor sets GOGC after every collection so that the next heap goal is
// at least its floor (see gc.go). GOGC is process-wide: GCFloor is for the
// process's owner (moldau serve), not for a Broker, several of which may
// share a test process.
//
// # Thread-safety
//
// A Pool is safe for concurrent use. Nothing here keeps global state,
// except that a running GCFloor sets the process's GOGC.
package memory
