package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func clusterElectCommand() *command {
	return &command{
		name: "elect", maxArgs: 0, client: true,
		summary: "Elect partition leaders: preferred replicas, or unclean for leaderless partitions.",
		long: `Runs a leader election (ElectLeaders), as kafka-leader-election.sh does.
--type preferred moves the leadership of each partition to its preferred
replica (the first of its assignment) if that replica is in the ISR and
alive; --type unclean elects a leader for a partition that has none, from
outside the ISR if no in-sync replica is alive, which may lose committed
records. Name one partition with --topic and --partition, or every
partition with --all-topic-partitions (then only the partitions that
needed an election are reported).

The output is kafka-leader-election.sh's: the partitions elected, those
whose valid replica already leads, and one line per partition that could
not be elected; any of those makes the command fail.`,
		example: `  moldau cluster elect --type preferred --all-topic-partitions
  moldau cluster elect --type preferred --topic orders --partition 3
  moldau cluster elect --type unclean --topic orders --partition 3`,
		setup: func(fs *pflag.FlagSet) runner {
			typ := fs.String("type", "", "the election type: preferred or unclean (required)")
			topic := fs.String("topic", "", "the topic of the partition to elect")
			partition := fs.Int32("partition", -1, "the partition to elect (with --topic)")
			all := fs.Bool("all-topic-partitions", false, "elect every partition of every topic")
			return func(ctx context.Context, e *env, args []string) error {
				var how kadm.ElectLeadersHow
				switch strings.ToLower(*typ) {
				case "preferred":
					how = kadm.ElectPreferredReplica
				case "unclean":
					how = kadm.ElectLiveReplica
				case "":
					return usageErrorf(e, "--type is required: preferred or unclean")
				default:
					return usageErrorf(e, "unknown election type %q: preferred or unclean", *typ)
				}
				var set kadm.TopicsSet
				switch {
				case *all && (*topic != "" || *partition >= 0):
					return usageErrorf(e, "--all-topic-partitions excludes --topic and --partition")
				case *all:
				case *topic == "" || *partition < 0:
					return usageErrorf(e, "name a partition with --topic and --partition, or use --all-topic-partitions")
				default:
					set = kadm.TopicsSet{}
					set.Add(*topic, *partition)
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					rs, err := adm.ElectLeaders(rctx, how, set)
					if err != nil {
						return fmt.Errorf("leader election: %w", err)
					}
					res := electionOutcome(rs, how)
					if e.json {
						if err := writeJSON(e.stdout, res); err != nil {
							return err
						}
					} else {
						printElection(e.stdout, res)
					}
					if n := len(res.Failed); n > 0 {
						return fmt.Errorf("%d replica(s) could not be elected", n)
					}
					return nil
				})
			}
		},
	}
}

type electionResult struct {
	Type      string           `json:"type"`
	Succeeded []string         `json:"succeeded"`
	NotNeeded []string         `json:"not_needed"`
	Failed    []electionFailed `json:"failed"`
}

type electionFailed struct {
	Partition string `json:"partition"`
	Error     string `json:"error"`
	Message   string `json:"message,omitempty"`
}

// electionOutcome sorts the results as LeaderElectionCommand does:
// elected, ELECTION_NOT_NEEDED, failed; partitions by topic and number.
func electionOutcome(rs kadm.ElectLeadersResults, how kadm.ElectLeadersHow) electionResult {
	out := electionResult{Type: "PREFERRED", Succeeded: []string{}, NotNeeded: []string{}, Failed: []electionFailed{}}
	if how == kadm.ElectLiveReplica {
		out.Type = "UNCLEAN"
	}
	var all []kadm.ElectLeadersResult
	for _, ps := range rs {
		for _, r := range ps {
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Topic != all[j].Topic {
			return all[i].Topic < all[j].Topic
		}
		return all[i].Partition < all[j].Partition
	})
	for _, r := range all {
		tp := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		switch {
		case r.Err == nil:
			out.Succeeded = append(out.Succeeded, tp)
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			out.NotNeeded = append(out.NotNeeded, tp)
		default:
			f := electionFailed{Partition: tp, Error: r.Err.Error(), Message: r.ErrMessage}
			var ke *kerr.Error
			if errors.As(r.Err, &ke) {
				f.Error = ke.Message
				if f.Message == "" {
					f.Message = ke.Description
				}
			}
			out.Failed = append(out.Failed, f)
		}
	}
	return out
}

func printElection(w io.Writer, r electionResult) {
	if len(r.Succeeded) > 0 {
		fmt.Fprintf(w, "Successfully completed leader election (%s) for partitions %s\n", r.Type, strings.Join(r.Succeeded, ", "))
	}
	if len(r.NotNeeded) > 0 {
		fmt.Fprintf(w, "Valid replica already elected for partitions %s\n", strings.Join(r.NotNeeded, ", "))
	}
	for _, f := range r.Failed {
		msg := f.Error
		if f.Message != "" {
			msg += ": " + f.Message
		}
		fmt.Fprintf(w, "Error completing leader election (%s) for partition: %s: %s\n", r.Type, f.Partition, msg)
	}
}
