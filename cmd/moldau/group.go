package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func groupCommand() *command {
	return &command{
		name:    "group",
		summary: "List, describe, delete consumer groups and move their offsets.",
		subs:    []*command{groupListCommand(), groupDescribeCommand(), groupDeleteCommand(), groupSeekCommand()},
	}
}

// groupAdmin connects and checks that the cluster serves the group APIs
// the command needs.
func groupAdmin(ctx context.Context, e *env, keys ...kmsg.Key) (*kadm.Client, *kgo.Client, error) {
	adm, cl, err := e.newAdmin(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range append([]kmsg.Key{kmsg.FindCoordinator}, keys...) {
		if err := requireAPI(ctx, cl, k.Int16(), "consumer groups"); err != nil {
			cl.Close()
			return nil, nil, err
		}
	}
	return adm, cl, nil
}

func groupListCommand() *command {
	return &command{
		name: "list", maxArgs: 0, client: true,
		summary: "List consumer groups.",
		long:    `Lists the groups every broker coordinates, with their type, state and protocol type.`,
		example: `  moldau group list
  moldau group list --state Empty --json`,
		setup: func(fs *pflag.FlagSet) runner {
			states := fs.StringSlice("state", nil, "only groups in these `states` (Stable, Empty, PreparingRebalance, ...)")
			return func(ctx context.Context, e *env, args []string) error {
				adm, cl, err := groupAdmin(ctx, e, kmsg.ListGroups)
				if err != nil {
					return err
				}
				defer cl.Close()
				rctx, cancel := e.requestCtx(ctx)
				defer cancel()
				groups, err := adm.ListGroups(rctx, *states...)
				if err != nil {
					return firstShardError(err)
				}
				return printGroupList(e, groups)
			}
		},
	}
}

type listedGroup struct {
	Group        string `json:"group"`
	Type         string `json:"type"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func printGroupList(e *env, groups kadm.ListedGroups) error {
	rows := []listedGroup{}
	for _, g := range groups.Sorted() {
		rows = append(rows, listedGroup{Group: g.Group, Type: g.GroupType, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	if e.json {
		return writeJSON(e.stdout, rows)
	}
	t := newTable(e.stdout, "GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "COORDINATOR")
	for _, r := range rows {
		t.row(r.Group, orDash(r.Type), orDash(r.State), orDash(r.ProtocolType), r.Coordinator)
	}
	return t.flush()
}

func groupDeleteCommand() *command {
	return &command{
		name: "delete", args: "GROUP...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Delete consumer groups and their committed offsets.",
		long:    `Deletes each group; a group with active members cannot be deleted (NON_EMPTY_GROUP).`,
		example: `  moldau group delete billing
  moldau group delete a b --json`,
		setup: func(fs *pflag.FlagSet) runner {
			return func(ctx context.Context, e *env, args []string) error {
				adm, cl, err := groupAdmin(ctx, e, kmsg.DeleteGroups)
				if err != nil {
					return err
				}
				defer cl.Close()
				rctx, cancel := e.requestCtx(ctx)
				defer cancel()
				resps, err := adm.DeleteGroups(rctx, args...)
				if err != nil {
					return firstShardError(err)
				}
				var rows []statusResult
				for _, r := range resps {
					rows = append(rows, statusResult{Name: r.Group, err: withMessage(r.Err, r.ErrMessage)})
				}
				return printStatus(e, "group", rows)
			}
		},
	}
}

func groupDescribeCommand() *command {
	return &command{
		name: "describe", args: "GROUP...", minArgs: 1, maxArgs: -1, client: true,
		summary: "Show a group's members, assignments, committed offsets and lag.",
		long: `Shows each group's state, protocol and members with the partitions
assigned to each, then one row per partition the group is assigned or has
committed: the committed offset ("-": none), the log start and end offsets
(the end is the high watermark) and the lag, end minus committed (without
a commit, end minus start: everything still to read). Classic groups
(JoinGroup), KIP-848 consumer groups and KIP-932 share groups (their
members and assignments; no committed offsets) are described.`,
		example: `  moldau group describe billing
  moldau group describe billing --json | jq '.[0].total_lag'`,
		setup: func(fs *pflag.FlagSet) runner {
			return func(ctx context.Context, e *env, args []string) error {
				adm, cl, err := groupAdmin(ctx, e, kmsg.DescribeGroups, kmsg.OffsetFetch)
				if err != nil {
					return err
				}
				defer cl.Close()
				rctx, cancel := e.requestCtx(ctx)
				defer cancel()
				var out []describedGroup
				for _, g := range dedupe(args) {
					dg, err := describeGroup(rctx, adm, cl, g)
					if err != nil {
						return err
					}
					out = append(out, dg)
				}
				if e.json {
					return writeJSON(e.stdout, out)
				}
				for i, g := range out {
					if i > 0 {
						fmt.Fprintln(e.stdout)
					}
					if err := printDescribedGroup(e.stdout, g); err != nil {
						return err
					}
				}
				return nil
			}
		},
	}
}

type describedGroup struct {
	Group        string           `json:"group"`
	Coordinator  int32            `json:"coordinator"`
	State        string           `json:"state"`
	Type         string           `json:"type"`          // classic, consumer or share
	ProtocolType string           `json:"protocol_type"` // classic groups: "consumer", "connect", ...
	Protocol     string           `json:"protocol"`      // the assignor
	Members      []groupMember    `json:"members"`
	TotalLag     int64            `json:"total_lag"`
	Partitions   []groupPartition `json:"partitions"`
}

type groupMember struct {
	MemberID   string            `json:"member_id"`
	InstanceID *string           `json:"instance_id"`
	ClientID   string            `json:"client_id"`
	ClientHost string            `json:"client_host"`
	Assigned   []topicPartitions `json:"assigned"`
}

type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

type groupPartition struct {
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	CommittedOffset int64   `json:"committed_offset"` // -1: none
	LogStartOffset  int64   `json:"log_start_offset"`
	LogEndOffset    int64   `json:"log_end_offset"`
	Lag             int64   `json:"lag"` // -1: unknown
	MemberID        string  `json:"member_id"`
	ClientID        string  `json:"client_id"`
	ClientHost      string  `json:"client_host"`
	Error           *string `json:"error,omitempty"`
}

// groupState describes a group without its offsets: a classic group
// through DescribeGroups, else a KIP-848 group through
// ConsumerGroupDescribe. exists is false for a group that is neither.
func groupState(ctx context.Context, adm *kadm.Client, cl *kgo.Client, group string) (g describedGroup, exists bool, err error) {
	g = describedGroup{Group: group, Members: []groupMember{}, Partitions: []groupPartition{}}
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return g, false, groupError(group, firstShardError(err))
	}
	dg, ok := dgs[group]
	if ok && dg.Err != nil && dg.Err != kerr.GroupIDNotFound {
		return g, false, groupError(group, withMessage(dg.Err, dg.ErrMessage))
	}
	if ok && dg.Err == nil && dg.State != "Dead" {
		g.Coordinator, g.State, g.Type, g.ProtocolType, g.Protocol = dg.Coordinator.NodeID, dg.State, "classic", dg.ProtocolType, dg.Protocol
		for _, m := range dg.Members {
			gm := groupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: []topicPartitions{}}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					gm.Assigned = append(gm.Assigned, topicPartitions{Topic: t.Topic, Partitions: sortedInt32(t.Partitions)})
				}
			}
			g.Members = append(g.Members, gm)
		}
		return g, true, nil
	}
	if ok, err := supportsAPI(ctx, cl, kmsg.ConsumerGroupDescribe.Int16()); err != nil || !ok {
		return g, false, err
	}
	cgs, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return g, false, groupError(group, firstShardError(err))
	}
	cg, ok := cgs[group]
	if !ok || cg.Err == kerr.GroupIDNotFound || cg.State == "Dead" || cg.State == "" {
		return shareGroupState(ctx, adm, cl, g)
	}
	if cg.Err != nil {
		return g, false, groupError(group, cg.Err)
	}
	g.Coordinator, g.State, g.Type, g.ProtocolType, g.Protocol = cg.Coordinator.NodeID, cg.State, "consumer", "consumer", cg.AssignorName
	for _, m := range cg.Members {
		gm := groupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: []topicPartitions{}}
		for _, t := range m.Assignment.Sorted() {
			gm.Assigned = append(gm.Assigned, topicPartitions{Topic: t.Topic, Partitions: sortedInt32(t.Partitions)})
		}
		g.Members = append(g.Members, gm)
	}
	return g, true, nil
}

// shareGroupState describes a share group (KIP-932) through
// ShareGroupDescribe; exists is false if it is none.
func shareGroupState(ctx context.Context, adm *kadm.Client, cl *kgo.Client, g describedGroup) (describedGroup, bool, error) {
	if ok, err := supportsAPI(ctx, cl, kmsg.ShareGroupDescribe.Int16()); err != nil || !ok {
		return g, false, err
	}
	sgs, err := adm.DescribeShareGroups(ctx, g.Group)
	if err != nil {
		return g, false, groupError(g.Group, firstShardError(err))
	}
	sg, ok := sgs[g.Group]
	if !ok || sg.Err == kerr.GroupIDNotFound || sg.GroupState == "" {
		return g, false, nil
	}
	if sg.Err != nil {
		return g, false, groupError(g.Group, sg.Err)
	}
	g.Coordinator, g.State, g.Type, g.ProtocolType, g.Protocol = sg.Coordinator.NodeID, sg.GroupState, "share", "share", sg.Assignor
	for _, m := range sg.Members {
		gm := groupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, Assigned: []topicPartitions{}}
		for _, t := range m.Assignment.Sorted() {
			gm.Assigned = append(gm.Assigned, topicPartitions{Topic: t.Topic, Partitions: sortedInt32(t.Partitions)})
		}
		g.Members = append(g.Members, gm)
	}
	return g, true, nil
}

func sortedInt32(s []int32) []int32 {
	out := append([]int32{}, s...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// describeGroup adds committed offsets, log start and end offsets and lag
// to groupState.
func describeGroup(ctx context.Context, adm *kadm.Client, cl *kgo.Client, group string) (describedGroup, error) {
	g, exists, err := groupState(ctx, adm, cl, group)
	if err != nil {
		return g, err
	}
	// A share group has no committed offsets (its progress is share
	// state, not shown here): OffsetFetch answers it GROUP_ID_NOT_FOUND.
	var committed kadm.OffsetResponses
	if g.Type != "share" {
		if committed, err = adm.FetchOffsets(ctx, group); err != nil {
			return g, groupError(group, firstShardError(err))
		}
	}
	if !exists && len(committed) == 0 {
		return g, groupError(group, kerr.GroupIDNotFound)
	}
	if !exists {
		g.State, g.Type = "Empty", "-"
	}
	type owner struct{ member, client, host string }
	owners := map[tp]owner{}
	set := map[tp]bool{}
	for _, m := range g.Members {
		for _, a := range m.Assigned {
			for _, p := range a.Partitions {
				owners[tp{a.Topic, p}] = owner{m.MemberID, m.ClientID, m.ClientHost}
				set[tp{a.Topic, p}] = true
			}
		}
	}
	committed.Each(func(o kadm.OffsetResponse) { set[tp{o.Topic, o.Partition}] = true })
	var topics []string
	for p := range set {
		if !slices.Contains(topics, p.topic) {
			topics = append(topics, p.topic)
		}
	}
	starts, ends := kadm.ListedOffsets{}, kadm.ListedOffsets{}
	if len(topics) > 0 {
		if starts, err = adm.ListStartOffsets(ctx, topics...); err != nil {
			return g, firstShardError(err)
		}
		if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil {
			return g, firstShardError(err)
		}
	}
	for p := range set {
		row := groupPartition{Topic: p.topic, Partition: p.partition, CommittedOffset: -1, LogStartOffset: -1, LogEndOffset: -1, Lag: -1}
		o := owners[p]
		row.MemberID, row.ClientID, row.ClientHost = o.member, o.client, o.host
		var perr error
		if c, ok := committed.Lookup(p.topic, p.partition); ok {
			perr = c.Err
			if c.Err == nil {
				row.CommittedOffset = c.At
			}
		}
		if s, ok := starts.Lookup(p.topic, p.partition); ok {
			row.LogStartOffset, perr = s.Offset, firstErr(perr, s.Err)
		}
		if en, ok := ends.Lookup(p.topic, p.partition); ok {
			row.LogEndOffset, perr = en.Offset, firstErr(perr, en.Err)
		}
		row.Lag = partitionLag(row.CommittedOffset, row.LogStartOffset, row.LogEndOffset)
		if perr != nil {
			msg := errorMessage(perr)
			row.Error = &msg
		}
		if row.Lag > 0 {
			g.TotalLag += row.Lag
		}
		g.Partitions = append(g.Partitions, row)
	}
	sort.Slice(g.Partitions, func(i, j int) bool {
		a, b := g.Partitions[i], g.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return g, nil
}

// partitionLag is end - committed, or end - start without a commit; -1
// when the end is unknown.
func partitionLag(committed, start, end int64) int64 {
	switch {
	case end < 0:
		return -1
	case committed >= 0:
		return max(0, end-committed)
	case start >= 0:
		return max(0, end-start)
	}
	return -1
}

func printDescribedGroup(w io.Writer, g describedGroup) error {
	t := newTable(w)
	t.row("GROUP", g.Group)
	t.row("COORDINATOR", g.Coordinator)
	t.row("STATE", orDash(g.State))
	t.row("TYPE", orDash(g.Type))
	t.row("PROTOCOL-TYPE", orDash(g.ProtocolType))
	t.row("BALANCER", orDash(g.Protocol))
	t.row("MEMBERS", len(g.Members))
	t.row("TOTAL-LAG", g.TotalLag)
	if err := t.flush(); err != nil {
		return err
	}
	if len(g.Members) > 0 {
		fmt.Fprintln(w)
		t = newTable(w, "MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNED")
		for _, m := range g.Members {
			inst := "-"
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			var as []string
			for _, a := range m.Assigned {
				as = append(as, a.Topic+int32List(a.Partitions))
			}
			t.row(m.MemberID, inst, m.ClientID, m.ClientHost, orDash(strings.Join(as, " ")))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(g.Partitions) > 0 {
		fmt.Fprintln(w)
		t = newTable(w, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST")
		for _, p := range g.Partitions {
			lag := dash(p.Lag)
			if p.Error != nil {
				lag = *p.Error
			}
			t.row(p.Topic, p.Partition, dash(p.CommittedOffset), dash(p.LogStartOffset), dash(p.LogEndOffset), lag,
				orDash(p.MemberID), orDash(p.ClientID), orDash(p.ClientHost))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}
