package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// moldau acl: ACLs through kadm (CreateAcls, DescribeAcls, DeleteAcls),
// with kafka-acls.sh's flags: --allow-principal/--deny-principal,
// --allow-host/--deny-host, --operation, the resources (--topic, --group,
// --cluster, --transactional-id) and --resource-pattern-type.
func aclCommand() *command {
	return &command{
		name:    "acl",
		summary: "Add, list and remove ACLs (the broker needs authorizer.class.name).",
		subs:    []*command{aclAddCommand(), aclListCommand(), aclRemoveCommand()},
	}
}

// aclFlags are the flags every acl subcommand shares.
type aclFlags struct {
	allow, deny, allowHosts, denyHosts, ops, topics, groups, txnIDs []string
	cluster                                                         bool
	pattern                                                         string
}

func (f *aclFlags) register(fs *pflag.FlagSet, pattern string) {
	fs.StringArrayVar(&f.allow, "allow-principal", nil, "principal to allow, e.g. User:alice (repeatable)")
	fs.StringArrayVar(&f.deny, "deny-principal", nil, "principal to deny (repeatable)")
	fs.StringArrayVar(&f.allowHosts, "allow-host", nil, "host the allow applies to (default *)")
	fs.StringArrayVar(&f.denyHosts, "deny-host", nil, "host the deny applies to (default *)")
	fs.StringArrayVar(&f.ops, "operation", nil, "operation: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite (repeatable)")
	fs.StringArrayVar(&f.topics, "topic", nil, "topic (repeatable; * for all)")
	fs.StringArrayVar(&f.groups, "group", nil, "consumer group (repeatable)")
	fs.StringArrayVar(&f.txnIDs, "transactional-id", nil, "transactional id (repeatable)")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fs.StringVar(&f.pattern, "resource-pattern-type", pattern, "literal, prefixed (add); also any, match (list, remove)")
}

// builder turns the flags into a kadm ACL builder; filter: for list and
// remove (no principal, host or operation means any).
func (f *aclFlags) builder(e *env, filter bool) (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	pt, err := kmsg.ParseACLResourcePatternType(strings.ToLower(f.pattern))
	if err != nil {
		return nil, usageErrorf(e, "--resource-pattern-type: %v", err)
	}
	b.ResourcePatternType(pt)
	if !filter && (pt != kmsg.ACLResourcePatternTypeLiteral && pt != kmsg.ACLResourcePatternTypePrefixed) {
		return nil, usageErrorf(e, "--resource-pattern-type must be literal or prefixed to add ACLs")
	}
	resources := len(f.topics) + len(f.groups) + len(f.txnIDs)
	if f.cluster {
		resources++
	}
	switch {
	case resources == 0 && !filter:
		return nil, usageErrorf(e, "name a resource: --topic, --group, --transactional-id or --cluster")
	case resources == 0:
		b.AnyResource()
	default:
		b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeTransactionalIDs(f.txnIDs...)
		if f.cluster {
			b.Clusters()
		}
	}
	if !filter && len(f.allow)+len(f.deny) == 0 {
		return nil, usageErrorf(e, "name a principal: --allow-principal or --deny-principal")
	}
	if len(f.allow) > 0 || filter && len(f.deny) == 0 {
		b.Allow(f.allow...).AllowHosts(f.allowHosts...)
	}
	if len(f.deny) > 0 || filter && len(f.allow) == 0 {
		b.Deny(f.deny...).DenyHosts(f.denyHosts...)
	}
	var ops []kadm.ACLOperation
	for _, o := range f.ops {
		op, err := kmsg.ParseACLOperation(strings.ToLower(o))
		if err != nil {
			return nil, usageErrorf(e, "--operation: %v", err)
		}
		ops = append(ops, op)
	}
	switch {
	case len(ops) == 0 && !filter:
		return nil, usageErrorf(e, "name an --operation")
	case len(ops) == 0:
		ops = []kadm.ACLOperation{kadm.OpAny}
	}
	b.Operations(ops...)
	return b, nil
}

type aclJSON struct {
	ResourceType string `json:"resource_type"`
	Resource     string `json:"resource"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

func printACLs(e *env, acls []aclJSON) error {
	if e.json {
		return writeJSON(e.stdout, acls)
	}
	for _, a := range acls {
		fmt.Fprintf(e.stdout, "%s:%s:%s\t%s\t%s\t%s from %s\n", a.ResourceType, a.PatternType, a.Resource, a.Principal, a.Permission, a.Operation, a.Host)
	}
	return nil
}

func aclAddCommand() *command {
	var f aclFlags
	return &command{
		name: "add", maxArgs: 0, client: true,
		summary: "Add ACLs (every principal x host x operation x resource named).",
		example: `  moldau acl add --allow-principal User:alice --operation Read --operation Describe --topic orders
  moldau acl add --allow-principal User:etl --operation All --topic etl- --resource-pattern-type prefixed
  moldau acl add --deny-principal User:* --deny-host 10.0.0.9 --operation Write --topic orders`,
		setup: func(fs *pflag.FlagSet) runner {
			f.register(fs, "literal")
			return func(ctx context.Context, e *env, _ []string) error {
				b, err := f.builder(e, false)
				if err != nil {
					return err
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					res, err := adm.CreateACLs(rctx, b)
					if err != nil {
						return err
					}
					var out []aclJSON
					for _, r := range res {
						if r.Err != nil {
							return fmt.Errorf("%s %s %s on %s: %v %s", r.Principal, r.Permission, r.Operation, r.Name, r.Err, r.ErrMessage)
						}
						out = append(out, aclJSON{r.Type.String(), r.Name, r.Pattern.String(), r.Principal, r.Host, r.Operation.String(), r.Permission.String()})
					}
					return printACLs(e, out)
				})
			}
		},
	}
}

func aclListCommand() *command {
	return aclFilterCommand("list", "List the ACLs that match the flags (all without flags).", `  moldau acl list
  moldau acl list --topic orders --resource-pattern-type match --json`, "any",
		func(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) ([]aclJSON, error) {
			res, err := adm.DescribeACLs(ctx, b)
			var out []aclJSON
			for _, r := range res {
				if r.Err != nil {
					return nil, fmt.Errorf("%v %s", r.Err, r.ErrMessage)
				}
				for _, d := range r.Described {
					out = append(out, aclJSON{d.Type.String(), d.Name, d.Pattern.String(), d.Principal, d.Host, d.Operation.String(), d.Permission.String()})
				}
			}
			return out, err
		})
}

func aclRemoveCommand() *command {
	return aclFilterCommand("remove", "Remove the ACLs that match the flags.", `  moldau acl remove --allow-principal User:alice --topic orders
  moldau acl remove --topic etl- --resource-pattern-type prefixed`, "literal",
		func(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) ([]aclJSON, error) {
			res, err := adm.DeleteACLs(ctx, b)
			var out []aclJSON
			for _, r := range res {
				if r.Err != nil {
					return nil, fmt.Errorf("%v %s", r.Err, r.ErrMessage)
				}
				for _, d := range r.Deleted {
					out = append(out, aclJSON{d.Type.String(), d.Name, d.Pattern.String(), d.Principal, d.Host, d.Operation.String(), d.Permission.String()})
				}
			}
			return out, err
		})
}

// aclFilterCommand is a command that sends the flags as ACL filters and
// prints the ACLs the answer names.
func aclFilterCommand(name, summary, example, pattern string, do func(context.Context, *kadm.Client, *kadm.ACLBuilder) ([]aclJSON, error)) *command {
	var f aclFlags
	return &command{
		name: name, maxArgs: 0, client: true, summary: summary, example: example,
		setup: func(fs *pflag.FlagSet) runner {
			f.register(fs, pattern)
			return func(ctx context.Context, e *env, _ []string) error {
				b, err := f.builder(e, true)
				if err != nil {
					return err
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					out, err := do(rctx, adm, b)
					if err != nil {
						return err
					}
					return printACLs(e, dedupACLs(out))
				})
			}
		},
	}
}

// dedupACLs drops repeats: kadm sends one filter per combination, and an
// ACL may match several.
func dedupACLs(in []aclJSON) []aclJSON {
	seen := map[aclJSON]bool{}
	out := []aclJSON{}
	for _, a := range in {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}
