// Command moldau is the Moldau broker and its command-line tools.
//
//	moldau serve [--config server.properties] [--override key=value ...]
//	moldau topic create|list|describe|delete|alter-config|add-partitions
//	moldau produce TOPIC / moldau consume TOPIC...
//	moldau group list|describe|delete|seek
//	moldau cluster info|elect|reassign|quorum
//	moldau log dump PATH...
//	moldau console [--listen ADDR]
//	moldau dev [--nodes 3] / moldau dev ACTION [NODE...]
//	moldau bench produce|consume|e2e|floor [flags]
//	moldau version
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	if isCLICommand(os.Args[1]) {
		os.Exit(runCLI(os.Args[1:]))
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = serve(args)
	case "bench":
		err = bench(args)
	case "version", "--version", "-v":
		fmt.Println("moldau", version)
	case "help", "-h", "--help":
		usage(os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "moldau: unknown command %q\n\n", cmd)
		usage(os.Stderr)
		os.Exit(2)
	}
	if errors.Is(err, errFatal) {
		os.Exit(1) // the broker logged why
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "moldau:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Moldau: a Kafka broker in one binary.

Usage:
  moldau serve [--config FILE] [--override key=value ...]
                      start a broker; with no flags, a single node on
                      localhost:9092 with its data in ./moldau-data
  moldau topic        create, list, describe, configure and delete topics
  moldau produce      produce records: one per line of stdin, or --value
  moldau consume      print records from topics, optionally as a group member
  moldau group        list, describe, delete consumer groups and move their offsets
  moldau cluster      show brokers, controller, API versions and the quorum;
                      elect leaders, move partitions, add and remove controllers
  moldau log          decode a broker's data files offline (log dump)
  moldau console      serve a live web console of a cluster (--listen localhost:8080)
  moldau dev          run a local cluster with faults, traffic and delivery counters
  moldau bench MODE   load-test a broker (produce, consume, e2e) or this machine (floor)
  moldau version      print the version

Client commands connect to --brokers (default localhost:9092, or
$MOLDAU_BROKERS) and print tables, or JSON with --json.

Run 'moldau COMMAND --help' for a command's flags.
`)
}
