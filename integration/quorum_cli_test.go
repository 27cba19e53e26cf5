package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// quorumCLI runs `moldau cluster quorum ARGS...` and returns its output.
func quorumCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(moldauBinary(t), append([]string{"cluster", "quorum"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("moldau cluster quorum %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// cliQuorum is what `moldau cluster quorum describe --json` prints.
type cliQuorum struct {
	LeaderID      int32 `json:"leader_id"`
	HighWatermark int64 `json:"high_watermark"`
	Voters        []struct {
		ReplicaID    int32    `json:"replica_id"`
		DirectoryID  string   `json:"directory_id"`
		LogEndOffset int64    `json:"log_end_offset"`
		Endpoints    []string `json:"endpoints"`
	} `json:"voters"`
	Observers []struct {
		ReplicaID    int32 `json:"replica_id"`
		LogEndOffset int64 `json:"log_end_offset"`
	} `json:"observers"`
}

func describeQuorumCLI(t *testing.T, args ...string) (cliQuorum, error) {
	var q cliQuorum
	out, err := quorumCLI(t, append([]string{"describe", "--json", "--timeout", "10s"}, args...)...)
	if err != nil {
		return q, err
	}
	return q, json.Unmarshal([]byte(out), &q)
}

func (q cliQuorum) voterIDs() []int32 {
	var ids []int32
	for _, v := range q.Voters {
		ids = append(ids, v.ReplicaID)
	}
	slices.Sort(ids)
	return ids
}

// quorumNodeEndpoint is the controller endpoint DescribeQuorum v2 lists
// for voter id.
func quorumNodeEndpoint(cl *kgo.Client, id int32) (string, error) {
	resp, err := describeQuorumResponse(cl)
	if err != nil {
		return "", err
	}
	for _, n := range resp.Nodes {
		if n.NodeID == id && len(n.Listeners) > 0 {
			return fmt.Sprintf("%s:%d", n.Listeners[0].Host, n.Listeners[0].Port), nil
		}
	}
	return "", fmt.Errorf("DescribeQuorum lists no endpoint for voter %d (nodes %+v)", id, resp.Nodes)
}

// TestQuorumCLI replaces a controller with `moldau cluster quorum
// add-controller` and `remove-controller` run as processes (through a
// controller listener and through the brokers; the removed controller,
// still running, is then described as an observer), then restarts a
// controller on another controller port: it tells the leader
// (UpdateRaftVoter) and DescribeQuorum shows the new endpoint, with the
// controller caught up.
func TestQuorumCLI(t *testing.T) {
	// A voter checks its endpoints every 3 x 500 ms.
	c := startReplaceClusterWith(t, "controller.quorum.fetch.timeout.ms=500")
	seeds := strings.Join([]string{c.brokers[0].seed(), c.brokers[1].seed()}, ",")
	ctrlSeed := fmt.Sprintf("127.0.0.1:%d", c.ctrls[0].ctrl)
	cl := newClient(t, seeds)

	q, err := describeQuorumCLI(t, "--brokers", seeds)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.voterIDs(); !slices.Equal(got, []int32{1, 2, 3}) || q.LeaderID < 1 || q.LeaderID > 3 {
		t.Fatalf("describe: voters %v, leader %d", got, q.LeaderID)
	}
	if out, err := quorumCLI(t, "describe", "--bootstrap-controller", ctrlSeed); err != nil || !strings.Contains(out, "DIRECTORY-ID") {
		t.Fatalf("describe through a controller: %v\n%s", err, out)
	}

	// A fourth controller follows as an observer, then is added.
	const newID = 7
	c.start(newID)
	c.procs[newID].waitStarted(t)
	meta, err := os.ReadFile(filepath.Join(c.ctrls[3].dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	_, dirID, _ := strings.Cut(string(meta), "directory.id=")
	dirID, _, _ = strings.Cut(dirID, "\n")
	endpoint := fmt.Sprintf("CONTROLLER://127.0.0.1:%d", c.ctrls[3].ctrl)
	eventually(t, 30*time.Second, func() error {
		_, err := quorumCLI(t, "add-controller", "--bootstrap-controller", ctrlSeed, "--timeout", "10s",
			"--id", fmt.Sprint(newID), "--directory-id", dirID, "--endpoint", endpoint)
		if err != nil && strings.Contains(err.Error(), "DUPLICATE_VOTER") {
			return nil // added by an earlier try whose answer was lost
		}
		return err // REQUEST_TIMED_OUT while it catches up: again
	})
	eventually(t, 30*time.Second, func() error {
		q, err := describeQuorumCLI(t, "--brokers", seeds)
		if err != nil {
			return err
		}
		if got := q.voterIDs(); !slices.Equal(got, []int32{1, 2, 3, newID}) {
			return fmt.Errorf("voters %v", got)
		}
		for _, v := range q.Voters {
			if v.ReplicaID == newID && (v.DirectoryID != dirID || !slices.Equal(v.Endpoints, []string{endpoint})) {
				return fmt.Errorf("voter %d: directory %q, endpoints %v", newID, v.DirectoryID, v.Endpoints)
			}
		}
		return nil
	})

	// Remove a follower among the first three (through the brokers).
	q, err = describeQuorumCLI(t, "--brokers", seeds)
	if err != nil {
		t.Fatal(err)
	}
	var removed, moved int32
	for _, id := range []int32{1, 2, 3} {
		switch {
		case id == q.LeaderID:
		case removed == 0:
			removed = id
		default:
			moved = id
		}
	}
	// Its directory id as describe shows it (none until it has told the
	// leader: the zero id, which Moldau matches to any).
	removedDir := "AAAAAAAAAAAAAAAAAAAAAA"
	for _, v := range q.Voters {
		if v.ReplicaID == removed && v.DirectoryID != "" {
			removedDir = v.DirectoryID
		}
	}
	eventually(t, 30*time.Second, func() error {
		_, err := quorumCLI(t, "remove-controller", "--brokers", seeds, "--timeout", "10s",
			"--id", fmt.Sprint(removed), "--directory-id", removedDir)
		if err != nil && strings.Contains(err.Error(), "VOTER_NOT_FOUND") {
			return nil // removed by an earlier try whose answer was lost
		}
		return err
	})
	want := slices.DeleteFunc([]int32{1, 2, 3, newID}, func(id int32) bool { return id == removed })
	waitQuorumVoters(t, cl, want, -1)
	// Still running, the removed controller goes on as an observer
	// (KIP-853): describe lists it among the observers, fetching.
	removedAt := time.Now()
	eventually(t, 30*time.Second, func() error {
		q, err := describeQuorumCLI(t, "--brokers", seeds)
		if err != nil {
			return err
		}
		if slices.Contains(q.voterIDs(), removed) {
			return fmt.Errorf("voters %v", q.voterIDs())
		}
		for _, o := range q.Observers {
			if o.ReplicaID == removed && o.LogEndOffset > 0 {
				return nil
			}
		}
		return fmt.Errorf("controller %d is not among the observers %+v", removed, q.Observers)
	})
	t.Logf("removed controller %d listed as an observer %v after its removal", removed, time.Since(removedAt).Round(time.Millisecond))
	c.procs[removed].stop(t)

	// Restart another follower on a new controller port: the leader
	// cannot reach it at the old one until it writes the new endpoint.
	c.procs[moved].stop(t)
	c.ctrls[moved-1].ctrl = freePort(t)
	c.start(moved)
	c.procs[moved].waitStarted(t)
	newAddr := fmt.Sprintf("127.0.0.1:%d", c.ctrls[moved-1].ctrl)
	restarted := time.Now()
	eventually(t, 30*time.Second, func() error {
		got, err := quorumNodeEndpoint(cl, moved)
		if err != nil {
			return err
		}
		if got != newAddr {
			return fmt.Errorf("voter %d at %s, restarted on %s", moved, got, newAddr)
		}
		return nil
	})
	waitQuorumVoters(t, cl, want, moved) // and the leader reaches it there
	t.Logf("controller %d restarted on %s: in the voter set and caught up %v later", moved, newAddr, time.Since(restarted))
	if _, err := describeQuorumCLI(t, "--bootstrap-controller", newAddr); err != nil {
		t.Fatalf("describe through the moved controller: %v", err)
	}
}
