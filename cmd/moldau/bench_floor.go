package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
)

// bench floor: what moving bytes costs on this machine with no Kafka at
// all. A client goroutine writes frames (a 4-byte big-endian length, then
// --batch-bytes of --record-size records) over a loopback TCP connection,
// keeping --in-flight frames unacknowledged like a producer with several
// requests in flight. A server goroutine reads each frame, appends it to a
// file with one write(2), and answers with 4 bytes (like a produce
// response). CPU is getrusage(RUSAGE_SELF), user+system, over the run: both
// ends, as the broker's process_cpu_seconds_total is compared with it; the
// server goroutine's own thread (RUSAGE_THREAD, locked to it) is reported
// too, the closer analogue of a broker's share.

type floorConfig struct {
	recordSize int
	batchBytes int
	bytes      byteSize
	duration   time.Duration
	dir        string
	inFlight   int
	json       bool
}

const floorJSONHelp = `
Output: a summary on stdout, or with --json one JSON object with these
fields (MiB = 2^20 bytes, GiB = 2^30):
  mode ("floor"), record_size, batch_bytes, in_flight,
  frames, records, bytes (frame payloads acknowledged, without prefixes),
  elapsed_seconds, records_per_sec, mib_per_sec,
  cpu_seconds, user_cpu_seconds, sys_cpu_seconds (getrusage RUSAGE_SELF over
    the run: client and server), cpu_seconds_per_gib,
  server_cpu_seconds, server_cpu_seconds_per_gib (the server goroutine's
    locked OS thread alone, RUSAGE_THREAD; null off Linux),
  interrupted.
`

func parseFloorFlags(args []string, stderr io.Writer) (*floorConfig, error) {
	fs := pflag.NewFlagSet("bench floor", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &floorConfig{bytes: 2 << 30}
	fs.IntVar(&c.recordSize, "record-size", 1024, "bytes in each record")
	fs.IntVar(&c.batchBytes, "batch-bytes", 16384, "bytes in each frame, rounded down to whole records (at least one)")
	fs.Var(&c.bytes, "bytes", "stop after this many bytes (e.g. 512MiB, 2GiB, 1e9)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "stop after this long (whichever of --bytes and --duration comes first)")
	fs.StringVar(&c.dir, "dir", "", "directory for the file written (default: a temporary one; the file is removed after)")
	fs.IntVar(&c.inFlight, "in-flight", 5, "frames sent but not yet acknowledged, at most")
	fs.BoolVar(&c.json, "json", false, "print the summary as one JSON object on stdout")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: moldau bench floor [flags]\n\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, floorJSONHelp)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("bench floor: unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.recordSize < 1:
		return nil, errors.New("--record-size: must be at least 1")
	case c.batchBytes < 1:
		return nil, errors.New("--batch-bytes: must be at least 1")
	case c.bytes < 1:
		return nil, errors.New("--bytes: must be positive")
	case c.duration <= 0:
		return nil, errors.New("--duration: must be positive")
	case c.inFlight < 1:
		return nil, errors.New("--in-flight: must be at least 1")
	}
	return c, nil
}

// byteSize is a pflag value for sizes such as 2GiB, 512MiB, 64KB, 1e9.
type byteSize int64

func (b *byteSize) String() string { return formatBytes(int64(*b)) }
func (b *byteSize) Type() string   { return "size" }

func (b *byteSize) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// parseBytes reads a size: a number with an optional unit (B, KB/MB/GB/TB
// in powers of 1000, KiB/MiB/GiB/TiB or K/M/G/T in powers of 1024).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range byteUnits {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*mult > 1<<62 {
		return 0, fmt.Errorf("invalid size %q: expected e.g. 2GiB, 512MiB or 1e9", s)
	}
	return int64(f * mult), nil
}

func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// floorSummary is the result of bench floor; its JSON field names are
// documented in floorJSONHelp and are stable.
type floorSummary struct {
	Mode                   string   `json:"mode"`
	RecordSize             int      `json:"record_size"`
	BatchBytes             int      `json:"batch_bytes"`
	InFlight               int      `json:"in_flight"`
	Frames                 int64    `json:"frames"`
	Records                int64    `json:"records"`
	Bytes                  int64    `json:"bytes"`
	ElapsedSeconds         float64  `json:"elapsed_seconds"`
	RecordsPerSec          float64  `json:"records_per_sec"`
	MiBPerSec              float64  `json:"mib_per_sec"`
	CPUSeconds             float64  `json:"cpu_seconds"`
	UserCPUSeconds         float64  `json:"user_cpu_seconds"`
	SysCPUSeconds          float64  `json:"sys_cpu_seconds"`
	CPUSecondsPerGiB       float64  `json:"cpu_seconds_per_gib"`
	ServerCPUSeconds       *float64 `json:"server_cpu_seconds"`
	ServerCPUSecondsPerGiB *float64 `json:"server_cpu_seconds_per_gib"`
	Interrupted            bool     `json:"interrupted"`
}

func runFloor(ctx context.Context, c *floorConfig, stdout, stderr io.Writer) (err error) {
	file, cleanup, err := floorFile(c.dir)
	if err != nil {
		return err
	}
	defer cleanup()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()

	perFrame := max(c.batchBytes/c.recordSize, 1)
	payload := perFrame * c.recordSize
	frame := make([]byte, 4+payload)
	binary.BigEndian.PutUint32(frame, uint32(payload))
	copy(frame[4:], benchPayload(payload))

	user0, sys0 := processCPU()
	start := time.Now()

	// Server: one connection; read a frame, append it, acknowledge it.
	var (
		wg        sync.WaitGroup
		serverErr error
		serverCPU time.Duration
		serverOK  bool
	)
	wg.Go(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		u0, s0, _ := threadCPU()
		serverErr = floorServe(ln, file, payload)
		u1, s1, ok := threadCPU()
		serverCPU, serverOK = u1-u0+s1-s0, ok
	})

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		wg.Wait()
		return err
	}
	defer conn.Close()
	frames, elapsed, writeErr, readerErr := floorSend(ctx, conn.(*net.TCPConn), frame, payload, c, start)
	wg.Wait()
	user1, sys1 := processCPU()
	for _, e := range []error{writeErr, serverErr, readerErr} {
		if e != nil {
			return fmt.Errorf("bench floor: %w", e)
		}
	}

	s := floorSummary{
		Mode: "floor", RecordSize: c.recordSize, BatchBytes: payload, InFlight: c.inFlight,
		Frames: frames, Records: frames * int64(perFrame), Bytes: frames * int64(payload),
		ElapsedSeconds: elapsed.Seconds(),
		UserCPUSeconds: (user1 - user0).Seconds(), SysCPUSeconds: (sys1 - sys0).Seconds(),
		Interrupted: ctx.Err() != nil,
	}
	s.fillRates(elapsed, serverCPU, serverOK)
	if c.json {
		return json.NewEncoder(stdout).Encode(s)
	}
	printFloorSummary(stdout, s, perFrame)
	return nil
}

// floorSend is the client: a writer keeps up to c.inFlight frames
// unacknowledged while a reader takes the acknowledgements, until c.bytes
// are sent or the run ends; then it waits for the frames in flight and
// closes its side (the server sees EOF and returns). It returns the frames
// acknowledged and the time from start to the last acknowledgement.
func floorSend(ctx context.Context, conn *net.TCPConn, frame []byte, payload int, c *floorConfig, start time.Time) (acked int64, elapsed time.Duration, writeErr, readerErr error) {
	slots := make(chan struct{}, c.inFlight)
	readerDone := make(chan struct{})
	var n atomic.Int64
	go func() {
		defer close(readerDone)
		var ack [4]byte
		r := bufio.NewReader(conn)
		for {
			if _, err := io.ReadFull(r, ack[:]); err != nil {
				if !errors.Is(err, io.EOF) {
					readerErr = err
				}
				return
			}
			n.Add(1)
			<-slots
		}
	}()

	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	var sent int64
send:
	for sent*int64(payload) < int64(c.bytes) {
		select {
		case slots <- struct{}{}:
		case <-runCtx.Done():
			break send
		case <-readerDone:
			break send
		}
		if _, writeErr = conn.Write(frame); writeErr != nil {
			break
		}
		sent++
	}
	// Wait for the frames in flight (all slots free again).
drain:
	for range c.inFlight {
		select {
		case slots <- struct{}{}:
		case <-readerDone:
			break drain
		}
	}
	elapsed = time.Since(start)
	conn.CloseWrite()
	<-readerDone
	return n.Load(), elapsed, writeErr, readerErr
}

// fillRates sets the rates and the CPU per GiB from the totals.
func (s *floorSummary) fillRates(elapsed, serverCPU time.Duration, serverOK bool) {
	s.CPUSeconds = s.UserCPUSeconds + s.SysCPUSeconds
	gibs := float64(s.Bytes) / gib
	if secs := elapsed.Seconds(); secs > 0 {
		s.RecordsPerSec = float64(s.Records) / secs
		s.MiBPerSec = float64(s.Bytes) / secs / mib
	}
	if gibs > 0 {
		s.CPUSecondsPerGiB = s.CPUSeconds / gibs
	}
	if serverOK {
		sc := serverCPU.Seconds()
		s.ServerCPUSeconds = &sc
		if gibs > 0 {
			per := sc / gibs
			s.ServerCPUSecondsPerGiB = &per
		}
	}
}

// floorFile creates the file the server appends to, in dir or (dir
// empty) a new temporary directory; cleanup closes and removes it.
func floorFile(dir string) (_ *os.File, cleanup func(), err error) {
	var path string
	remove := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "moldau-floor-")
		if err != nil {
			return nil, nil, err
		}
		remove = func() { os.RemoveAll(tmp) }
		path = tmp + string(os.PathSeparator) + "floor.log"
	} else {
		f, err := os.CreateTemp(dir, "moldau-floor-*.log")
		if err != nil {
			return nil, nil, err
		}
		path = f.Name()
		f.Close()
		remove = func() { os.Remove(path) }
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		remove()
		return nil, nil, err
	}
	return file, func() { file.Close(); remove() }, nil
}

// printFloorSummary prints s for a reader.
func printFloorSummary(stdout io.Writer, s floorSummary, perFrame int) {
	fmt.Fprintf(stdout, "moldau bench floor: %d-byte frames of %d %d-byte records, %d in flight, loopback TCP to a file\n",
		s.BatchBytes, perFrame, s.RecordSize, s.InFlight)
	if s.Interrupted {
		fmt.Fprintln(stdout, "  (interrupted)")
	}
	fmt.Fprintf(stdout, "  frames      %d (%d records)\n", s.Frames, s.Records)
	fmt.Fprintf(stdout, "  bytes       %d (%.2f MiB)\n", s.Bytes, float64(s.Bytes)/mib)
	fmt.Fprintf(stdout, "  elapsed     %.3f s\n", s.ElapsedSeconds)
	fmt.Fprintf(stdout, "  throughput  %.1f records/s, %.2f MiB/s\n", s.RecordsPerSec, s.MiBPerSec)
	fmt.Fprintf(stdout, "  CPU         %.2f s (user %.2f, sys %.2f), %.3f CPU-seconds per GiB\n",
		s.CPUSeconds, s.UserCPUSeconds, s.SysCPUSeconds, s.CPUSecondsPerGiB)
	if s.ServerCPUSeconds != nil && s.ServerCPUSecondsPerGiB != nil {
		fmt.Fprintf(stdout, "  server      %.2f s on its thread, %.3f CPU-seconds per GiB\n", *s.ServerCPUSeconds, *s.ServerCPUSecondsPerGiB)
	}
}

// floorServe accepts one connection on ln, then for each frame reads it,
// appends its payload to file with one write and writes a 4-byte
// acknowledgement, until the client closes its side.
func floorServe(ln net.Listener, file *os.File, maxPayload int) error {
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	buf := make([]byte, maxPayload)
	var hdr, ack [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if int(n) > maxPayload {
			return fmt.Errorf("frame of %d bytes, larger than %d", n, maxPayload)
		}
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return err
		}
		if _, err := file.Write(buf[:n]); err != nil {
			return err
		}
		binary.BigEndian.PutUint32(ack[:], n)
		if _, err := conn.Write(ack[:]); err != nil {
			return err
		}
	}
}
