package memory

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeRoot writes files under a temporary root: path -> content.
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroupLimit(t *testing.T) {
	const v2mount = "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
	const v1mounts = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"36 31 0:33 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	cases := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 leaf limit", map[string]string{
			"proc/self/cgroup":    "0::/system.slice/moldau.service\n",
			"proc/self/mountinfo": v2mount,
			"sys/fs/cgroup/system.slice/moldau.service/memory.max": "1073741824\n",
			"sys/fs/cgroup/system.slice/memory.max":                "max\n",
		}, 1 << 30},
		{"v2 parent is smaller", map[string]string{
			"proc/self/cgroup":             "0::/a/b\n",
			"proc/self/mountinfo":          v2mount,
			"sys/fs/cgroup/a/b/memory.max": "max\n",
			"sys/fs/cgroup/a/memory.max":   "536870912\n",
		}, 512 << 20},
		{"v2 namespace", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"proc/self/mountinfo":      "30 23 0:27 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
			"sys/fs/cgroup/memory.max": "268435456\n",
		}, 256 << 20},
		{"v2 unlimited", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"proc/self/mountinfo":      v2mount,
			"sys/fs/cgroup/memory.max": "max\n",
		}, 0},
		{"v1 limit", map[string]string{
			"proc/self/cgroup":    "4:memory:/docker/abc\n3:cpu:/docker/abc\n0::/\n",
			"proc/self/mountinfo": v1mounts,
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "2147483648\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
		}, 2 << 30},
		{"v1 docker without a cgroup namespace", map[string]string{
			"proc/self/cgroup":                           "4:memory:/docker/abc\n",
			"proc/self/mountinfo":                        "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "104857600\n",
		}, 100 << 20},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup":    "4:memory:/process_api/x\n",
			"proc/self/mountinfo": v1mounts,
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"no memory controller mounted", map[string]string{
			"proc/self/cgroup":    "4:memory:/x\n",
			"proc/self/mountinfo": "36 31 0:33 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
		}, 0},
	}
	for _, c := range cases {
		got, err := cgroupLimit(fakeRoot(t, c.files))
		if err != nil || got != c.want {
			t.Errorf("%s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := cgroupLimit(fakeRoot(t, map[string]string{
		"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": v2mount, "sys/fs/cgroup/memory.max": "lots\n",
	})); err == nil {
		t.Error("a malformed memory.max was accepted")
	}
	// The real machine: whatever it says, it does not fail.
	if _, err := CgroupLimit(); err != nil && !os.IsNotExist(err) {
		t.Errorf("CgroupLimit on this machine: %v", err)
	}
}

func TestSystemMemoryAndDefault(t *testing.T) {
	root := fakeRoot(t, map[string]string{"proc/meminfo": "MemTotal:       24576000 kB\nMemFree: 1 kB\n"})
	if got := systemMemory(root); got != 24576000<<10 {
		t.Fatalf("systemMemory = %d", got)
	}
	for _, c := range []struct{ budget, want int64 }{
		{1 << 30, 256 << 20}, {24 << 30, 6 << 30}, {32 << 20, 16 << 20}, {0, 512 << 20},
	} {
		if got := DefaultQueuedMaxRequestBytes(c.budget); got != c.want {
			t.Errorf("DefaultQueuedMaxRequestBytes(%d) = %d, want %d", c.budget, got, c.want)
		}
	}
	if b, src := Budget(); b <= 0 || src == "unknown" {
		t.Errorf("Budget() = %d from %s", b, src)
	}
}
