package memory

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// unlimitedCgroupV1 is where cgroup v1 reports "no limit"
// (PAGE_COUNTER_MAX pages, rounded): anything this large is no limit.
const unlimitedCgroupV1 = 1 << 62

// CgroupLimit returns the memory limit of this process's cgroup: the
// smallest memory.max (cgroup v2) or memory.limit_in_bytes (v1) of its
// cgroup and the ancestors visible in its mount; 0 when there is none.
func CgroupLimit() (int64, error) { return cgroupLimit("/") }

// cgroupLimit is CgroupLimit with every path under root (for tests).
func cgroupLimit(root string) (int64, error) {
	cg, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, err
	}
	mounts, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return 0, err
	}
	var limit int64
	for _, line := range strings.Split(string(cg), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var v2 bool
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = true
		case containsField(parts[1], "memory"):
		default:
			continue
		}
		mountRoot, mountPoint, ok := findCgroupMount(mounts, v2)
		if !ok {
			continue
		}
		file := "memory.limit_in_bytes"
		if v2 {
			file = "memory.max"
		}
		l, err := smallestLimit(filepath.Join(root, mountPoint), mountRoot, parts[2], file)
		if err != nil {
			return 0, err
		}
		if l > 0 && (limit == 0 || l < limit) {
			limit = l
		}
	}
	return limit, nil
}

func containsField(list, want string) bool {
	for _, f := range strings.Split(list, ",") {
		if f == want {
			return true
		}
	}
	return false
}

// findCgroupMount finds the mount of the cgroup2 hierarchy (v2) or of the
// v1 hierarchy with the memory controller in /proc/self/mountinfo, and
// returns the cgroup path it exposes (its root) and where it is mounted.
func findCgroupMount(mountinfo []byte, v2 bool) (root, point string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 > len(fields) {
			continue
		}
		fstype := fields[sep+1]
		switch {
		case v2 && fstype == "cgroup2":
		case !v2 && fstype == "cgroup" && containsField(fields[len(fields)-1], "memory"):
		default:
			continue
		}
		return fields[3], unescapeMountPath(fields[4]), true
	}
	return "", "", false
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// smallestLimit reads file in the cgroup's directory and in each ancestor
// up to the mount's root, and returns the smallest limit (0: none).
func smallestLimit(mountPoint, mountRoot, cgroupPath, file string) (int64, error) {
	rel := cgroupPath
	if mountRoot != "/" {
		if rel != mountRoot && !strings.HasPrefix(rel, mountRoot+"/") {
			// A cgroup namespace: the mount shows our cgroup as its root.
			rel = "/"
		} else {
			rel = strings.TrimPrefix(rel, mountRoot)
		}
	}
	rel = path.Clean("/" + rel)
	var limit int64
	for {
		l, err := readLimit(filepath.Join(mountPoint, filepath.FromSlash(rel), file))
		if err != nil {
			return 0, err
		}
		if l > 0 && (limit == 0 || l < limit) {
			limit = l
		}
		if rel == "/" {
			return limit, nil
		}
		rel = path.Dir(rel)
	}
}

// readLimit reads a memory.max or memory.limit_in_bytes file: 0 for "max",
// a v1 "unlimited", or a missing file.
func readLimit(name string) (int64, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a memory limit", name, s)
	}
	if n <= 0 || n >= unlimitedCgroupV1 {
		return 0, nil
	}
	return n, nil
}

// SystemMemory is the machine's memory (MemTotal of /proc/meminfo), 0 if
// unknown.
func SystemMemory() int64 { return systemMemory("/") }

func systemMemory(root string) int64 {
	b, err := os.ReadFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10
				}
			}
		}
	}
	return 0
}

// Budget is the memory the broker may use and where that figure comes
// from: the Go memory limit (GOMEMLIMIT, which `moldau serve` sets from
// the cgroup limit when the user has not), else the cgroup limit, else the
// machine's memory; 0 and "unknown" if none can be read.
func Budget() (bytes int64, source string) {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return l, "GOMEMLIMIT"
	}
	if l, err := CgroupLimit(); err == nil && l > 0 {
		return l, "cgroup memory limit"
	}
	if l := SystemMemory(); l > 0 {
		return l, "machine memory"
	}
	return 0, "unknown"
}

const (
	// RequestShare is the share of the budget that request frames may
	// hold: queued.max.request.bytes defaults to budget/RequestShare.
	// The rest is for the Go runtime's headroom (garbage between two
	// collections), decompression, responses, indexes and the rest of
	// the broker.
	RequestShare = 4
	// minDefaultRequestBytes floors the derived default.
	minDefaultRequestBytes = 16 << 20
	// fallbackRequestBytes is the default when no budget can be read.
	fallbackRequestBytes = 512 << 20
)

// DefaultQueuedMaxRequestBytes derives queued.max.request.bytes from a
// memory budget: a quarter of it, at least 16 MiB (512 MiB when the
// budget is unknown).
func DefaultQueuedMaxRequestBytes(budget int64) int64 {
	if budget <= 0 {
		return fallbackRequestBytes
	}
	return max(budget/RequestShare, minDefaultRequestBytes)
}
