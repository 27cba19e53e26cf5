package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The moldau command line, run as a user runs it: the built binary as a
// process, against a real broker over TCP. MOLDAU_CLI_TEST_BROKERS points
// the same tests at another Kafka-compatible cluster, for comparison.

// cliCluster is where the CLI tests send their commands.
type cliCluster struct {
	brokers string
	broker  *testBroker // nil for an external cluster
}

func newCLICluster(t *testing.T) *cliCluster {
	t.Helper()
	if ext := os.Getenv("MOLDAU_CLI_TEST_BROKERS"); ext != "" {
		return &cliCluster{brokers: ext}
	}
	b := startBroker(t, "")
	return &cliCluster{brokers: b.Seed(), broker: b}
}

// uniqueTopic names a topic no earlier run used, for external clusters.
func uniqueTopic(name string) string {
	return fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1e9)
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// moldau runs the binary with args, stdin as its input and MOLDAU_BROKERS
// set to the cluster.
func (c *cliCluster) moldau(t *testing.T, stdin []byte, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, moldauBinary(t), args...)
	cmd.Env = append(os.Environ(), "MOLDAU_BROKERS="+c.brokers)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	if d := time.Since(start); d > time.Second {
		t.Logf("moldau %s took %v", strings.Join(args, " "), d)
	}
	res := cliResult{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("moldau %v: %v", args, err)
	}
	return res
}

// ok runs a command that must succeed, silently on stderr.
func (c *cliCluster) ok(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	r := c.moldau(t, stdin, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("moldau %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// okJSON runs a command with --json and decodes its output into v.
func (c *cliCluster) okJSON(t *testing.T, v any, stdin []byte, args ...string) {
	t.Helper()
	out := c.ok(t, stdin, append(args, "--json")...)
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("moldau %s --json: not one line:\n%s", strings.Join(args, " "), out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("moldau %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fails runs a command that must exit with code, printing one line on
// stderr that contains want.
func (c *cliCluster) fails(t *testing.T, code int, want string, stdin []byte, args ...string) {
	t.Helper()
	r := c.moldau(t, stdin, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Errorf("moldau %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), r.code, r.stderr, code, want)
	}
	if code == 1 && strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("moldau %s: error is not one line: %q", strings.Join(args, " "), r.stderr)
	}
}

// jsonLines decodes one JSON object per line.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var res []T
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		res = append(res, v)
	}
	return res
}

type cliTopicStatus struct {
	Topic             string  `json:"topic"`
	ID                string  `json:"id"`
	Partitions        int32   `json:"partitions"`
	ReplicationFactor int16   `json:"replication_factor"`
	Error             *string `json:"error"`
}

type cliStatus struct {
	Name  string  `json:"name"`
	Error *string `json:"error"`
}

type cliProduced struct {
	Topic      string `json:"topic"`
	Records    int64  `json:"records"`
	Failed     int64  `json:"failed"`
	Partitions []struct {
		Partition   int32 `json:"partition"`
		Records     int64 `json:"records"`
		FirstOffset int64 `json:"first_offset"`
		LastOffset  int64 `json:"last_offset"`
	} `json:"partitions"`
}

type cliRecord struct {
	Topic         string  `json:"topic"`
	Partition     int32   `json:"partition"`
	Offset        int64   `json:"offset"`
	Timestamp     int64   `json:"timestamp"`
	Key           *string `json:"key"`
	KeyEncoding   string  `json:"key_encoding"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding"`
	Headers       []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	} `json:"headers"`
}

type cliDescribed struct {
	Name           string `json:"name"`
	ID             string `json:"id"`
	PartitionCount int    `json:"partition_count"`
	Configs        []struct {
		Key    string  `json:"key"`
		Value  *string `json:"value"`
		Source string  `json:"source"`
	} `json:"configs"`
	Partitions []struct {
		Partition      int32   `json:"partition"`
		Leader         int32   `json:"leader"`
		Replicas       []int32 `json:"replicas"`
		ISR            []int32 `json:"isr"`
		LogStartOffset int64   `json:"log_start_offset"`
		HighWatermark  int64   `json:"high_watermark"`
	} `json:"partitions"`
}

func (d cliDescribed) config(key string) (value, source string) {
	for _, c := range d.Configs {
		if c.Key == key {
			if c.Value != nil {
				value = *c.Value
			}
			return value, c.Source
		}
	}
	return "", ""
}

func numberedLines(n int) ([]byte, []string) {
	var b bytes.Buffer
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line-%04d", i+1)
		b.WriteString(lines[i] + "\n")
	}
	return b.Bytes(), lines
}

// TestCLITopicProduceConsume is the walk-through: create a topic,
// produce 1,000 lines from stdin, consume them back in order, describe,
// alter, grow and delete it; every command's --json parses.
func TestCLITopicProduceConsume(t *testing.T) {
	c := newCLICluster(t)
	topic := uniqueTopic("cli-orders")

	var created []cliTopicStatus
	c.okJSON(t, &created, nil, "topic", "create", topic, "-p", "1", "-c", "retention.ms=86400000")
	if len(created) != 1 || created[0].Topic != topic || created[0].Error != nil || created[0].Partitions != 1 {
		t.Fatalf("create: %+v", created)
	}
	if out := c.ok(t, nil, "topic", "list"); !strings.Contains(out, "NAME") || !strings.Contains(out, topic) {
		t.Errorf("topic list:\n%s", out)
	}
	var listed []struct {
		Name       string `json:"name"`
		Partitions int    `json:"partitions"`
	}
	c.okJSON(t, &listed, nil, "topic", "list")
	found := false
	for _, l := range listed {
		found = found || (l.Name == topic && l.Partitions == 1)
	}
	if !found {
		t.Errorf("topic list --json lacks %s: %+v", topic, listed)
	}

	input, lines := numberedLines(1000)
	var produced cliProduced
	c.okJSON(t, &produced, input, "produce", topic)
	if produced.Records != 1000 || produced.Failed != 0 || len(produced.Partitions) != 1 ||
		produced.Partitions[0].FirstOffset != 0 || produced.Partitions[0].LastOffset != 999 {
		t.Fatalf("produce: %+v", produced)
	}

	// Back in order, as lines, and as JSON.
	out := c.ok(t, nil, "consume", topic, "--exit-at-end")
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Fatalf("consume returned %d lines, first %q; want the 1000 produced in order", len(got), got[0])
	}
	recs := jsonLines[cliRecord](t, c.ok(t, nil, "consume", topic, "-e", "--json"))
	if len(recs) != 1000 {
		t.Fatalf("consume --json: %d records", len(recs))
	}
	for i, r := range recs {
		if r.Offset != int64(i) || r.Value == nil || *r.Value != lines[i] || r.Key != nil || r.Topic != topic {
			t.Fatalf("record %d: %+v", i, r)
		}
	}

	checkConsumeFrom(t, c, topic)
	checkDescribeAlterGrow(t, c, topic)
	checkClusterInfo(t, c)

	// The broker's files, decoded offline while it runs.
	if c.broker != nil {
		recs := 0
		for _, line := range jsonLines[map[string]any](t, c.ok(t, nil, "log", "dump", c.broker.Dir, "--deep-iteration", "--json")) {
			// The dir also holds the metadata log (__cluster_metadata-0).
			if file, _ := line["file"].(string); line["type"] == "batch" && strings.Contains(file, "/"+topic+"-") {
				recs += len(line["records"].([]any))
			}
		}
		if recs != 1000 {
			t.Errorf("log dump found %d records, want 1000", recs)
		}
	}

	var st []cliStatus
	c.okJSON(t, &st, nil, "topic", "delete", topic)
	if len(st) != 1 || st[0].Name != topic || st[0].Error != nil {
		t.Fatalf("delete: %+v", st)
	}
	c.fails(t, 1, fmt.Sprintf("moldau: topic %q does not exist", topic), nil, "topic", "describe", topic)
}

// checkConsumeFrom checks where consumption starts and when it stops, on
// a one-partition topic holding line-0001..line-1000.
func checkConsumeFrom(t *testing.T, c *cliCluster, topic string) {
	t.Helper()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "-3", "-e"}, "line-0998\nline-0999\nline-1000\n"},
		{[]string{"-o", "995", "-n", "2"}, "line-0996\nline-0997\n"},
		{[]string{"-o", "+1", "-n", "1", "-f", `%o:%v\n`}, "1:line-0002\n"},
		{[]string{"-o", "end", "-e"}, ""},
		{[]string{"-o", "5000", "-e"}, ""},
		{[]string{"-o", "@-1h", "-n", "1"}, "line-0001\n"},
		{[]string{"-o", fmt.Sprintf("@%d", time.Now().Add(time.Hour).UnixMilli()), "-e"}, ""},
		{[]string{"-p", "0", "-o", "start", "-n", "2", "-f", `%t %p %o %K %V %v\n`}, topic + " 0 0 -1 9 line-0001\n" + topic + " 0 1 -1 9 line-0002\n"},
	} {
		if got := c.ok(t, nil, append([]string{"consume", topic}, tt.args...)...); got != tt.want {
			t.Errorf("consume %v = %q, want %q", tt.args, got, tt.want)
		}
	}

}

// checkDescribeAlterGrow checks describe (offsets, leaders, configs with
// their source), alter-config and add-partitions on the topic created with
// retention.ms=86400000 and holding 1000 records.
func checkDescribeAlterGrow(t *testing.T, c *cliCluster, topic string) {
	t.Helper()
	var desc []cliDescribed
	c.okJSON(t, &desc, nil, "topic", "describe", topic)
	if len(desc) != 1 || desc[0].PartitionCount != 1 || len(desc[0].Partitions) != 1 {
		t.Fatalf("describe: %+v", desc)
	}
	p := desc[0].Partitions[0]
	if p.LogStartOffset != 0 || p.HighWatermark != 1000 || p.Leader < 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
		t.Errorf("describe partition: %+v", p)
	}
	if v, src := desc[0].config("retention.ms"); v != "86400000" || src != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("retention.ms = %q from %q", v, src)
	}
	if v, src := desc[0].config("cleanup.policy"); v != "delete" || src == "" || src == "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("cleanup.policy = %q from %q", v, src)
	}
	text := c.ok(t, nil, "topic", "describe", topic)
	for _, want := range []string{"SUMMARY", "CONFIGS", "PARTITIONS", "LOG-START-OFFSET", "HIGH-WATERMARK", "retention.ms", "DYNAMIC_TOPIC_CONFIG"} {
		if !strings.Contains(text, want) {
			t.Errorf("topic describe lacks %q:\n%s", want, text)
		}
	}

	// Alter configs and add partitions.
	var st []cliStatus
	c.okJSON(t, &st, nil, "topic", "alter-config", topic, "--set", "retention.ms=3600000", "--set", "segment.bytes=2097152")
	if len(st) != 1 || st[0].Error != nil {
		t.Fatalf("alter-config: %+v", st)
	}
	c.okJSON(t, &desc, nil, "topic", "describe", topic)
	if v, _ := desc[0].config("retention.ms"); v != "3600000" {
		t.Errorf("retention.ms after alter = %q", v)
	}
	c.ok(t, nil, "topic", "alter-config", topic, "--delete", "segment.bytes")
	c.okJSON(t, &desc, nil, "topic", "describe", topic)
	if _, src := desc[0].config("segment.bytes"); src == "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("segment.bytes still a topic override after --delete")
	}
	c.okJSON(t, &st, nil, "topic", "add-partitions", topic, "--num", "2")
	if len(st) != 1 || st[0].Error != nil {
		t.Fatalf("add-partitions: %+v", st)
	}
	c.okJSON(t, &desc, nil, "topic", "describe", topic)
	if desc[0].PartitionCount != 3 {
		t.Errorf("%d partitions after adding 2 to 1", desc[0].PartitionCount)
	}

}

func checkClusterInfo(t *testing.T, c *cliCluster) {
	t.Helper()
	var info struct {
		ClusterID   string                   `json:"cluster_id"`
		Controller  int32                    `json:"controller"`
		Brokers     []struct{ NodeID int32 } `json:"brokers"`
		APIVersions []struct {
			APIs []struct {
				Name string `json:"name"`
			} `json:"apis"`
		} `json:"api_versions"`
	}
	c.okJSON(t, &info, nil, "cluster", "info")
	if info.ClusterID == "" || len(info.Brokers) == 0 || len(info.APIVersions) == 0 || len(info.APIVersions[0].APIs) < 10 {
		t.Errorf("cluster info: %+v", info)
	}
	if out := c.ok(t, nil, "cluster", "info"); !strings.Contains(out, "BROKERS") || !strings.Contains(out, "ApiVersions") || !strings.Contains(out, "QUORUM") {
		t.Errorf("cluster info:\n%s", out)
	}

}

// TestCLIKeysPartitionsHeaders produces keyed lines to three partitions
// and checks that each key stays in one partition, in order.
func TestCLIKeysPartitionsHeaders(t *testing.T) {
	c := newCLICluster(t)
	topic := uniqueTopic("cli-keys")
	c.ok(t, nil, "topic", "create", topic, "-p", "3")
	var in bytes.Buffer
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&in, "k%d:%d\n", i%7, i)
	}
	var produced cliProduced
	c.okJSON(t, &produced, in.Bytes(), "produce", topic, "-K", ":", "--compression", "zstd")
	if produced.Records != 300 {
		t.Fatalf("produce: %+v", produced)
	}
	partOf := map[string]int32{}
	last := map[string]int{}
	n := 0
	for _, r := range jsonLines[cliRecord](t, c.ok(t, nil, "consume", topic, "-e", "--json")) {
		k, v := *r.Key, *r.Value
		if p, ok := partOf[k]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", k, p, r.Partition)
		}
		partOf[k] = r.Partition
		var i int
		fmt.Sscan(v, &i)
		if prev, ok := last[k]; ok && i <= prev {
			t.Fatalf("key %s: %d after %d", k, i, prev)
		}
		last[k] = i
		n++
	}
	if n != 300 || len(partOf) != 7 {
		t.Fatalf("%d records, %d keys", n, len(partOf))
	}

	// --value with --count, --partition and headers, acks=1.
	c.ok(t, nil, "produce", topic, "--value", "v", "--key", "kk", "-H", "a=1", "-H", "b=", "--count", "5", "--partition", "2", "--acks", "1")
	recs := jsonLines[cliRecord](t, c.ok(t, nil, "consume", topic, "-p", "2", "-o", "-5", "-e", "--json"))
	if len(recs) != 5 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if *r.Key != "kk" || *r.Value != "v" || len(r.Headers) != 2 || r.Headers[0].Key != "a" || *r.Headers[0].Value != "1" || *r.Headers[1].Value != "" {
			t.Errorf("record %+v", r)
		}
	}
	if got := c.ok(t, nil, "consume", topic, "-p", "2", "-o", "-1", "-e", "-f", `%k=%v %h\n`); got != "kk=v a=1,b=\n" {
		t.Errorf("format: %q", got)
	}
}

// TestCLIBinaryRoundTrip checks that bytes that are not UTF-8 come back
// exactly, raw with --format and base64 with --json.
func TestCLIBinaryRoundTrip(t *testing.T) {
	c := newCLICluster(t)
	topic := uniqueTopic("cli-binary")
	c.ok(t, nil, "topic", "create", topic, "-p", "1")
	value := []byte{0xff, 0x00, 0xfe, 0x80, 'a', '\r'}
	c.ok(t, append(append([]byte("k\xc3\x28|"), value...), '\n'), "produce", topic, "-K", "|")
	raw := c.ok(t, nil, "consume", topic, "-e", "-f", `%v`)
	if raw != string(value) {
		t.Errorf("raw value %q, want %q", raw, value)
	}
	recs := jsonLines[cliRecord](t, c.ok(t, nil, "consume", topic, "-e", "--json"))
	if len(recs) != 1 || recs[0].ValueEncoding != "base64" || recs[0].KeyEncoding != "base64" {
		t.Fatalf("%+v", recs)
	}
	v, err1 := base64.StdEncoding.DecodeString(*recs[0].Value)
	k, err2 := base64.StdEncoding.DecodeString(*recs[0].Key)
	if err1 != nil || err2 != nil || !bytes.Equal(v, value) || string(k) != "k\xc3\x28" {
		t.Errorf("decoded key %q value %q (%v %v)", k, v, err1, err2)
	}
}

// TestCLIErrors checks that mistakes are one clear line and a non-zero
// exit: 1 for what the cluster refused or could not be reached, 2 for
// the command line itself.
func TestCLIErrors(t *testing.T) {
	c := newCLICluster(t)
	topic := uniqueTopic("cli-errors")
	c.ok(t, nil, "topic", "create", topic, "-p", "2")
	missing := uniqueTopic("cli-missing")
	notExist := fmt.Sprintf("moldau: topic %q does not exist\n", missing)
	for _, args := range [][]string{
		{"topic", "describe", missing},
		{"consume", missing, "-e"},
		{"produce", missing, "--value", "x"},
	} {
		r := c.moldau(t, nil, args...)
		if r.code != 1 || r.stderr != notExist || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1, %q", args, r.code, r.stdout, r.stderr, notExist)
		}
	}
	c.fails(t, 1, fmt.Sprintf("topic %q already exists", topic), nil, "topic", "create", topic)
	c.fails(t, 1, fmt.Sprintf("topic %q does not exist", missing), nil, "topic", "delete", missing)
	c.fails(t, 1, "INVALID_CONFIG", nil, "topic", "alter-config", topic, "--set", "retention.ms=soon")
	c.fails(t, 1, "has 2 partitions: there is no partition 7", nil, "consume", topic, "-p", "7")
	c.fails(t, 1, "has 2 partitions: there is no partition 7", nil, "produce", topic, "-p", "7", "--value", "x")
	c.fails(t, 2, "unknown flag: --frobnicate", nil, "topic", "list", "--frobnicate")
	c.fails(t, 2, "missing subcommand", nil, "group")
	c.fails(t, 2, "--offset: offset \"sideways\"", nil, "consume", topic, "--offset", "sideways")

	// Nothing listens: a clear error, fast.
	port := freePort(t)
	start := time.Now()
	c.fails(t, 1, fmt.Sprintf("moldau: cannot connect to any broker at 127.0.0.1:%d: connection refused", port), nil,
		"topic", "list", "--brokers", fmt.Sprintf("127.0.0.1:%d", port))
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("an unreachable broker took %v to report", d)
	}
}
