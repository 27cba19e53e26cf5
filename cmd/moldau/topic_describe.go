package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log/remote"
)

func topicDescribeCommand() *command {
	return &command{
		name: "describe", args: "TOPIC...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Show a topic's partitions, offsets and configs.",
		long: `Shows, for each topic: a summary (ID, partition count, replication
factor); every config with its value and source (DescribeConfigs: where
the value comes from, DYNAMIC_TOPIC_CONFIG for a topic override,
STATIC_BROKER_CONFIG for server.properties, DEFAULT_CONFIG, ...); and each
partition's leader, leader epoch, replicas, in-sync replicas, log start
offset and high watermark (the end offset consumers see), and its size:
LOCAL-SIZE, the leader's replica on disk (DescribeLogDirs), and for a
topic with remote.storage.enable, REMOTE-SIZE, its segments in remote
storage (read from __remote_log_metadata, as the leader's
RemoteLogSizeBytes gauge counts them).

With --synonyms, the configs table also lists each config's synonyms: the
values it would fall back to, in order of precedence.`,
		example: `  moldau topic describe orders
  moldau topic describe orders --print-partitions
  moldau topic describe orders --synonyms --json | jq '.[0].configs'`,
		setup: func(fs *pflag.FlagSet) runner {
			summary := fs.BoolP("print-summary", "s", false, "print the summary section (default: all sections)")
			configs := fs.BoolP("print-configs", "c", false, "print the configs section")
			partitions := fs.BoolP("print-partitions", "p", false, "print the partitions section")
			synonyms := fs.Bool("synonyms", false, "list each config's synonyms in the configs table")
			return func(ctx context.Context, e *env, args []string) error {
				if !*summary && !*configs && !*partitions {
					*summary, *configs, *partitions = true, true, true
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, cl *kgo.Client) error {
					topics, err := describeTopics(rctx, e, adm, args)
					if err != nil {
						return err
					}
					if e.json {
						return writeJSON(e.stdout, topics)
					}
					for i, t := range topics {
						if i > 0 {
							fmt.Fprintln(e.stdout)
						}
						if err := printDescribedTopic(e.stdout, t, *summary, *configs, *partitions, *synonyms); err != nil {
							return err
						}
					}
					return nil
				})
			}
		},
	}
}

type describedTopic struct {
	Name              string               `json:"name"`
	ID                string               `json:"id"`
	Internal          bool                 `json:"internal"`
	PartitionCount    int                  `json:"partition_count"`
	ReplicationFactor int                  `json:"replication_factor"`
	Configs           []describedConfig    `json:"configs"`
	Partitions        []describedPartition `json:"partitions"`
}

type describedConfig struct {
	Key       string          `json:"key"`
	Value     *string         `json:"value"`
	Source    string          `json:"source"`
	Sensitive bool            `json:"sensitive"`
	Synonyms  []configSynonym `json:"synonyms"`
}

type configSynonym struct {
	Key    string  `json:"key"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

type describedPartition struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas"`
	LogStartOffset  int64   `json:"log_start_offset"`
	HighWatermark   int64   `json:"high_watermark"`
	// LocalSizeBytes is the leader replica's size on disk, -1 unknown;
	// RemoteSizeBytes, for a tiered topic only, the bytes in remote
	// storage, -1 unknown.
	LocalSizeBytes  int64   `json:"local_size_bytes"`
	RemoteSizeBytes *int64  `json:"remote_size_bytes,omitempty"`
	Error           *string `json:"error,omitempty"`
}

// describeTopics gathers metadata, configs, start and end offsets and
// sizes.
func describeTopics(ctx context.Context, e *env, adm *kadm.Client, names []string) ([]describedTopic, error) {
	tds, err := describeTopicsMeta(ctx, adm, names)
	if err != nil {
		return nil, err
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, firstShardError(err)
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err != nil {
		return nil, firstShardError(err)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		return nil, firstShardError(err)
	}
	locals := localSizes(ctx, adm, tds, names)
	var remotes map[remote.TopicIdPartition]int64
	tiered := map[string]bool{}
	for _, name := range names {
		if rc, err := rcs.On(name, nil); err == nil && rc.Err == nil {
			for _, c := range rc.Configs {
				if c.Key == "remote.storage.enable" && c.Value != nil && strings.EqualFold(*c.Value, "true") {
					tiered[name] = true
				}
			}
		}
	}
	remoteKnown := true
	if len(tiered) > 0 {
		if remotes, err = remoteSizes(ctx, e, adm); err != nil {
			// Not authorized to read the metadata topic, say: the
			// rest of the description stands.
			fmt.Fprintf(e.stderr, "moldau: remote sizes unknown: reading %s: %v\n", remoteLogMetadataTopic, err)
			remoteKnown = false
		}
	}
	out := make([]describedTopic, 0, len(names))
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		td := tds[name]
		t := describedTopic{Name: name, ID: topicIDString(td.ID), Internal: td.IsInternal,
			PartitionCount: len(td.Partitions), ReplicationFactor: td.Partitions.NumReplicas(),
			Configs: []describedConfig{}, Partitions: []describedPartition{}}
		rc, err := rcs.On(name, nil)
		if err == nil && rc.Err != nil {
			err = withMessage(rc.Err, rc.ErrMessage)
		}
		if err != nil {
			return nil, topicError(name, err)
		}
		t.Configs = convertConfigs(rc.Configs)
		for _, p := range td.Partitions.Sorted() {
			dp := describedPartition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), OfflineReplicas: nonNil(p.OfflineReplicas),
				LogStartOffset: -1, HighWatermark: -1, LocalSizeBytes: -1}
			if n, ok := locals[name][p.Partition]; ok {
				dp.LocalSizeBytes = n
			}
			if tiered[name] {
				n := remotes[remote.TopicIdPartition{TopicID: uuid.UUID(td.ID), Topic: name, Partition: p.Partition}]
				if !remoteKnown {
					n = -1
				}
				dp.RemoteSizeBytes = &n
			}
			perr := p.Err
			if s, ok := starts.Lookup(name, p.Partition); ok {
				dp.LogStartOffset = s.Offset
				perr = firstErr(perr, s.Err)
			}
			if en, ok := ends.Lookup(name, p.Partition); ok {
				dp.HighWatermark = en.Offset
				perr = firstErr(perr, en.Err)
			}
			if perr != nil {
				msg := errorMessage(perr)
				dp.Error = &msg
			}
			t.Partitions = append(t.Partitions, dp)
		}
		out = append(out, t)
	}
	return out, nil
}

func convertConfigs(cs []kadm.Config) []describedConfig {
	out := make([]describedConfig, 0, len(cs))
	for _, c := range cs {
		dc := describedConfig{Key: c.Key, Value: c.Value, Source: c.Source.String(), Sensitive: c.Sensitive, Synonyms: []configSynonym{}}
		for _, s := range c.Synonyms {
			dc.Synonyms = append(dc.Synonyms, configSynonym{Key: s.Key, Value: s.Value, Source: s.Source.String()})
		}
		out = append(out, dc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func printDescribedTopic(w io.Writer, t describedTopic, summary, configs, partitions, synonyms bool) error {
	if summary {
		section(w, "SUMMARY")
		tw := newTable(w)
		tw.row("NAME", t.Name)
		tw.row("ID", orDash(t.ID))
		tw.row("INTERNAL", t.Internal)
		tw.row("PARTITIONS", t.PartitionCount)
		tw.row("REPLICAS", t.ReplicationFactor)
		if err := tw.flush(); err != nil {
			return err
		}
	}
	if configs {
		if summary {
			fmt.Fprintln(w)
		}
		section(w, "CONFIGS")
		headers := []string{"KEY", "VALUE", "SOURCE"}
		if synonyms {
			headers = append(headers, "SYNONYMS")
		}
		tw := newTable(w, headers...)
		for _, c := range t.Configs {
			cols := []any{c.Key, configValue(c.Value, c.Sensitive), c.Source}
			if synonyms {
				var syn []string
				for _, s := range c.Synonyms {
					syn = append(syn, fmt.Sprintf("%s=%s (%s)", s.Key, configValue(s.Value, c.Sensitive), s.Source))
				}
				cols = append(cols, orDash(strings.Join(syn, ", ")))
			}
			tw.row(cols...)
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	if partitions {
		if summary || configs {
			fmt.Fprintln(w)
		}
		section(w, "PARTITIONS")
		// OFFLINE-REPLICAS and ERROR only when some partition has one.
		var offline, errs, tiered bool
		for _, p := range t.Partitions {
			offline = offline || len(p.OfflineReplicas) > 0
			errs = errs || p.Error != nil
			tiered = tiered || p.RemoteSizeBytes != nil
		}
		headers := []string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR"}
		if offline {
			headers = append(headers, "OFFLINE-REPLICAS")
		}
		headers = append(headers, "LOG-START-OFFSET", "HIGH-WATERMARK", "LOCAL-SIZE")
		if tiered {
			headers = append(headers, "REMOTE-SIZE")
		}
		if errs {
			headers = append(headers, "ERROR")
		}
		tw := newTable(w, headers...)
		for _, p := range t.Partitions {
			cols := []any{p.Partition, dash(int64(p.Leader)), dash(int64(p.LeaderEpoch)), int32List(p.Replicas), int32List(p.ISR)}
			if offline {
				cols = append(cols, int32List(p.OfflineReplicas))
			}
			cols = append(cols, dash(p.LogStartOffset), dash(p.HighWatermark), dash(p.LocalSizeBytes))
			if tiered {
				remoteSize := int64(-1)
				if p.RemoteSizeBytes != nil {
					remoteSize = *p.RemoteSizeBytes
				}
				cols = append(cols, dash(remoteSize))
			}
			if errs {
				errText := "-"
				if p.Error != nil {
					errText = *p.Error
				}
				cols = append(cols, errText)
			}
			tw.row(cols...)
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	return nil
}

func configValue(v *string, sensitive bool) string {
	switch {
	case sensitive:
		return "(sensitive)"
	case v == nil:
		return "(null)"
	case *v == "":
		return `""`
	}
	return *v
}
