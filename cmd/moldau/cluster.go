package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
)

// metadataTopic is the KRaft metadata log DescribeQuorum describes.
const metadataTopic = "__cluster_metadata"

func clusterCommand() *command {
	return &command{
		name:    "cluster",
		summary: "Show the cluster (brokers, controller, API versions, quorum), elect leaders, move partitions, add and remove controllers.",
		subs:    []*command{clusterInfoCommand(), clusterElectCommand(), clusterReassignCommand(), clusterQuorumCommand()},
	}
}

func clusterInfoCommand() *command {
	return &command{
		name: "info", maxArgs: 0, client: true,
		summary: "Show brokers, controller, cluster ID, API versions and the controller quorum.",
		long: `Shows the cluster ID, the active controller and every broker (ID,
host:port, rack) from Metadata; the API versions each broker serves
(ApiVersions: one table when all brokers agree, else a column per broker);
and the controller quorum from DescribeQuorum: the leader, its epoch and
high watermark, and each voter and observer with its log end offset and
lag behind the leader. A cluster that does not serve DescribeQuorum (no
KRaft metadata quorum) says so in the quorum section; with --quorum, only
the quorum is shown and its absence is an error.`,
		example: `  moldau cluster info
  moldau cluster info --quorum
  moldau cluster info --json | jq '.brokers'`,
		setup: func(fs *pflag.FlagSet) runner {
			quorumOnly := fs.Bool("quorum", false, "show only the controller quorum")
			noAPIs := fs.Bool("no-api-versions", false, "leave out the API versions")
			return func(ctx context.Context, e *env, args []string) error {
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
					info, err := gatherClusterInfo(rctx, adm, cl, *quorumOnly, !*noAPIs && !*quorumOnly)
					if err != nil {
						return err
					}
					if *quorumOnly && info.Quorum == nil {
						return fmt.Errorf("controller quorum: %s", info.QuorumError)
					}
					if e.json {
						return writeJSON(e.stdout, info)
					}
					return printClusterInfo(e.stdout, info, !*quorumOnly, e.now())
				})
			}
		},
	}
}

type clusterInfo struct {
	ClusterID   string              `json:"cluster_id"`
	Controller  int32               `json:"controller"`
	Brokers     []brokerInfo        `json:"brokers"`
	APIVersions []brokerAPIVersions `json:"api_versions"`
	Quorum      *quorumInfo         `json:"quorum"`
	QuorumError string              `json:"quorum_error,omitempty"`
}

type brokerInfo struct {
	NodeID int32   `json:"node_id"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack"`
}

type brokerAPIVersions struct {
	Broker int32        `json:"broker"`
	APIs   []apiVersion `json:"apis"`
	Error  string       `json:"error,omitempty"`
}

type apiVersion struct {
	Key  int16  `json:"key"`
	Name string `json:"name"`
	Min  int16  `json:"min"`
	Max  int16  `json:"max"`
}

type quorumInfo struct {
	LeaderID       int32           `json:"leader_id"`
	LeaderEpoch    int32           `json:"leader_epoch"`
	HighWatermark  int64           `json:"high_watermark"`
	MaxFollowerLag int64           `json:"max_follower_lag"`
	Voters         []quorumReplica `json:"voters"`
	Observers      []quorumReplica `json:"observers"`
}

type quorumReplica struct {
	ReplicaID             int32  `json:"replica_id"`
	DirectoryID           string `json:"directory_id,omitempty"` // DescribeQuorum v2; none for a voter of controller.quorum.voters
	Role                  string `json:"role"`                   // Leader, Follower or Observer
	LogEndOffset          int64  `json:"log_end_offset"`
	Lag                   int64  `json:"lag"`                      // the leader's log end offset minus this one's
	LastFetchTimestamp    int64  `json:"last_fetch_timestamp"`     // Unix ms, -1 unknown
	LastCaughtUpTimestamp int64  `json:"last_caught_up_timestamp"` // Unix ms, -1 unknown
	// Endpoints are a voter's listeners, NAME://host:port (v2).
	Endpoints []string `json:"endpoints,omitempty"`
}

func gatherClusterInfo(ctx context.Context, adm *kadm.Client, cl *kgo.Client, quorumOnly, apis bool) (*clusterInfo, error) {
	info := &clusterInfo{Brokers: []brokerInfo{}, APIVersions: []brokerAPIVersions{}}
	if !quorumOnly {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return nil, firstShardError(err)
		}
		info.ClusterID, info.Controller = md.Cluster, md.Controller
		for _, b := range md.Brokers {
			info.Brokers = append(info.Brokers, brokerInfo{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
		}
		sort.Slice(info.Brokers, func(i, j int) bool { return info.Brokers[i].NodeID < info.Brokers[j].NodeID })
	}
	if apis {
		vs, err := adm.ApiVersions(ctx)
		if err != nil {
			return nil, firstShardError(err)
		}
		for _, v := range vs.Sorted() {
			bv := brokerAPIVersions{Broker: v.NodeID, APIs: []apiVersion{}}
			if v.Err != nil {
				bv.Error = errorMessage(v.Err)
			} else {
				v.EachKeySorted(func(key, min, max int16) {
					bv.APIs = append(bv.APIs, apiVersion{Key: key, Name: kmsg.NameForKey(key), Min: min, Max: max})
				})
			}
			info.APIVersions = append(info.APIVersions, bv)
		}
	}
	q, err := describeQuorum(ctx, cl)
	if err != nil {
		info.QuorumError = errorMessage(err)
	}
	info.Quorum = q
	return info, nil
}

// describeQuorum asks the controller for the metadata quorum's state.
func describeQuorum(ctx context.Context, cl *kgo.Client) (*quorumInfo, error) {
	ok, err := supportsAPI(ctx, cl, kmsg.DescribeQuorum.Int16())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("not supported by this cluster (it does not serve DescribeQuorum)")
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = metadataTopic
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	return quorumFrom(resp)
}

// quorumFrom reads a DescribeQuorum response.
func quorumFrom(resp *kmsg.DescribeQuorumResponse) (*quorumInfo, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, withMessage(err, derefString(resp.ErrorMessage))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("DescribeQuorum answered without the %s-0 partition", metadataTopic)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return nil, withMessage(err, derefString(rp.ErrorMessage))
	}
	q := &quorumInfo{LeaderID: rp.LeaderID, LeaderEpoch: rp.LeaderEpoch, HighWatermark: rp.HighWatermark,
		Voters: []quorumReplica{}, Observers: []quorumReplica{}}
	leaderLEO := int64(-1)
	for _, v := range rp.CurrentVoters {
		if v.ReplicaID == rp.LeaderID {
			leaderLEO = v.LogEndOffset
		}
	}
	endpoints := map[int32][]string{}
	for _, n := range resp.Nodes {
		for _, l := range n.Listeners {
			endpoints[n.NodeID] = append(endpoints[n.NodeID], l.Name+"://"+net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
		}
	}
	conv := func(s kmsg.DescribeQuorumResponseTopicPartitionReplicaState, role string) quorumReplica {
		r := quorumReplica{ReplicaID: s.ReplicaID, Role: role, LogEndOffset: s.LogEndOffset, Lag: -1,
			LastFetchTimestamp: s.LastFetchTimestamp, LastCaughtUpTimestamp: s.LastCaughtUpTimestamp}
		if s.ReplicaDirectoryID != ([16]byte{}) {
			r.DirectoryID = uuid.UUID(s.ReplicaDirectoryID).String()
		}
		if role != "Observer" {
			r.Endpoints = endpoints[s.ReplicaID]
		}
		if leaderLEO >= 0 && s.LogEndOffset >= 0 {
			r.Lag = max(0, leaderLEO-s.LogEndOffset)
		}
		return r
	}
	for _, v := range rp.CurrentVoters {
		role := "Follower"
		if v.ReplicaID == rp.LeaderID {
			role = "Leader"
		}
		r := conv(v, role)
		q.MaxFollowerLag = max(q.MaxFollowerLag, r.Lag)
		q.Voters = append(q.Voters, r)
	}
	for _, o := range rp.Observers {
		q.Observers = append(q.Observers, conv(o, "Observer"))
	}
	return q, nil
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func printClusterInfo(w io.Writer, info *clusterInfo, all bool, now time.Time) error {
	if all {
		section(w, "CLUSTER")
		t := newTable(w)
		t.row("ID", orDash(info.ClusterID))
		t.row("CONTROLLER", dash(int64(info.Controller)))
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		section(w, "BROKERS")
		t = newTable(w, "ID", "HOST", "PORT", "RACK")
		for _, b := range info.Brokers {
			id := fmt.Sprint(b.NodeID)
			if b.NodeID == info.Controller {
				id += "*"
			}
			rack := "-"
			if b.Rack != nil {
				rack = *b.Rack
			}
			t.row(id, b.Host, b.Port, rack)
		}
		if err := t.flush(); err != nil {
			return err
		}
		if len(info.APIVersions) > 0 {
			fmt.Fprintln(w)
			if err := printAPIVersions(w, info.APIVersions); err != nil {
				return err
			}
		}
		fmt.Fprintln(w)
	}
	section(w, "QUORUM")
	if info.Quorum == nil {
		fmt.Fprintf(w, "%s\n", info.QuorumError)
		return nil
	}
	q := info.Quorum
	t := newTable(w)
	t.row("LEADER", q.LeaderID)
	t.row("EPOCH", q.LeaderEpoch)
	t.row("HIGH-WATERMARK", q.HighWatermark)
	t.row("MAX-FOLLOWER-LAG", q.MaxFollowerLag)
	t.row("VOTERS", len(q.Voters))
	t.row("OBSERVERS", len(q.Observers))
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, "NODE", "ROLE", "LOG-END-OFFSET", "LAG", "LAST-FETCH", "LAST-CAUGHT-UP")
	for _, r := range append(append([]quorumReplica{}, q.Voters...), q.Observers...) {
		t.row(r.ReplicaID, r.Role, dash(r.LogEndOffset), dash(r.Lag), ago(r.LastFetchTimestamp, now), ago(r.LastCaughtUpTimestamp, now))
	}
	return t.flush()
}

// ago prints a Unix ms timestamp as a duration before now.
func ago(ms int64, now time.Time) string {
	if ms < 0 {
		return "-"
	}
	d := now.Sub(time.UnixMilli(ms))
	if d < 0 {
		d = 0
	}
	return d.Round(time.Millisecond).String() + " ago"
}

// printAPIVersions prints one table if every broker serves the same
// versions, else one column per broker.
func printAPIVersions(w io.Writer, vs []brokerAPIVersions) error {
	section(w, "API VERSIONS")
	same := true
	for _, v := range vs[1:] {
		if v.Error != "" || fmt.Sprint(v.APIs) != fmt.Sprint(vs[0].APIs) {
			same = false
		}
	}
	if same && vs[0].Error == "" {
		t := newTable(w, "KEY", "API", "MIN", "MAX")
		for _, a := range vs[0].APIs {
			t.row(a.Key, a.Name, a.Min, a.Max)
		}
		return t.flush()
	}
	headers := []string{"KEY", "API"}
	keys := map[int16]string{}
	for _, v := range vs {
		headers = append(headers, fmt.Sprintf("BROKER-%d", v.Broker))
		for _, a := range v.APIs {
			keys[a.Key] = a.Name
		}
	}
	var sorted []int16
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t := newTable(w, headers...)
	for _, k := range sorted {
		cols := []any{k, keys[k]}
		for _, v := range vs {
			cell := "-"
			if v.Error != "" {
				cell = "error"
			}
			for _, a := range v.APIs {
				if a.Key == k {
					cell = fmt.Sprintf("%d-%d", a.Min, a.Max)
				}
			}
			cols = append(cols, cell)
		}
		t.row(cols...)
	}
	return t.flush()
}
