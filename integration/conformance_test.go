package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestKgoConformance runs franz-go's own kgo integration tests (from the
// module cache, at the version in go.mod) against a Moldau broker, and
// requires every test in testdata/kgo-must-pass.txt to pass. Tests of the
// suite that are not on the list run too when KGO_RUN_ALL=1, reported but
// not required.
func TestKgoConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite is not run with -short")
	}
	mustPass := readList(t, "testdata/kgo-must-pass.txt")
	b := startBroker(t, "")

	run := "^(" + strings.Join(mustPass, "|") + ")$"
	if os.Getenv("KGO_RUN_ALL") == "1" {
		run = "."
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout=20m", "-run", run, "github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+b.Seed(),
		"KGO_TEST_RF=1",
		// The suite's default of 500,000 records per test is for a
		// soak; 50,000 exercises the same paths in CI time.
		"KGO_TEST_RECORDS=50000",
		"KGO_LOG_LEVEL=none",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("kgo suite ran in %v (exit: %v)", time.Since(start).Round(time.Second), err)

	results := map[string]string{} // test -> pass/fail/skip
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Action, Test, Output string
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		switch ev.Action {
		case "pass", "fail", "skip":
			if ev.Test == top {
				results[top] = ev.Action
			}
		case "output":
			if output[top] == nil {
				output[top] = &strings.Builder{}
			}
			if output[top].Len() < 64<<10 {
				output[top].WriteString(ev.Output)
			}
		}
	}
	if stderr.Len() > 0 {
		t.Logf("go test stderr:\n%s", stderr.String())
	}

	var passed, failed []string
	for _, name := range mustPass {
		switch results[name] {
		case "pass":
			passed = append(passed, name)
		default:
			failed = append(failed, name)
			out := ""
			if output[name] != nil {
				out = output[name].String()
			}
			t.Errorf("kgo %s: %s (must pass)\n%s", name, orNone(results[name]), out)
		}
	}
	var extra []string
	for name, r := range results {
		if r == "pass" && !slices.Contains(mustPass, name) {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	t.Logf("must-pass: %d passed, %d failed; passing but not listed: %v", len(passed), len(failed), extra)
}

func orNone(s string) string {
	if s == "" {
		return "did not run or did not finish"
	}
	return s
}

func readList(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}
