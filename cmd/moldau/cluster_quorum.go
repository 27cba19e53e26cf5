package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/uuid"
)

// moldau cluster quorum: kafka-metadata-quorum.sh's describe,
// add-controller and remove-controller (KIP-853). The requests go to the
// brokers (--brokers), which forward them to the active controller, or
// with --bootstrap-controller straight to the controllers' listeners: the
// first that answers DescribeCluster names the active controller, which
// gets the request.

func clusterQuorumCommand() *command {
	return &command{
		name:    "quorum",
		summary: "Describe the KRaft controller quorum; add and remove controllers (KIP-853).",
		subs:    []*command{quorumDescribeCommand(), quorumAddControllerCommand(), quorumRemoveControllerCommand()},
	}
}

const bootstrapControllerHelp = "comma-separated host:port list of controller listeners to send the request to, instead of --brokers"

func quorumDescribeCommand() *command {
	return &command{
		name: "describe", maxArgs: 0, client: true,
		summary: "Show the quorum's leader, epoch, high watermark, voters and observers.",
		long: `Shows the metadata quorum as kafka-metadata-quorum.sh describe --status
and --replication do, from DescribeQuorum (v2): the leader, its epoch and
the high watermark, the largest follower lag in offsets and in time; then
each voter and observer with its directory id, log end offset, lag behind
the leader, last fetch and last caught-up time, and each voter's
endpoints. A voter of a quorum started from controller.quorum.voters has
no directory id until it has told the leader (kraft.version 1). --status
prints only the first part, --replication only the second.`,
		example: `  moldau cluster quorum describe
  moldau cluster quorum describe --bootstrap-controller localhost:9093 --replication
  moldau cluster quorum describe --json | jq '.voters'`,
		setup: func(fs *pflag.FlagSet) runner {
			ctrls := fs.String("bootstrap-controller", "", bootstrapControllerHelp)
			status := fs.Bool("status", false, "only the leader, epoch, high watermark and lag")
			replication := fs.Bool("replication", false, "only the voters and observers")
			return func(ctx context.Context, e *env, args []string) error {
				if *status && *replication {
					return usageErrorf(e, "--status and --replication exclude each other")
				}
				req := kmsg.NewPtrDescribeQuorumRequest()
				t := kmsg.NewDescribeQuorumRequestTopic()
				t.Topic = metadataTopic
				t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
				req.Topics = append(req.Topics, t)
				r, err := e.quorumRequest(ctx, *ctrls, req)
				if err != nil {
					return fmt.Errorf("describe quorum: %w", err)
				}
				q, err := quorumFrom(r.(*kmsg.DescribeQuorumResponse))
				if err != nil {
					return fmt.Errorf("describe quorum: %w", err)
				}
				if e.json {
					return writeJSON(e.stdout, q)
				}
				return printQuorum(e.stdout, q, !*replication, !*status, e.now())
			}
		},
	}
}

func quorumAddControllerCommand() *command {
	return &command{
		name: "add-controller", maxArgs: 0, client: true, noJSON: true,
		summary: "Add a controller to the quorum's voters (AddRaftVoter).",
		long: `Adds a controller to the voters of the metadata quorum (AddRaftVoter,
KIP-853). The controller must be running and following the quorum's log
as an observer (started with controller.quorum.bootstrap.servers), caught
up with the leader. Name it with --id, --directory-id (the directory.id
in meta.properties of its metadata.log.dir) and one --endpoint per
controller listener, or with --config, the controller's server.properties,
as kafka-metadata-quorum.sh add-controller does: node.id, its advertised
controller listeners, and the directory id from the meta.properties in
its metadata.log.dir. Flags override what --config gives.

The leader answers once the new voter set is committed. It refuses while
another voter change is in flight or the controller has not caught up
(REQUEST_TIMED_OUT: try again), and when the id is a voter already
(DUPLICATE_VOTER).`,
		example: `  moldau cluster quorum add-controller --config /etc/moldau/controller4.properties
  moldau cluster quorum add-controller --id 4 --directory-id pbvuBlaTTwKRxS5NLJwRFQ --endpoint CONTROLLER://ctrl4:9093`,
		setup: func(fs *pflag.FlagSet) runner {
			ctrls := fs.String("bootstrap-controller", "", bootstrapControllerHelp)
			id := fs.Int32("id", -1, "the controller's node.id")
			dir := fs.String("directory-id", "", "the directory.id of the controller's metadata.log.dir (meta.properties)")
			endpoints := fs.StringArray("endpoint", nil, "a controller listener of the new controller, NAME://host:port (repeatable)")
			cfgPath := fs.String("config", "", "the new controller's server.properties, for its id, endpoints and directory id")
			return func(ctx context.Context, e *env, args []string) error {
				v, err := newVoterSpec(*cfgPath, *id, *dir, *endpoints)
				if err != nil {
					return usageErrorf(e, "%v", err)
				}
				req := kmsg.NewPtrAddRaftVoterRequest()
				req.VoterID, req.VoterDirectoryID = v.id, v.dir
				req.TimeoutMillis = int32(e.client.timeout / time.Millisecond)
				for _, l := range v.listeners {
					rl := kmsg.NewAddRaftVoterRequestListener()
					rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
					req.Listeners = append(req.Listeners, rl)
				}
				r, err := e.quorumRequest(ctx, *ctrls, req)
				if err == nil {
					resp := r.(*kmsg.AddRaftVoterResponse)
					err = withMessage(kerr.ErrorForCode(resp.ErrorCode), derefString(resp.ErrorMessage))
				}
				if err != nil {
					return fmt.Errorf("add controller %d: %w", v.id, err)
				}
				fmt.Fprintf(e.stdout, "Added controller %d with directory id %s and endpoints %s\n", v.id, uuid.UUID(v.dir), listenersString(v.listeners))
				return nil
			}
		},
	}
}

func quorumRemoveControllerCommand() *command {
	return &command{
		name: "remove-controller", maxArgs: 0, client: true, noJSON: true,
		summary: "Remove a controller from the quorum's voters (RemoveRaftVoter).",
		long: `Removes a voter from the metadata quorum (RemoveRaftVoter, KIP-853),
named by --id and --directory-id as DescribeQuorum shows them (a voter of
controller.quorum.voters that never told its directory id has none: give
AAAAAAAAAAAAAAAAAAAAAA). The leader answers once the new voter set is
committed; a leader that removes itself then hands its leadership on.
Stop the removed controller afterwards. VOTER_NOT_FOUND if no such voter;
REQUEST_TIMED_OUT while another voter change is in flight.`,
		example: `  moldau cluster quorum remove-controller --id 3 --directory-id pbvuBlaTTwKRxS5NLJwRFQ`,
		setup: func(fs *pflag.FlagSet) runner {
			ctrls := fs.String("bootstrap-controller", "", bootstrapControllerHelp)
			id := fs.Int32("id", -1, "the voter's node.id (required)")
			dir := fs.String("directory-id", "", "the voter's directory id (required)")
			return func(ctx context.Context, e *env, args []string) error {
				if *id < 0 || *dir == "" {
					return usageErrorf(e, "--id and --directory-id are required")
				}
				d, err := uuid.Parse(*dir)
				if err != nil {
					return usageErrorf(e, "--directory-id: %v", err)
				}
				req := kmsg.NewPtrRemoveRaftVoterRequest()
				req.VoterID, req.VoterDirectoryID = *id, d
				r, err := e.quorumRequest(ctx, *ctrls, req)
				if err == nil {
					resp := r.(*kmsg.RemoveRaftVoterResponse)
					err = withMessage(kerr.ErrorForCode(resp.ErrorCode), derefString(resp.ErrorMessage))
				}
				if err != nil {
					return fmt.Errorf("remove controller %d: %w", *id, err)
				}
				fmt.Fprintf(e.stdout, "Removed controller %d with directory id %s\n", *id, d)
				return nil
			}
		},
	}
}

// voterSpec is the controller add-controller names.
type voterSpec struct {
	id        int32
	dir       [16]byte
	listeners []config.Listener
}

// newVoterSpec reads the controller from its server.properties (cfgPath,
// optional) and the flags, which take precedence.
func newVoterSpec(cfgPath string, id int32, dir string, endpoints []string) (voterSpec, error) {
	var v voterSpec
	v.id = -1
	if cfgPath != "" {
		cfg, _, err := config.Load(cfgPath, nil)
		if err != nil {
			return v, fmt.Errorf("--config: %v", err)
		}
		if !cfg.IsController() {
			return v, fmt.Errorf("--config: %s is not a controller's (process.roles has no controller)", cfgPath)
		}
		v.id, v.listeners = cfg.NodeID, cfg.AdvertisedControllerListeners
		d, err := metaDirectoryID(cfg.MetadataLogDir)
		if err == nil {
			v.dir = d
		} else if dir == "" {
			return v, fmt.Errorf("--config: the directory id: %v (start the controller once, or give --directory-id)", err)
		}
	}
	if id >= 0 {
		v.id = id
	}
	if dir != "" {
		d, err := uuid.Parse(dir)
		if err != nil {
			return v, fmt.Errorf("--directory-id: %v", err)
		}
		v.dir = d
	}
	if len(endpoints) > 0 {
		v.listeners = nil
		for _, s := range endpoints {
			l, err := parseEndpoint(s)
			if err != nil {
				return v, err
			}
			v.listeners = append(v.listeners, l)
		}
	}
	switch {
	case v.id < 0:
		return v, errors.New("--id (or --config) is required")
	case v.dir == [16]byte{}:
		return v, errors.New("--directory-id (or --config with a formatted metadata.log.dir) is required")
	case len(v.listeners) == 0:
		return v, errors.New("--endpoint (or --config) is required")
	}
	for _, l := range v.listeners {
		if l.Host == "" || l.Port <= 0 {
			return v, fmt.Errorf("endpoint %s needs a host and a port", l)
		}
	}
	return v, nil
}

// metaDirectoryID reads the directory.id of dir's meta.properties.
func metaDirectoryID(dir string) (uuid.UUID, error) {
	path := filepath.Join(dir, "meta.properties")
	b, err := os.ReadFile(path)
	if err != nil {
		return uuid.UUID{}, err
	}
	props, err := config.ParseProperties(string(b))
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("%s: %v", path, err)
	}
	for _, p := range props {
		if p.Key == "directory.id" {
			return uuid.Parse(p.Value)
		}
	}
	return uuid.UUID{}, fmt.Errorf("%s has no directory.id", path)
}

// parseEndpoint parses NAME://host:port.
func parseEndpoint(s string) (config.Listener, error) {
	name, addr, ok := strings.Cut(s, "://")
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if !ok || name == "" || err != nil || perr != nil || p <= 0 || p > 65535 {
		return config.Listener{}, fmt.Errorf("--endpoint %q is not NAME://host:port", s)
	}
	return config.Listener{Name: strings.ToUpper(name), Host: host, Port: p}, nil
}

func listenersString(ls []config.Listener) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.String())
	}
	return strings.Join(out, ",")
}

// quorumRequest sends req through the brokers, or with ctrls (the
// --bootstrap-controller list) to the active controller.
func (e *env) quorumRequest(ctx context.Context, ctrls string, req kmsg.Request) (kmsg.Response, error) {
	if strings.TrimSpace(ctrls) == "" {
		var resp kmsg.Response
		err := e.withAdmin(ctx, func(rctx context.Context, _ *kadm.Client, cl *kgo.Client) error {
			var err error
			resp, err = cl.Request(rctx, req)
			return err
		})
		return resp, err
	}
	rctx, cancel := e.requestCtx(ctx)
	defer cancel()
	var servers []string
	for _, s := range strings.Split(ctrls, ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	var lastErr error
	for _, s := range servers {
		active, err := e.activeController(rctx, s)
		if err != nil {
			lastErr = fmt.Errorf("%s: %w", s, err)
			continue
		}
		return e.controllerRoundTrip(rctx, active, req)
	}
	return nil, fmt.Errorf("no controller at %s named the active controller: %w", ctrls, lastErr)
}

// activeController asks the controller at addr (DescribeCluster with the
// controller endpoint type, KIP-919) for the active controller's address.
func (e *env) activeController(ctx context.Context, addr string) (string, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2 // controllers
	r, err := e.controllerRoundTrip(ctx, addr, req)
	if err != nil {
		return "", err
	}
	resp := r.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return "", withMessage(err, derefString(resp.ErrorMessage))
	}
	for _, b := range resp.Brokers {
		if b.NodeID == resp.ControllerID {
			return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), nil
		}
	}
	return "", fmt.Errorf("no active controller (controller id %d)", resp.ControllerID)
}

// controllerRoundTrip sends req to the controller listener at addr.
func (e *env) controllerRoundTrip(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	security, err := commandConfigOpts(e.client.commandConfig)
	if err != nil {
		return nil, usageErrorf(e, "%v", err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("moldau-cli"),
		kgo.DialTimeout(e.client.dialTimeout), kgo.RetryTimeout(e.client.timeout)}, security...)...)
	if err != nil {
		return nil, usageErrorf(e, "%v", err)
	}
	defer cl.Close()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// printQuorum prints describe's two tables: the status and the
// replicas.
func printQuorum(w io.Writer, q *quorumInfo, status, replicas bool, now time.Time) error {
	if status {
		t := newTable(w)
		t.row("LEADER", q.LeaderID)
		t.row("EPOCH", q.LeaderEpoch)
		t.row("HIGH-WATERMARK", q.HighWatermark)
		t.row("MAX-FOLLOWER-LAG", q.MaxFollowerLag)
		t.row("MAX-FOLLOWER-LAG-TIME", lagTime(q, now))
		t.row("VOTERS", len(q.Voters))
		t.row("OBSERVERS", len(q.Observers))
		if err := t.flush(); err != nil || !replicas {
			return err
		}
		fmt.Fprintln(w)
	}
	t := newTable(w, "NODE", "DIRECTORY-ID", "ROLE", "LOG-END-OFFSET", "LAG", "LAST-FETCH", "LAST-CAUGHT-UP", "ENDPOINTS")
	for _, r := range append(append([]quorumReplica{}, q.Voters...), q.Observers...) {
		t.row(r.ReplicaID, orDash(r.DirectoryID), r.Role, dash(r.LogEndOffset), dash(r.Lag),
			ago(r.LastFetchTimestamp, now), ago(r.LastCaughtUpTimestamp, now), orDash(strings.Join(r.Endpoints, ",")))
	}
	return t.flush()
}

// lagTime is kafka-metadata-quorum.sh's MaxFollowerLagTimeMs: how long
// ago the voter furthest behind was last caught up.
func lagTime(q *quorumInfo, now time.Time) string {
	oldest := int64(-1)
	for _, v := range q.Voters {
		if v.ReplicaID != q.LeaderID && v.LastCaughtUpTimestamp >= 0 && (oldest < 0 || v.LastCaughtUpTimestamp < oldest) {
			oldest = v.LastCaughtUpTimestamp
		}
	}
	if oldest < 0 {
		return "-"
	}
	return max(0, now.Sub(time.UnixMilli(oldest))).Round(time.Millisecond).String()
}
