package raft

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// votersUpToDate reports whether node n's voter set holds every voter of
// ids with its directory id and with the endpoints the cluster's servers
// listen on now.
func (c *cluster) votersUpToDate(n *Node, ids ...int32) error {
	set := n.Voters()
	for _, id := range ids {
		v, ok := set.Get(id)
		switch {
		case !ok:
			return fmt.Errorf("node %d is not a voter", id)
		case v.DirectoryID != testDirectoryID(id):
			return fmt.Errorf("voter %d has directory %x", id, v.DirectoryID)
		case !sameEndpoints(v.Endpoints, endpointsOf(c.servers[id].addr())):
			return fmt.Errorf("voter %d has endpoints %v, listens on %s", id, v.Endpoints, c.servers[id].addr())
		}
	}
	return nil
}

func TestUpdateVoter(t *testing.T) {
	// A long election timeout: the error cases below name the epoch.
	c := newClusterOf(t, 3, func(cfg *Config) {
		cfg.UpdateVoterPeriod, cfg.ElectionTimeout = 200*time.Millisecond, 1500*time.Millisecond
	}, true)
	lid, epoch := c.leader(10 * time.Second)
	appendAndCommit(t, c.nodes[lid], epoch, "a")
	leader := c.nodes[lid]
	self := func(id int32) Voter {
		return Voter{ID: id, DirectoryID: testDirectoryID(id), Endpoints: endpointsOf(c.servers[id].addr()), MaxKRaftVersion: 1}
	}

	// kraft.version 0 (controller.quorum.voters, no VotersRecord): the
	// leader refuses and the voters do not ask.
	if err := retryChange(t, func(ctx context.Context) error { return leader.UpdateVoter(ctx, epoch, self(lid)) }); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("update at kraft.version 0: %v, want UNSUPPORTED_VERSION", err)
	}
	if v, _ := leader.Voters().Get(lid); v.DirectoryID != [16]byte{} {
		t.Fatalf("a static voter got directory %x", v.DirectoryID)
	}

	// The first change writes kraft.version 1; then each voter of the
	// static set (no directory id) asks the leader to add its own.
	c.addController(4)
	if err := retryChange(t, func(ctx context.Context) error { return leader.AddVoter(ctx, self(4)) }); err != nil {
		t.Fatalf("add voter 4: %v", err)
	}
	for id, n := range c.nodes {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to know every voter's directory id", id), func() bool {
			return c.votersUpToDate(n, 1, 2, 3, 4) == nil
		})
	}

	// Errors, in Kafka's order.
	var follower int32
	for id := int32(1); id <= 3 && follower == 0; id++ {
		if id != lid {
			follower = id
		}
	}
	noListener := self(follower)
	noListener.Endpoints[0].Name = "OTHER"
	badRange := self(follower)
	badRange.MinKRaftVersion, badRange.MaxKRaftVersion = 2, 3
	noDir := self(follower)
	noDir.DirectoryID = [16]byte{}
	otherDir := self(follower)
	otherDir.DirectoryID[3] = 0xff
	unknown := self(follower)
	unknown.ID = 9
	for _, tc := range []struct {
		name  string
		n     *Node
		epoch int32
		v     Voter
		want  error
	}{
		{"older epoch", leader, epoch - 1, self(follower), kerr.FencedLeaderEpoch},
		{"newer epoch", leader, epoch + 1, self(follower), kerr.UnknownLeaderEpoch},
		{"not the leader", c.nodes[follower], epoch, self(follower), kerr.NotLeaderForPartition},
		{"no directory id", leader, epoch, noDir, kerr.InvalidRequest},
		{"no controller listener", leader, epoch, noListener, kerr.InvalidRequest},
		{"kraft.version unsupported", leader, epoch, badRange, kerr.InvalidRequest},
		{"unknown voter", leader, epoch, unknown, kerr.VoterNotFound},
		{"other directory id", leader, epoch, otherDir, kerr.VoterNotFound},
	} {
		if err := tc.n.UpdateVoter(context.Background(), tc.epoch, tc.v); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	other := "another-cluster"
	req.ClusterID, req.CurrentLeaderEpoch, req.VoterID, req.VoterDirectoryID = &other, epoch, follower, testDirectoryID(follower)
	resp := c.nodes[follower].HandleUpdateRaftVoter(context.Background(), req)
	if resp.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Errorf("another cluster id: error %d, want INCONSISTENT_CLUSTER_ID", resp.ErrorCode)
	}
	if resp.CurrentLeader.LeaderID != lid || resp.CurrentLeader.LeaderEpoch != epoch || resp.CurrentLeader.Port == 0 {
		t.Errorf("current leader %+v, want %d at epoch %d with its endpoint", resp.CurrentLeader, lid, epoch)
	}

	// A follower restarted on another port asks the leader (found
	// through the other voters: the leader cannot reach it) to write its
	// new endpoint; the quorum then reaches it there.
	c.stop(follower)
	old := c.servers[follower].addr()
	c.servers[follower] = newTestServer(t)
	c.start(follower)
	waitFor(t, 10*time.Second, fmt.Sprintf("voter %d's new endpoint (was %s) on every node", follower, old), func() bool {
		for _, n := range c.nodes {
			if c.votersUpToDate(n, follower) != nil {
				return false
			}
		}
		return true
	})
	appendAndCommit(t, leader, epoch, "b")
	c.waitState([]string{"a", "b"})
}
