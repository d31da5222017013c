// Command zonos is the headless Zonos Stream: say, pull, models, bench,
// conformance. Each subcommand lives in its own file and registers itself in
// commands (see register).
package main

import (
	"fmt"
	"os"
	"sort"
)

// command is one subcommand: run gets the arguments after its name and
// returns the process exit code.
type command struct {
	summary string
	run     func(args []string) int
}

var commands = map[string]command{}

// register adds a subcommand; called from each command file's init.
func register(name, summary string, run func(args []string) int) {
	commands[name] = command{summary, run}
}

// version is stamped by the build (-ldflags "-X main.version=…").
var version = "dev"

func usage() {
	fmt.Fprintln(os.Stderr, "usage: zonos <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'zonos <command> -h' for a command's flags.")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "-h", "--help", "help":
		usage()
		return
	case "--version", "version":
		fmt.Println("zonos", version)
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "zonos: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	os.Exit(c.run(os.Args[2:]))
}
