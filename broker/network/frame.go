package network

import (
	"io"
	"math/bits"
	"sync"
)

// framePool hands out frame buffers in power-of-two size classes.
type framePool struct {
	classes [maxFrameClass + 1]sync.Pool
}

const (
	minFrameClass = 9  // 512 B
	maxFrameClass = 24 // 16 MiB; larger frames are not pooled
	// growFrameAbove: frames larger than this grow as bytes arrive,
	// so memory follows what the peer sent, not what it announced.
	growFrameAbove = 1 << 20
)

type frameBuf struct {
	b     []byte
	class int // -1: not pooled
}

func frameClass(size int) int {
	if size <= 1<<minFrameClass {
		return minFrameClass
	}
	return bits.Len(uint(size - 1))
}

func (p *framePool) get(size int) *frameBuf {
	c := frameClass(size)
	if c > maxFrameClass {
		return &frameBuf{b: make([]byte, size), class: -1}
	}
	if fb, _ := p.classes[c].Get().(*frameBuf); fb != nil {
		fb.b = fb.b[:size]
		return fb
	}
	return &frameBuf{b: make([]byte, size, 1<<c), class: c}
}

func (p *framePool) put(fb *frameBuf) {
	if fb == nil || fb.class < 0 {
		return
	}
	fb.b = fb.b[:0]
	p.classes[fb.class].Put(fb)
}

// read reads a frame of size bytes from r into a pooled buffer. A frame
// above growFrameAbove starts in a 1 MiB buffer, so that a peer announcing
// a large frame and sending nothing holds 1 MiB, not the announced size.
// With exact (the frame's bytes are reserved in the request memory pool)
// the whole frame is allocated once that first MiB has arrived; else the
// buffer doubles as bytes arrive.
func (p *framePool) read(r io.Reader, size int, exact bool) (*frameBuf, error) {
	if size <= growFrameAbove {
		fb := p.get(size)
		if _, err := io.ReadFull(r, fb.b); err != nil {
			p.put(fb)
			return nil, err
		}
		return fb, nil
	}
	fb := p.get(growFrameAbove)
	have := 0
	for {
		if _, err := io.ReadFull(r, fb.b[have:]); err != nil {
			p.put(fb)
			return nil, err
		}
		have = len(fb.b)
		if have == size {
			return fb, nil
		}
		n := min(2*have, size)
		if exact {
			n = size
		}
		next := p.get(n)
		copy(next.b, fb.b)
		p.put(fb)
		fb = next
	}
}
