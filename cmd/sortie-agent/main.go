// Command sortie-agent is the node agent: sortie starts it detached on each
// node to run a task, and asks it about the node (see package
// sortie/provision/node/agent). It is a small static program: copied over
// SSH once per cluster, it must not link what the controller does.
//
//	sortie-agent run [-notice SOURCE] [-notice-endpoint URL] [-grace D] [-ready-fd N] DIR
//	sortie-agent serve -instance=ID [-idle D] [-ready-fd N] SOCKET
//	sortie-agent status DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"sortie/provision/node/agent"
	"sortie/provision/node/notice"
	"sortie/provision/node/notice/metadata"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func usage() int {
	fmt.Fprintln(os.Stderr, "usage: sortie-agent run [-notice SOURCE] [-notice-endpoint URL] [-grace D] [-ready-fd N] DIR\n       sortie-agent serve -instance=ID [-idle D] [-ready-fd N] SOCKET\n       sortie-agent status DIR")
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
	case agent.ServeCommand:
		return serve(args[1:])
	}
	return usage()
}

func runTask(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	source := fs.String("notice", "", "where to hear preemption notices: "+notice.SourceAWS+", "+notice.SourceGCE+", "+notice.SourceLocal+" or nothing")
	endpoint := fs.String("notice-endpoint", "", "the metadata service's base URL (empty: the cloud's own)")
	grace := fs.Duration("grace", agent.DefaultGrace, "time between a notice's SIGTERM and SIGKILL")
	readyFD := fs.Int("ready-fd", -1, "a pipe's write end to close once the pid is recorded")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return usage()
	}
	dir := fs.Arg(0)
	if !filepath.IsAbs(dir) {
		fmt.Fprintf(os.Stderr, "sortie-agent run: the node directory %q is not absolute; give its absolute path\n", dir)
		return 2
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
	a := &agent.Agent{Dir: dir, Bash: bash, Env: os.Environ(), Grace: *grace, Reap: true}
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

// serve runs many nodes' tasks, each asked for on the unix socket SOCKET
// (sortie's local provider starts one per home): it takes SOCKET.lock
// first, so that of two servers started at once one serves and the other
// exits, and exits itself once idle.
func serve(args []string) int {
	fs := flag.NewFlagSet(agent.ServeCommand, flag.ContinueOnError)
	id := fs.String(strings.TrimPrefix(agent.InstanceFlag, "-"), "", "this server's instance id, which its nodes record")
	idle := fs.Duration("idle", 2*time.Second, "how long to stay up with no node running")
	readyFD := fs.Int("ready-fd", -1, "a pipe's write end to close once the socket listens (or another server holds it)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *id == "" {
		return usage()
	}
	ready := func() {
		if *readyFD >= 0 {
			syscall.Close(*readyFD)
			*readyFD = -1
		}
	}
	defer ready()
	sock := fs.Arg(0)
	bash, err := exec.LookPath("bash")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-agent serve: bash is not on PATH; the task's phases run with bash")
		return 1
	}
	signal.Ignore(syscall.SIGHUP)
	// A long-lived process that starts many small ones: its heap is
	// mostly garbage between nodes, kept small rather than left to grow
	// to twice the live data.
	debug.SetGCPercent(25)
	lock, err := os.OpenFile(sock+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-agent serve:", err)
		return 1
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return 0 // another server holds the socket
	}
	os.Remove(sock) // a dead server's
	ln, err := net.Listen("unix", sock)
	if err == nil {
		// Whoever may connect may run commands as this user.
		err = os.Chmod(sock, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-agent serve:", err)
		return 1
	}
	ready()
	s := &agent.Server{ID: *id, Bash: bash, Idle: *idle, Watch: func(req agent.ServeRequest) (func(context.Context, func(agent.Notice, bool)), error) {
		cfg := notice.Config{Source: req.Notice, Endpoint: req.Endpoint, NodeDir: req.Dir, Metadata: metadata.HTTP{}}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		if cfg.Source == "" {
			return nil, nil
		}
		return func(ctx context.Context, found func(agent.Notice, bool)) {
			notice.Watch(ctx, cfg, func(n notice.Notice) { found(agent.Notice(n), n.Ends()) })
		}, nil
	}}
	if err := s.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "sortie-agent serve:", err)
		return 1
	}
	return 0
}
