// The group commands against a Moldau broker; MOLDAU_CLI_TEST_BROKERS runs
// them against another cluster (they were checked against franz-go's kfake
// that way before Moldau had consumer groups).

package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

type cliGroup struct {
	Group    string `json:"group"`
	State    string `json:"state"`
	Type     string `json:"type"`
	TotalLag int64  `json:"total_lag"`
	Members  []struct {
		MemberID string `json:"member_id"`
		Assigned []struct {
			Topic      string  `json:"topic"`
			Partitions []int32 `json:"partitions"`
		} `json:"assigned"`
	} `json:"members"`
	Partitions []struct {
		Topic           string `json:"topic"`
		Partition       int32  `json:"partition"`
		CommittedOffset int64  `json:"committed_offset"`
		LogEndOffset    int64  `json:"log_end_offset"`
		Lag             int64  `json:"lag"`
		MemberID        string `json:"member_id"`
	} `json:"partitions"`
}

func (c *cliCluster) describeGroup(t *testing.T, group string) cliGroup {
	t.Helper()
	var gs []cliGroup
	c.okJSON(t, &gs, nil, "group", "describe", group)
	if len(gs) != 1 || gs[0].Group != group {
		t.Fatalf("group describe: %+v", gs)
	}
	return gs[0]
}

func (g cliGroup) committedSum() int64 {
	var n int64
	for _, p := range g.Partitions {
		if p.CommittedOffset > 0 {
			n += p.CommittedOffset
		}
	}
	return n
}

type cliSeek struct {
	Group      string `json:"group"`
	DryRun     bool   `json:"dry_run"`
	Partitions []struct {
		Topic         string  `json:"topic"`
		Partition     int32   `json:"partition"`
		CurrentOffset int64   `json:"current_offset"`
		NewOffset     int64   `json:"new_offset"`
		Error         *string `json:"error"`
	} `json:"partitions"`
}

// TestCLIGroups: consume part of a topic as a group, describe its lag,
// seek it back to the start (dry run first), read everything again, and
// see that an active group cannot be moved or deleted.
func TestCLIGroups(t *testing.T) {
	c := newCLICluster(t)
	topic, group := uniqueTopic("cli-group"), uniqueTopic("cli-billing")
	c.ok(t, nil, "topic", "create", topic, "-p", "3")
	var in strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&in, "k%d:%d\n", i%10, i)
	}
	c.ok(t, []byte(in.String()), "produce", topic, "-K", ":")

	// A partial consume commits what it printed.
	out := c.ok(t, nil, "consume", topic, "--group", group, "--num", "400")
	if n := strings.Count(out, "\n"); n != 400 {
		t.Fatalf("consumed %d records, want 400", n)
	}
	// The group is empty now: it shows the partitions it committed, as
	// kafka-consumer-groups does, each with its lag.
	g := c.describeGroup(t, group)
	if g.State != "Empty" || len(g.Members) != 0 || g.committedSum() != 400 || g.TotalLag <= 0 {
		t.Fatalf("after consuming 400 of 1000: %+v", g)
	}
	var lag int64
	for _, p := range g.Partitions {
		if p.Lag != p.LogEndOffset-p.CommittedOffset {
			t.Errorf("partition %+v: lag is not end - committed", p)
		}
		lag += p.Lag
	}
	if lag != g.TotalLag {
		t.Errorf("total lag %d, partitions add up to %d", g.TotalLag, lag)
	}
	partialLag := g.TotalLag
	var listed []struct {
		Group string `json:"group"`
		State string `json:"state"`
	}
	c.okJSON(t, &listed, nil, "group", "list")
	found := false
	for _, l := range listed {
		found = found || l.Group == group
	}
	if !found {
		t.Errorf("group list lacks %s: %+v", group, listed)
	}
	if text := c.ok(t, nil, "group", "describe", group); !strings.Contains(text, "TOTAL-LAG") || !strings.Contains(text, fmt.Sprint(partialLag)) {
		t.Errorf("group describe:\n%s", text)
	}

	// Seek: the dry run changes nothing.
	var plan cliSeek
	c.okJSON(t, &plan, nil, "group", "seek", group, "--to", "start", "--topics", topic, "--dry-run")
	if !plan.DryRun || len(plan.Partitions) != 3 {
		t.Fatalf("dry run: %+v", plan)
	}
	for _, p := range plan.Partitions {
		if p.NewOffset != 0 {
			t.Errorf("dry run plan: %+v", p)
		}
	}
	if g := c.describeGroup(t, group); g.TotalLag != partialLag || g.committedSum() != 400 {
		t.Errorf("lag %d after a dry run, want %d", g.TotalLag, partialLag)
	}
	c.okJSON(t, &plan, nil, "group", "seek", group, "--to", "start", "--topics", topic)
	if g := c.describeGroup(t, group); g.TotalLag != 1000 || g.committedSum() != 0 {
		t.Errorf("after seek to start: %+v", g)
	}

	// Everything again, to the end.
	out = c.ok(t, nil, "consume", topic, "--group", group, "--exit-at-end")
	if n := strings.Count(out, "\n"); n != 1000 {
		t.Errorf("consumed %d records after seeking to start, want 1000", n)
	}
	if g := c.describeGroup(t, group); g.TotalLag != 0 || g.committedSum() != 1000 {
		t.Errorf("after reading to the end: %+v", g)
	}
	// Exact offsets, and -N.
	c.ok(t, nil, "group", "seek", group, "--to", topic+":0=5,"+topic+":1=0")
	g = c.describeGroup(t, group)
	for _, p := range g.Partitions {
		if (p.Partition == 0 && p.CommittedOffset != 5) || (p.Partition == 1 && p.CommittedOffset != 0) {
			t.Errorf("after exact seek: %+v", p)
		}
	}
	c.ok(t, nil, "group", "seek", group, "--to", "-10")
	if g := c.describeGroup(t, group); g.TotalLag != 30 {
		t.Errorf("lag %d after seeking to -10 on 3 partitions, want 30", g.TotalLag)
	}

	checkActiveGroup(t, c, topic, group)

	var st []cliStatus
	c.okJSON(t, &st, nil, "group", "delete", group)
	if len(st) != 1 || st[0].Error != nil {
		t.Fatalf("delete: %+v", st)
	}
	c.fails(t, 1, fmt.Sprintf("group %q does not exist", group), nil, "group", "describe", group)
}

// checkActiveGroup runs a member in the background: while it is in the
// group, seek and delete are refused; Ctrl-C stops it cleanly, committed.
func checkActiveGroup(t *testing.T, c *cliCluster, topic, group string) {
	t.Helper()
	cmd := exec.Command(moldauBinary(t), "consume", topic, "--group", group)
	cmd.Env = append(cmd.Environ(), "MOLDAU_BROKERS="+c.brokers)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	// It joins, reads the 30 records left and commits them (every 5s).
	eventually(t, 30*time.Second, func() error {
		if g := c.describeGroup(t, group); len(g.Members) != 1 || g.State != "Stable" || g.TotalLag != 0 {
			return fmt.Errorf("group %+v", g)
		}
		return nil
	})
	c.fails(t, 1, "active member", nil, "group", "seek", group, "--to", "start")
	c.fails(t, 1, "NON_EMPTY_GROUP", nil, "group", "delete", group)
	cmd.Process.Signal(syscall.SIGINT) // Ctrl-C: a clean stop, exit 0
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("consumer exited with %v after SIGINT", err)
		}
		done <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("consumer did not stop after SIGINT")
	}
	if g := c.describeGroup(t, group); g.TotalLag != 0 || len(g.Members) != 0 {
		t.Errorf("after the member read to the end and left: %+v", g)
	}

}
