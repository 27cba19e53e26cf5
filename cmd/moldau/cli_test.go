package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// runInProcess runs one command line with its own streams.
func runInProcess(t *testing.T, stdin string, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cio := cmdIO{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return env[k] },
		now:    func() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) },
	}
	code = execute(context.Background(), cio, args)
	return code, out.String(), errb.String()
}

// leaves lists every leaf command's path.
func leaves(prefix []string, cmds []*command) [][]string {
	var out [][]string
	for _, c := range cmds {
		p := append(append([]string{}, prefix...), c.name)
		if c.subs != nil {
			out = append(out, leaves(p, c.subs)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// leafCommand finds the command at path.
func leafCommand(path []string) *command {
	cmds, c := commands(), (*command)(nil)
	for _, name := range path {
		c = findCommand(cmds, name)
		cmds = c.subs
	}
	return c
}

// TestHelpEverywhere checks that every command answers --help on stdout
// with exit 0, a usage line, its flags and an example.
func TestHelpEverywhere(t *testing.T) {
	all := leaves(nil, commands())
	if len(all) < 14 {
		t.Fatalf("only %d commands: %v", len(all), all)
	}
	for _, path := range all {
		for _, h := range []string{"--help", "-h"} {
			code, out, errOut := runInProcess(t, "", nil, append(path, h)...)
			name := strings.Join(path, " ")
			if code != exitOK || errOut != "" {
				t.Errorf("%s %s: exit %d, stderr %q", name, h, code, errOut)
			}
			for _, want := range []string{"Usage:\n  moldau " + name, "Flags:", "--json", "Example:\n  ", "moldau " + name + " "} {
				if want == "--json" && leafCommand(path).noJSON {
					continue // it prints no result
				}
				if !strings.Contains(out, want) {
					t.Errorf("%s %s: help lacks %q:\n%s", name, h, want, out)
				}
			}
		}
	}
	for _, group := range []string{"topic", "group", "cluster", "log"} {
		code, out, _ := runInProcess(t, "", nil, group, "--help")
		if code != exitOK || !strings.Contains(out, "Commands:") {
			t.Errorf("%s --help: exit %d:\n%s", group, code, out)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"topic"}, "missing subcommand"},
		{[]string{"topic", "frob"}, `unknown command "frob"`},
		{[]string{"topic", "create"}, "missing TOPIC"},
		{[]string{"topic", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"consume", "t", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"consume", "t", "--offset", "sideways"}, "--offset: offset \"sideways\""},
		{[]string{"consume", "t", "--format", "%x"}, "unknown verb"},
		{[]string{"consume", "t", "--group", "g", "--partition", "0"}, "--partition cannot be used with --group"},
		{[]string{"consume", "t", "--json", "--format", "%v"}, "cannot be used together"},
		{[]string{"produce", "t", "--acks", "2"}, `--acks "2"`},
		{[]string{"produce", "t", "--compression", "brotli"}, `--compression "brotli"`},
		{[]string{"produce", "t", "--count", "5"}, "--count needs --value"},
		{[]string{"produce", "t", "--value", "v", "-H", "nokv"}, "expected key=value"},
		{[]string{"topic", "create", "t", "-c", "novalue"}, "expected key=value"},
		{[]string{"topic", "alter-config", "t"}, "nothing to change"},
		{[]string{"topic", "add-partitions", "t"}, "--num must be a positive"},
		{[]string{"group", "seek", "g"}, "--to: required"},
		{[]string{"group", "seek", "g", "--to", "t:0=1", "--topics", "t"}, "--topics cannot be used"},
		{[]string{"log", "dump"}, "missing PATH"},
		{[]string{"log", "move", "--topic", "t"}, "--topic, --partition, --broker and --to are required"},
		{[]string{"log", "move", "--plan", "p.json", "--topic", "t"}, "give --plan or"},
		{[]string{"topic", "list", "--brokers", " , "}, "--brokers is empty"},
	}
	for _, tt := range tests {
		code, out, errOut := runInProcess(t, "", nil, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tt.args, code, errOut, tt.want)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", tt.args, out)
		}
	}
}

// TestUnreachableBroker checks that a refused connection is one line and
// exit 1, at once.
func TestUnreachableBroker(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, args := range [][]string{
		{"topic", "list", "-b", addr},
		{"cluster", "info", "--brokers", addr},
	} {
		code, _, errOut := runInProcess(t, "", nil, args...)
		want := "moldau: cannot connect to any broker at " + addr + ": connection refused\n"
		if code != exitError || errOut != want {
			t.Errorf("%v: exit %d, stderr %q; want 1, %q", args, code, errOut, want)
		}
	}
	// MOLDAU_BROKERS is the default.
	code, _, errOut := runInProcess(t, "", map[string]string{"MOLDAU_BROKERS": addr}, "topic", "list")
	if code != exitError || !strings.Contains(errOut, addr) {
		t.Errorf("MOLDAU_BROKERS: exit %d, stderr %q", code, errOut)
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{topicError("orders", kerr.UnknownTopicOrPartition), `topic "orders" does not exist`},
		{topicError("orders", kerr.TopicAlreadyExists), `topic "orders" already exists`},
		{groupError("g", kerr.GroupIDNotFound), `group "g" does not exist`},
		{topicError("orders", kerr.TopicAuthorizationFailed), `topic "orders": not authorized: Not authorized to access topics: [Topic authorization failed.] (TOPIC_AUTHORIZATION_FAILED)`},
		{&kadm.AuthError{Err: kerr.ClusterAuthorizationFailed}, "not authorized: Cluster authorization failed. (CLUSTER_AUTHORIZATION_FAILED)"},
		{fmt.Errorf("listing: %w", kerr.GroupAuthorizationFailed), "listing: not authorized: Not authorized to access group: Group authorization failed. (GROUP_AUTHORIZATION_FAILED)"},
		{kerr.InvalidPartitions, "INVALID_PARTITIONS: Number of partitions is below 1."},
		{topicError("t", withMessage(kerr.InvalidConfig, "retention.ms must be a number")), `topic "t": INVALID_CONFIG: Configuration is invalid. (retention.ms must be a number)`},
		{errors.New("two\nlines"), "two lines"},
	}
	for _, tt := range tests {
		if got := errorMessage(tt.err); got != tt.want {
			t.Errorf("errorMessage(%v) =\n  %q\nwant\n  %q", tt.err, got, tt.want)
		}
	}
}

func TestConnectError(t *testing.T) {
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused"},
		{&net.DNSError{Name: "nohost", Err: "no such host"}, "cannot resolve host nohost"},
		{dialTimeout, "no connection within 3s (--dial-timeout)"},
		{context.DeadlineExceeded, "connected, but no answer within 10s: is this a Kafka listener?"},
	}
	for _, tt := range tests {
		got := connectError("h:1", 3*time.Second, 10*time.Second, tt.err).Error()
		if want := "cannot connect to any broker at h:1: " + tt.want; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
