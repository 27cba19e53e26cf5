package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// moldau user: SCRAM credentials through kadm's AlterUserSCRAMs
// (AlterUserScramCredentials, which the controller decides) and
// DescribeUserSCRAMs (DescribeUserScramCredentials), as Kafka's
// kafka-configs.sh --entity-type users --alter --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=...]'.
func userCommand() *command {
	return &command{
		name:    "user",
		summary: "Manage users' SCRAM credentials.",
		subs: []*command{{
			name:    "scram",
			summary: "Set, delete and describe SCRAM-SHA-256 and SCRAM-SHA-512 credentials.",
			subs:    []*command{userScramSetCommand(), userScramDeleteCommand(), userScramDescribeCommand()},
		}},
	}
}

func scramMechanism(e *env, name string) (kadm.ScramMechanism, error) {
	switch name {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, usageErrorf(e, "--mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512, not %q", name)
}

// alterScram runs one AlterUserSCRAMs and reports its result.
func alterScram(ctx context.Context, e *env, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM, done string) error {
	return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
		res, err := adm.AlterUserSCRAMs(rctx, del, up)
		if err != nil {
			return err
		}
		for _, r := range res.Sorted() {
			if r.Err != nil {
				msg := r.Err.Error()
				if r.ErrMessage != "" {
					msg += ": " + r.ErrMessage
				}
				return fmt.Errorf("user %s: %s", r.User, msg)
			}
			if e.json {
				return writeJSON(e.stdout, map[string]any{"user": r.User, "result": done})
			}
			fmt.Fprintf(e.stdout, "%s %s\n", done, r.User)
		}
		return nil
	})
}

func userScramSetCommand() *command {
	return &command{
		name: "set", maxArgs: 0, client: true,
		summary: "Create or replace a user's SCRAM credential.",
		long: `Sets the user's credential for the mechanism: the client salts and
hashes the password (PBKDF2 with --iterations, 4096 to 16384), the
controller stores only the derived keys. Replacing a credential does not
end the user's open connections.`,
		example: `  moldau user scram set --user alice --mechanism SCRAM-SHA-512 --password alice-secret
  moldau user scram set --user bob --password bob-secret --iterations 8192 --command-config admin.properties`,
		setup: func(fs *pflag.FlagSet) runner {
			user := fs.String("user", "", "the user name (required)")
			mech := fs.String("mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
			pass := fs.String("password", "", "the password (required)")
			iters := fs.Int32("iterations", 4096, "PBKDF2 iterations, 4096 to 16384")
			return func(ctx context.Context, e *env, _ []string) error {
				if *user == "" || *pass == "" {
					return usageErrorf(e, "--user and --password are required")
				}
				m, err := scramMechanism(e, *mech)
				if err != nil {
					return err
				}
				return alterScram(ctx, e, nil, []kadm.UpsertSCRAM{{User: *user, Mechanism: m, Iterations: *iters, Password: *pass}}, "set")
			}
		},
	}
}

func userScramDeleteCommand() *command {
	return &command{
		name: "delete", maxArgs: 0, client: true,
		summary: "Delete a user's SCRAM credential for a mechanism.",
		example: `  moldau user scram delete --user alice --mechanism SCRAM-SHA-512`,
		setup: func(fs *pflag.FlagSet) runner {
			user := fs.String("user", "", "the user name (required)")
			mech := fs.String("mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
			return func(ctx context.Context, e *env, _ []string) error {
				if *user == "" {
					return usageErrorf(e, "--user is required")
				}
				m, err := scramMechanism(e, *mech)
				if err != nil {
					return err
				}
				return alterScram(ctx, e, []kadm.DeleteSCRAM{{User: *user, Mechanism: m}}, nil, "deleted")
			}
		},
	}
}

func userScramDescribeCommand() *command {
	return &command{
		name: "describe", args: "[USER...]", maxArgs: -1, client: true,
		summary: "List users' SCRAM mechanisms and iterations (every user without arguments).",
		example: `  moldau user scram describe
  moldau user scram describe alice bob --json`,
		setup: func(fs *pflag.FlagSet) runner {
			return func(ctx context.Context, e *env, args []string) error {
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					res, err := adm.DescribeUserSCRAMs(rctx, args...)
					if err != nil {
						return err
					}
					type cred struct {
						Mechanism  string `json:"mechanism"`
						Iterations int32  `json:"iterations"`
					}
					type user struct {
						User        string `json:"user"`
						Error       string `json:"error,omitempty"`
						Credentials []cred `json:"credentials"`
					}
					var out []user
					for _, r := range res.Sorted() {
						u := user{User: r.User, Credentials: []cred{}}
						if r.Err != nil {
							u.Error = r.Err.Error()
							if r.ErrMessage != "" {
								u.Error += ": " + r.ErrMessage
							}
						}
						for _, ci := range r.CredInfos {
							u.Credentials = append(u.Credentials, cred{ci.Mechanism.String(), ci.Iterations})
						}
						out = append(out, u)
					}
					if e.json {
						return writeJSON(e.stdout, out)
					}
					t := newTable(e.stdout, "USER", "MECHANISM", "ITERATIONS", "ERROR")
					for _, u := range out {
						if u.Error != "" {
							t.row(u.User, "-", "-", u.Error)
						}
						for _, c := range u.Credentials {
							t.row(u.User, c.Mechanism, c.Iterations, "")
						}
					}
					return t.flush()
				})
			}
		},
	}
}
