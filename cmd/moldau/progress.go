package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressInterval is how often the progress line is redrawn.
const progressInterval = 200 * time.Millisecond

// progressLine redraws one status line on a terminal while a long operation
// runs (producing a file, consuming a topic, seeking many partitions). It
// is a no-op unless enabled, which callers set only when stderr is a
// terminal, so nothing is written when stderr is piped or redirected.
type progressLine struct {
	w      io.Writer
	status func() string
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// startProgress starts redrawing status() on w every progressInterval if
// enabled. status is called from another goroutine and must be safe for
// that (atomics). Stop ends it and clears the line.
func startProgress(w io.Writer, enabled bool, status func() string) *progressLine {
	p := &progressLine{w: w, status: status, stop: make(chan struct{})}
	if !enabled {
		p.once.Do(func() {})
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprint(p.w, "\r\x1b[K")
				return
			case <-t.C:
				fmt.Fprintf(p.w, "\r\x1b[K%s", p.status())
			}
		}
	}()
	return p
}

// Stop ends the redraws and clears the line; it is idempotent.
func (p *progressLine) Stop() {
	p.once.Do(func() { close(p.stop) })
	p.wg.Wait()
}
