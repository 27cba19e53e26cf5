package main

import (
	"github.com/moldau/moldau/broker/uuid"

	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func topicCommand() *command {
	return &command{
		name:    "topic",
		summary: "Create, list, describe, configure and delete topics.",
		subs: []*command{
			topicCreateCommand(), topicListCommand(), topicDescribeCommand(),
			topicDeleteCommand(), topicAlterConfigCommand(), topicAddPartitionsCommand(),
		},
	}
}

// statusResult is one row of a "did it work" table.
type statusResult struct {
	Name  string  `json:"name"`
	Error *string `json:"error"`
	err   error
}

// printStatus prints NAME STATUS rows (or JSON) and returns the first
// failure, so the command exits 1 when any item failed.
func printStatus(e *env, kind string, rows []statusResult) error {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	var first error
	for i := range rows {
		if rows[i].err != nil {
			rows[i].err = &subjectError{kind: kind, name: rows[i].Name, err: rows[i].err}
			msg := rows[i].err.Error()
			rows[i].Error = &msg
			if first == nil {
				first = rows[i].err
			}
		}
	}
	if e.json {
		if err := writeJSON(e.stdout, rows); err != nil {
			return err
		}
		return first
	}
	t := newTable(e.stdout, strings.ToUpper(kind), "STATUS")
	for _, r := range rows {
		status := "OK"
		if r.Error != nil {
			status = *r.Error
		}
		t.row(r.Name, status)
	}
	if err := t.flush(); err != nil {
		return err
	}
	return first
}

// withMessage attaches a broker's error message to err.
func withMessage(err error, msg string) error {
	if err == nil || msg == "" {
		return err
	}
	return fmt.Errorf("%w (%s)", err, msg)
}

// parseKeyValues parses key=value flags.
func parseKeyValues(e *env, flag string, kvs []string) (map[string]string, []string, error) {
	m := make(map[string]string, len(kvs))
	var order []string
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, usageErrorf(e, "--%s %q: expected key=value", flag, kv)
		}
		if _, dup := m[k]; !dup {
			order = append(order, k)
		}
		m[k] = v
	}
	return m, order, nil
}

func topicCreateCommand() *command {
	return &command{
		name: "create", args: "TOPIC...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Create topics.",
		long: `Creates each topic with --partitions partitions and --replicas replicas
(-1: the broker's num.partitions and default.replication.factor) and the
given topic configs. Prints one row per topic; exits 1 if any was not
created.`,
		example: `  moldau topic create orders -p 6 -c retention.ms=86400000 -c cleanup.policy=compact
  moldau topic create a b c --dry-run`,
		setup: func(fs *pflag.FlagSet) runner {
			partitions := fs.Int32P("partitions", "p", -1, "number of partitions (-1: broker default)")
			replicas := fs.Int16P("replicas", "r", -1, "replication factor (-1: broker default)")
			configs := fs.StringArrayP("config", "c", nil, "topic config key=value (repeatable)")
			dry := fs.Bool("dry-run", false, "validate only: ask the broker whether it would create the topics")
			return func(ctx context.Context, e *env, args []string) error {
				cfg, _, err := parseKeyValues(e, "config", *configs)
				if err != nil {
					return err
				}
				cfgp := make(map[string]*string, len(cfg))
				for k, v := range cfg {
					cfgp[k] = &v
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
					create := adm.CreateTopics
					if *dry {
						create = adm.ValidateCreateTopics
					}
					resps, err := create(rctx, *partitions, *replicas, cfgp, args...)
					if err != nil {
						return firstShardError(err)
					}
					return printCreated(e, resps)
				})
			}
		},
	}
}

type createdTopic struct {
	Topic             string  `json:"topic"`
	ID                string  `json:"id"`
	Partitions        int32   `json:"partitions"`
	ReplicationFactor int16   `json:"replication_factor"`
	Error             *string `json:"error"`
}

func printCreated(e *env, resps kadm.CreateTopicResponses) error {
	var rows []createdTopic
	var first error
	sorted := resps.Sorted()
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Topic < sorted[j].Topic })
	for _, r := range sorted {
		row := createdTopic{Topic: r.Topic, ID: topicIDString(r.ID), Partitions: r.NumPartitions, ReplicationFactor: r.ReplicationFactor}
		if r.Err != nil {
			err := topicError(r.Topic, withMessage(r.Err, r.ErrMessage))
			msg := err.Error()
			row.Error = &msg
			if first == nil {
				first = err
			}
		}
		rows = append(rows, row)
	}
	if e.json {
		if err := writeJSON(e.stdout, rows); err != nil {
			return err
		}
		return first
	}
	t := newTable(e.stdout, "TOPIC", "ID", "PARTITIONS", "REPLICAS", "STATUS")
	for _, r := range rows {
		status := "OK"
		if r.Error != nil {
			status = *r.Error
		}
		t.row(r.Topic, orDash(r.ID), dash(int64(r.Partitions)), dash(int64(r.ReplicationFactor)), status)
	}
	if err := t.flush(); err != nil {
		return err
	}
	return first
}

func topicListCommand() *command {
	return &command{
		name: "list", maxArgs: 0, client: true,
		summary: "List topics.",
		long:    `Lists the cluster's topics with their partition count and replication factor.`,
		example: `  moldau topic list
  moldau topic list --internal --json`,
		setup: func(fs *pflag.FlagSet) runner {
			internal := fs.BoolP("internal", "i", false, "include internal topics (__consumer_offsets, ...)")
			return func(ctx context.Context, e *env, args []string) error {
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
					list := adm.ListTopics
					if *internal {
						list = adm.ListTopicsWithInternal
					}
					tds, err := list(rctx)
					if err != nil {
						return firstShardError(err)
					}
					return printTopicList(e, tds)
				})
			}
		},
	}
}

type listedTopic struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Internal          bool   `json:"internal"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
}

func printTopicList(e *env, tds kadm.TopicDetails) error {
	rows := []listedTopic{}
	for _, td := range tds.Sorted() {
		if td.Err != nil {
			return topicError(td.Topic, td.Err)
		}
		rows = append(rows, listedTopic{Name: td.Topic, ID: topicIDString(td.ID), Internal: td.IsInternal,
			Partitions: len(td.Partitions), ReplicationFactor: td.Partitions.NumReplicas()})
	}
	if e.json {
		return writeJSON(e.stdout, rows)
	}
	t := newTable(e.stdout, "NAME", "PARTITIONS", "REPLICAS")
	for _, r := range rows {
		t.row(r.Name, r.Partitions, r.ReplicationFactor)
	}
	return t.flush()
}

func topicDeleteCommand() *command {
	return &command{
		name: "delete", args: "TOPIC...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Delete topics.",
		long:    `Deletes each topic and its data. Prints one row per topic; exits 1 if any was not deleted.`,
		example: `  moldau topic delete orders
  moldau topic delete a b c --json`,
		setup: func(fs *pflag.FlagSet) runner {
			return func(ctx context.Context, e *env, args []string) error {
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
					resps, err := adm.DeleteTopics(rctx, args...)
					if err != nil {
						return firstShardError(err)
					}
					var rows []statusResult
					for _, r := range resps {
						rows = append(rows, statusResult{Name: r.Topic, err: withMessage(r.Err, r.ErrMessage)})
					}
					return printStatus(e, "topic", rows)
				})
			}
		},
	}
}

func topicAlterConfigCommand() *command {
	return &command{
		name: "alter-config", args: "TOPIC...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Set, delete, append to or subtract from topic configs.",
		long: `Changes topic configs incrementally (IncrementalAlterConfigs): --set
replaces a value, --delete returns a key to its default, --append and
--subtract add or remove an element of a list config (such as
cleanup.policy). Other configs are left as they are.`,
		example: `  moldau topic alter-config orders --set retention.ms=3600000 --delete segment.bytes
  moldau topic alter-config orders --append cleanup.policy=compact`,
		setup: func(fs *pflag.FlagSet) runner {
			set := fs.StringArrayP("set", "s", nil, "set key=value (repeatable)")
			del := fs.StringArrayP("delete", "d", nil, "delete key: back to its default (repeatable)")
			app := fs.StringArray("append", nil, "append key=value to a list config (repeatable)")
			sub := fs.StringArray("subtract", nil, "subtract key=value from a list config (repeatable)")
			dry := fs.Bool("dry-run", false, "validate only: ask the broker whether it would apply the change")
			return func(ctx context.Context, e *env, args []string) error {
				alters, err := buildAlterConfigs(e, *set, *del, *app, *sub)
				if err != nil {
					return err
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
					alter := adm.AlterTopicConfigs
					if *dry {
						alter = adm.ValidateAlterTopicConfigs
					}
					resps, err := alter(rctx, alters, args...)
					if err != nil {
						return firstShardError(err)
					}
					var rows []statusResult
					for _, r := range resps {
						rows = append(rows, statusResult{Name: r.Name, err: withMessage(r.Err, r.ErrMessage)})
					}
					return printStatus(e, "topic", rows)
				})
			}
		},
	}
}

func buildAlterConfigs(e *env, set, del, app, sub []string) ([]kadm.AlterConfig, error) {
	var out []kadm.AlterConfig
	for _, op := range []struct {
		flag string
		kvs  []string
		op   kadm.IncrementalOp
	}{{"set", set, kadm.SetConfig}, {"append", app, kadm.AppendConfig}, {"subtract", sub, kadm.SubtractConfig}} {
		for _, kv := range op.kvs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usageErrorf(e, "--%s %q: expected key=value", op.flag, kv)
			}
			out = append(out, kadm.AlterConfig{Op: op.op, Name: k, Value: &v})
		}
	}
	for _, k := range del {
		if k == "" || strings.Contains(k, "=") {
			return nil, usageErrorf(e, "--delete %q: expected a config name", k)
		}
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(out) == 0 {
		return nil, usageErrorf(e, "nothing to change: give --set, --delete, --append or --subtract")
	}
	return out, nil
}

func topicAddPartitionsCommand() *command {
	return &command{
		name: "add-partitions", args: "TOPIC...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Add partitions to topics.",
		long: `Adds --num partitions to each topic (CreatePartitions). Partitions cannot
be removed, and adding them changes which partition a key hashes to.`,
		example: `  moldau topic add-partitions orders --num 3`,
		setup: func(fs *pflag.FlagSet) runner {
			num := fs.IntP("num", "n", 0, "number of partitions to add (required)")
			dry := fs.Bool("dry-run", false, "validate only")
			return func(ctx context.Context, e *env, args []string) error {
				if *num <= 0 {
					return usageErrorf(e, "--num must be a positive number of partitions to add")
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
					create := adm.CreatePartitions
					if *dry {
						create = adm.ValidateCreatePartitions
					}
					resps, err := create(rctx, *num, args...)
					if err != nil {
						return firstShardError(err)
					}
					var rows []statusResult
					for _, r := range resps {
						rows = append(rows, statusResult{Name: r.Topic, err: withMessage(r.Err, r.ErrMessage)})
					}
					return printStatus(e, "topic", rows)
				})
			}
		},
	}
}

// describeTopicsMeta loads the metadata of the named topics and fails with
// a one-line error naming the first one that is missing.
func describeTopicsMeta(ctx context.Context, adm *kadm.Client, topics []string) (kadm.TopicDetails, error) {
	tds, err := adm.ListTopicsWithInternal(ctx, topics...)
	if err != nil {
		// An authorization failure fails the whole request: name the
		// topics it was for.
		if err = firstShardError(err); isAuthError(err) {
			if len(topics) == 1 {
				return nil, topicError(topics[0], err)
			}
			return nil, fmt.Errorf("topics %q: %w", topics, err)
		}
		return nil, err
	}
	for _, t := range topics {
		td, ok := tds[t]
		if !ok {
			return nil, topicError(t, kerr.UnknownTopicOrPartition)
		}
		if td.Err != nil {
			return nil, topicError(t, td.Err)
		}
	}
	return tds, nil
}

// topicIDString formats a topic ID as Kafka prints it (Uuid.toString:
// URL-safe base64 without padding); the zero ID (a broker without topic
// IDs) is "".
func topicIDString(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return uuid.UUID(id).String()
}
