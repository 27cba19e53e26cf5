package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// The everyday commands (topic, produce, consume, group, cluster, log,
// console)
// share one small framework: a tree of commands, each with its flags, a
// usage line, a description and an example. A command's error becomes one
// line on stderr, "moldau: ...", and exit code 1; a usage error (an unknown
// flag, a missing argument) exits 2. --help prints to stdout and exits 0.

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// cmdIO is what a command runs with: its streams, the environment it reads
// and the clock. Tests run commands in-process with their own.
type cmdIO struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
	// stderrTTY and stdoutTTY: progress is shown only on a terminal.
	stderrTTY, stdoutTTY bool
}

func osIO() cmdIO {
	return cmdIO{
		stdin:     os.Stdin,
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		getenv:    os.Getenv,
		now:       time.Now,
		stderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
	}
}

// command is a node of the command tree: a group (subs) or a leaf (setup).
type command struct {
	name    string
	args    string // the arguments in the usage line, e.g. "TOPIC..."
	summary string // one line, for the parent's list
	long    string // paragraphs shown by --help
	example string // shown by --help; every leaf has one
	// client commands take --brokers and the connection flags.
	client bool
	// noJSON: the command prints no result, so it takes no --json.
	noJSON bool
	// minArgs and maxArgs bound the positional arguments (maxArgs < 0: no
	// bound).
	minArgs, maxArgs int
	// setup registers the leaf's flags and returns its body.
	setup func(fs *pflag.FlagSet) runner
	subs  []*command
}

// runner is a leaf command's body, run after its flags are parsed.
type runner func(ctx context.Context, e *env, args []string) error

// env is what a running leaf command gets: its IO, --json, and the client
// flags (for client commands).
type env struct {
	cmdIO
	path   string // "moldau topic create"
	json   bool
	client clientFlags
}

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ msg, path string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(e *env, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), path: e.path}
}

// commands is the tree of the everyday commands.
func commands() []*command {
	return []*command{topicCommand(), produceCommand(), consumeCommand(), groupCommand(), clusterCommand(), userCommand(), tokenCommand(), aclCommand(), logCommand(), consoleCommand(), devCommand()}
}

// isCLICommand reports whether name is one of the everyday commands.
func isCLICommand(name string) bool {
	for _, c := range commands() {
		if c.name == name {
			return true
		}
	}
	return false
}

// runCLI runs one everyday command line (args[0] is the command) and
// returns the process exit code. SIGINT and SIGTERM cancel ctx, which
// long-running commands (consume, produce) treat as "stop cleanly".
func runCLI(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, osIO(), args)
}

// execute runs args against the command tree and reports any error on
// stderr; it returns the exit code.
func execute(ctx context.Context, cio cmdIO, args []string) int {
	err := dispatch(ctx, cio, commands(), "moldau", args)
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(cio.stderr, "%s: %s\nRun '%s --help' for usage.\n", ue.path, ue.msg, ue.path)
		return exitUsage
	}
	fmt.Fprintf(cio.stderr, "moldau: %s\n", errorMessage(err))
	return exitError
}

func findCommand(cmds []*command, name string) *command {
	for _, c := range cmds {
		if c.name == name {
			return c
		}
	}
	return nil
}

func isHelpArg(s string) bool { return s == "-h" || s == "--help" || s == "help" }

// dispatch walks down the tree to a leaf, parses its flags and runs it.
func dispatch(ctx context.Context, cio cmdIO, cmds []*command, parent string, args []string) error {
	cmd := findCommand(cmds, args[0])
	if cmd == nil {
		return &usageError{msg: fmt.Sprintf("unknown command %q", args[0]), path: parent}
	}
	path := parent + " " + cmd.name
	args = args[1:]
	if cmd.subs != nil {
		if len(args) == 0 {
			printGroupHelp(cio.stderr, path, cmd)
			return &usageError{msg: "missing subcommand", path: path}
		}
		if isHelpArg(args[0]) {
			printGroupHelp(cio.stdout, path, cmd)
			return nil
		}
		return dispatch(ctx, cio, cmd.subs, path, args)
	}
	e := &env{cmdIO: cio, path: path}
	fs := pflag.NewFlagSet(path, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by execute
	fs.SortFlags = false
	run := cmd.setup(fs)
	if !cmd.noJSON {
		fs.BoolVar(&e.json, "json", false, "print JSON instead of tables")
	}
	if cmd.client {
		e.client.register(fs, cio.getenv)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printLeafHelp(cio.stdout, path, cmd, fs)
			return nil
		}
		return &usageError{msg: err.Error(), path: path}
	}
	n := fs.NArg()
	switch {
	case n < cmd.minArgs:
		return &usageError{msg: fmt.Sprintf("missing %s", strings.Fields(cmd.args)[min(n, len(strings.Fields(cmd.args))-1)]), path: path}
	case cmd.maxArgs >= 0 && n > cmd.maxArgs:
		return &usageError{msg: fmt.Sprintf("unexpected argument %q", fs.Arg(cmd.maxArgs)), path: path}
	}
	return run(ctx, e, fs.Args())
}

func printGroupHelp(w io.Writer, path string, cmd *command) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s COMMAND [flags]\n\nCommands:\n", cmd.summary, path)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, s := range cmd.subs {
		fmt.Fprintf(tw, "  %s\t%s\n", s.name, s.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags and an example.\n", path)
}

func printLeafHelp(w io.Writer, path string, cmd *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s", cmd.summary, path)
	if cmd.args != "" {
		fmt.Fprintf(w, " %s", cmd.args)
	}
	fmt.Fprint(w, " [flags]\n")
	if cmd.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(cmd.long, "\n"))
	}
	fmt.Fprint(w, "\nFlags:\n")
	printFlags(w, fs)
	fmt.Fprintf(w, "\nExample:\n%s\n", strings.TrimRight(cmd.example, "\n"))
}

// printFlags lists flags as pflag does, without its "[=true|false]" on
// boolean flags.
func printFlags(w io.Writer, fs *pflag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fs.VisitAll(func(f *pflag.Flag) {
		name := "    --" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if f.Value.Type() != "bool" && varname != "" {
			name += " " + varname
		}
		if d := f.DefValue; d != "" && d != "false" && d != "[]" && d != "0" && f.Value.Type() != "bool" {
			if f.Value.Type() == "string" {
				d = `"` + d + `"`
			}
			usage += " (default " + d + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
}
