// Command sortie-agent is the node agent: sortie starts it detached on each
// node to run a task, and asks it about the node (see package
// sortie/provision/node/agent). It is a small static program copied to every
// node: it must not import sortie/controller/..., sortie/provision,
// sortie/schema, golang.org/x/crypto/... or anything from github.com or
// cloud.google.com.
//
//	sortie-agent run [-key-stdin] [-notice SOURCE] [-notice-endpoint URL] [-grace D] [-ready-fd N] DIR
//
// With -key-stdin the agent reads the node's key, one line of hex, from its
// stdin before anything else, and keeps it in memory only (never in a file,
// its environment or its arguments, where the task could read it), having
// first made itself not dumpable, so that the task, which runs as the same
// user, cannot read its memory either. Its exit code record then carries
// the record's tag under that key (agent.Tag), which the controller checks.
//
//	sortie-agent status DIR
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"sortie/provision/node/agent"
	"sortie/provision/node/notice"
	"sortie/provision/node/notice/metadata"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func usage() int {
	fmt.Fprintln(os.Stderr, "usage: sortie-agent run [-key-stdin] [-notice SOURCE] [-notice-endpoint URL] [-grace D] [-ready-fd N] DIR\n       sortie-agent status DIR")
	return 2
}

func run(args []string) int {
	if len(args) < 1 {
		return usage()
	}
	switch args[0] {
	case "status":
		if len(args) != 2 {
			return usage()
		}
		out, err := agent.Answer(args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "sortie-agent status:", err)
			return 1
		}
		os.Stdout.Write(out)
		return 0
	case "run":
		return runTask(args[1:])
	}
	return usage()
}

func runTask(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	source := fs.String("notice", "", "where to hear preemption notices: "+notice.SourceAWS+", "+notice.SourceGCE+", "+notice.SourceLocal+" or nothing")
	endpoint := fs.String("notice-endpoint", "", "the metadata service's base URL (empty: the cloud's own)")
	grace := fs.Duration("grace", agent.DefaultGrace, "time between a notice's SIGTERM and SIGKILL")
	readyFD := fs.Int("ready-fd", -1, "a pipe's write end to close once the pid is recorded")
	keyStdin := fs.Bool("key-stdin", false, "read the node's key, one line of hex, from stdin")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return usage()
	}
	dir := fs.Arg(0)
	if !filepath.IsAbs(dir) {
		fmt.Fprintf(os.Stderr, "sortie-agent run: the node directory %q is not absolute; give its absolute path\n", dir)
		return 2
	}
	var key []byte
	if *keyStdin {
		// Before the key is in memory: from here on, no process of the
		// same user traces this one or reads its memory.
		if err := agent.NotDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			fmt.Fprintln(os.Stderr, "sortie-agent run: cannot keep the key out of the task's reach:", err)
			return 1
		}
		k, err := agent.ReadKey(os.Stdin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sortie-agent run:", err)
			return 2
		}
		key = k
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-agent run: bash is not on PATH; the task's phases run with bash")
		return 1
	}
	// As under nohup, for the agent and every process of the task.
	signal.Ignore(syscall.SIGHUP)
	cfg := notice.Config{Source: *source, Endpoint: *endpoint, NodeDir: dir, Metadata: metadata.HTTP{}}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "sortie-agent run:", err)
		return 2
	}
	a := &agent.Agent{Dir: dir, Bash: bash, Env: os.Environ(), Grace: *grace, Reap: true, Key: key}
	if cfg.Source != "" {
		a.Watch = func(ctx context.Context, found func(agent.Notice, bool)) {
			notice.Watch(ctx, cfg, func(n notice.Notice) { found(agent.Notice(n), n.Ends()) })
		}
	}
	if *readyFD >= 0 {
		a.Ready = func() { syscall.Close(*readyFD) }
	}
	if err := a.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "sortie-agent run:", err)
		return 1
	}
	return 0
}
