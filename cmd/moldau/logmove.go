package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logMove is one replica to move: partition, broker, target log dir.
type logMove struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Broker    int32  `json:"broker"`
	Dir       string `json:"dir"`
}

func logMoveCommand() *command {
	return &command{
		name: "move", maxArgs: 0, client: true,
		summary: "Move replicas between the log dirs of a broker (AlterReplicaLogDirs).",
		long: `Moves a partition's replica on one broker to another of that broker's
log dirs (AlterReplicaLogDirs, KIP-113), as kafka-reassign-partitions.sh
does for a plan with "log_dirs". The broker copies the log into a
"<topic>-<partition>.<id>-future" dir in the target while the replica keeps
serving, then swaps the two; DescribeLogDirs shows the future replica and
its lag meanwhile. The command waits until DescribeLogDirs shows the
partition only in the target dir (unless --no-wait); on a terminal it
prints the future replicas' lag every 5 seconds.

--plan FILE takes kafka-reassign-partitions.sh's JSON instead: for each
partition, the replica on broker replicas[i] goes to log_dirs[i] ("any":
stays where it is). The replicas must already be on those brokers (move
replicas between brokers with "moldau cluster reassign" first).

A broker that does not host the partition yet answers REPLICA_NOT_AVAILABLE
and remembers the dir for when it creates the log; the command reports it.
DIR is an absolute path, as the broker lists it in DescribeLogDirs.`,
		example: `  moldau log move --topic orders --partition 0 --broker 1 --to /data2/kafka
  moldau log move --plan plan.json`,
		setup: func(fs *pflag.FlagSet) runner {
			topic := fs.String("topic", "", "the partition's topic")
			partition := fs.Int32("partition", -1, "the partition")
			broker := fs.Int32("broker", -1, "the broker whose replica moves")
			to := fs.String("to", "", "the log dir to move it to (an absolute path)")
			plan := fs.String("plan", "", `kafka-reassign-partitions.sh JSON with "log_dirs", instead of the four flags above`)
			noWait := fs.Bool("no-wait", false, "return once the brokers accepted the moves")
			return func(ctx context.Context, e *env, args []string) error {
				var moves []logMove
				switch {
				case *plan != "" && (*topic != "" || *partition >= 0 || *broker >= 0 || *to != ""):
					return usageErrorf(e, "give --plan or --topic, --partition, --broker and --to, not both")
				case *plan != "":
					var err error
					if moves, err = readLogMovePlan(*plan); err != nil {
						return usageErrorf(e, "%v", err)
					}
				case *topic == "" || *partition < 0 || *broker < 0 || *to == "":
					return usageErrorf(e, "--topic, --partition, --broker and --to are required (or --plan)")
				default:
					moves = []logMove{{Topic: *topic, Partition: *partition, Broker: *broker, Dir: *to}}
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					if err := startLogMoves(rctx, e, adm, moves); err != nil {
						return err
					}
					if *noWait {
						return nil
					}
					return waitLogMoves(ctx, e, adm, moves)
				})
			}
		},
	}
}

// readLogMovePlan reads the replicas with a log dir from a
// kafka-reassign-partitions.sh plan.
func readLogMovePlan(path string) ([]logMove, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var plan reassignmentPlan
	if err := json.Unmarshal(b, &plan); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	moves, err := planLogMoves(plan, path)
	if err != nil {
		return nil, err
	}
	if len(moves) == 0 {
		return nil, fmt.Errorf("%s: no replica with a log dir other than \"any\"", path)
	}
	return moves, nil
}

// planLogMoves are the replicas of a plan with a log dir other than "any":
// the replica on broker replicas[i] goes to log_dirs[i].
func planLogMoves(plan reassignmentPlan, path string) ([]logMove, error) {
	var moves []logMove
	for _, p := range plan.Partitions {
		if len(p.LogDirs) == 0 {
			continue
		}
		if len(p.LogDirs) != len(p.Replicas) {
			return nil, fmt.Errorf("%s: %s-%d: %d log_dirs for %d replicas", path, p.Topic, p.Partition, len(p.LogDirs), len(p.Replicas))
		}
		for i, d := range p.LogDirs {
			if d == "" || d == "any" {
				continue
			}
			if !filepath.IsAbs(d) {
				return nil, fmt.Errorf("%s: %s-%d: log dir %q is not an absolute path", path, p.Topic, p.Partition, d)
			}
			moves = append(moves, logMove{Topic: p.Topic, Partition: p.Partition, Broker: p.Replicas[i], Dir: d})
		}
	}
	return moves, nil
}

// startLogMoves sends each broker its AlterReplicaLogDirs.
func startLogMoves(ctx context.Context, e *env, adm *kadm.Client, moves []logMove) error {
	started, unavailable, missing, err := alterLogDirs(ctx, adm, moves)
	if !e.json {
		for _, m := range started {
			fmt.Fprintf(e.stdout, "Moving %s-%d on broker %d to %s\n", m.Topic, m.Partition, m.Broker, m.Dir)
		}
	}
	var errs []error
	for _, m := range unavailable {
		if slices.Contains(missing, m.Broker) {
			errs = append(errs, fmt.Errorf("broker %d: %s-%d to %s: the broker is not in the cluster's metadata", m.Broker, m.Topic, m.Partition, m.Dir))
			continue
		}
		errs = append(errs, fmt.Errorf("broker %d: %s-%d to %s: %w", m.Broker, m.Topic, m.Partition, m.Dir, kerr.ReplicaNotAvailable))
	}
	return errors.Join(append(errs, err)...)
}

// alterLogDirs sends each broker the AlterReplicaLogDirs of its moves. It
// returns the moves the brokers accepted, those to retry (answered
// REPLICA_NOT_AVAILABLE: the broker hosts no replica yet and remembers the
// dir for when it creates one; or sent to a broker in missing, absent from
// the metadata), and the other failures.
func alterLogDirs(ctx context.Context, adm *kadm.Client, moves []logMove) (started, unavailable []logMove, missing []int32, err error) {
	byBroker := map[int32]kadm.AlterReplicaLogDirsReq{}
	dirOf := map[logMove]string{}
	for _, m := range moves {
		req := byBroker[m.Broker]
		s := kadm.TopicsSet{}
		s.Add(m.Topic, m.Partition)
		req.Add(m.Dir, s)
		byBroker[m.Broker] = req
		dirOf[logMove{Topic: m.Topic, Partition: m.Partition, Broker: m.Broker}] = m.Dir
	}
	brokers := slices.Sorted(maps.Keys(byBroker))
	var errs []error
	for _, b := range brokers {
		resps, err := adm.AlterBrokerReplicaLogDirs(ctx, b, byBroker[b])
		if err != nil {
			if ctx.Err() == nil && !brokerListed(ctx, adm, b) {
				// A broker missing from the metadata (restarting, or
				// fenced a moment) is waited for, as Kafka's admin
				// client waits for a node: its moves are retried as
				// REPLICA_NOT_AVAILABLE ones are.
				missing = append(missing, b)
				for _, m := range moves {
					if m.Broker == b {
						unavailable = append(unavailable, m)
					}
				}
				continue
			}
			return started, unavailable, missing, fmt.Errorf("broker %d: %w", b, err)
		}
		for _, r := range resps.Sorted() {
			m := logMove{Topic: r.Topic, Partition: r.Partition, Broker: b, Dir: r.Dir}
			if m.Dir == "" {
				m.Dir = dirOf[logMove{Topic: r.Topic, Partition: r.Partition, Broker: b}]
			}
			switch {
			case r.Err == nil:
				started = append(started, m)
			case errors.Is(r.Err, kerr.ReplicaNotAvailable):
				unavailable = append(unavailable, m)
			default:
				errs = append(errs, fmt.Errorf("broker %d: %s-%d to %s: %w", b, r.Topic, r.Partition, m.Dir, r.Err))
			}
		}
	}
	return started, unavailable, missing, errors.Join(errs...)
}

// brokerListed reports whether the cluster's metadata lists broker b.
func brokerListed(ctx context.Context, adm *kadm.Client, b int32) bool {
	bs, err := adm.ListBrokers(ctx)
	return err == nil && slices.Contains(bs.NodeIDs(), b)
}

// logMoveStatus is where a replica move stands: done once DescribeLogDirs
// shows the partition only in the target dir; the future replica's lag
// while it is copied (-1: no future replica); the dirs holding the current
// replica.
type logMoveStatus struct {
	logMove
	Done    bool     `json:"done"`
	Lag     int64    `json:"offset_lag"`
	Current []string `json:"current_dirs,omitempty"`
}

// logMoveStatuses asks each move's broker where the replica is.
func logMoveStatuses(ctx context.Context, e *env, adm *kadm.Client, moves []logMove) ([]logMoveStatus, int, error) {
	out := make([]logMoveStatus, len(moves))
	pending := 0
	for i, m := range moves {
		s := kadm.TopicsSet{}
		s.Add(m.Topic, m.Partition)
		rctx, cancel := e.requestCtx(ctx)
		dirs, err := adm.DescribeBrokerLogDirs(rctx, m.Broker, s)
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("describing log dirs of broker %d: %w", m.Broker, err)
		}
		st := logMoveStatus{logMove: m, Lag: -1}
		done, inTarget := true, false
		for dir, d := range dirs {
			p, ok := d.Topics[m.Topic][m.Partition]
			if !ok {
				continue
			}
			switch {
			case p.IsFuture:
				done, st.Lag = false, p.OffsetLag
			case filepath.Clean(dir) == filepath.Clean(m.Dir):
				inTarget = true
				st.Current = append(st.Current, dir)
			default:
				done = false
				st.Current = append(st.Current, dir)
			}
		}
		st.Done = done && inTarget
		if !st.Done {
			pending++
		}
		out[i] = st
	}
	return out, pending, nil
}

// waitLogMoves polls DescribeLogDirs until every replica is only in its
// target dir.
func waitLogMoves(ctx context.Context, e *env, adm *kadm.Client, moves []logMove) error {
	last := time.Time{}
	for {
		out, pending, err := logMoveStatuses(ctx, e, adm, moves)
		if err != nil {
			return err
		}
		if pending == 0 {
			if e.json {
				return writeJSON(e.stdout, out)
			}
			for _, s := range out {
				fmt.Fprintf(e.stdout, "Moved %s-%d on broker %d to %s\n", s.Topic, s.Partition, s.Broker, s.Dir)
			}
			return nil
		}
		if !e.json && e.stderrTTY && time.Since(last) > 5*time.Second {
			last = time.Now()
			for _, s := range out {
				if !s.Done && s.Lag >= 0 {
					fmt.Fprintf(e.stderr, "%s-%d on broker %d: future replica %d offsets behind\n", s.Topic, s.Partition, s.Broker, s.Lag)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d replica move(s) not done: %w", pending, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
