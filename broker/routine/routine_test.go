package routine

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestGroupStopsAndWaits(t *testing.T) {
	var g Group
	var ran atomic.Int32
	for range 10 {
		if !g.Go(func(done <-chan struct{}) {
			<-done
			ran.Add(1)
		}) {
			t.Fatal("Go refused before Stop")
		}
	}
	ticks := make(chan struct{}, 1)
	g.Every(time.Millisecond, func() {
		select {
		case ticks <- struct{}{}:
		default:
		}
	})
	<-ticks
	g.StopAndWait()
	if ran.Load() != 10 {
		t.Fatalf("%d goroutines returned before StopAndWait, want 10", ran.Load())
	}
	if g.Go(func(<-chan struct{}) {}) {
		t.Fatal("Go accepted after Stop")
	}
	g.StopAndWait() // idempotent
}

func TestGroupZeroValueStopWithNothingRunning(t *testing.T) {
	var g Group
	select {
	case <-g.Done():
		t.Fatal("Done closed before Stop")
	default:
	}
	g.Stop()
	<-g.Done()
}

// Context is cancelled when done closes, and by its cancel.
func TestContext(t *testing.T) {
	done := make(chan struct{})
	ctx, cancel := Context(done)
	defer cancel()
	if ctx.Err() != nil {
		t.Fatal("cancelled before done closed")
	}
	close(done)
	<-ctx.Done()
	ctx2, cancel2 := Context(make(chan struct{}))
	cancel2()
	<-ctx2.Done()
}

// EveryOrWake runs fn when woken, long before its interval.
func TestGroupEveryOrWake(t *testing.T) {
	var g Group
	defer g.StopAndWait()
	wake := make(chan struct{}, 1)
	ran := make(chan struct{}, 1)
	g.EveryOrWake(time.Hour, wake, func() { ran <- struct{}{} })
	for range 3 {
		wake <- struct{}{}
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("woken, fn did not run")
		}
	}
}
