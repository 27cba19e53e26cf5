package routine

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// threadNice reads the calling thread's nice value from procfs.
func threadNice(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command (which is in parentheses): state is
	// field 3; nice is field 19.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	fields := strings.Fields(rest)
	n, err := strconv.Atoi(fields[19-3])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBackgroundRunsAtLowPriorityOnItsOwnThread(t *testing.T) {
	before := threadNice(t)
	var nice, tid int
	Background(func() {
		nice = threadNice(t)
		tid = syscall.Gettid()
	})
	if nice != BackgroundNice {
		t.Errorf("fn ran at nice %d, want %d", nice, BackgroundNice)
	}
	if tid == syscall.Gettid() {
		t.Error("fn ran on the caller's thread")
	}
	// The low-priority thread is not handed back to other goroutines.
	for range 100 {
		done := make(chan int)
		go func() { done <- threadNice(t) }()
		if n := <-done; n != before {
			t.Fatalf("a later goroutine ran at nice %d, not %d", n, before)
		}
	}
}
