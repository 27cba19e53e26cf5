package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// An offset spec says where in each partition to start (consume --offset)
// or where to move a group (group seek --to):
//
//	start           the log start offset (also: beginning, earliest, oldest)
//	end             the end offset, the high watermark (also: latest, newest)
//	N               offset N, clamped to [start, end]
//	-N              N records before the end (never before the start)
//	+N              N records after the start (never past the end)
//	@T              the first offset whose timestamp is >= T, or the end if
//	                none; T is Unix milliseconds (@1700000000000), RFC 3339
//	                (@2024-05-01T12:00:00Z, @2024-05-01T14:00:00+02:00), a
//	                UTC date (@2024-05-01), or a Go duration before now
//	                (@-1h30m)

type offsetKind int

const (
	offsetStart offsetKind = iota
	offsetEnd
	offsetExact
	offsetFromEnd
	offsetFromStart
	offsetTime
)

type offsetSpec struct {
	kind   offsetKind
	n      int64 // offsetExact: the offset; offsetFromEnd/Start: the count
	millis int64 // offsetTime
}

// offsetSpecHelp names the forms in one line, for errors; offsetSpecList
// explains them, for --help.
const offsetSpecHelp = `start, end, N, -N, +N or @T`

const offsetSpecList = `  start  the log start offset (also: beginning, earliest, oldest)
  end    the end offset, the high watermark (also: latest, newest)
  N      offset N
  -N     N records before the end
  +N     N records after the start
  @T     the first record at or after T: Unix ms (@1700000000000), RFC 3339
         (@2024-05-01T12:00:00Z), a UTC date (@2024-05-01), or a duration
         before now (@-1h30m)`

var errEmptySpec = errors.New("empty offset")

// parseOffsetSpec parses an offset spec; now resolves @-DURATION.
func parseOffsetSpec(s string, now time.Time) (offsetSpec, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "":
		return offsetSpec{}, errEmptySpec
	case "start", "beginning", "earliest", "oldest":
		return offsetSpec{kind: offsetStart}, nil
	case "end", "latest", "newest":
		return offsetSpec{kind: offsetEnd}, nil
	}
	switch s[0] {
	case '@':
		ms, err := parseTimestamp(s[1:], now)
		if err != nil {
			return offsetSpec{}, err
		}
		return offsetSpec{kind: offsetTime, millis: ms}, nil
	case '-', '+':
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || n < 0 || s[1] == '+' || s[1] == '-' {
			return offsetSpec{}, fmt.Errorf("offset %q: expected %cN with N a count of records", s, s[0])
		}
		if s[0] == '-' {
			return offsetSpec{kind: offsetFromEnd, n: n}, nil
		}
		return offsetSpec{kind: offsetFromStart, n: n}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return offsetSpec{}, fmt.Errorf("offset %q: expected %s", s, offsetSpecHelp)
	}
	return offsetSpec{kind: offsetExact, n: n}, nil
}

// parseTimestamp parses the T of @T into Unix milliseconds.
func parseTimestamp(s string, now time.Time) (int64, error) {
	if s == "" {
		return 0, errors.New(`timestamp "@": expected @ followed by Unix milliseconds, RFC 3339, a date or -DURATION`)
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("timestamp %q: milliseconds cannot be negative", s)
		}
		return ms, nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return 0, fmt.Errorf("timestamp @%s: expected @-DURATION such as @-1h30m", s)
		}
		return now.Add(-d).UnixMilli(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("timestamp @%s: expected Unix milliseconds, RFC 3339 (2006-01-02T15:04:05Z07:00), a date (2006-01-02) or -DURATION", s)
}

// needsTimeLookup reports whether resolving needs ListOffsets by time.
func (o offsetSpec) needsTimeLookup() bool { return o.kind == offsetTime }

// resolve returns the offset to use in a partition whose log starts at
// start and ends at end (the high watermark). atTime is what ListOffsets
// returned for the spec's timestamp (-1: no record at or after it). The
// result is always within [start, end].
func (o offsetSpec) resolve(start, end, atTime int64) int64 {
	var off int64
	switch o.kind {
	case offsetStart:
		off = start
	case offsetEnd:
		off = end
	case offsetExact:
		off = o.n
	case offsetFromEnd:
		off = end - o.n
	case offsetFromStart:
		off = start + o.n
		if off < start { // overflow
			off = end
		}
	case offsetTime:
		off = atTime
		if off < 0 {
			off = end
		}
	}
	return max(start, min(off, end))
}

// kgoOffset is the spec as kgo's reset offset, used when a group member
// has no committed offset for a partition.
func (o offsetSpec) kgoOffset() kgo.Offset {
	switch o.kind {
	case offsetEnd:
		return kgo.NewOffset().AtEnd()
	case offsetExact:
		return kgo.NewOffset().At(o.n)
	case offsetFromEnd:
		return kgo.NewOffset().AtEnd().Relative(-o.n)
	case offsetFromStart:
		return kgo.NewOffset().AtStart().Relative(o.n)
	case offsetTime:
		return kgo.NewOffset().AfterMilli(o.millis)
	}
	return kgo.NewOffset().AtStart()
}

func (o offsetSpec) String() string {
	switch o.kind {
	case offsetStart:
		return "start"
	case offsetEnd:
		return "end"
	case offsetExact:
		return strconv.FormatInt(o.n, 10)
	case offsetFromEnd:
		return "-" + strconv.FormatInt(o.n, 10)
	case offsetFromStart:
		return "+" + strconv.FormatInt(o.n, 10)
	}
	return "@" + strconv.FormatInt(o.millis, 10)
}
