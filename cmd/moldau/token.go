package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// moldau token: delegation tokens through kadm (CreateDelegationToken,
// RenewDelegationToken, ExpireDelegationToken, DescribeDelegationToken),
// as Kafka's kafka-delegation-tokens.sh. Tokens are managed only over an
// authenticated (SASL, or SSL with a client certificate) connection, so
// these commands need --command-config.
func tokenCommand() *command {
	return &command{
		name:    "token",
		summary: "Create, renew, expire and describe delegation tokens.",
		subs:    []*command{tokenCreateCommand(), tokenRenewCommand(), tokenExpireCommand(), tokenDescribeCommand()},
	}
}

// parsePrincipal reads "User:name" (or a bare name, a User).
func parsePrincipal(s string) kadm.Principal {
	if typ, name, ok := strings.Cut(s, ":"); ok {
		return kadm.Principal{Type: typ, Name: name}
	}
	return kadm.Principal{Type: "User", Name: s}
}

func principalString(p kadm.Principal) string {
	if p.Type == "" {
		p.Type = "User"
	}
	return p.Type + ":" + p.Name
}

// tokenJSON is a token as the commands print it; hmac is base64, the
// password of a SCRAM login with the token id as the user name and
// tokenauth=true.
type tokenJSON struct {
	TokenID   string   `json:"token_id"`
	HMAC      string   `json:"hmac"`
	Owner     string   `json:"owner"`
	Requester string   `json:"requester"`
	Renewers  []string `json:"renewers"`
	Issued    string   `json:"issue_timestamp"`
	Expiry    string   `json:"expiry_timestamp"`
	Max       string   `json:"max_timestamp"`
}

func tokenOut(t kadm.DelegationToken) tokenJSON {
	out := tokenJSON{TokenID: t.TokenID, HMAC: base64.StdEncoding.EncodeToString(t.HMAC),
		Owner: principalString(t.Owner), Requester: principalString(t.TokenRequesterPrincipal), Renewers: []string{},
		Issued: t.IssueTimestamp.Format(time.RFC3339), Expiry: t.ExpiryTimestamp.Format(time.RFC3339), Max: t.MaxTimestamp.Format(time.RFC3339)}
	for _, r := range t.Renewers {
		out.Renewers = append(out.Renewers, principalString(r))
	}
	return out
}

func printTokens(e *env, ts []kadm.DelegationToken) error {
	out := make([]tokenJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, tokenOut(t))
	}
	if e.json {
		return writeJSON(e.stdout, out)
	}
	t := newTable(e.stdout, "TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE")
	for _, o := range out {
		t.row(o.TokenID, o.HMAC, o.Owner, o.Requester, strings.Join(o.Renewers, ","), o.Issued, o.Expiry, o.Max)
	}
	return t.flush()
}

func tokenCreateCommand() *command {
	return &command{
		name: "create", maxArgs: 0, client: true,
		summary: "Create a delegation token.",
		long: `Creates a token owned by the logged-in principal (or by --owner, which
needs CREATE_TOKENS on that user), renewable by its owner, its requester
and each --renewer. It prints the token id and its HMAC: a client logs in
with SCRAM (the mechanisms the listener enables) using the token id as the
user name, the HMAC as the password, and tokenauth=true.`,
		example: `  moldau token create --command-config admin.properties
  moldau token create --renewer User:bob --max-life-time 24h --command-config admin.properties --json`,
		setup: func(fs *pflag.FlagSet) runner {
			owner := fs.String("owner", "", "the token's owner principal (User:name); default the caller")
			renewers := fs.StringSlice("renewer", nil, "a principal that may renew the token (repeatable)")
			life := fs.Duration("max-life-time", 0, "the token's maximum lifetime; 0: delegation.token.max.lifetime.ms")
			return func(ctx context.Context, e *env, _ []string) error {
				d := kadm.CreateDelegationToken{MaxLifetime: *life}
				if *owner != "" {
					p := parsePrincipal(*owner)
					d.Owner = &p
				}
				for _, r := range *renewers {
					d.Renewers = append(d.Renewers, parsePrincipal(r))
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					t, err := adm.CreateDelegationToken(rctx, d)
					if err != nil {
						return err
					}
					if e.json {
						return writeJSON(e.stdout, tokenOut(t))
					}
					return printTokens(e, []kadm.DelegationToken{t})
				})
			}
		},
	}
}

// tokenHMAC reads --hmac (base64, as create prints it).
func tokenHMAC(e *env, s string) ([]byte, error) {
	if s == "" {
		return nil, usageErrorf(e, "--hmac is required")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, usageErrorf(e, "--hmac: not base64: %v", err)
	}
	return b, nil
}

// changeToken runs a renew or an expire and prints the new expiry.
func changeToken(ctx context.Context, e *env, hmac string, what string, do func(context.Context, *kadm.Client, []byte) (time.Time, error)) error {
	mac, err := tokenHMAC(e, hmac)
	if err != nil {
		return err
	}
	return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
		exp, err := do(rctx, adm, mac)
		if err != nil {
			return err
		}
		if e.json {
			return writeJSON(e.stdout, map[string]string{"result": what, "expiry_timestamp": exp.UTC().Format(time.RFC3339)})
		}
		fmt.Fprintf(e.stdout, "%s; expiry timestamp %s\n", what, exp.UTC().Format(time.RFC3339))
		return nil
	})
}

func tokenRenewCommand() *command {
	return &command{
		name: "renew", maxArgs: 0, client: true,
		summary: "Renew a delegation token (its owner, requester or a renewer).",
		example: `  moldau token renew --hmac ABC... --renew-time 12h --command-config admin.properties`,
		setup: func(fs *pflag.FlagSet) runner {
			hmac := fs.String("hmac", "", "the token's HMAC, base64 (required)")
			d := fs.Duration("renew-time", -time.Millisecond, "how long from now the token stays valid (at most its max timestamp); negative: delegation.token.expiry.time.ms")
			return func(ctx context.Context, e *env, _ []string) error {
				return changeToken(ctx, e, *hmac, "renewed", func(ctx context.Context, adm *kadm.Client, mac []byte) (time.Time, error) {
					return adm.RenewDelegationToken(ctx, mac, *d)
				})
			}
		},
	}
}

func tokenExpireCommand() *command {
	return &command{
		name: "expire", maxArgs: 0, client: true,
		summary: "Expire a delegation token, now or after --expiry-time.",
		example: `  moldau token expire --hmac ABC... --command-config admin.properties`,
		setup: func(fs *pflag.FlagSet) runner {
			hmac := fs.String("hmac", "", "the token's HMAC, base64 (required)")
			d := fs.Duration("expiry-time", -time.Millisecond, "how long from now the token stays valid; negative: it expires now")
			return func(ctx context.Context, e *env, _ []string) error {
				return changeToken(ctx, e, *hmac, "expired", func(ctx context.Context, adm *kadm.Client, mac []byte) (time.Time, error) {
					return adm.ExpireDelegationToken(ctx, mac, *d)
				})
			}
		},
	}
}

func tokenDescribeCommand() *command {
	return &command{
		name: "describe", maxArgs: 0, client: true,
		summary: "List the delegation tokens the caller may see.",
		example: `  moldau token describe --command-config admin.properties
  moldau token describe --owner User:alice --json --command-config admin.properties`,
		setup: func(fs *pflag.FlagSet) runner {
			owners := fs.StringSlice("owner", nil, "only the tokens of this owner (repeatable)")
			return func(ctx context.Context, e *env, _ []string) error {
				var ps []kadm.Principal
				for _, o := range *owners {
					ps = append(ps, parsePrincipal(o))
				}
				return e.withAdmin(ctx, func(rctx context.Context, adm *kadm.Client, _ *kgo.Client) error {
					ts, err := adm.DescribeDelegationTokens(rctx, ps...)
					if err != nil {
						return err
					}
					return printTokens(e, ts)
				})
			}
		},
	}
}
