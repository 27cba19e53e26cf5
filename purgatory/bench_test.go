package purgatory

import (
	"sync/atomic"
	"testing"
	"time"
)

// benchOp is a minimal DelayedOperation.
type benchOp struct {
	Operation
	ready atomic.Bool
}

func newBenchOp(timeout time.Duration) *benchOp {
	op := &benchOp{}
	op.Init(op, timeout)
	return op
}

func (o *benchOp) TryComplete() bool {
	if o.ready.Load() {
		return o.ForceComplete()
	}
	return false
}
func (o *benchOp) OnComplete()   {}
func (o *benchOp) OnExpiration() {}

// Watch a not-ready operation on one of 1000 partitions (tries twice, watches, adds to the
// timer); the operations complete later in bulk, outside the timed loop.
func BenchmarkTryCompleteElseWatch(b *testing.B) {
	b.Run("watch", func(b *testing.B) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		keys := make([][]tp, 1000)
		for i := range keys {
			keys[i] = []tp{{"orders", int32(i)}}
		}
		ops := make([]*benchOp, 0, b.N)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			op := newBenchOp(time.Hour)
			p.TryCompleteElseWatch(op, keys[i%len(keys)])
			ops = append(ops, op)
			i++
		}
		b.StopTimer()
		for _, op := range ops {
			op.ForceComplete()
		}
	})
	b.Run("immediate", func(b *testing.B) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		keys := []tp{{"orders", 0}}
		b.ReportAllocs()
		for b.Loop() {
			op := newBenchOp(time.Hour)
			op.ready.Store(true)
			p.TryCompleteElseWatch(op, keys)
		}
	})
	b.Run("watch-parallel", func(b *testing.B) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		var n atomic.Int32
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []tp{{"orders", n.Add(1)}}
			for pb.Next() {
				op := newBenchOp(time.Hour)
				p.TryCompleteElseWatch(op, key)
				op.ready.Store(true)
				p.CheckAndComplete(key[0])
			}
		})
	})
}

func BenchmarkCheckAndComplete(b *testing.B) {
	// One watched operation per call, which the call completes (an append satisfying a fetch).
	b.Run("complete-one", func(b *testing.B) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		key := tp{"orders", 0}
		b.ReportAllocs()
		for b.Loop() {
			op := newBenchOp(time.Hour)
			p.TryCompleteElseWatch(op, []tp{key})
			op.ready.Store(true)
			p.CheckAndComplete(key)
		}
	})
	// Ten operations watched and none ready: the common case of an append that does not yet
	// satisfy waiting fetches.
	b.Run("none-ready-10", func(b *testing.B) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		key := tp{"orders", 0}
		for range 10 {
			p.TryCompleteElseWatch(newBenchOp(time.Hour), []tp{key})
		}
		b.ReportAllocs()
		for b.Loop() {
			p.CheckAndComplete(key)
		}
	})
	b.Run("unwatched", func(b *testing.B) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		key := tp{"orders", 0}
		b.ReportAllocs()
		for b.Loop() {
			p.CheckAndComplete(key)
		}
	})
	b.Run("none-ready-10-parallel", func(b *testing.B) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		for i := range 64 {
			for range 10 {
				p.TryCompleteElseWatch(newBenchOp(time.Hour), []tp{{"orders", int32(i)}})
			}
		}
		var n atomic.Int32
		b.RunParallel(func(pb *testing.PB) {
			key := tp{"orders", n.Add(1) % 64}
			for pb.Next() {
				p.CheckAndComplete(key)
			}
		})
	})
}

func BenchmarkTimerAddCancel(b *testing.B) {
	st := NewSystemTimer(TimerOptions{})
	defer st.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		task := NewTimerTask(time.Duration(1+i%30_000)*time.Millisecond, func() {})
		st.Add(task)
		task.Cancel()
		i++
	}
}

func BenchmarkTimerAddCancelParallel(b *testing.B) {
	st := NewSystemTimer(TimerOptions{})
	defer st.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			task := NewTimerTask(time.Duration(1+i%30_000)*time.Millisecond, func() {})
			st.Add(task)
			task.Cancel()
			i++
		}
	})
}
