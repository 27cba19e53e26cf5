package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// reassignmentPlan is kafka-reassign-partitions.sh's JSON: the partitions
// and the replicas each should have.
type reassignmentPlan struct {
	Version    int                     `json:"version"`
	Partitions []reassignmentPartition `json:"partitions"`
}

type reassignmentPartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// topicsToMove is the --topics-to-move-json-file format.
type topicsToMove struct {
	Version int `json:"version"`
	Topics  []struct {
		Topic string `json:"topic"`
	} `json:"topics"`
}

func clusterReassignCommand() *command {
	return &command{
		name: "reassign", maxArgs: 0, client: true,
		summary: "Move partitions between brokers: generate a plan, execute, verify, cancel or list reassignments.",
		long: `Moves partition replicas between brokers (AlterPartitionReassignments and
ListPartitionReassignments), as kafka-reassign-partitions.sh does, with its
JSON plans:

  {"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[4,5,6]}]}

--generate reads the topics to move ({"version":1,"topics":[{"topic":"orders"}]})
and a broker list, and prints the current assignment and a proposed one:
each partition keeps its replication factor, with replicas spread round
robin over the brokers given. --execute starts the moves of a plan and
prints the assignment before them (keep it to roll back); --verify tells
for each partition of a plan whether its move is done, still running, or
not started; --cancel stops the moves of a plan (each partition goes back
to the replicas it had); --list shows every move in progress.

A plan may name a log dir for each replica ("log_dirs", absolute paths,
"any" for the broker's choice): --execute first tells each broker the dir
of its replica (AlterReplicaLogDirs; a broker that has no replica yet
remembers it and creates the replica there), then starts the moves, then
repeats the AlterReplicaLogDirs the brokers answered REPLICA_NOT_AVAILABLE
until they accept it or --timeout passes; --verify also reports each
replica's move between log dirs, done once DescribeLogDirs shows it only
in its dir.

--throttle B (with --execute) bounds the moves' replication to B bytes/s:
it sets leader.replication.throttled.rate and
follower.replication.throttled.rate on every broker of the plan's
partitions, and the topics' leader.replication.throttled.replicas (the
replicas now) and follower.replication.throttled.replicas (those being
added). --verify removes those throttles once every move of the plan is
done, and --cancel removes them at once (either unless
--preserve-throttles).`,
		example: `  moldau cluster reassign --generate --topics-to-move-json-file topics.json --broker-list 4,5,6
  moldau cluster reassign --execute --reassignment-json-file plan.json --throttle 50000000
  moldau cluster reassign --verify --reassignment-json-file plan.json
  moldau cluster reassign --cancel --reassignment-json-file plan.json
  moldau cluster reassign --list`,
		setup: func(fs *pflag.FlagSet) runner {
			generate := fs.Bool("generate", false, "propose a plan for --topics-to-move-json-file over --broker-list")
			execute := fs.Bool("execute", false, "start the moves of --reassignment-json-file")
			verify := fs.Bool("verify", false, "tell whether the moves of --reassignment-json-file are done")
			cancel := fs.Bool("cancel", false, "cancel the moves of --reassignment-json-file")
			list := fs.Bool("list", false, "list the moves in progress")
			topicsFile := fs.String("topics-to-move-json-file", "", "the topics to move (--generate)")
			planFile := fs.String("reassignment-json-file", "", "the plan (--execute, --verify, --cancel)")
			brokerList := fs.String("broker-list", "", "the brokers to move to, comma-separated ids (--generate)")
			throttle := fs.Int64("throttle", -1, "with --execute: bound the moves' replication to this many bytes/s")
			preserve := fs.Bool("preserve-throttles", false, "with --verify or --cancel: keep the throttles")
			return func(ctx context.Context, e *env, args []string) error {
				n := 0
				for _, b := range []bool{*generate, *execute, *verify, *cancel, *list} {
					if b {
						n++
					}
				}
				if n != 1 {
					return usageErrorf(e, "give exactly one of --generate, --execute, --verify, --cancel, --list")
				}
				if *throttle >= 0 && !*execute {
					return usageErrorf(e, "--throttle goes with --execute")
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					switch {
					case *generate:
						return reassignGenerate(rctx, e, adm, *topicsFile, *brokerList)
					case *list:
						return reassignList(rctx, e, adm)
					}
					plan, err := readPlan(*planFile)
					if err != nil {
						return usageErrorf(e, "%v", err)
					}
					switch {
					case *execute:
						return reassignExecute(rctx, e, adm, plan, *throttle)
					case *verify:
						return reassignVerify(rctx, e, adm, plan, *preserve)
					default:
						return reassignCancel(rctx, e, adm, plan, *preserve)
					}
				})
			}
		},
	}
}

func readPlan(path string) (reassignmentPlan, error) {
	var plan reassignmentPlan
	if path == "" {
		return plan, errors.New("--reassignment-json-file is required")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return plan, err
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		return plan, fmt.Errorf("%s: %w", path, err)
	}
	if len(plan.Partitions) == 0 {
		return plan, fmt.Errorf("%s: no partitions", path)
	}
	if _, err := planLogMoves(plan, path); err != nil {
		return plan, err
	}
	return plan, nil
}

// currentAssignment is the plan that describes the partitions' replicas now.
func currentAssignment(ctx context.Context, adm *kadm.Client, topics []string, only map[string]map[int32]bool) (reassignmentPlan, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return reassignmentPlan{}, err
	}
	plan := reassignmentPlan{Version: 1}
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return plan, fmt.Errorf("%s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			if only != nil && !only[t.Topic][p.Partition] {
				continue
			}
			plan.Partitions = append(plan.Partitions, reassignmentPartition{Topic: t.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	return plan, nil
}

func reassignGenerate(ctx context.Context, e *env, adm *kadm.Client, topicsFile, brokerList string) error {
	if topicsFile == "" || brokerList == "" {
		return usageErrorf(e, "--generate needs --topics-to-move-json-file and --broker-list")
	}
	var brokers []int32
	for _, s := range strings.Split(brokerList, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return usageErrorf(e, "--broker-list: %q is not a broker id", s)
		}
		brokers = append(brokers, int32(id))
	}
	b, err := os.ReadFile(topicsFile)
	if err != nil {
		return err
	}
	var ttm topicsToMove
	if err := json.Unmarshal(b, &ttm); err != nil {
		return fmt.Errorf("%s: %w", topicsFile, err)
	}
	var topics []string
	for _, t := range ttm.Topics {
		topics = append(topics, t.Topic)
	}
	if len(topics) == 0 {
		return usageErrorf(e, "%s names no topics", topicsFile)
	}
	cur, err := currentAssignment(ctx, adm, topics, nil)
	if err != nil {
		return err
	}
	proposed := proposeAssignment(cur, brokers)
	for _, p := range proposed.Partitions {
		if len(p.Replicas) == 0 {
			return fmt.Errorf("%s-%d: its replication factor exceeds the %d brokers given", p.Topic, p.Partition, len(brokers))
		}
	}
	if e.json {
		return writeJSON(e.stdout, map[string]reassignmentPlan{"current": cur, "proposed": proposed})
	}
	fmt.Fprintln(e.stdout, "Current partition replica assignment")
	writePlan(e.stdout, cur)
	fmt.Fprintln(e.stdout, "\nProposed partition reassignment configuration")
	writePlan(e.stdout, proposed)
	return nil
}

// proposeAssignment spreads each partition's replicas round robin over
// brokers, keeping its replication factor (Kafka's tool also starts at a
// random broker; this starts at the partition's index, so a plan is the
// same each time). A partition needing more replicas than brokers gets
// none (an error).
func proposeAssignment(cur reassignmentPlan, brokers []int32) reassignmentPlan {
	sorted := slices.Sorted(slices.Values(brokers))
	out := reassignmentPlan{Version: 1}
	for _, p := range cur.Partitions {
		rf := len(p.Replicas)
		np := reassignmentPartition{Topic: p.Topic, Partition: p.Partition}
		if rf <= len(sorted) {
			for i := range rf {
				np.Replicas = append(np.Replicas, sorted[(int(p.Partition)+i)%len(sorted)])
			}
		}
		out.Partitions = append(out.Partitions, np)
	}
	return out
}

func writePlan(w io.Writer, plan reassignmentPlan) {
	b, _ := json.Marshal(plan)
	fmt.Fprintln(w, string(b))
}

func planPartitions(plan reassignmentPlan) ([]string, map[string]map[int32]bool) {
	only := map[string]map[int32]bool{}
	var topics []string
	for _, p := range plan.Partitions {
		if only[p.Topic] == nil {
			only[p.Topic] = map[int32]bool{}
			topics = append(topics, p.Topic)
		}
		only[p.Topic][p.Partition] = true
	}
	sort.Strings(topics)
	return topics, only
}

func reassignExecute(ctx context.Context, e *env, adm *kadm.Client, plan reassignmentPlan, throttle int64) error {
	topics, only := planPartitions(plan)
	cur, err := currentAssignment(ctx, adm, topics, only)
	if err != nil {
		return err
	}
	if throttle >= 0 {
		if err := setThrottles(ctx, adm, cur, plan, throttle); err != nil {
			return err
		}
		if !e.json {
			fmt.Fprintf(e.stdout, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.\nThe inter-broker throttle limit was set to %d B/s\n", throttle)
		}
	}
	moves, err := planLogMoves(plan, "")
	if err != nil {
		return err
	}
	if len(moves) > 0 {
		// First, so that a broker that gets a new replica creates it in
		// its dir (it answers REPLICA_NOT_AVAILABLE and remembers it).
		if _, _, _, err := alterLogDirs(ctx, adm, moves); err != nil {
			return err
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range plan.Partitions {
		req.Assign(p.Topic, p.Partition, p.Replicas)
	}
	err = alterAssignments(ctx, e, adm, req, func() {
		if e.json {
			return
		}
		fmt.Fprintln(e.stdout, "Current partition replica assignment")
		writePlan(e.stdout, cur)
		fmt.Fprintln(e.stdout, "\nSave this to use as the --reassignment-json-file option during rollback")
	}, "Successfully started partition reassignment", cur)
	if err != nil || len(moves) == 0 {
		return err
	}
	return executeLogMoves(ctx, e, adm, moves)
}

// executeLogMoves is kafka-reassign-partitions.sh's executeMoves: it sends
// the plan's replica moves between log dirs until every broker accepted
// its own, retrying those answered REPLICA_NOT_AVAILABLE (a replica the
// reassignment has not created yet) or sent to a broker missing from the
// metadata until --timeout.
func executeLogMoves(ctx context.Context, e *env, adm *kadm.Client, moves []logMove) error {
	pending := moves
	var started []string
	for {
		ok, unavailable, _, err := alterLogDirs(ctx, adm, pending)
		if err != nil {
			return err
		}
		for _, m := range ok {
			started = append(started, fmt.Sprintf("%s-%d-%d", m.Topic, m.Partition, m.Broker))
		}
		if pending = unavailable; len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			var left []string
			for _, m := range pending {
				left = append(left, fmt.Sprintf("%s-%d-%d", m.Topic, m.Partition, m.Broker))
			}
			return fmt.Errorf("timed out before log directories could be altered (no replica yet, or its broker not in the metadata, of %s)", strings.Join(left, ","))
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !e.json {
		sort.Strings(started)
		fmt.Fprintf(e.stdout, "Successfully started log directory move for: %s\n", strings.Join(started, ","))
	}
	return nil
}

// reassignCancel reverts the plan's moves and, as Kafka's tool, clears
// the throttles unless told to keep them.
func reassignCancel(ctx context.Context, e *env, adm *kadm.Client, plan reassignmentPlan, preserve bool) error {
	req := kadm.AlterPartitionAssignmentsReq{}
	for _, p := range plan.Partitions {
		req.CancelAssign(p.Topic, p.Partition)
	}
	if err := alterAssignments(ctx, e, adm, req, func() {}, "Successfully cancelled partition reassignment", nil); err != nil || preserve {
		return err
	}
	return clearPlanThrottles(ctx, e, adm, plan)
}

// alterAssignments sends req and reports each partition.
func alterAssignments(ctx context.Context, e *env, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq, before func(), done string, cur any) error {
	rs, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("altering partition reassignments: %w", err)
	}
	type outcome struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Error     string `json:"error,omitempty"`
	}
	var out []outcome
	var ok []string
	failed := 0
	for _, r := range rs.Sorted() {
		o := outcome{Topic: r.Topic, Partition: r.Partition}
		if r.Err != nil {
			o.Error = r.Err.Error()
			if r.ErrMessage != "" {
				o.Error += ": " + r.ErrMessage
			}
			failed++
		} else {
			ok = append(ok, fmt.Sprintf("%s-%d", r.Topic, r.Partition))
		}
		out = append(out, o)
	}
	if e.json {
		if err := writeJSON(e.stdout, map[string]any{"before": cur, "partitions": out}); err != nil {
			return err
		}
	} else {
		before()
		if len(ok) > 0 {
			fmt.Fprintf(e.stdout, "%s for %s\n", done, strings.Join(ok, ","))
		}
		for _, o := range out {
			if o.Error != "" {
				fmt.Fprintf(e.stdout, "Error for %s-%d: %s\n", o.Topic, o.Partition, o.Error)
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d partition(s) failed", failed)
	}
	return nil
}

func reassignVerify(ctx context.Context, e *env, adm *kadm.Client, plan reassignmentPlan, preserve bool) error {
	topics, only := planPartitions(plan)
	set := kadm.TopicsSet{}
	for t, ps := range only {
		for p := range ps {
			set.Add(t, p)
		}
	}
	moving, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return fmt.Errorf("listing partition reassignments: %w", err)
	}
	cur, err := currentAssignment(ctx, adm, topics, only)
	if err != nil {
		return err
	}
	now := map[string][]int32{}
	for _, p := range cur.Partitions {
		now[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p.Replicas
	}
	type replicaDir struct {
		Broker int32  `json:"broker"`
		Dir    string `json:"dir"`
		State  string `json:"state"` // completed, in_progress, not_started
	}
	type status struct {
		Partition string `json:"partition"`
		State     string `json:"state"` // completed, in_progress, not_started
		Replicas  []int32
		LogDirs   []replicaDir `json:"log_dirs,omitempty"`
	}
	moves, err := planLogMoves(plan, "")
	if err != nil {
		return err
	}
	moveStates, _, err := logMoveStatuses(ctx, e, adm, moves)
	if err != nil {
		return err
	}
	var out []status
	pending := 0
	for _, p := range plan.Partitions {
		key := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		s := status{Partition: key, Replicas: now[key]}
		_, inProgress := moving[p.Topic][p.Partition]
		switch {
		case inProgress:
			s.State, pending = "in_progress", pending+1
		case slices.Equal(now[key], p.Replicas):
			s.State = "completed"
		default:
			s.State, pending = "not_started", pending+1
		}
		if !e.json {
			switch s.State {
			case "in_progress":
				fmt.Fprintf(e.stdout, "Reassignment of partition %s is still in progress.\n", key)
			case "completed":
				fmt.Fprintf(e.stdout, "Reassignment of partition %s is completed.\n", key)
			default:
				fmt.Fprintf(e.stdout, "There is no active reassignment of partition %s, but replica set is %v rather than %v.\n", key, now[key], p.Replicas)
			}
		}
		// The replicas' moves between log dirs (kafka-reassign-partitions.sh's
		// verifyReplicaMoves).
		for _, m := range moveStates {
			if m.Topic != p.Topic || m.Partition != p.Partition {
				continue
			}
			rd := replicaDir{Broker: m.Broker, Dir: m.Dir}
			name := fmt.Sprintf("%s-%d-%d", m.Topic, m.Partition, m.Broker)
			switch {
			case m.Done:
				rd.State = "completed"
			case m.Lag >= 0:
				rd.State, pending = "in_progress", pending+1
			default:
				rd.State, pending = "not_started", pending+1
			}
			s.LogDirs = append(s.LogDirs, rd)
			if e.json {
				continue
			}
			switch rd.State {
			case "completed":
				fmt.Fprintf(e.stdout, "Reassignment of replica %s completed successfully.\n", name)
			case "in_progress":
				fmt.Fprintf(e.stdout, "Reassignment of replica %s is still in progress (the future replica in %s is %d offsets behind).\n", name, m.Dir, m.Lag)
			default:
				fmt.Fprintf(e.stdout, "Partition %s-%d on broker %d is not being moved from log dir %s to %s.\n", m.Topic, m.Partition, m.Broker, strings.Join(m.Current, ","), m.Dir)
			}
		}
		out = append(out, s)
	}
	if e.json {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	}
	if pending > 0 {
		return fmt.Errorf("%d partition(s) or replica move(s) of the plan not done yet", pending)
	}
	if !preserve {
		return clearPlanThrottles(ctx, e, adm, plan)
	}
	return nil
}

// clearPlanThrottles clears the throttles of the plan's moves and says so.
func clearPlanThrottles(ctx context.Context, e *env, adm *kadm.Client, plan reassignmentPlan) error {
	topics, _ := planPartitions(plan)
	if err := clearThrottles(ctx, adm, topics); err != nil {
		return err
	}
	if !e.json {
		fmt.Fprintln(e.stdout, "Clearing broker-level throttles on brokers of the plan\nClearing topic-level throttles on topics "+strings.Join(topics, ","))
	}
	return nil
}

var (
	brokerThrottleKeys = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
	topicThrottleKeys  = []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

// setThrottles is kafka-reassign-partitions.sh's --throttle: the rate on
// every broker of the partitions now and after, leader throttles on the
// current replicas and follower throttles on the added ones.
func setThrottles(ctx context.Context, adm *kadm.Client, cur, plan reassignmentPlan, rate int64) error {
	now := map[string][]int32{}
	brokers := map[int32]bool{}
	for _, p := range cur.Partitions {
		now[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p.Replicas
		for _, b := range p.Replicas {
			brokers[b] = true
		}
	}
	leader, follower := map[string][]string{}, map[string][]string{}
	for _, p := range plan.Partitions {
		old := now[fmt.Sprintf("%s-%d", p.Topic, p.Partition)]
		for _, b := range old {
			leader[p.Topic] = append(leader[p.Topic], fmt.Sprintf("%d:%d", p.Partition, b))
		}
		for _, b := range p.Replicas {
			brokers[b] = true
			if !slices.Contains(old, b) {
				follower[p.Topic] = append(follower[p.Topic], fmt.Sprintf("%d:%d", p.Partition, b))
			}
		}
	}
	v := strconv.FormatInt(rate, 10)
	var bcfg []kadm.AlterConfig
	for _, k := range brokerThrottleKeys {
		bcfg = append(bcfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	ids := slices.Sorted(maps.Keys(brokers))
	if err := alterConfigsOK(adm.AlterBrokerConfigs(ctx, bcfg, ids...)); err != nil {
		return fmt.Errorf("setting the broker throttles: %w", err)
	}
	for t := range leader {
		l, f := strings.Join(leader[t], ","), strings.Join(follower[t], ",")
		tcfg := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: topicThrottleKeys[0], Value: &l}}
		if f != "" {
			tcfg = append(tcfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: topicThrottleKeys[1], Value: &f})
		}
		if err := alterConfigsOK(adm.AlterTopicConfigs(ctx, tcfg, t)); err != nil {
			return fmt.Errorf("setting the throttled replicas of %s: %w", t, err)
		}
	}
	return nil
}

// clearThrottles removes what setThrottles set, from every broker (as
// Kafka's tool: the plan's old brokers may no longer host its partitions)
// and the plan's topics.
func clearThrottles(ctx context.Context, adm *kadm.Client, topics []string) error {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	brokers := map[int32]bool{}
	for _, b := range md.Brokers {
		brokers[b.NodeID] = true
	}
	var bcfg, tcfg []kadm.AlterConfig
	for _, k := range brokerThrottleKeys {
		bcfg = append(bcfg, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	for _, k := range topicThrottleKeys {
		tcfg = append(tcfg, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if err := alterConfigsOK(adm.AlterBrokerConfigs(ctx, bcfg, slices.Sorted(maps.Keys(brokers))...)); err != nil {
		return fmt.Errorf("clearing the broker throttles: %w", err)
	}
	if err := alterConfigsOK(adm.AlterTopicConfigs(ctx, tcfg, topics...)); err != nil {
		return fmt.Errorf("clearing the topic throttles: %w", err)
	}
	return nil
}

func alterConfigsOK(rs kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%s: %w %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
func reassignList(ctx context.Context, e *env, adm *kadm.Client) error {
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	set := kadm.TopicsSet{}
	for _, t := range topics.Sorted() {
		for _, p := range t.Partitions.Sorted() {
			set.Add(t.Topic, p.Partition)
		}
	}
	moving, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return fmt.Errorf("listing partition reassignments: %w", err)
	}
	rs := moving.Sorted()
	if e.json {
		return writeJSON(e.stdout, rs)
	}
	if len(rs) == 0 {
		fmt.Fprintln(e.stdout, "No partition reassignments found.")
		return nil
	}
	fmt.Fprintln(e.stdout, "Current partition reassignments:")
	for _, r := range rs {
		fmt.Fprintf(e.stdout, "%s-%d: replicas: %v. adding: %v. removing: %v.\n", r.Topic, r.Partition, r.Replicas, r.AddingReplicas, r.RemovingReplicas)
	}
	return nil
}
